"""Native kernels, one module per operator family; importing a module fills ``KERNELS``."""
from __future__ import annotations

import importlib

from .base import INPLACE, KERNELS, OPENMP, VARIANTS

__all__ = ["load_all", "load_variants", "FAMILIES", "INPLACE", "OPENMP"]

FAMILIES = ("elemwise", "elemwise_grad", "nn", "conv", "nn_grad", "conv_grad", "winograd", "tensor", "slicing", "matrix", "reduce", "indexing",
            "loss", "init", "device", "rnn", "rnn_grad", "sequence", "attention", "ranges", "sorting",
            "detection", "detection_boxes", "detection_multibox", "detection_roi",
            "detection_proposal", "detection_psroi", "resample", "legacy", "norm", "geometry",
            "deformable", "deformable_pool", "dynamic",
            "linalg", "linalg_factor", "random", "pdf",
            "misc", "loss_extra", "contrib", "custom")


def load_all() -> dict:
    """Import every family module and return op name -> kernel factory."""
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
    return dict(KERNELS)


def load_variants() -> dict:
    """(op name, variant) -> kernel factory of the host kernel variants."""
    load_all()
    return dict(VARIANTS)
