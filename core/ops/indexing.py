"""Indexing: Embedding, one_hot, take, pick and gather_nd. (``where`` is elementwise.)

Indices arrive as floats in MXNet; kernels truncate them toward zero and then clip, wrap or
check them as each op's ``mode`` says.

Gradients scatter-add the output gradient to the element each index selected (after the same
clipping or wrapping); index inputs get zero gradients, as does one_hot's. Embedding's data
gradient is zeros here, where MXNet refuses a data gradient request.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import (Bool, DType, Enum, Float, InferError, Int, OpDef, OptInt, assign, assign_dtype,
                     first_input_type, fmt, normalize_axis, register_op)
from .registry import get_op
from .tensor_grad import backward_op, forward_params, zero_grad

F32 = np.dtype("float32")


def _embedding_shape(p, ins, outs):
    assign(ins, 1, (p.input_dim, p.output_dim))
    data = ins[0]
    if data is not None:
        assign(outs, 0, data + (p.output_dim,), "out")
    elif outs[0] is not None:
        assign(ins, 0, outs[0][:-1])


def _embedding_type(p, ins, outs):
    """The weight defaults to ``dtype``; the output has the weight's dtype."""
    if ins[1] is None:
        ins[1] = outs[0] if outs[0] is not None else p.dtype
    assign_dtype(outs, 0, ins[1], "out")


def _one_hot_shape(p, ins, outs):
    if ins[0] is not None:
        assign(outs, 0, ins[0] + (p.depth,), "out")


def _one_hot_type(p, ins, outs):
    assign_dtype(outs, 0, p.dtype, "out")


def _take_shape(p, ins, outs):
    a, idx = ins
    if a is None or idx is None:
        return
    ax = normalize_axis(p.axis, len(a), "take axis")
    assign(outs, 0, a[:ax] + idx + a[ax + 1:], "out")


def pick_axis(p, ndim: int) -> int:
    if p.axis is None:
        raise InferError("axis=None is not supported; give the axis to pick along")
    return normalize_axis(p.axis, ndim, "pick axis")


def _pick_shape(p, ins, outs):
    data, index = ins
    if data is None:
        return
    ax = pick_axis(p, len(data))
    kept = data[:ax] + (1,) + data[ax + 1:]
    reduced = data[:ax] + data[ax + 1:]
    want = kept if index is not None and len(index) == len(kept) else reduced
    try:
        assign(ins, 1, want)
    except InferError:
        raise InferError(f"index shape {fmt(index)} must be {fmt(reduced)} (or "
                         f"{fmt(kept)}) for data {fmt(data)} and axis {ax}") from None
    assign(outs, 0, kept if p.keepdims else (reduced or (1,)), "out")


def _gather_nd_shape(p, ins, outs):
    data, idx = ins
    if data is None or idx is None:
        return
    if len(idx) < 2:
        raise InferError(f"indices {fmt(idx)} need at least 2 dimensions (the first "
                         f"one indexes into data)")
    m = idx[0]
    if m < 0:
        return
    if m > len(data):
        raise InferError(f"indices {fmt(idx)} address {m} dimensions, the data "
                         f"{fmt(data)} has {len(data)}")
    assign(outs, 0, idx[1:] + data[m:], "out")


def _declare() -> None:
    register_op(OpDef("Embedding", inputs=("data", "weight"), infer_shape=_embedding_shape,
                      infer_type=_embedding_type,
                      params={"input_dim": Int(), "output_dim": Int(),
                              "dtype": DType(F32), "sparse_grad": Bool(False)}))
    register_op(OpDef("one_hot", inputs=("indices",), infer_shape=_one_hot_shape,
                      infer_type=_one_hot_type,
                      params={"depth": Int(), "on_value": Float(1.0), "off_value": Float(0.0),
                              "dtype": DType(F32)}))
    register_op(OpDef("take", inputs=("a", "indices"), infer_shape=_take_shape,
                      infer_type=first_input_type,
                      params={"axis": Int(0), "mode": Enum(("clip", "raise", "wrap"), "clip")}))
    register_op(OpDef("pick", aliases=("choose_element_0index",), inputs=("data", "index"),
                      infer_shape=_pick_shape, infer_type=first_input_type,
                      params={"axis": OptInt(-1), "keepdims": Bool(False),
                              "mode": Enum(("clip", "wrap"), "clip")}))
    register_op(OpDef("gather_nd", inputs=("data", "indices"), infer_shape=_gather_nd_shape,
                      infer_type=first_input_type))


def _scatter(zero_name: str | None):
    """Rule: ``_backward_<op>`` (output gradient, indices) gives the data gradient (and, for
    Embedding and take, the zero index gradient as its other output); ``zero_name`` names
    the separate zeros_like node MXNet builds for the index input of pick and gather_nd."""
    def rule(g, node, ograds):
        index = node.inputs[0 if node.op.name == "Embedding" else 1]
        bw = g.backward_node(node, f"_backward_{node.op.name}", [ograds[0], index])
        if zero_name is None:
            return g.outputs(bw)
        return [Entry(bw, 0), zero_grad(g, node, 1, f"{node.name}{zero_name}")]
    return rule


def _one_hot_grad(g, node, ograds):
    return [zero_grad(g, node, 0, f"{node.name}_backward")]


def _declare_gradients() -> None:
    for name, zero_name in (("Embedding", None), ("take", None), ("pick", "_index_backward"),
                            ("gather_nd", "_backward_indices")):
        backward_op(f"_backward_{name}", inputs=("ograd", "indices"),
                    outputs=1 if zero_name else 2, params=forward_params(name))
        get_op(name).gradient = _scatter(zero_name)
    get_op("one_hot").gradient = _one_hot_grad


_declare()
_declare_gradients()

__all__ = ["pick_axis"]
