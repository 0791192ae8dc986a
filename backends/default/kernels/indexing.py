"""Kernels of Embedding, one_hot, take, pick and gather_nd (core/ops/indexing.py).

Float indices are truncated toward zero into a preallocated int64 buffer, then clipped,
wrapped or checked; the gather itself is one ``take`` into the output."""
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


@kernel("pick")
def pick(call):
    """Flat offsets: base (the element at index 0 along the axis) + index * stride."""
    xp, (data, index), out, p = call.xp, call.inputs, call.outputs[0], call.params
    ax = pick_axis(p, data.ndim)
    n, inner = data.shape[ax], int(np.prod(data.shape[ax + 1:], dtype=np.int64))
    kept = data.shape[:ax] + (1,) + data.shape[ax + 1:]
    outer = data.size // max(n * inner, 1)
    base = (xp.arange(outer)[:, None] * (n * inner) + xp.arange(inner)[None, :]).reshape(kept)
    idx = xp.empty(kept, np.int64)
    dst = out_view(out, kept)

    def run():
        xp.copyto(idx, index.reshape(kept), casting="unsafe")
        _fix(xp, idx, n, p.mode)
        xp.multiply(idx, inner, out=idx)
        xp.add(idx, base, out=idx)
        _take(xp, data.reshape(-1), idx, None, dst)
    return run


@kernel("gather_nd")
def gather_nd(call):
    """indices[:, j] addresses data's first M axes (negative values count from the end)."""
    xp, (data, ind), out = call.xp, call.inputs, call.outputs[0]
    m = ind.shape[0]
    lead = (m,) + (1,) * (ind.ndim - 1)
    sizes = xp.asarray(np.array(data.shape[:m], np.int64).reshape(lead))
    strides = xp.asarray(np.array([int(np.prod(data.shape[k + 1:m], dtype=np.int64))
                                   for k in range(m)], np.int64).reshape(lead))
    rows = int(np.prod(data.shape[:m], dtype=np.int64))
    idx = xp.empty(ind.shape, np.int64)
    flat = xp.empty(ind.shape[1:], np.int64)
    dst = out_view(out, ind.shape[1:] + (data.size // max(rows, 1),))
    low, high = -sizes, sizes - 1
    what = f"data of shape {data.shape} (valid along axis k: -size_k..size_k - 1)"

    def run():
        _check(ind, low, high, what)
        xp.copyto(idx, ind, casting="unsafe")
        xp.remainder(idx, sizes, out=idx)
        xp.multiply(idx, strides, out=idx)
        xp.sum(idx, axis=0, out=flat)
        _take(xp, data.reshape(rows, -1), flat, 0, dst)
    return run
