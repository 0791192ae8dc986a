"""Kernels of the reductions (core/ops/reduce.py). Results go into a keepdims-shaped view
of the output, which also covers MXNet's (1,) for a full reduction."""
from __future__ import annotations

from functools import partial

import numpy as np

from graphexec.core.ops.reduce import REDUCERS, reduce_axes, reduced_shape

from .base import kernel
from .tensor import out_view

# float16 sums and products accumulate in float32, as MXNet's reducers do
_ACCUMULATING = frozenset(("sum", "mean", "prod", "nansum", "nanprod"))


@kernel(*REDUCERS)
def reduce_(call):
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    axes = reduce_axes(p.axis, x.ndim, p.exclude)
    outk = out_view(out, reduced_shape(x.shape, axes, True))
    extra = {}
    if call.op_name in _ACCUMULATING and x.dtype == np.float16:
        extra["dtype"] = np.float32
    return partial(getattr(xp, call.op_name), x, axis=axes, keepdims=True, out=outk, **extra)


@kernel("norm")
def norm(call):
    """ord=1: sum of |x|; ord=2: sqrt of the sum of squares, in at least float32."""
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    axes = reduce_axes(p.axis, x.ndim)
    outk = out_view(out, reduced_shape(x.shape, axes, True))
    work = np.result_type(x.dtype, out.dtype, np.float32)
    tmp = xp.empty(x.shape, work)
    acc = outk if out.dtype == work else xp.empty(outk.shape, work)

    def run():
        xp.copyto(tmp, x, casting="unsafe")
        if p.ord == 1:
            xp.abs(tmp, out=tmp)
        else:
            xp.multiply(tmp, tmp, out=tmp)
        xp.sum(tmp, axis=axes, keepdims=True, out=acc)
        if p.ord == 2:
            xp.sqrt(acc, out=acc)
        if acc is not outk:
            xp.copyto(outk, acc, casting="unsafe")
    return run


@kernel("argmax", "argmin", "argmax_channel")
def arg_reduce(call):
    """The index, computed as int64, is written in the output's (the input's) dtype."""
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    fn = xp.argmin if call.op_name == "argmin" else xp.argmax
    if call.op_name == "argmax_channel":
        axis = 1
    else:
        axis = None if p.axis is None else p.axis % x.ndim
    shape = () if axis is None else x.shape[:axis] + x.shape[axis + 1:]
    index = xp.empty(shape, np.int64)
    dst = out_view(out, shape)

    def run():
        fn(x, axis=axis, out=index)
        xp.copyto(dst, index, casting="unsafe")
    return run
