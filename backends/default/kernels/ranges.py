"""Kernels of the shape and index helpers (core/ops/ranges.py). Ranges, eyes and index grids
depend only on the shapes and attributes: they are computed once at bind and copied into the
output at each run (the planner may reuse the output buffer between runs)."""
from __future__ import annotations

from functools import partial

import numpy as np

from graphexec.core.ops.ranges import linspace_step

from .base import kernel
from .tensor import copy_plan, reshape_copy

kernel("reshape_like", inplace=True)(reshape_copy)


def _constant(call, values):
    """A kernel writing the precomputed ``values`` into the output."""
    out = call.outputs[0]
    src = call.xp.asarray(np.asarray(values).astype(out.dtype, copy=False).reshape(out.shape))
    return copy_plan(call.xp, [(out, src)])


def _range(n: int, start: float, step: float, repeat: int, dtype) -> np.ndarray:
    """MXNet's range_fwd: start + (i // repeat) * step, in the output dtype."""
    dtype = np.dtype(dtype)
    steps = (np.arange(n) // repeat).astype(dtype)
    return dtype.type(start) + steps * dtype.type(step)


@kernel("_arange")
def arange(call):
    p, out = call.params, call.outputs[0]
    start = 0.0 if p.stop is None and not p.infer_range else p.start
    return _constant(call, _range(out.size, start, p.step, p.repeat, out.dtype))


@kernel("_contrib_arange_like")
def arange_like(call):
    p, out = call.params, call.outputs[0]
    return _constant(call, _range(out.size, p.start, p.step, p.repeat, out.dtype))


@kernel("_linspace")
def linspace(call):
    """start + i * step computed in float64, then cast (as MXNet)."""
    p, out = call.params, call.outputs[0]
    return _constant(call, p.start + linspace_step(p) * np.arange(out.size, dtype=np.float64))


@kernel("_eye")
def eye(call):
    out = call.outputs[0]
    return _constant(call, np.eye(out.shape[0], out.shape[1], call.params.k))


@kernel("_contrib_index_array")
def index_array(call):
    """out[i..., j] = i[axes[j]]."""
    x, p = call.inputs[0], call.params
    axes = range(x.ndim) if p.axes is None else [a % x.ndim for a in p.axes]
    grid = np.indices(x.shape, dtype=np.int64)
    return _constant(call, np.stack([grid[a] for a in axes], axis=-1))


@kernel("shape_array")
def shape_array(call):
    return _constant(call, np.array(call.inputs[0].shape, np.int64))


@kernel("size_array")
def size_array(call):
    return _constant(call, np.array([call.inputs[0].size], np.int64))


def _batch_take(xp, rows, idx, fixed, out) -> None:
    xp.clip(idx, 0, rows.shape[1] - 1, out=fixed)
    xp.copyto(out.reshape(-1), rows[xp.arange(rows.shape[0]), fixed.reshape(-1)])


@kernel("batch_take")
def batch_take(call):
    """out[r] = a[r, indices[r]] over the rows of a's last axis; indices are clipped into
    range (MXNet's kernel clips them)."""
    xp, (a, idx), out = call.xp, call.inputs, call.outputs[0]
    rows = a.reshape(-1, a.shape[-1])
    return partial(_batch_take, xp, rows, idx, xp.empty(idx.shape, np.int64), out)
