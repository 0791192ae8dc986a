"""Cases for the random family (core/ops/random.py) and the densities (core/ops/pdf.py).

Sampling operators have no twin: each case's ``check`` asserts the support, the dtype and
the first two moments of 20000 draws (mean within 5 standard errors, variance within 15%).
tests/test_ops_random.py adds seeded reproducibility, independence and per-row checks. The
densities are deterministic: their twins are scipy.stats / closed forms, their gradients are
checked by finite differences (not with respect to the samples of discrete distributions,
whose gradient MXNet defines as zero) and against MXNet's values.
"""
from __future__ import annotations

import numpy as np
import scipy.special as sp
import scipy.stats as st

from . import OpCase

CASES: list[OpCase] = []
N = 20000
F = ("float32", "float64")

#: distribution -> (attributes, mean, variance, support test)
MOMENTS = {
    "uniform": ({"low": -1.0, "high": 3.0}, 1.0, 16 / 12, lambda x: (x >= -1) & (x < 3)),
    "normal": ({"loc": 2.0, "scale": 0.5}, 2.0, 0.25, np.isfinite),
    "gamma": ({"alpha": 2.0, "beta": 3.0}, 6.0, 18.0, lambda x: x > 0),
    "exponential": ({"lam": 4.0}, 0.25, 1 / 16, lambda x: x >= 0),
    "poisson": ({"lam": 3.0}, 3.0, 3.0, lambda x: (x >= 0) & (x == np.round(x))),
    "negative_binomial": ({"k": 3, "p": 0.4}, 4.5, 11.25,
                          lambda x: (x >= 0) & (x == np.round(x))),
    "generalized_negative_binomial": ({"mu": 2.0, "alpha": 0.5}, 2.0, 4.0,
                                      lambda x: (x >= 0) & (x == np.round(x))),
}


def moments_check(mean: float, var: float, support, dtype: str | None = None):
    """A check: every draw in the support, and the moments of all draws near (mean, var)."""
    def check(outputs, inputs, **attrs):
        x = outputs[0]
        if dtype is not None:
            assert x.dtype == np.dtype(dtype), x.dtype
        x = x.astype(np.float64).ravel()
        assert support(x).all(), "a draw lies outside the support"
        assert abs(x.mean() - mean) < 5 * np.sqrt(var / x.size) + 1e-12, (x.mean(), mean)
        assert abs(x.var() - var) <= 0.15 * var + 1e-12, (x.var(), var)
    return check


for distr, (attrs, mean, var, support) in MOMENTS.items():
    CASES.append(OpCase(f"_random_{distr}", [], None, attrs={**attrs, "shape": (N,)},
                        dtypes=("float32",), check=moments_check(mean, var, support,
                                                                 "float32"), grad_inputs=()))
    CASES.append(OpCase(f"_random_{distr}_like", [(100, 200)], None, attrs=attrs, dtypes=F,
                        check=moments_check(mean, var, support), grad_inputs=()))
CASES += [
    OpCase("_random_normal", [], None, attrs={"shape": (N,), "dtype": "float64"},
           id="f64", dtypes=("float32",), check=moments_check(0, 1, np.isfinite, "float64"),
           grad_inputs=()),
    OpCase("_random_randint", [], None, attrs={"low": -2, "high": 5, "shape": (N,)},
           dtypes=("float32",), grad_inputs=(),
           check=moments_check(1.0, 4.0, lambda x: (x >= -2) & (x < 5), "int32")),
]


def _sample_params(distr):
    """Per-row parameters (two rows, far apart) and their moments."""
    table = {
        "uniform": ([[0.0, 10.0], [1.0, 12.0]], lambda lo, hi: ((lo + hi) / 2,
                                                               (hi - lo) ** 2 / 12)),
        "normal": ([[0.0, 5.0], [1.0, 0.5]], lambda m, s: (m, s ** 2)),
        "gamma": ([[1.0, 4.0], [2.0, 0.5]], lambda a, b: (a * b, a * b * b)),
        "exponential": ([[1.0, 0.25]], lambda lam: (1 / lam, 1 / lam ** 2)),
        "poisson": ([[1.0, 20.0]], lambda lam: (lam, lam)),
        "negative_binomial": ([[2.0, 5.0], [0.5, 0.8]],
                              lambda k, p: (k * (1 - p) / p, k * (1 - p) / p ** 2)),
        "generalized_negative_binomial": ([[1.0, 4.0], [0.2, 0.0]],
                                          lambda mu, a: (mu, mu + a * mu * mu)),
    }
    return table[distr]


