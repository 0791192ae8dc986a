"""Initialisation operators without inputs: ``_zeros``, ``_ones``, ``_full`` (used by RNN
cells for begin states). A 0 in ``shape`` is unknown and filled in from consumers."""
from __future__ import annotations

import numpy as np

from .common import DType, Float, OpDef, Shape, Str, assign, assign_dtype, register_op


def _init_shape(p, ins, outs):
    if p.shape:
        assign(outs, 0, tuple(-1 if d == 0 else d for d in p.shape), "out")


def _init_type(p, ins, outs):
    assign_dtype(outs, 0, p.dtype, "out")


def _no_inputs_gradient(g, node, ograds):
    return []


def _declare() -> None:
    base = {"shape": Shape(()), "ctx": Str(""), "dtype": DType(np.dtype("float32"))}
    for name, alias, extra in (("_zeros", "zeros", {}), ("_ones", "ones", {}),
                               ("_full", "full", {"value": Float()})):
        register_op(OpDef(name, aliases=(alias,), params={**base, **extra}, inputs=(),
                          infer_shape=_init_shape, infer_type=_init_type,
                          gradient=_no_inputs_gradient, traits=("init",)))


_declare()
