"""Reduction converters: sum, mean, max, min, prod, nansum, nanprod, norm, argmax / argmin and
argmax_channel. Reductions keep the reduced axes, then reshape to MXNet's output shape ((1,)
for a full reduction); float16 sums and products run in float32, as the kernels do."""
from __future__ import annotations

from typing import Callable

import numpy as np

from graphexec.core.ops.reduce import reduce_axes

from ..convert import ConvertCall, converter, onnx_dtype

_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd", "nansum": "ReduceSum", "nanprod": "ReduceProd"}
_ACCUMULATING = ("sum", "mean", "prod", "nansum", "nanprod")
#: what a NaN counts as in nansum / nanprod
_NAN_AS = {"nansum": 0, "nanprod": 1}


def _cast(c: ConvertCall, name: str, dtype, hint: str) -> str:
    return c.b.one("Cast", [name], hint=c.hint(hint), to=onnx_dtype(dtype))


def _reduce(c: ConvertCall, onnx_op: str, x: str, axes: list[int]) -> str:
    """``onnx_op`` over ``axes`` keeping them (ReduceSum takes its axes as an input)."""
    if onnx_op == "ReduceSum":
        return c.b.one(onnx_op, [x, c.b.ints(axes, c.hint("axes"))], hint=c.hint("red"),
                       keepdims=1)
    return c.b.one(onnx_op, [x], hint=c.hint("red"), axes=axes, keepdims=1)


def _to_output(c: ConvertCall, value: str, dtype) -> None:
    """Reshape ``value`` (of ``dtype``) to the output shape, cast to the output dtype."""
    if np.dtype(dtype) != np.dtype(c.out_dtypes[0]):
        value = _cast(c, value, c.out_dtypes[0], "out")
    c.b.one("Reshape", [value, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


def _reduction(name: str):
    def convert(c: ConvertCall) -> None:
        axes = list(reduce_axes(c.p.axis, len(c.in_shapes[0]), c.p.exclude))
        x, dt = c.x, np.dtype(c.in_dtypes[0])
        if name in _NAN_AS:
            nan = c.b.one("IsNaN", [x], hint=c.hint("isnan"))
            x = c.b.one("Where", [nan, c.b.const(_NAN_AS[name], dt, c.hint("nan_as")), x],
                        hint=c.hint("no_nan"))
        if name in _ACCUMULATING and dt == np.float16:
            x, dt = _cast(c, x, np.float32, "acc"), np.dtype(np.float32)
        if not axes:
            c.b.one("Identity", [x], c.out)
            return
        _to_output(c, _reduce(c, _REDUCE[name], x, axes), dt)
    return convert


for _name in _REDUCE:
    converter(_name)(_reduction(_name))


def _norm_supports(node, shapes) -> "bool | str":
    return True if node.params.ord in (1, 2) else f"norm ord {node.params.ord} is not converted"


@converter("norm", supports=_norm_supports)
def _norm(c: ConvertCall) -> None:
    """ord 1: sum |x|, in at least float32 (and the output dtype); ord 2: sqrt(sum x * x),
    the squares in float64 (the native kernel's: float32 squares overflow from 1.8e19)."""
    dt = np.result_type(c.in_dtypes[0], c.out_dtypes[0],
                        np.float32 if c.p.ord == 1 else np.float64)
    x = c.x if np.dtype(c.in_dtypes[0]) == dt else _cast(c, c.x, dt, "work")
    axes = list(reduce_axes(c.p.axis, len(c.in_shapes[0])))
    if c.p.ord == 1:
        _to_output(c, _reduce(c, "ReduceSum", c.b.one("Abs", [x], hint=c.hint("abs")), axes),
                   dt)
        return
    squares = _reduce(c, "ReduceSum", c.b.one("Mul", [x, x], hint=c.hint("sq")), axes)
    _to_output(c, c.b.one("Sqrt", [squares], hint=c.hint("sqrt")), dt)


def _arg_reduction(onnx_op: str, axis_of: Callable[[ConvertCall], "int | None"]):
    def convert(c: ConvertCall) -> None:
        """The first extreme index (int64) along the axis, or in the flattened input when
        the axis is None; written in the output's dtype (the input's, as MXNet's)."""
        axis, x = axis_of(c), c.x
        if axis is None:
            x, axis = c.b.one("Reshape", [x, c.b.ints([-1], c.hint("flat"))],
                              hint=c.hint("flat")), 0
        index = c.b.one(onnx_op, [x], hint=c.hint("index"), axis=axis, keepdims=1)
        _to_output(c, index, np.int64)
    return convert


def _given_axis(c: ConvertCall) -> "int | None":
    return None if c.p.axis is None else c.p.axis % len(c.in_shapes[0])


converter("argmax")(_arg_reduction("ArgMax", _given_axis))
converter("argmin")(_arg_reduction("ArgMin", _given_axis))
converter("argmax_channel")(_arg_reduction("ArgMax", lambda c: 1))
