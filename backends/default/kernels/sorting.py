"""Kernels of topk, sort, argsort, cumsum and their backward operators
(core/ops/sorting.py). Orders are stable in both directions: a descending order is the
ascending order of the reversed data, reversed."""
from __future__ import annotations

from functools import partial

import numpy as np

from graphexec.core.ops.sorting import sort_axis, top_count

from .base import kernel


def order(xp, x, axis: int, ascending: bool):
    """Stable argsort of ``x`` along ``axis``; ties keep their order either way."""
    if ascending:
        return xp.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = xp.flip(xp.argsort(xp.flip(x, axis), axis=axis, kind="stable"), axis)
    return (n - 1) - rev


def _view(x, axis):
    """(data seen along its sort axis, that axis): the flattened data for axis=None."""
    return (x.reshape(-1), 0) if axis is None else (x, axis)


def _topk(xp, p, x, outs, k: int) -> None:
    data, axis = _view(x, sort_axis(p, x.shape))
    idx = order(xp, data, axis, p.is_ascend)
    idx = xp.take(idx, xp.arange(k), axis=axis)
    if p.ret_typ == "mask":
        mask = outs[0].reshape(data.shape)
        mask.fill(0)
        xp.put_along_axis(mask, idx, 1, axis=axis)
        return
    if p.ret_typ == "indices":
        xp.copyto(outs[0], idx.reshape(outs[0].shape), casting="unsafe")
        return
    xp.copyto(outs[0], xp.take_along_axis(data, idx, axis=axis).reshape(outs[0].shape))
    xp.copyto(outs[1], idx.reshape(outs[1].shape), casting="unsafe")


@kernel("topk")
def topk(call):
    p, x = call.params, call.inputs[0]
    return partial(_topk, call.xp, p, x, call.outputs, top_count(p, x.shape))


@kernel("sort")
def sort(call):
    p, x = call.params, call.inputs[0]
    return partial(_topk, call.xp, _AsTopk(p), x, call.outputs, top_count(_AsTopk(p), x.shape))


@kernel("argsort")
def argsort(call):
    p, x = call.params, call.inputs[0]
    q = _AsTopk(p, "indices")
    return partial(_topk, call.xp, q, x, call.outputs, top_count(q, x.shape))


class _AsTopk:
    """sort / argsort as a topk over every element."""

    def __init__(self, p, ret_typ: str = "value"):
        self.axis, self.is_ascend, self.k, self.ret_typ = p.axis, p.is_ascend, 0, ret_typ


def _scatter(xp, p, og, indices, dx) -> None:
    axis = sort_axis(p, dx.shape)
    data, along = _view(dx, axis)
    idx = indices.astype(np.int64)
    if axis is None:
        idx = idx.reshape(-1)
    data.fill(0)
    xp.put_along_axis(data, idx, og.reshape(idx.shape), axis=along)


@kernel("_backward_topk")
def topk_backward(call):
    """The output gradient goes back to the positions the indices name."""
    og, _, indices = call.inputs
    return partial(_scatter, call.xp, call.params, og, indices, call.outputs[0])


@kernel("_np_cumsum")
def cumsum(call):
    p, x, out = call.params, call.inputs[0], call.outputs[0]
    if p.axis is None:
        return partial(call.xp.cumsum, x.reshape(-1), dtype=out.dtype, out=out)
    return partial(call.xp.cumsum, x, axis=p.axis % x.ndim, dtype=out.dtype, out=out)


def _reverse_cumsum(xp, og, axis, dx) -> None:
    total = xp.flip(xp.cumsum(xp.flip(og, axis), axis=axis), axis)
    xp.copyto(dx, total.reshape(dx.shape), casting="unsafe")


@kernel("_backward_np_cumsum")
def cumsum_backward(call):
    p, og, dx = call.params, call.inputs[0], call.outputs[0]
    axis = 0 if p.axis is None else p.axis % dx.ndim
    return partial(_reverse_cumsum, call.xp, og, axis, dx)
