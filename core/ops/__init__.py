"""Operator declarations, one module per family. This package is the built-in plugin that
registers them (listed in plugins.toml)."""
from __future__ import annotations

import importlib

from ..hookspecs import hookimpl
from .registry import OpDef, all_ops, find_op, get_op, register_op

__all__ = ["OpDef", "all_ops", "find_op", "get_op", "register_op", "FAMILIES"]

#: Family modules; importing one registers its operators.
FAMILIES = ("elemwise", "elemwise_grad", "nn", "conv", "nn_grad", "tensor", "tensor_grad", "slicing", "matrix", "reduce", "indexing",
            "loss", "init", "device", "rnn", "sequence", "attention", "ranges", "sorting",
            "detection", "detection_multibox", "detection_roi", "resample", "legacy", "norm",
            "geometry", "deformable", "dynamic",
            "linalg", "linalg_factor", "random", "pdf",
            "misc", "loss_extra", "contrib", "custom")


@hookimpl
def graphexec_register_ops(register) -> None:
    """Register every built-in operator family."""
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
