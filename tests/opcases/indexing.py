"""Cases for Embedding, one_hot, take, pick and gather_nd (core/ops/indexing.py). Index
inputs are floats as in MXNet, with fractions (truncated) and out-of-range values where the
mode clips or wraps them."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
# the gradient check covers the data input only: indices are piecewise constant (their zero
# gradients are tested in test_ops_tensor_grad.py)
GRAD_DATA = dict(grad_inputs=(0,))


def _index_input(k: int, low: float, high: float):
    """gen making input ``k`` float indices in [low, high) (others: the default uniform)."""
    def gen(rng, shape, dtype, index):
        if index != k:
            return None
        return (np.floor(rng.uniform(low, high, size=shape) * 2) / 2).astype(dtype)
    return gen


def _ints(x):
    return np.trunc(np.asarray(x, np.float64)).astype(np.int64)


def _embedding(data, weight, input_dim, output_dim):
    return weight[np.clip(_ints(data), 0, input_dim - 1)]


CASES += [
    OpCase("Embedding", [(2, 3), (10, 4)], _embedding, attrs={"input_dim": 10, "output_dim": 4},
           gen=_index_input(0, -2, 12), grad_inputs=(1,)),
    OpCase("Embedding", [(5,), (6, 3)], _embedding, attrs={"input_dim": 6, "output_dim": 3},
           gen=_index_input(0, 0, 6), id="in-range", grad_inputs=(1,)),
]


def _one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype="float32"):
    idx = _ints(indices)
    return np.where(idx[..., None] == np.arange(depth), on_value, off_value).astype(dtype)


CASES += [
    OpCase("one_hot", [(2, 3)], _one_hot, attrs={"depth": 4}, gen=_index_input(0, -1, 5),
           grad_inputs=()),
    OpCase("one_hot", [(5,)], _one_hot, gen=_index_input(0, 0, 3), id="values", grad_inputs=(),
           attrs={"depth": 3, "on_value": 5.0, "off_value": -1.0, "dtype": "int32"}),
]


def _fixed(idx, n, mode):
    idx = _ints(idx)
    return np.mod(idx, n) if mode == "wrap" else np.clip(idx, 0, n - 1)


def _take(a, indices, axis=0, mode="clip"):
    return np.take(a, _fixed(indices, a.shape[axis], mode), axis=axis)


for axis, mode, lo, hi in ((0, "clip", -3, 8), (1, "wrap", -7, 9), (-1, "clip", -2, 6),
                           (0, "raise", 0, 4.5)):
    CASES.append(OpCase("take", [(5, 4), (2, 3)], _take, attrs={"axis": axis, "mode": mode},
                        gen=_index_input(1, lo, hi), id=f"{axis}-{mode}", **GRAD_DATA))


def _pick(data, index, axis=-1, keepdims=False, mode="clip"):
    idx = _fixed(index, data.shape[axis], mode)
    idx = idx.reshape(np.delete(data.shape, axis % data.ndim))
    out = np.take_along_axis(data, np.expand_dims(idx, axis), axis=axis)
    return out if keepdims else np.squeeze(out, axis)


CASES += [
    OpCase("pick", [(3, 4), (3,)], _pick, gen=_index_input(1, -2, 6), **GRAD_DATA),
    OpCase("pick", [(3, 4), (4,)], _pick, attrs={"axis": 0, "mode": "wrap"},
           gen=_index_input(1, -5, 7), id="axis0-wrap", **GRAD_DATA),
    OpCase("pick", [(2, 3, 4), (2, 4)], _pick, attrs={"axis": 1, "keepdims": True},
           gen=_index_input(1, 0, 3), id="keepdims", **GRAD_DATA),
    OpCase("pick", [(2, 3), (2, 1)], _pick, gen=_index_input(1, 0, 3), id="kept-index",
           **GRAD_DATA),
    OpCase("choose_element_0index", [(3, 4), (3,)], _pick, gen=_index_input(1, 0, 4),
           id="alias", **GRAD_DATA),
]


def _gather_nd(data, indices):
    idx = _ints(indices)
    return data[tuple(idx)]


def _gather_gen(rng, shape, dtype, index):
    if index != 1:
        return None
    sizes = np.array((3, 4, 5)[:shape[0]]).reshape((-1,) + (1,) * (len(shape) - 1))
    return np.trunc(rng.uniform(-sizes, sizes, size=shape)).astype(dtype)


CASES += [
    OpCase("gather_nd", [(3, 4, 5), (2, 6)], _gather_nd, gen=_gather_gen, **GRAD_DATA),
    OpCase("gather_nd", [(3, 4, 5), (3, 2, 2)], _gather_nd, gen=_gather_gen, id="full",
           **GRAD_DATA),
    OpCase("gather_nd", [(3, 4, 5), (1, 4)], _gather_nd, gen=_gather_gen, id="rows", **GRAD_DATA),
]
