"""Helpers shared by operator declarations: partial-shape merging, the standard shape and
dtype rules, and the attribute field types re-exported for op modules.

Shapes are tuples of ints with -1 for an unknown dimension, or None when nothing is known.
Dtypes are ``numpy.dtype`` objects or None.
"""
from __future__ import annotations

from typing import Any

import numpy as np

# re-exported: the family modules declare their attribute schemas with these
from ..ir.attrs import (Bool, DType, Enum, Float, FloatTuple, Int, OptFloat,  # noqa: F401
                        OptInt, OptShape, Shape, Str)
from .registry import InferError, OpDef, ShapeConflict, register_op  # noqa: F401

Shape_ = tuple | None


def known(s: Shape_) -> bool:
    """True when ``s`` is fully known."""
    return s is not None and (not s or min(s) >= 0)


def merge(a: Shape_, b: Shape_) -> Shape_:
    """The most specific shape agreeing with both; ValueError when they disagree."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if len(a) != len(b):
        raise ValueError
    out = []
    for x, y in zip(a, b):
        if x < 0:
            out.append(y)
        elif y < 0 or x == y:
            out.append(x)
        else:
            raise ValueError
    return tuple(out)


def assign(shapes: list, i: int, value: Shape_, side: str = "in") -> None:
    """Merge ``value`` into ``shapes[i]``; a disagreement raises ShapeConflict."""
    if value is None:
        return
    cur = shapes[i]
    if cur == value:
        return
    try:
        shapes[i] = merge(cur, value)
    except ValueError:
        raise ShapeConflict(side, i, cur, value) from None


def assign_dtype(types: list, i: int, value: Any, side: str = "in") -> None:
    if value is None:
        return
    cur = types[i]
    if cur is None:
        types[i] = value
    elif cur != value:
        raise ShapeConflict(side, i, cur, value)


def fmt(s: Shape_) -> str:
    """MXNet-style shape text: [2,3] (unknown dims as ?)."""
    if s is None:
        return "[?]"
    return "[" + ",".join("?" if d < 0 else str(d) for d in s) + "]"


def prod(dims) -> int:
    """Product of ``dims``, or -1 when one of them is unknown."""
    n = 1
    for d in dims:
        if d < 0:
            return -1
        n *= d
    return n


def size(s: tuple) -> int:
    n = 1
    for d in s:
        n *= d
    return n


# -- standard rules ---------------------------------------------------------------------
def same_shape(p, ins: list, outs: list) -> None:
    """Every input and output has one shape (elementwise ops)."""
    if len(ins) == 1 and len(outs) == 1:  # fast path: most nodes are unary
        a, b = ins[0], outs[0]
        if a == b:
            return
        if b is None:
            outs[0] = a
            return
        if a is None:
            ins[0] = b
            return
    s = None
    for lst, side in ((ins, "in"), (outs, "out")):
        for i, v in enumerate(lst):
            try:
                s = merge(s, v)
            except ValueError:
                raise ShapeConflict(side, i, v, s) from None
    if s is not None:
        for i in range(len(ins)):
            ins[i] = s
        for i in range(len(outs)):
            outs[i] = s


def same_type(p, ins: list, outs: list) -> None:
    """Every input and output has one dtype."""
    if len(ins) == 1 and len(outs) == 1:  # fast path: most nodes are unary
        a, b = ins[0], outs[0]
        if b is None:
            if a is not None:
                outs[0] = a
            return
        if a is None:
            ins[0] = b
            return
    t = next((v for v in (*ins, *outs) if v is not None), None)
    if t is None:
        return
    for lst, side in ((ins, "in"), (outs, "out")):
        for i, v in enumerate(lst):
            if v is None:
                lst[i] = t
            elif v != t:
                raise ShapeConflict(side, i, v, t)


def first_input_type(p, ins: list, outs: list) -> None:
    """Outputs take the dtype of input 0; other inputs are left as they are (or copy it)."""
    if ins[0] is None and outs and outs[0] is not None:
        ins[0] = outs[0]
    if ins[0] is not None:
        for i in range(len(outs)):
            assign_dtype(outs, i, ins[0], "out")
        for i in range(1, len(ins)):
            if ins[i] is None:
                ins[i] = ins[0]


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise InferError(f"{what} {axis} is out of range for an input of {ndim} dimensions")
    return axis % ndim if ndim else 0


def lowest(dtype: Any) -> Any:
    """The smallest value of ``dtype`` (max pooling's padding)."""
    dtype = np.dtype(dtype)
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min
