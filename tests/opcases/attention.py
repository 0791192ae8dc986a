"""Cases for the interleaved attention matmuls and _contrib_div_sqrt_dim
(core/ops/attention.py); the twins build Q, K, V per head with reshapes."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _split(x, heads, parts):
    """(T, N, parts*E) -> parts arrays of (N*heads, T, E/heads)."""
    t, n, w = x.shape
    hd = w // parts // heads
    x = np.asarray(x, np.float64).reshape(t, n * heads, parts, hd)
    return [x[:, :, k].transpose(1, 0, 2) for k in range(parts)]


def _merge(y, n):
    """(N*heads, T, hd) -> (T, N, heads*hd)."""
    b, t, hd = y.shape
    return y.transpose(1, 0, 2).reshape(t, n, b // n * hd)


def _selfatt_qk(qkv, heads):
    q, k, _ = _split(qkv, heads, 3)
    return q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])


def _selfatt_valatt(qkv, att, heads):
    return _merge(att @ _split(qkv, heads, 3)[2], qkv.shape[1])


def _encdec_qk(q, kv, heads):
    (q,), (k, _) = _split(q, heads, 1), _split(kv, heads, 2)
    return q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])


def _encdec_valatt(kv, att, heads):
    return _merge(att @ _split(kv, heads, 2)[1], kv.shape[1])


FLOATS = dict(dtypes=("float32", "float64"), rtol=1e-4, atol=1e-5)
CASES += [
    OpCase("_contrib_interleaved_matmul_selfatt_qk", [(4, 2, 12)], _selfatt_qk,
           attrs={"heads": 2}, **FLOATS),
    OpCase("_contrib_interleaved_matmul_selfatt_qk", [(3, 2, 6)], _selfatt_qk,
           attrs={"heads": 1}, id="one-head", **FLOATS),
    OpCase("_contrib_interleaved_matmul_selfatt_valatt", [(4, 2, 12), (4, 4, 4)],
           _selfatt_valatt, attrs={"heads": 2}, **FLOATS),
    OpCase("_contrib_interleaved_matmul_encdec_qk", [(3, 2, 6), (5, 2, 12)], _encdec_qk,
           attrs={"heads": 3}, **FLOATS),
    OpCase("_contrib_interleaved_matmul_encdec_valatt", [(5, 2, 8), (4, 3, 5)],
           _encdec_valatt, attrs={"heads": 2}, **FLOATS),
    OpCase("_contrib_div_sqrt_dim", [(2, 3, 16)], lambda x: x / np.sqrt(16.0)),
    OpCase("_contrib_div_sqrt_dim", [(4, 5)], lambda x: x / np.sqrt(5.0), id="2d"),
]