def _rows_check(moments):
    def check(outputs, inputs, **attrs):
        x = outputs[0].astype(np.float64)
        assert x.shape == inputs[0].shape + tuple(attrs["shape"]), x.shape
        mean, var = moments(*[np.asarray(a, np.float64) for a in inputs])
        for r in range(x.shape[0]):
            row = x[r].ravel()
            assert abs(row.mean() - mean[r]) < 5 * np.sqrt(var[r] / row.size) + 1e-12
            assert abs(row.var() - var[r]) <= 0.15 * var[r] + 1e-12
    return check


for distr in MOMENTS:
    params, moments = _sample_params(distr)
    CASES.append(OpCase(
        f"_sample_{distr}", [(2,)] * len(params), None, attrs={"shape": (100, 100)}, dtypes=F,
        gen=lambda rng, shape, dtype, i, params=params: np.asarray(params[i], dtype),
        check=_rows_check(moments), grad_inputs=()))


def _multinomial_check(outputs, inputs, shape=(), get_prob=False, **attrs):
    probs = np.asarray(inputs[0], np.float64)
    draws = outputs[0]
    assert draws.dtype == np.int32 and draws.shape == probs.shape[:-1] + tuple(shape)
    for r in range(probs.shape[0]):
        freq = np.bincount(draws[r].ravel(), minlength=probs.shape[-1]) / draws[r].size
        np.testing.assert_allclose(freq, probs[r], atol=5 * 0.5 / np.sqrt(draws[r].size))
    if get_prob:
        np.testing.assert_allclose(
            outputs[1], np.log(np.take_along_axis(probs, draws.reshape(2, -1), 1)).reshape(
                draws.shape), rtol=1e-3)


def _probs(rng, shape, dtype, i):
    return np.asarray([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]], dtype)


def _shuffle_check(outputs, inputs, **attrs):
    x, out = inputs[0], outputs[0]
    assert sorted(map(tuple, out.reshape(len(out), -1).tolist())) == \
        sorted(map(tuple, x.reshape(len(x), -1).tolist())), "rows are not a permutation"


def _zipfian_check(outputs, inputs, range_max, shape):
    samples, tries = outputs
    assert samples.dtype == np.int64 and samples.shape == tuple(shape)
    assert ((samples >= 0) & (samples < range_max)).all()
    assert all(len(set(r)) == shape[1] for r in samples.tolist()), "repeated class in a row"
    assert (tries >= shape[1]).all() and tries.shape == (shape[0],)


CASES += [
    OpCase("_sample_multinomial", [(2, 3)], None, attrs={"shape": (50, 100)}, gen=_probs,
           check=_multinomial_check, grad_inputs=()),
    OpCase("_sample_multinomial", [(2, 3)], None, attrs={"shape": (5000,), "get_prob": True},
           gen=_probs, check=_multinomial_check, grad_inputs=(), id="prob"),
    OpCase("_shuffle", [(50, 3)], None, check=_shuffle_check, grad_inputs=()),
    OpCase("_sample_unique_zipfian", [], None, attrs={"range_max": 50, "shape": (4, 20)},
           dtypes=("float32",), check=_zipfian_check, grad_inputs=()),
]


# -- densities ---------------------------------------------------------------------------------
def _extra(x, p):
    """``p`` with one axis per sample axis, to broadcast against the samples ``x``."""
    p = np.asarray(p, np.float64)
    return p.reshape(p.shape + (1,) * (np.ndim(x) - p.ndim))


