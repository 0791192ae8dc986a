"""Ordering converters: topk, sort and argsort are ONNX TopK (sorted, ``largest`` unless
ascending; ONNX puts the lower index first among equal values, as MXNet's stable sorts do),
a mask is ones scattered into zeros; cumsum is CumSum. axis=None flattens first."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.sorting import sort_axis, top_count

from ..convert import ConvertCall, converter, onnx_dtype


def _supports(node, shapes) -> "bool | str":
    return True if shapes and shapes[0] is not None else "the data shape is needed"


def _topk(c: ConvertCall, k: int, ascending: bool) -> tuple[str, str, int]:
    """(values, int64 indices, axis) of the top k along the op's axis."""
    shape = c.in_shapes[0]
    axis = sort_axis(c.p, shape)
    x = c.x
    if axis is None:
        x, axis = c.b.one("Reshape", [x, c.b.ints([-1], c.hint("flat"))], hint=c.hint("flat")), 0
    values, indices = c.b.add("TopK", [x, c.b.ints([k], c.hint("k"))],
                              [c.b.fresh(c.hint("values")), c.b.fresh(c.hint("indices"))],
                              axis=axis, largest=0 if ascending else 1, sorted=1)
    return values, indices, axis


def _cast(c: ConvertCall, name: str, j: int) -> None:
    c.b.one("Cast", [name], c.outputs[j], to=onnx_dtype(c.out_dtypes[j]))


class _All:
    """sort / argsort as a topk over every element."""

    def __init__(self, p):
        self.axis, self.is_ascend, self.k = p.axis, p.is_ascend, 0


@converter("topk", supports=_supports)
def _topk_op(c: ConvertCall) -> None:
    p = c.p
    values, indices, axis = _topk(c, top_count(p, c.in_shapes[0]), p.is_ascend)
    if p.ret_typ == "mask":
        shape = c.in_shapes[0] if p.axis is not None else (int(np.prod(c.in_shapes[0])),)
        zeros = c.b.const(np.zeros(shape), c.out_dtypes[0], c.hint("zeros"))
        ones = c.b.one("Expand", [c.b.const(1, c.out_dtypes[0], c.hint("one")),
                                  c.b.one("Shape", [indices], hint=c.hint("kshape"))],
                       hint=c.hint("ones"))
        mask = c.b.one("ScatterElements", [zeros, indices, ones], hint=c.hint("mask"),
                       axis=axis)
        c.b.one("Reshape", [mask, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)
        return
    if p.ret_typ == "indices":
        _cast(c, indices, 0)
        return
    c.b.one("Identity", [values], c.outputs[0])
    if len(c.outputs) > 1:
        _cast(c, indices, 1)


@converter("sort", supports=_supports)
def _sort(c: ConvertCall) -> None:
    p = _All(c.p)
    values, indices, _ = _topk(c, top_count(p, c.in_shapes[0]), p.is_ascend)
    c.b.one("Identity", [values], c.outputs[0])
    _cast(c, indices, 1)


@converter("argsort", supports=_supports)
def _argsort(c: ConvertCall) -> None:
    p = _All(c.p)
    _, indices, _ = _topk(c, top_count(p, c.in_shapes[0]), p.is_ascend)
    _cast(c, indices, 0)


@converter("_np_cumsum")
def _cumsum(c: ConvertCall) -> None:
    x = c.x
    if c.in_dtypes[0] != c.out_dtypes[0]:
        x = c.b.one("Cast", [x], hint=c.hint("cast"), to=onnx_dtype(c.out_dtypes[0]))
    axis = c.p.axis
    if axis is None:
        x, axis = c.b.one("Reshape", [x, c.b.ints([-1], c.hint("flat"))], hint=c.hint("flat")), 0
    c.b.one("CumSum", [x, c.b.const(axis, np.int64, c.hint("axis"))], c.out)
