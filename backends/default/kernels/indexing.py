"""Kernels of Embedding, one_hot, take, pick and gather_nd (core/ops/indexing.py).

Float indices are truncated toward zero into a preallocated int64 buffer, then clipped,
wrapped or checked; the gather itself is one ``take`` into the output. The backward kernels
fix the indices the same way and scatter-add the output gradient (repeated indices
accumulate); gradients of index inputs are zeros."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.indexing import pick_axis

from .base import kernel
from .tensor import out_view


def _take(xp, a, idx, axis, out) -> None:
    """``take`` with in-range indices (numpy's default mode would buffer ``out``)."""
    if xp.__name__ == "numpy":
        xp.take(a, idx, axis=axis, out=out, mode="clip")
    else:
        xp.take(a, idx, axis=axis, out=out)


def _fix(xp, idx, n: int, mode: str) -> None:
    """Bring truncated indices into [0, n) in place: clip them or wrap them around."""
    if mode == "wrap":
        xp.remainder(idx, n, out=idx)
    else:
        xp.clip(idx, 0, n - 1, out=idx)


def _check(raw, low, high, what: str) -> None:
    """IndexError unless every raw (not yet truncated) index lies in [low, high], which is
    how MXNet checks them: 4.9 is out of bounds for an axis of size 5."""
    if bool(((raw < low) | (raw > high)).any()):
        raise IndexError(f"an index is out of bounds for {what}")


@kernel("Embedding")
def embedding(call):
    xp, (data, weight), out = call.xp, call.inputs, call.outputs[0]
    idx = xp.empty(data.shape, np.int64)

    def run():
        xp.copyto(idx, data, casting="unsafe")
        _fix(xp, idx, weight.shape[0], "clip")
        _take(xp, weight, idx, 0, out)
    return run


@kernel("one_hot")
def one_hot(call):
    """Indices outside [0, depth) give a row of off_value."""
    xp, ind, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    idx = xp.empty(ind.shape + (1,), np.int64)
    mask = xp.empty(out.shape, bool)
    depth = xp.arange(p.depth)
    on, off = out.dtype.type(p.on_value), out.dtype.type(p.off_value)

    def run():
        xp.copyto(idx[..., 0], ind, casting="unsafe")
        xp.equal(idx, depth, out=mask)
        out.fill(off)
        xp.copyto(out, on, where=mask)
    return run


@kernel("take")
def take(call):
    xp, (a, ind), out, p = call.xp, call.inputs, call.outputs[0], call.params
    axis = p.axis % a.ndim
    n = a.shape[axis]
    idx = xp.empty(ind.shape, np.int64)
    what = f"axis {axis} of size {n} (mode='raise')"

    def run():
        if p.mode == "raise":
            _check(ind, 0, n - 1, what)
        xp.copyto(idx, ind, casting="unsafe")
        if p.mode != "raise":
            _fix(xp, idx, n, p.mode)
        _take(xp, a, idx, axis, out)
    return run


def _pick_offsets(xp, shape: tuple, ax: int, mode: str):
    """(keepdims shape, fn(index, idx)) where fn writes into ``idx`` (int64, that shape) the
    flat offsets of the picked elements: the element at position 0 along ``ax`` + the fixed
    index * the axis stride."""
    n, inner = shape[ax], int(np.prod(shape[ax + 1:], dtype=np.int64))
    kept = shape[:ax] + (1,) + shape[ax + 1:]
    outer = int(np.prod(shape, dtype=np.int64)) // max(n * inner, 1)
    base = (xp.arange(outer)[:, None] * (n * inner) + xp.arange(inner)[None, :]).reshape(kept)

    def offsets(index, idx):
        xp.copyto(idx, index.reshape(kept), casting="unsafe")
        _fix(xp, idx, n, mode)
        xp.multiply(idx, inner, out=idx)
        xp.add(idx, base, out=idx)
    return kept, offsets


@kernel("pick")
def pick(call):
    xp, (data, index), out, p = call.xp, call.inputs, call.outputs[0], call.params
    kept, offsets = _pick_offsets(xp, data.shape, pick_axis(p, data.ndim), p.mode)
    idx = xp.empty(kept, np.int64)
    dst = out_view(out, kept)

    def run():
        offsets(index, idx)
        _take(xp, data.reshape(-1), idx, None, dst)
    return run


class _RowOffsets:
    """gather_nd's addressing: indices[:, j] names a row of data seen as (rows, row size),
    the first M axes flattened; negative indices count from the end."""

    def __init__(self, xp, shape: tuple, ind_shape: tuple):
        m = ind_shape[0]
        lead = (m,) + (1,) * (len(ind_shape) - 1)
        self.xp = xp
        self.sizes = xp.asarray(np.array(shape[:m], np.int64).reshape(lead))
        self.strides = xp.asarray(np.array([int(np.prod(shape[k + 1:m], dtype=np.int64))
                                            for k in range(m)], np.int64).reshape(lead))
        self.rows = int(np.prod(shape[:m], dtype=np.int64))
        self.idx = xp.empty(ind_shape, np.int64)
        self.flat = xp.empty(ind_shape[1:], np.int64)

    def __call__(self, ind):
        """The row of each index column (an int64 array of shape indices.shape[1:])."""
        xp, idx = self.xp, self.idx
        xp.copyto(idx, ind, casting="unsafe")
        xp.remainder(idx, self.sizes, out=idx)
        xp.multiply(idx, self.strides, out=idx)
        xp.sum(idx, axis=0, out=self.flat)
        return self.flat


@kernel("gather_nd")
def gather_nd(call):
    xp, (data, ind), out = call.xp, call.inputs, call.outputs[0]
    rows = _RowOffsets(xp, data.shape, ind.shape)
    dst = out_view(out, ind.shape[1:] + (data.size // max(rows.rows, 1),))
    low, high = -rows.sizes, rows.sizes - 1
    what = f"data of shape {data.shape} (valid along axis k: -size_k..size_k - 1)"

    def run():
        _check(ind, low, high, what)
        _take(xp, data.reshape(rows.rows, -1), rows(ind), 0, dst)
    return run


def scatter_add(xp, out, index, values) -> None:
    """``out[index] += values`` with repeated indices accumulating (numpy or CuPy)."""
    if xp.__name__ == "numpy":
        xp.add.at(out, index, values)
    else:
        import cupyx
        cupyx.scatter_add(out, index, values)


def _zero_outputs(outs, reqs) -> list:
    return [o for o, r in zip(outs, reqs) if r != "null"]


@kernel("_backward_Embedding")
def embedding_backward(call):
    """Output 0 (the data gradient) is zeros, output 1 the weight gradient."""
    xp, (og, data), (ddata, dweight) = call.xp, call.inputs, call.outputs
    idx = xp.empty(data.shape, np.int64)
    rows = og.reshape(-1, dweight.shape[1])
    zeros = _zero_outputs([ddata], call.req)

    def run():
        for z in zeros:
            z.fill(0)
        xp.copyto(idx, data, casting="unsafe")
        _fix(xp, idx, dweight.shape[0], "clip")
        dweight.fill(0)
        scatter_add(xp, dweight, idx.reshape(-1), rows)
    return run


@kernel("_backward_take")
def take_backward(call):
    """Output 0: the gradient of ``a``, seen as (before, axis, after) and scatter-added along
    the middle axis; output 1: zeros for the indices."""
    xp, (og, ind), (da, dind), p = call.xp, call.inputs, call.outputs, call.params
    axis = p.axis % da.ndim
    n = da.shape[axis]
    before = int(np.prod(da.shape[:axis], dtype=np.int64))
    after = int(np.prod(da.shape[axis + 1:], dtype=np.int64))
    da3 = out_view(da, (before, n, after))
    og3 = og.reshape(before, ind.size, after)
    idx = xp.empty(ind.shape, np.int64)
    zeros = _zero_outputs([dind], call.req[1:])

    def run():
        for z in zeros:
            z.fill(0)
        xp.copyto(idx, ind, casting="unsafe")
        if p.mode != "raise":
            _fix(xp, idx, n, p.mode)
        da.fill(0)
        scatter_add(xp, da3, (slice(None), idx.reshape(-1)), og3)
    return run


@kernel("_backward_pick")
def pick_backward(call):
    """Each output-gradient element goes to the one element its index picked (the forward
    kernel's flat offsets are distinct, so a plain assignment does)."""
    xp, (og, index), dx, p = call.xp, call.inputs, call.outputs[0], call.params
    kept, offsets = _pick_offsets(xp, dx.shape, pick_axis(p, dx.ndim), p.mode)
    idx = xp.empty(kept, np.int64)
    flat, values = out_view(dx, (-1,)), og.reshape(kept)

    def run():
        offsets(index, idx)
        dx.fill(0)
        flat[idx] = values
    return run


@kernel("_backward_gather_nd")
def gather_nd_backward(call):
    """The forward kernel's row offsets (negative indices wrapped), scatter-added into the
    data gradient seen as (rows, row size)."""
    xp, (og, ind), dx = call.xp, call.inputs, call.outputs[0]
    rows = _RowOffsets(xp, dx.shape, ind.shape)
    row = dx.size // max(rows.rows, 1)
    dx2 = out_view(dx, (rows.rows, row))
    values = og.reshape(rows.flat.size, row)

    def run():
        dx.fill(0)
        scatter_add(xp, dx2, rows(ind).reshape(-1), values)
    return run
