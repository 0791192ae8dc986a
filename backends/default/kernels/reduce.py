"""Kernels of the reductions (core/ops/reduce.py) and their backward ops. Results go into a
keepdims-shaped view of the output, which also covers MXNet's (1,) for a full reduction; the
backward kernels read the output gradient (and the result) through the same view, which
broadcasts over the reduced axes."""
from __future__ import annotations

from contextlib import nullcontext
from functools import partial

import numpy as np

from graphexec.core.ops.reduce import READS_OUTPUT, REDUCERS, reduce_axes, reduced_shape

from .base import kernel
from .reducers import REDUCER_OF, norm_reducer, reduction_runner
from .tensor import copy_plan, out_view

@kernel(*REDUCERS)
def reduce_(call):
    """MXNet's sequential sums and products on host float data (:mod:`.reducers`); max,
    min, and the rest elsewhere, numpy's reductions."""
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    axes = reduce_axes(p.axis, x.ndim, p.exclude)
    outk = out_view(out, reduced_shape(x.shape, axes, True))
    reducer = REDUCER_OF.get(call.op_name)
    if reducer is not None:
        run = reduction_runner(xp, x, axes, outk, reducer, mean=call.op_name == "mean")
        if run is not None:
            return run
    return partial(getattr(xp, call.op_name), x, axis=axes, keepdims=True, out=outk)


@kernel("norm")
def norm(call):
    """MXNet's sequential norms on host float data (:mod:`.reducers`: ord 1 the compensated
    sum of |x|, ord 2 LAPACK's scaled sum of squares); elsewhere ord=1: sum of |x|, in at
    least float32; ord=2: sqrt of the sum of squares, the squares of float32 and float16
    data in float64 (MXNet's scaled sum gives 1.4e30 for two 1e30 float32 values, squares
    in float32 overflow to inf)."""
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    axes = reduce_axes(p.axis, x.ndim)
    outk = out_view(out, reduced_shape(x.shape, axes, True))
    run = reduction_runner(xp, x, axes, outk, norm_reducer(p.ord))
    if run is not None:
        return run
    work = np.result_type(x.dtype, out.dtype, np.float32 if p.ord == 1 else np.float64)
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


def _reduced(call, x_shape: tuple) -> tuple[tuple, tuple]:
    """(reduced axes, keepdims shape) of the forward reduction over an input of ``x_shape``."""
    p = call.params
    axes = reduce_axes(p.axis, len(x_shape), getattr(p, "exclude", False))
    return axes, reduced_shape(x_shape, axes, True)


@kernel("_backward_sum", "_backward_mean")
def sum_backward(call):
    xp, og, dx = call.xp, call.inputs[0], call.outputs[0]
    axes, keep = _reduced(call, dx.shape)
    ogk = og.reshape(keep)
    if call.op_name == "_backward_sum":
        return copy_plan(xp, [(dx, ogk)])
    count = 1
    for a in axes:
        count *= dx.shape[a]
    # MXNet divides by the count in the gradient's type (multiplying by 1/count rounds twice)
    if dx.dtype.kind == "f":
        return partial(xp.divide, ogk, dx.dtype.type(max(count, 1)), out=dx)
    return partial(xp.multiply, ogk, 1 / max(count, 1), out=dx, casting="unsafe")


# d(result)/dx from the input x and the result y (in the keepdims shape): MXNet's formulas,
# so a zero in prod or a zero norm gives nan, and max/min credit every tied element
_FACTOR = {
    "max": lambda xp, x, y: x == y,
    "min": lambda xp, x, y: x == y,
    "prod": lambda xp, x, y: y / x,
    "nansum": lambda xp, x, y: ~xp.isnan(x),
    "nanprod": lambda xp, x, y: xp.where(xp.isnan(x), 0, y / x),
    "norm": lambda xp, x, y: x / y,
}


@kernel(*(f"_backward_{name}" for name in READS_OUTPUT))
def reduce_backward(call):
    xp, (og, x, y), dx, p = call.xp, call.inputs, call.outputs[0], call.params
    _, keep = _reduced(call, x.shape)
    ogk, yk = og.reshape(keep), y.reshape(keep)
    name = call.op_name[len("_backward_"):]
    factor = (lambda xp, x, y: xp.sign(x)) if name == "norm" and p.ord == 1 else _FACTOR[name]
    def quiet():
        # a fresh context manager per run: numpy 2's errstate cannot be entered twice
        return np.errstate(divide="ignore", invalid="ignore") if xp is np else nullcontext()

    def run():
        with quiet():   # 0 / 0 is nan without a warning, as in MXNet
            xp.multiply(ogk, factor(xp, x, yk), out=dx, casting="unsafe")
    return run
