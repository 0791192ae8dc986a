"""Kernels of the shape-manipulation ops (core/ops/tensor.py) and their backward ops
(core/ops/tensor_grad.py). Each forward kernel copies a view of its input into the
preallocated output: views are set up once per bind, so a run is one ``copyto`` (or a short
list of them). Reshapes, swaps and reversals are their own gradients; the gradients of
tile, repeat and broadcasting sum the output gradient over the copies."""
from __future__ import annotations

from functools import partial

from graphexec.core.ops.tensor import swap_dims, tile_reps, transpose_axes

from .base import kernel, nothing
from .reduce_loops import SUM
from .reducers import reduction_runner

__all__ = ["out_view", "copy_plan"]


def out_view(out, shape):
    """``out`` seen with another shape. Output buffers are planned C-contiguous arrays, so
    this is a view whose writes land in ``out``."""
    if not out.flags.c_contiguous:
        raise ValueError(f"output buffer of shape {out.shape} is not C-contiguous; cannot "
                         f"write it through a reshaped view")
    return out.reshape(shape)


def copy_plan(xp, pairs):
    """A kernel running ``copyto(dst, src)`` for each precomputed (dst, src) view pair."""
    pairs = list(pairs)
    if len(pairs) == 1:
        return partial(xp.copyto, *pairs[0])

    def run():
        for dst, src in pairs:
            xp.copyto(dst, src)
    return run


@kernel("Flatten", "Reshape", "expand_dims", "squeeze", "_backward_copy", "_backward_reshape",
        "_backward_squeeze", inplace=True)
def reshape_copy(call):
    x, out = call.inputs[0], call.outputs[0]
    return copy_plan(call.xp, [(out_view(out, x.shape), x)])


@kernel("transpose")
def transpose(call):
    x = call.inputs[0]
    return copy_plan(call.xp, [(call.outputs[0], x.transpose(transpose_axes(call.params, x.ndim)))])


@kernel("SwapAxis", "_backward_SwapAxis")
def swap_axis(call):
    x = call.inputs[0]
    a, b = swap_dims(call.params, x.ndim)
    return copy_plan(call.xp, [(call.outputs[0], call.xp.swapaxes(x, a, b))])


def _tile_layout(p, shape: tuple) -> tuple[int, tuple, tuple]:
    """For tile of an input of ``shape``: the leading dims added, the input's dims padded
    to the output's rank, and the output's shape seen as (r0, d0, r1, d1, ...)."""
    reps, lead = tile_reps(p, len(shape))
    dims = (1,) * lead + tuple(shape)
    return lead, dims, tuple(v for r, d in zip(reps, dims) for v in (r, d))


@kernel("tile")
def tile(call):
    """out seen as (r0, d0, r1, d1, ...) receives x broadcast along every r axis."""
    x, out = call.inputs[0], call.outputs[0]
    lead, dims, paired = _tile_layout(call.params, x.shape)
    src = x[(None,) * lead][tuple(k for _ in dims for k in (None, slice(None)))]
    return copy_plan(call.xp, [(out_view(out, paired), src)])


@kernel("repeat")
def repeat(call):
    """out seen as x's shape with an extra axis of size ``repeats`` after the repeated one."""
    x, out, p = call.inputs[0], call.outputs[0], call.params
    if p.repeats == 0:  # the empty 1-D output: nothing to write
        return nothing
    if p.axis is None:
        shape, src = x.shape + (p.repeats,), x[..., None]
    else:
        a = p.axis % x.ndim
        shape = x.shape[:a + 1] + (p.repeats,) + x.shape[a + 1:]
        src = x[(slice(None),) * (a + 1) + (None,)]
    return copy_plan(call.xp, [(out_view(out, shape), src)])


@kernel("reverse", "_backward_reverse")
def reverse(call):
    x = call.inputs[0]
    flip = {a % x.ndim for a in call.params.axis}
    view = x[tuple(slice(None, None, -1) if i in flip else slice(None) for i in range(x.ndim))]
    return copy_plan(call.xp, [(call.outputs[0], view)])


@kernel("broadcast_to", "broadcast_axis", "broadcast_like")
def broadcast(call):
    """copyto broadcasts the size-1 axes of the input over the output."""
    return copy_plan(call.xp, [(call.outputs[0], call.inputs[0])])


@kernel("_backward_tile")
def tile_backward(call):
    """The output gradient seen as (r0, d0, r1, d1, ...), summed over every r axis."""
    og, dx = call.inputs[0], call.outputs[0]
    _, dims, paired = _tile_layout(call.params, dx.shape)
    return _summing(call.xp, og.reshape(paired), tuple(range(0, len(paired), 2)),
                    out_view(dx, dims))


@kernel("_backward_repeat")
def repeat_backward(call):
    """The output gradient seen with the repeat axis split out, summed over it."""
    og, dx, p = call.inputs[0], call.outputs[0], call.params
    if p.axis is None:
        shape, axis = dx.shape + (p.repeats,), dx.ndim
    else:
        a = p.axis % dx.ndim
        shape, axis = dx.shape[:a + 1] + (p.repeats,) + dx.shape[a + 1:], a + 1
    return _summing(call.xp, og.reshape(shape), (axis,), dx)


@kernel("_broadcast_backward")
def broadcast_backward(call):
    """Sum over the axes where the input (the output of this op) has size 1."""
    og, dx = call.inputs[0], call.outputs[0]
    axes = tuple(i for i, (a, b) in enumerate(zip(og.shape, dx.shape)) if a != b)
    if not axes:
        return copy_plan(call.xp, [(dx, og)])
    return _summing(call.xp, og, axes, dx, keepdims=True)


def _summing(xp, x, axes: tuple, out, keepdims: bool = False):
    """``f()``: ``x`` summed over ``axes`` into ``out`` (the kept elements in order; with
    the reduced axes where ``keepdims``) as MXNet's gradients sum
    (:func:`~.reducers.reduction_runner`), else numpy's sum."""
    run = reduction_runner(xp, x, axes, out, SUM)
    if run is not None:
        return run
    return partial(xp.sum, x, axis=axes, keepdims=keepdims, out=out)
