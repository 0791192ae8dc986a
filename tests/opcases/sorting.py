"""Cases for topk, sort, argsort and cumsum (core/ops/sorting.py). Inputs are distinct
values (a permutation, scaled), so orders have no ties; ties are checked against MXNet's
recorded cases (test_seq_refdata.py)."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _distinct(rng, shape, dtype, index):
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.5 - n / 4).astype(dtype)


def _order(x, axis, ascend):
    if axis is None:
        x, axis = x.reshape(-1), 0
    idx = np.argsort(x, axis=axis, kind="stable")
    return x, axis, (idx if ascend else np.flip(idx, axis))


def _topk(x, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype="float32"):
    data, ax, idx = _order(x, axis, is_ascend)
    idx = np.take(idx, np.arange(k if k > 0 else data.shape[ax]), axis=ax)
    if ret_typ == "mask":
        mask = np.zeros(data.shape, x.dtype)
        np.put_along_axis(mask, idx, 1, axis=ax)
        return mask.reshape(x.shape)
    values = np.take_along_axis(data, idx, axis=ax)
    return {"value": values, "indices": idx.astype(dtype),
            "both": [values, idx.astype(dtype)]}[ret_typ]


def _sort(x, axis=-1, is_ascend=True):
    data, ax, idx = _order(x, axis, is_ascend)
    return np.take_along_axis(data, idx, axis=ax)


def _argsort(x, axis=-1, is_ascend=True, dtype="float32"):
    return _order(x, axis, is_ascend)[2].astype(dtype)


DISTINCT = dict(gen=_distinct, dtypes=("float32", "float64"))
CASES += [
    OpCase("topk", [(4, 6)], _topk, attrs={"k": 2, "ret_typ": "value"}, **DISTINCT),
    OpCase("topk", [(4, 6)], _topk, attrs={"k": 2}, id="indices", **DISTINCT),
    OpCase("topk", [(2, 3, 4)], _topk, attrs={"k": 2, "ret_typ": "mask", "axis": 1},
           id="mask", **DISTINCT),
    OpCase("topk", [(2, 3, 4)], _topk, attrs={"k": 2, "ret_typ": "both", "axis": 0,
                                              "is_ascend": True, "dtype": "int32"},
           id="both-ascend", **DISTINCT),
    OpCase("topk", [(2, 3, 4)], _topk, attrs={"k": 5, "ret_typ": "both", "axis": None},
           id="flat", **DISTINCT),
    OpCase("topk", [(3, 5)], _topk, attrs={"k": 0, "ret_typ": "value"}, id="all", **DISTINCT),
    OpCase("sort", [(4, 6)], _sort, **DISTINCT),
    OpCase("sort", [(2, 3, 4)], _sort, attrs={"axis": 0, "is_ascend": False}, id="desc",
           **DISTINCT),
    OpCase("sort", [(2, 3, 4)], _sort, attrs={"axis": None}, id="flat", **DISTINCT),
    OpCase("argsort", [(4, 6)], _argsort, **DISTINCT),
    OpCase("argsort", [(2, 3, 4)], _argsort, id="desc-int",
           attrs={"axis": 1, "is_ascend": False, "dtype": "int32"}, **DISTINCT),
]


def _cumsum(a, axis=None, dtype=None):
    return np.cumsum(a, axis=axis, dtype=dtype)


CASES += [
    OpCase("cumsum", [(2, 3, 4)], _cumsum, dtypes=("float32", "float64")),
    OpCase("_np_cumsum", [(2, 3, 4)], _cumsum, attrs={"axis": -2}, id="axis",
           dtypes=("float32", "float64")),
    OpCase("cumsum", [(3, 4)], _cumsum, attrs={"axis": 1, "dtype": "float64"}, id="dtype",
           dtypes=("int32",), low=-5, high=5, grad_inputs=()),
]
