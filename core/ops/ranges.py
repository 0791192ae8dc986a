"""Shape and index helpers of sequence models: ranges without inputs (``_arange``,
``_linspace``, ``_eye``), ranges and indices shaped like an input (``_contrib_arange_like``,
``_contrib_index_array``), an input's shape and size as arrays (``shape_array``,
``size_array``), ``reshape_like`` and ``batch_take``.

Values follow MXNet 1.9.1: ``_arange`` computes ``start + (i // repeat) * step`` in the
output dtype (``stop`` None: the range [0, start)), with ``infer_range`` its length comes from
the consumer; ``_linspace`` ``start + i * step`` in float64, then cast. Gradients: none for
the ranges without inputs; zeros for the data of the ``*_like``, ``*_array`` ops and for
reshape_like's rhs (MXNet builds ``zeros_like``); reshape_like's lhs gets the output
gradient (``_backward_copy``); batch_take has none (MXNet registers none).

On purpose unlike MXNet 1.9.1: ``batch_take`` on data of more than 2 dimensions takes one
index per row of the last axis, as its shape rule says (MXNet's kernel strides the rows by
size / shape[0] and reads out of bounds); ``_contrib_index_array`` axes outside the data's
dimensions are an error (MXNet accepts them).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Entry
from .common import (Bool, DType, Float, InferError, Int, OpDef, OptFloat, OptInt, OptShape,
                     Str, assign, assign_dtype, first_input_type, fmt, prod, register_op)
from .tensor import axes_of
from .tensor_grad import zero_grad

__all__ = ["range_length", "reshape_like_shape", "linspace_step"]

F32, I64 = np.dtype("float32"), np.dtype("int64")


# -- ranges without inputs ------------------------------------------------------------------
def range_length(p) -> int | None:
    """The length of ``_arange``'s output (None when it is inferred from the consumer)."""
    if p.step == 0:
        raise InferError(f"step={p.step}: a range needs a non-zero step")
    if p.repeat < 1:
        raise InferError(f"repeat={p.repeat} must be >= 1")
    if p.stop is None:
        if p.infer_range:
            return None
        start, stop = 0.0, p.start
    else:
        start, stop = p.start, p.stop
    if (stop - start) * p.step <= 0:
        raise InferError(f"the range (start, stop, step) = ({start:g}, {stop:g}, {p.step:g}) "
                         f"is empty; MXNet needs start < stop for a positive step and "
                         f"start > stop for a negative one")
    return math.ceil((stop - start) / p.step) * p.repeat


def _arange_shape(p, ins, outs):
    n = range_length(p)
    if n is not None:
        assign(outs, 0, (n,), "out")


def linspace_step(p) -> float:
    parts = p.num - 1 if p.endpoint else p.num
    return (p.stop - p.start) / parts if parts > 0 else 0.0


def _linspace_shape(p, ins, outs):
    if p.num < 0:
        raise InferError(f"num={p.num}: the number of samples must be non-negative")
    assign(outs, 0, (p.num,), "out")


def _eye_shape(p, ins, outs):
    if p.N < 0 or p.M < 0:
        raise InferError(f"N={p.N} and M={p.M} must be non-negative")
    assign(outs, 0, (p.N, p.M or p.N), "out")


def _param_type(p, ins, outs):
    assign_dtype(outs, 0, p.dtype, "out")


def _no_inputs(g, node, ograds):
    return []


# -- shaped like an input -------------------------------------------------------------------
def _arange_like_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if p.axis is None:
        assign(outs, 0, data, "out")
        return
    if not -len(data) <= p.axis < len(data):
        raise InferError(f"axis={p.axis} is out of range for data {fmt(data)}")
    assign(outs, 0, (data[p.axis % len(data)],), "out")


def _index_axes(p, ndim: int) -> tuple:
    return tuple(range(ndim)) if p.axes is None else axes_of(p.axes, ndim, "index_array axes")


def _index_array_shape(p, ins, outs):
    data = ins[0]
    if data is not None:
        assign(outs, 0, data + (len(_index_axes(p, len(data))),), "out")


def _int64_type(p, ins, outs):
    assign_dtype(outs, 0, I64, "out")


def _shape_array_shape(p, ins, outs):
    if ins[0] is not None:
        assign(outs, 0, (len(ins[0]),), "out")


def _size_array_shape(p, ins, outs):
    assign(outs, 0, (1,), "out")


