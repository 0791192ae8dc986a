"""Cases for the shape and index helpers (core/ops/ranges.py)."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
NOGRAD = dict(grad_inputs=())


def _arange(start, stop=None, step=1.0, repeat=1, infer_range=False, dtype="float32"):
    if stop is None:
        start, stop = 0, start
    n = int(np.ceil((stop - start) / step))
    dt = np.dtype(dtype)
    return dt.type(start) + (np.arange(n * repeat) // repeat).astype(dt) * dt.type(step)


def _linspace(start, stop, num, endpoint=True, dtype="float32"):
    return np.linspace(start, stop, num, endpoint=endpoint).astype(dtype)


def _eye(N, M=0, k=0, dtype="float32"):
    return np.eye(N, M or N, k, dtype=dtype)


CASES += [
    OpCase("_arange", [], _arange, attrs={"start": 1, "stop": 7, "step": 1.5, "repeat": 2}),
    OpCase("_arange", [], _arange, attrs={"start": 5}, id="stop-none"),
    OpCase("_arange", [], _arange, attrs={"start": 3, "stop": -2, "step": -1.25},
           id="negative-step"),
    OpCase("_arange", [], _arange, attrs={"start": -3, "stop": 4, "step": 2, "dtype": "int32"},
           id="int32"),
    OpCase("_linspace", [], _linspace, attrs={"start": 0, "stop": 1, "num": 5}),
    OpCase("_linspace", [], _linspace, id="no-endpoint",
           attrs={"start": -2, "stop": 2, "num": 4, "endpoint": False, "dtype": "float64"}),
    OpCase("_eye", [], _eye, attrs={"N": 3, "M": 4, "k": 1}),
    OpCase("_eye", [], _eye, attrs={"N": 4, "M": 3, "k": -2, "dtype": "int32"}, id="int"),
]


def _arange_like(x, start=0.0, step=1.0, repeat=1, axis=None):
    shape = x.shape if axis is None else (x.shape[axis],)
    n = int(np.prod(shape))
    return (start + (np.arange(n) // repeat) * step).reshape(shape).astype(x.dtype)


def _index_array(x, axes=None):
    grid = np.indices(x.shape)
    axes = range(x.ndim) if axes is None else axes
    return np.stack([grid[a] for a in axes], axis=-1)


def _reshape_like(lhs, rhs, lhs_begin=None, lhs_end=None, rhs_begin=None, rhs_end=None):
    lb, le = lhs_begin or 0, lhs.ndim if lhs_end is None else lhs_end
    rb, re = rhs_begin or 0, rhs.ndim if rhs_end is None else rhs_end
    lb, rb = lb % lhs.ndim, rb % rhs.ndim
    return lhs.reshape(lhs.shape[:lb] + rhs.shape[rb:re] + lhs.shape[le:])


def _index_gen(k, n):
    def gen(rng, shape, dtype, index):
        return rng.integers(-1, n + 1, size=shape).astype("int32") if index == k else None
    return gen


def _batch_take(a, idx):
    rows = a.reshape(-1, a.shape[-1])
    return rows[np.arange(rows.shape[0]), np.clip(idx, 0, a.shape[-1] - 1)]


CASES += [
    OpCase("_contrib_arange_like", [(2, 3, 4)], _arange_like, **NOGRAD),
    OpCase("_contrib_arange_like", [(2, 3, 4)], _arange_like, id="axis",
           attrs={"axis": -1, "start": 1.0, "step": 0.5, "repeat": 2}, **NOGRAD),
    OpCase("_contrib_index_array", [(2, 3)], _index_array, **NOGRAD),
    OpCase("_contrib_index_array", [(2, 3, 2)], _index_array, attrs={"axes": (-1, 0)},
           id="axes", **NOGRAD),
    OpCase("shape_array", [(2, 3, 4)], lambda x: np.array(x.shape), **NOGRAD),
    OpCase("size_array", [(2, 3, 4)], lambda x: np.array([x.size]), **NOGRAD),
    OpCase("reshape_like", [(2, 3, 4), (6, 4)], _reshape_like, grad_inputs=(0,)),
    OpCase("reshape_like", [(2, 3, 4), (5, 6, 2, 7)], _reshape_like, id="ranges",
           attrs={"lhs_begin": -2, "rhs_begin": 1, "rhs_end": 3}, grad_inputs=(0,)),
    OpCase("batch_take", [(4, 5), (4,)], _batch_take, gen=_index_gen(1, 5), **NOGRAD),
    OpCase("batch_take", [(3, 2, 4), (6,)], _batch_take, gen=_index_gen(1, 4), id="3d",
           **NOGRAD),
]
