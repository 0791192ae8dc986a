"""Cases for core/ops/contrib.py (the _contrib_ utilities, _histogram and
IdentityAttachKLSparseReg; the latter's gradient moves its running average, so
tests/test_ops_misc.py checks it against MXNet's numbers instead of finite differences)."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
NOGRAD = dict(grad_inputs=())
F = ("float32", "float64")


def _allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True):
    return np.array(np.allclose(a, b, rtol, atol, equal_nan), np.uint8)


def _close_gen(rng, shape, dtype, index):
    x = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype(dtype)
    return x + (1e-9 if index else 0)


def _index_gen(rng, shape, dtype, index):
    return np.array([3, 0], dtype) if index == 1 else None


def _index_copy(old, index, new):
    out = old.copy()
    out[index.astype(int)] = new
    return out


def _fft(x, compute_size=128):
    y = np.fft.fft(x.astype(np.float64), axis=-1)
    return np.stack([y.real, y.imag], axis=-1).reshape(x.shape[:-1] + (-1,))


def _ifft(x, compute_size=128):
    pairs = x.astype(np.float64).reshape(x.shape[:-1] + (-1, 2))
    z = pairs[..., 0] + 1j * pairs[..., 1]
    return np.fft.ifft(z, axis=-1).real * z.shape[-1]


def _sketch_gen(rng, shape, dtype, index):
    if index == 1:
        return np.array([[0, 2, 2, 1, 0]], dtype)
    if index == 2:
        return np.array([[1, -1, 1, 1, -1]], dtype)
    return None


def _count_sketch(x, h, s, out_dim, processing_batch_size=32):
    out = np.zeros((x.shape[0], out_dim))
    for i in range(x.shape[1]):
        out[:, int(h[0, i])] += s[0, i] * x[:, i]
    return out


def _histogram(x, bins=None, bin_cnt=None, range=None):
    if bin_cnt is not None:
        bins = np.linspace(range[0], range[1], bin_cnt + 1).astype(x.dtype)
    return [np.histogram(x, bins)[0], bins]


def _bins_gen(rng, shape, dtype, index):
    return np.array([-1.5, -0.25, 0.5, 1.0], dtype) if index == 1 else None


def _round_gen(rng, shape, dtype, index):
    return np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.49, -0.2, 0.7], dtype).reshape(shape)


CASES += [
    OpCase("_contrib_allclose", [(3, 4), (3, 4)], _allclose, **NOGRAD),
    OpCase("_contrib_allclose", [(3, 4), (3, 4)], _allclose, gen=_close_gen, id="close",
           dtypes=F, **NOGRAD),
    OpCase("_contrib_quadratic", [(3, 4)], lambda x, a, b, c: a * x * x + b * x + c,
           attrs={"a": 0.5, "b": -2.0, "c": 1.0}),
    OpCase("_contrib_gradientmultiplier", [(3, 4)], lambda x, scalar: x,
           attrs={"scalar": 0.25}, grad_inputs=()),  # scales the gradient on purpose
    OpCase("_contrib_round_ste", [(2, 4)], lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
           gen=_round_gen, **NOGRAD),
    OpCase("_contrib_sign_ste", [(3, 4)], np.sign, **NOGRAD),
    OpCase("_contrib_index_copy", [(5, 3), (2,), (2, 3)], _index_copy, gen=_index_gen,
           grad_inputs=(0, 2)),
    OpCase("_contrib_fft", [(3, 4)], _fft, dtypes=F, rtol=1e-4, atol=1e-5),
    OpCase("_contrib_ifft", [(2, 3, 8)], _ifft, dtypes=F, rtol=1e-4, atol=1e-5),
    OpCase("_contrib_count_sketch", [(3, 5), (1, 5), (1, 5)], _count_sketch,
           attrs={"out_dim": 4}, gen=_sketch_gen, grad_inputs=(0,)),
    OpCase("_histogram", [(4, 5)], _histogram, attrs={"bin_cnt": 5, "range": (-1.0, 1.0)},
           dtypes=F, **NOGRAD),
    OpCase("_histogram", [(4, 5), (4,)], _histogram, gen=_bins_gen, id="bins", dtypes=F,
           **NOGRAD),
    OpCase("IdentityAttachKLSparseReg", [(3, 4), (4,)], lambda x, avg, **kw: x,
           gen=lambda rng, s, dt, i: np.full(s, 0.5, dt) if i == 1 else None, **NOGRAD),
]


def _hawkes_gen(rng, shape, dtype, index):
    values = {0: rng.uniform(0.5, 2.0, shape), 1: rng.uniform(0.1, 0.5, shape),
              2: rng.uniform(0.5, 2.0, shape), 3: rng.uniform(0.0, 1.0, shape),
              4: rng.uniform(0.1, 1.0, shape), 5: rng.integers(0, 2, shape),
              6: np.array([3, 1, 4])[:shape[0]], 7: np.full(shape, 6.0)}[index]
    return values.astype("int32" if index == 5 else dtype)


def hawkes_twin(lda, alpha, beta, state, lags, marks, valid, max_time):
    """Event by event, one sample at a time (the docstring's recursion)."""
    n, k = lda.shape
    ll, out = np.zeros(n), state.astype(np.float64).copy()
    for i in range(n):
        t, last = 0.0, np.zeros(k)
        for j in range(int(valid[i])):
            c = int(marks[i, j])
            t += lags[i, j]
            d = t - last[c]
            ed = np.exp(-beta[c] * d)
            ll[i] += np.log(lda[i, c] + alpha[c] * beta[c] * out[i, c] * ed) \
                - lda[i, c] * d - alpha[c] * out[i, c] * (1 - ed)
            out[i, c] = 1 + out[i, c] * ed
            last[c] = t
        d = max_time[i] - last
        ed = np.exp(-beta * d)
        ll[i] -= (lda[i] * d + alpha * out[i] * (1 - ed)).sum()
        out[i] *= ed
    return [ll, out]


CASES += [
    # the state output's head gradient is not read (as MXNet): tests/test_ops_misc.py checks
    # the gradient of lda, alpha and beta against MXNet's numbers
    OpCase("_contrib_hawkesll", [(3, 2), (2,), (2,), (3, 2), (3, 4), (3, 4), (3,), (3,)],
           hawkes_twin, gen=_hawkes_gen, dtypes=F, rtol=1e-4, grad_inputs=()),
]
