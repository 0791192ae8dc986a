"""Cases for the reductions (core/ops/reduce.py). MXNet gives (1,) for a full reduction."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
S = (2, 3, 4)
NP = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
      "nansum": np.nansum, "nanprod": np.nanprod}


def _axes(ndim, axis, exclude):
    if axis is None or axis == ():
        return tuple(range(ndim))
    axes = {a % ndim for a in ((axis,) if isinstance(axis, int) else axis)}
    return tuple(a for a in range(ndim) if (a in axes) != exclude)


def _reducer(fn):
    def twin(x, axis=None, keepdims=False, exclude=False):
        x64 = np.asarray(x, np.float64)
        out = fn(x64, axis=_axes(x.ndim, axis, exclude), keepdims=keepdims)
        return np.reshape(out, np.shape(out) or (1,))
    return twin


def _with_nans(rng, shape, dtype, index):
    x = rng.uniform(0.5, 1.5, size=shape)
    x[rng.uniform(size=shape) < 0.3] = np.nan
    return x.astype(dtype)


VARIANTS = ({}, {"keepdims": True}, {"axis": 1}, {"axis": (0, 2)},
            {"axis": -1, "keepdims": True}, {"axis": 1, "exclude": True},
            {"axis": (0, -1), "exclude": True, "keepdims": True}, {"axis": ()})
for name, fn in NP.items():
    extra = dict(gen=_with_nans) if name.startswith("nan") else dict(low=0.5, high=1.5)
    for attrs in VARIANTS:
        tag = "-".join(f"{k}{v}" for k, v in attrs.items()) or "all"
        CASES.append(OpCase(name, [S], _reducer(fn), attrs=attrs, id=tag, **extra))
CASES += [
    OpCase("sum_axis", [S], _reducer(np.sum), attrs={"axis": 0}, id="alias"),
    OpCase("max_axis", [S], _reducer(np.max), attrs={"axis": 2}, id="alias"),
    OpCase("min_axis", [S], _reducer(np.min), attrs={"axis": (0, 1)}, id="alias"),
    OpCase("sum", [S], _reducer(np.sum), attrs={"axis": 1}, id="int", dtypes=("int32",),
           low=-50, high=50),
    OpCase("max", [S], _reducer(np.max), id="int", dtypes=("int32",), low=-50, high=50),
    OpCase("sum", [(3000,)], _reducer(np.sum), id="long", rtol=2e-3, atol=1e-1),
]


def _norm(x, ord=2, axis=None, keepdims=False, out_dtype=None):
    x64 = np.asarray(x, np.float64)
    axes = _axes(x.ndim, axis, False)
    out = np.abs(x64).sum(axes, keepdims=keepdims) if ord == 1 else \
        np.sqrt((x64 * x64).sum(axes, keepdims=keepdims))
    return np.reshape(out, np.shape(out) or (1,))


for attrs in ({}, {"ord": 1}, {"axis": 1}, {"axis": (0, 1), "keepdims": True},
              {"ord": 1, "axis": -1}, {"axis": 0, "out_dtype": "float64"}):
    tag = "-".join(f"{k}{v}" for k, v in attrs.items()) or "all"
    CASES.append(OpCase("norm", [S], _norm, attrs=attrs, id=tag))


def _arg(fn):
    def twin(x, axis=None, keepdims=False):
        if axis is None:
            out = np.array(fn(x)).reshape((1,) * x.ndim if keepdims else (1,))
        else:
            out = fn(x, axis=axis)
            out = np.expand_dims(out, axis) if keepdims else out
        return out.astype(x.dtype)
    return twin


for attrs in ({}, {"keepdims": True}, {"axis": 1}, {"axis": -1, "keepdims": True}):
    tag = "-".join(f"{k}{v}" for k, v in attrs.items()) or "all"
    CASES.append(OpCase("argmax", [S], _arg(np.argmax), attrs=attrs, id=tag))
    CASES.append(OpCase("argmin", [S], _arg(np.argmin), attrs=attrs, id=tag))
CASES += [
    OpCase("argmax", [(4, 5)], _arg(np.argmax), attrs={"axis": 0}, id="int", dtypes=("int32",),
           low=-50, high=50),
    OpCase("argmax_channel", [(3, 5)], lambda x: np.argmax(x, 1).astype(x.dtype)),
    OpCase("argmax_channel", [(2, 3, 4)], lambda x: np.argmax(x, 1).astype(x.dtype), id="3d"),
]
