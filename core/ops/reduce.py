"""Reductions: sum, mean, max, min, prod, nansum, nanprod (axis, keepdims, exclude), norm
(ord 1 or 2), argmax / argmin and argmax_channel.

MXNet quirk kept here: reducing every axis without keepdims gives shape (1,), not ().

Gradients: sum and mean broadcast the output gradient back; max and min credit every element
equal to the result (ties all get the full gradient, as in MXNet); prod uses out / x; norm
x / out (ord 2) or sign(x) (ord 1); argmax / argmin have zero gradients. argmax_channel has no
gradient rule (MXNet reports it non-differentiable).
"""
from __future__ import annotations

from ..ir.graph import Entry
from .common import (Bool, DType, InferError, Int, OpDef, OptInt, OptShape, assign, assign_dtype,
                     fmt, normalize_axis, register_op, same_type)
from .registry import get_op
from .tensor_grad import backward_op, forward_params, one_backward, zero_grad

#: reductions whose backward reads the input and the result
READS_OUTPUT = ("max", "min", "prod", "nansum", "nanprod", "norm")

#: op name -> MXNet aliases
REDUCERS = {"sum": ("sum_axis",), "mean": (), "max": ("max_axis",), "min": ("min_axis",),
            "prod": (), "nansum": (), "nanprod": ()}


def reduce_axes(axis, ndim: int, exclude: bool = False) -> tuple[int, ...]:
    """The sorted axes a reduction removes. ``axis`` None or () means every axis."""
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    axes = sorted(normalize_axis(a, ndim, "reduction axis") for a in axis)
    if len(set(axes)) != len(axes):
        raise InferError(f"reduction axes {tuple(axis)} name an axis twice")
    if exclude:
        return tuple(a for a in range(ndim) if a not in axes)
    return tuple(axes)


def reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    """``shape`` without ``axes`` (size 1 there with keepdims); (1,) rather than ()."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _reduce_shape(p, ins, outs):
    s = ins[0]
    if s is not None:
        axes = reduce_axes(p.axis, len(s), getattr(p, "exclude", False))
        assign(outs, 0, reduced_shape(s, axes, p.keepdims), "out")


def _norm_shape(p, ins, outs):
    if p.ord not in (1, 2):
        raise InferError(f"only ord=1 and ord=2 are supported, got ord={p.ord}")
    _reduce_shape(p, ins, outs)


def _norm_type(p, ins, outs):
    if p.out_dtype is None:
        same_type(p, ins, outs)
    else:
        assign_dtype(outs, 0, p.out_dtype, "out")


def arg_axes(p, ndim: int) -> tuple[int, ...]:
    """Axes argmax/argmin reduce: all (flattened index) when axis is None."""
    if p.axis is None:
        return tuple(range(ndim))
    return (normalize_axis(p.axis, ndim, "argmax axis"),)


def _arg_shape(p, ins, outs):
    s = ins[0]
    if s is not None:
        assign(outs, 0, reduced_shape(s, arg_axes(p, len(s)), p.keepdims), "out")


def _argmax_channel_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return
    if len(s) < 2:
        raise InferError(f"the input {fmt(s)} has no channel axis (axis 1) to reduce")
    assign(outs, 0, s[:1] + s[2:], "out")


def _declare() -> None:
    common = dict(named_inputs=False, infer_type=same_type)
    for name, aliases in REDUCERS.items():
        register_op(OpDef(name, aliases=aliases, infer_shape=_reduce_shape, **common,
                          params={"axis": OptShape(None), "keepdims": Bool(False),
                                  "exclude": Bool(False)}))
    register_op(OpDef("norm", infer_shape=_norm_shape, named_inputs=False, infer_type=_norm_type,
                      params={"ord": Int(2), "axis": OptShape(None), "out_dtype": DType(None),
                              "keepdims": Bool(False)}))
    # the index comes back in the input's dtype (MXNet's legacy argmax)
    for name in ("argmax", "argmin"):
        register_op(OpDef(name, infer_shape=_arg_shape, **common,
                          params={"axis": OptInt(None), "keepdims": Bool(False)}))
    register_op(OpDef("argmax_channel", infer_shape=_argmax_channel_shape, **common))


def _with_output(g, node, ograds):
    bw = g.backward_node(node, f"_backward_{node.op.name}",
                         [ograds[0], node.inputs[0], Entry(node, 0)])
    return [Entry(bw, 0)]


def _zero(g, node, ograds):
    return [zero_grad(g, node, 0, f"{node.name}_backward")]


def _declare_gradients() -> None:
    for name in (*REDUCERS, "norm"):
        grad = f"_backward_{name}"
        if name in READS_OUTPUT:
            backward_op(grad, inputs=("ograd", "data", "out"), params=forward_params(name))
            get_op(name).gradient = _with_output
        else:
            backward_op(grad, params=forward_params(name))
            get_op(name).gradient = one_backward(grad)
    for name in ("argmax", "argmin"):
        get_op(name).gradient = _zero


_declare()
_declare_gradients()

__all__ = ["REDUCERS", "READS_OUTPUT", "reduce_axes", "reduced_shape", "arg_axes"]