def _pdf_twin(logpdf):
    def twin(x, *params, is_log=False):
        x = np.asarray(x, np.float64)
        lp = logpdf(x, *[_extra(x, p) for p in params])
        return lp if is_log else np.exp(lp)
    return twin


#: MXNet's normal density uses its float constant PI (mxnet_op::PI)
PI_SHIFT = 0.5 * np.log(np.pi / float(np.float32(np.pi)))
PDF_TWINS = {
    "uniform": lambda x, lo, hi: st.uniform.logpdf(x, lo, hi - lo),
    "normal": lambda x, m, s: st.norm.logpdf(x, m, s) + PI_SHIFT,
    "gamma": lambda x, a, b: st.gamma.logpdf(x, a, scale=1 / b),
    "exponential": lambda x, lam: st.expon.logpdf(x, scale=1 / lam),
    "poisson": lambda x, lam: st.poisson.logpmf(x, lam),
    "negative_binomial": lambda x, k, p: st.nbinom.logpmf(x, k, p),
    "generalized_negative_binomial": lambda x, mu, a: st.nbinom.logpmf(x, 1 / a,
                                                                      1 / (mu * a + 1)),
}
#: distribution -> (sample generator, parameter ranges)
PDF_GEN = {
    "uniform": (lambda rng, s: rng.uniform(0.1, 0.9, s), [(-1.0, 0.0), (1.0, 2.0)]),
    "normal": (lambda rng, s: rng.normal(0, 1, s), [(-1.0, 1.0), (0.5, 2.0)]),
    "gamma": (lambda rng, s: rng.uniform(0.2, 3, s), [(0.5, 3.0), (0.5, 2.0)]),
    "exponential": (lambda rng, s: rng.uniform(0, 3, s), [(0.5, 3.0)]),
    "poisson": (lambda rng, s: rng.integers(0, 6, s), [(0.5, 4.0)]),
    "negative_binomial": (lambda rng, s: rng.integers(0, 6, s), [(1.0, 4.0), (0.2, 0.8)]),
    "generalized_negative_binomial": (lambda rng, s: rng.integers(0, 6, s),
                                      [(0.5, 3.0), (0.2, 1.5)]),
}
DISCRETE = {"poisson", "negative_binomial", "generalized_negative_binomial"}


def _pdf_gen(distr):
    sample, ranges = PDF_GEN[distr]

    def gen(rng, shape, dtype, i):
        if i == 0:
            return sample(rng, shape).astype(dtype)
        return rng.uniform(*ranges[i - 1], shape).astype(dtype)
    return gen


for distr, logpdf in PDF_TWINS.items():
    n = len(PDF_GEN[distr][1])
    grads = tuple(range(1, n + 1)) if distr in DISCRETE else None
    for is_log in (False, True):
        CASES.append(OpCase(f"_random_pdf_{distr}", [(2, 3, 4)] + [(2,)] * n,
                            _pdf_twin(logpdf), attrs={"is_log": is_log}, dtypes=F,
                            gen=_pdf_gen(distr), id="log" if is_log else "",
                            grad_inputs=grads, rtol=1e-4, atol=1e-5))


def _dirichlet_twin(x, alpha, is_log=False):
    x = np.asarray(x, np.float64)
    a = np.asarray(alpha, np.float64)[:, None, :]
    lp = ((a - 1) * np.log(x)).sum(-1) + sp.gammaln(a.sum(-1)) - sp.gammaln(a).sum(-1)
    return lp if is_log else np.exp(lp)


def _dirichlet_gen(rng, shape, dtype, i):
    if i == 0:
        return rng.dirichlet([2.0, 3.0, 4.0], shape[:-1]).astype(dtype)
    return rng.uniform(0.5, 3.0, shape).astype(dtype)


CASES += [OpCase("_random_pdf_dirichlet", [(2, 5, 3), (2, 3)], _dirichlet_twin,
                 attrs={"is_log": is_log}, dtypes=F, gen=_dirichlet_gen,
                 id="log" if is_log else "", rtol=1e-4, atol=1e-5) for is_log in (False, True)]