# -- reshape_like / batch_take --------------------------------------------------------------
def _span(ndim: int, begin, end, side: str) -> tuple[int, int]:
    """MXNet's ReshapeLikeRangeCanonicalize: negative ends count from the end."""
    b = 0 if begin is None else (begin + ndim if begin < 0 else begin)
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b < e <= ndim:
        raise InferError(f"{side}_begin={begin}, {side}_end={end} do not give a non-empty "
                         f"range of the {ndim} dimensions of {side}")
    return b, e


def reshape_like_shape(p, lhs: tuple, rhs: tuple) -> tuple:
    """lhs's shape with dims [lhs_begin, lhs_end) replaced by rhs's [rhs_begin, rhs_end)."""
    lb, le = _span(len(lhs), p.lhs_begin, p.lhs_end, "lhs")
    rb, re = _span(len(rhs), p.rhs_begin, p.rhs_end, "rhs")
    return lhs[:lb] + rhs[rb:re] + lhs[le:]


def _reshape_like_shape(p, ins, outs):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return
    out = reshape_like_shape(p, lhs, rhs)
    have, want = prod(lhs), prod(out)
    if min(have, want) >= 0 and have != want:
        raise InferError(f"cannot reshape lhs {fmt(lhs)} ({have} elements) to {fmt(out)} "
                         f"({want} elements)")
    assign(outs, 0, out, "out")


def _batch_take_shape(p, ins, outs):
    a, idx = ins
    if idx is not None:
        assign(outs, 0, idx, "out")
    elif outs[0] is not None:
        assign(ins, 1, outs[0])
    if a is None or ins[1] is None:
        return
    if len(a) < 2:
        raise InferError(f"a must have at least 2 dimensions, got {fmt(a)}")
    rows, n = prod(a[:-1]), prod(ins[1])
    if min(rows, n) >= 0 and rows != n:
        raise InferError(f"indices {fmt(ins[1])} must hold one index per row of a "
                         f"{fmt(a)} ({rows} rows of its last axis)")


def _batch_take_type(p, ins, outs):
    first_input_type(p, ins[:1], outs)
    assign_dtype(ins, 1, np.dtype("int32"))


# -- gradients ------------------------------------------------------------------------------
def _zero_data_grad(g, node, ograds):
    return [zero_grad(g, node, 0, f"{node.name}_backward")]


def _reshape_like_grad(g, node, ograds):
    bw = g.make("_backward_copy", f"{node.name}_backward", [ograds[0]], control_deps=[node])
    return [Entry(bw, 0), zero_grad(g, node, 1, f"{node.name}_rhs_backward")]


def _declare() -> None:
    init = {"ctx": Str(""), "dtype": DType(F32)}
    range_params = {"start": Float(), "stop": OptFloat(None), "step": Float(1.0),
                    "repeat": Int(1), "infer_range": Bool(False), **init}
    for name, params, rule in (
            ("_arange", range_params, _arange_shape),
            ("_linspace", {"start": Float(), "stop": Float(), "num": Int(),
                           "endpoint": Bool(True), **init}, _linspace_shape),
            ("_eye", {"N": Int(), "M": Int(0), "k": Int(0), **init}, _eye_shape)):
        register_op(OpDef(name, params=params, inputs=(), infer_shape=rule,
                          infer_type=_param_type, gradient=_no_inputs, traits=("init",)))
    register_op(OpDef("_contrib_arange_like", infer_shape=_arange_like_shape,
                      infer_type=first_input_type, gradient=_zero_data_grad,
                      params={"start": Float(0.0), "step": Float(1.0), "repeat": Int(1),
                              "ctx": Str(""), "axis": OptInt(None)}))
    register_op(OpDef("_contrib_index_array", params={"axes": OptShape(None)},
                      infer_shape=_index_array_shape, infer_type=_int64_type,
                      gradient=_zero_data_grad))
    for name, rule in (("shape_array", _shape_array_shape), ("size_array", _size_array_shape)):
        register_op(OpDef(name, infer_shape=rule, infer_type=_int64_type,
                          gradient=_zero_data_grad))
    register_op(OpDef("reshape_like", inputs=("lhs", "rhs"), infer_shape=_reshape_like_shape,
                      infer_type=first_input_type, gradient=_reshape_like_grad,
                      inplace=((0, 0),),
                      params={k: OptInt(None) for k in ("lhs_begin", "lhs_end", "rhs_begin",
                                                        "rhs_end")}))
    register_op(OpDef("batch_take", inputs=("a", "indices"), infer_shape=_batch_take_shape,
                      infer_type=_batch_take_type))


_declare()
