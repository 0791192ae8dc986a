"""Ordering and running sums: ``topk`` (every ``ret_typ``), ``sort``, ``argsort`` and
``_np_cumsum`` (``cumsum``).

As MXNet 1.9.1 (checked on ties): sorts are stable, ascending or descending, so equal
elements keep their order in either direction; ``axis=None`` works on the flattened data;
``k`` < 1 takes every element; indices are returned as ``dtype`` (float32 by default); a
mask is 1 at the top-k positions, in the data's dtype. ``sort`` and ``topk(ret_typ='value')``
keep the indices as a hidden output; their gradient (``_backward_topk``, which reads the
output gradient, the values and the indices) scatters the output gradient back to the
selected positions; indices, masks and argsort have zero gradients. cumsum's gradient
(``_backward_np_cumsum``) is the reversed running sum of the output gradient.

On purpose unlike MXNet 1.9.1: sort without an explicit axis differentiates (MXNet builds a
broken ``_backward_topk`` node, "Invalid Parameter format for axis ... value=''"); cumsum
takes negative axes in forward (MXNet fails there). NaN placement in a sort is unspecified
in both.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import (Bool, DType, Enum, InferError, Int, OpDef, OptInt, assign, assign_dtype,
                     fmt, normalize_axis, prod, register_op)
from .tensor_grad import backward_op, forward_params, zero_grad

__all__ = ["sort_axis", "top_count"]

F32 = np.dtype("float32")
_INDEX_TYPES = ("float16", "float32", "float64", "int32", "int64", "uint8")


class _IndexType(DType):
    """A dtype among MXNet's index types (topk / argsort ``dtype``)."""

    def parse(self, text):
        if text not in _INDEX_TYPES:
            raise ValueError(f"{text!r} is not one of {', '.join(_INDEX_TYPES)}")
        return np.dtype(text)


def sort_axis(p, shape: tuple) -> int | None:
    """The axis sorted along (None: the flattened data)."""
    if p.axis is None:
        return None
    if not -len(shape) <= p.axis < len(shape):
        raise InferError(f"axis={p.axis} is out of range for data {fmt(shape)}")
    return p.axis % len(shape)


def top_count(p, shape: tuple) -> int:
    """How many elements topk keeps along its axis (k < 1: all of them)."""
    axis = sort_axis(p, shape)
    n = prod(shape) if axis is None else shape[axis]
    k = getattr(p, "k", 0)
    if k < 1 or n < 0:
        return n
    if k > n:
        raise InferError(f"k={k} is larger than the {n} elements along "
                         f"{'the flattened data' if axis is None else f'axis {axis}'}")
    return k


def _kept_shape(p, data: tuple) -> tuple:
    axis = sort_axis(p, data)
    k = top_count(p, data)
    if axis is None:
        return (k,)
    return data[:axis] + (k,) + data[axis + 1:]


def _topk_outputs(p) -> list[str]:
    return ["output"] if p.ret_typ in ("indices", "mask") else ["output0", "output1"]


def _topk_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if p.ret_typ == "mask":
        assign(outs, 0, data, "out")
        return
    for j in range(len(outs)):
        assign(outs, j, _kept_shape(p, data), "out")


def _topk_type(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    kinds = {"value": [data, p.dtype], "both": [data, p.dtype], "indices": [p.dtype],
             "mask": [data]}[p.ret_typ]
    for j, t in enumerate(kinds):
        assign_dtype(outs, j, t, "out")


def _sort_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    axis = sort_axis(p, data)
    for j in range(len(outs)):
        assign(outs, j, (prod(data),) if axis is None else data, "out")


def _sort_type(p, ins, outs):
    if ins[0] is not None:
        assign_dtype(outs, 0, ins[0], "out")
        if len(outs) > 1:
            assign_dtype(outs, 1, getattr(p, "dtype", F32), "out")


def _argsort_type(p, ins, outs):
    assign_dtype(outs, 0, p.dtype, "out")


def _cumsum_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        if p.axis is not None and outs[0] is not None:  # as MXNet, along an axis
            assign(ins, 0, outs[0])
        return
    if p.axis is None:
        assign(outs, 0, (prod(data),), "out")
        return
    normalize_axis(p.axis, len(data), "cumsum axis")
    assign(outs, 0, data, "out")


def _cumsum_type(p, ins, outs):
    if ins[0] is not None:
        assign_dtype(outs, 0, p.dtype or ins[0], "out")


# -- gradients ------------------------------------------------------------------------------
def _scatter_grad(g, node, ograds):
    """``_backward_topk`` with the forward node's axis and order and the values/indices
    outputs (sort builds it with k=0, ret_typ='value', as MXNet)."""
    p = node.params
    attrs = {"axis": str(p.axis), "is_ascend": str(p.is_ascend),
             "k": str(getattr(p, "k", 0)), "ret_typ": "value" if node.op.name == "sort"
             else p.ret_typ, "dtype": str(getattr(p, "dtype", F32))}
    bw = g.make("_backward_topk", f"{node.name}_backward",
                [ograds[0], Entry(node, 0), Entry(node, 1)], attrs, [node])
    return [Entry(bw, 0)]


def _topk_grad(g, node, ograds):
    if node.params.ret_typ in ("indices", "mask"):
        return [zero_grad(g, node, 0, f"{node.name}_backward")]
    return _scatter_grad(g, node, ograds)


def _cumsum_grad(g, node, ograds):
    return g.outputs(g.backward_node(node, "_backward_np_cumsum", [ograds[0]]))


class _CumsumType(DType):
    """cumsum's ``dtype``: None or one of MXNet's choices."""

    def parse(self, text):
        if text not in ("None", "float16", "float32", "float64", "int32", "int64", "int8"):
            raise ValueError(f"{text!r} is not None or one of float16, float32, float64, "
                             f"int32, int64, int8")
        return super().parse(text)


def _declare() -> None:
    axis, order = {"axis": OptInt(-1)}, {"is_ascend": Bool(True)}
    register_op(OpDef("topk", params={**axis, "k": Int(1), "ret_typ": Enum(
        ("both", "indices", "mask", "value"), "indices"), "is_ascend": Bool(False),
        "dtype": _IndexType(F32)}, outputs=_topk_outputs,
        num_visible=lambda p: 2 if p.ret_typ == "both" else 1, infer_shape=_topk_shape,
        infer_type=_topk_type, gradient=_topk_grad))
    register_op(OpDef("sort", params={**axis, **order}, outputs=("output0", "output1"),
                      num_visible=1, infer_shape=_sort_shape, infer_type=_sort_type,
                      gradient=_scatter_grad))
    register_op(OpDef("argsort", params={**axis, **order, "dtype": _IndexType(F32)},
                      infer_shape=_sort_shape, infer_type=_argsort_type,
                      gradient=lambda g, node, og: [zero_grad(g, node, 0,
                                                              f"{node.name}_backward")]))
    register_op(OpDef("_np_cumsum", aliases=("cumsum",), inputs=("a",),
                      params={"axis": OptInt(None), "dtype": _CumsumType(None)},
                      infer_shape=_cumsum_shape, infer_type=_cumsum_type,
                      gradient=_cumsum_grad))
    backward_op("_backward_topk", inputs=("ograd", "values", "indices"),
                params=forward_params("topk"))
    backward_op("_backward_np_cumsum", params=forward_params("_np_cumsum"))


_declare()
