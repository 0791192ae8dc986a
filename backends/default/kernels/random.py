"""Kernels of the random sampling operators (core/ops/random.py). Every draw comes from
``call.rng``, graphexec's seeded process-wide generator (``gx.random.seed``), on the host;
results are copied into the output (its dtype, its device)."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.random import DISTRIBUTIONS

from .base import kernel


def _gamma_poisson(rng, shape, scale, size):
    """Poisson with a Gamma(shape, scale) rate: MXNet's negative binomial samplers."""
    return rng.poisson(rng.gamma(shape, scale, size))


def _negative_binomial(rng, k, p, size):
    k, p = np.broadcast_to(k, size), np.broadcast_to(p, size)
    with np.errstate(divide="ignore"):
        scale = np.where(p > 0, (1 - p) / np.where(p > 0, p, 1), np.inf)
    return _gamma_poisson(rng, k, scale, size)


def _generalized_negative_binomial(rng, mu, alpha, size):
    mu, alpha = np.broadcast_to(mu, size), np.broadcast_to(alpha, size)
    safe = np.where(alpha > 0, alpha, 1)
    mixed = _gamma_poisson(rng, 1 / safe, safe * mu, size)
    return np.where(alpha > 0, mixed, rng.poisson(mu, size))


SAMPLERS = {
    "uniform": lambda rng, low, high, size: rng.uniform(low, high, size),
    "normal": lambda rng, loc, scale, size: rng.normal(loc, scale, size),
    "gamma": lambda rng, alpha, beta, size: rng.gamma(alpha, beta, size),
    "exponential": lambda rng, lam, size: rng.exponential(1 / np.asarray(lam, float), size),
    "poisson": lambda rng, lam, size: rng.poisson(lam, size),
    "negative_binomial": _negative_binomial,
    "generalized_negative_binomial": _generalized_negative_binomial,
}

#: parameter-array checks of ``_sample_*`` (the scalar ones are made at shape inference)
_ARRAY_CHECKS = {
    "uniform": lambda low, high: (low <= high, "low must be <= high"),
    "normal": lambda mu, sigma: (sigma > 0, "sigma must be positive"),
    "gamma": lambda a, b: ((a > 0) & (b > 0), "alpha and beta must be positive"),
    "exponential": lambda lam: (lam > 0, "lam must be positive"),
    "poisson": lambda lam: (lam >= 0, "lam must be non-negative"),
    "negative_binomial": lambda k, p: ((k >= 0) & (p >= 0) & (p <= 1),
                                       "k must be non-negative and p in [0, 1]"),
    "generalized_negative_binomial": lambda mu, a: ((mu >= 0) & (a >= 0),
                                                    "mu and alpha must be non-negative"),
}


def _store(xp, out, values) -> None:
    xp.copyto(out, xp.asarray(np.asarray(values)), casting="unsafe")


def _draw(distr: str, rng, params: list, size):
    """``SAMPLERS[distr]``'s draw, numpy's refusal of a Poisson rate it cannot sample (from
    about 9.2e18; a negative binomial with p = 0 has an infinite one) said in the operator's
    terms (MXNet's samplers overflow there: their draws come out as -2147483648)."""
    try:
        return SAMPLERS[distr](rng, *params, size)
    except ValueError as exc:
        if "lam value too large" not in str(exc):
            raise
        raise ValueError(f"{distr}: the Poisson rate of a draw is too large to sample "
                         f"(numpy's sampler takes rates below about 9.2e18; parameters "
                         f"{[np.asarray(a).tolist() for a in params]})") from None


def _random_kernel(distr: str):
    names = [n for n, _ in DISTRIBUTIONS[distr]]

    def factory(call):
        xp, out = call.xp, call.outputs[0]
        values = [getattr(call.params, n) for n in names]
        return lambda: _store(xp, out, _draw(distr, call.rng, values, out.shape))
    return factory


def _sample_kernel(distr: str):
    def factory(call):
        xp, out, n_extra = call.xp, call.outputs[0], len(call.params.shape)

        def run():
            params = [np.asarray(xp.asnumpy(a) if hasattr(xp, "asnumpy") else a,
                                 dtype=np.float64) for a in call.inputs]
            ok, want = _ARRAY_CHECKS[distr](*params)
            if not np.all(ok):
                raise ValueError(f"invalid parameters of the {distr} distribution at "
                                 f"{np.argwhere(~ok)[0].tolist()}: {want}")
            shaped = [p.reshape(p.shape + (1,) * n_extra) for p in params]
            _store(xp, out, _draw(distr, call.rng, shaped, out.shape))
        return run
    return factory


for _distr in DISTRIBUTIONS:
    kernel(f"_random_{_distr}", f"_random_{_distr}_like")(_random_kernel(_distr))
    kernel(f"_sample_{_distr}")(_sample_kernel(_distr))


@kernel("_random_randint")
def randint(call):
    xp, out, p = call.xp, call.outputs[0], call.params
    return lambda: _store(xp, out, call.rng.integers(p.low, p.high, out.shape)
                          if p.high > p.low else np.full(out.shape, p.low))


def _host(xp, a):
    return xp.asnumpy(a) if hasattr(xp, "asnumpy") else np.asarray(a)


@kernel("_sample_multinomial")
def multinomial(call):
    """Per row of probabilities, the first class whose cumulative probability exceeds a
    uniform draw (MXNet's rule); with get_prob also the log-probability of the draw."""
    xp, data, outs = call.xp, call.inputs[0], call.outputs
    k = data.shape[-1]
    rows = data.size // k

    def run():
        probs = _host(xp, data).reshape(rows, k).astype(np.float64)
        if (probs < 0).any():
            raise ValueError("data holds a negative probability")
        draws = call.rng.random((rows, outs[0].size // rows))
        cdf = np.cumsum(probs, axis=1)
        idx = np.minimum((draws[:, :, None] >= cdf[:, None, :]).sum(-1), k - 1)
        _store(xp, outs[0], idx.reshape(outs[0].shape))
        if len(outs) > 1:
            with np.errstate(divide="ignore"):
                logp = np.log(np.take_along_axis(probs, idx, 1))
            _store(xp, outs[1], logp.reshape(outs[1].shape))
    return run


@kernel("_backward_sample_multinomial")
def multinomial_backward(call):
    """d log p[s] / dp[s] = 1 / p[s], summed over the draws of each row."""
    xp, (og, data, sample), dx = call.xp, call.inputs, call.outputs[0]
    k = data.shape[-1]
    rows = data.size // k

    def run():
        probs = _host(xp, data).reshape(rows, k)
        idx = _host(xp, sample).reshape(rows, -1).astype(np.int64)
        grad = np.zeros((rows, k), np.float64)
        np.add.at(grad, (np.arange(rows)[:, None], idx),
                  _host(xp, og).reshape(rows, -1) / np.take_along_axis(probs, idx, 1))
        _store(xp, dx, grad.reshape(dx.shape))
    return run


@kernel("_shuffle")
def shuffle(call):
    """A random permutation of the first axis."""
    xp, data, out = call.xp, call.inputs[0], call.outputs[0]

    def run():
        perm = xp.asarray(call.rng.permutation(data.shape[0]))
        xp.copyto(out, data[perm])
    return run


@kernel("_sample_unique_zipfian")
def unique_zipfian(call):
    """Per batch row, distinct classes round(exp(u log range_max)) - 1 drawn until enough
    are distinct (MXNet's rule); num_tries counts every draw."""
    xp, (samples, tries), p = call.xp, call.outputs, call.params
    batch, want = p.shape
    log_range = np.log(p.range_max)

    def run():
        out = np.empty((batch, want), np.int64)
        counts = np.empty(batch, np.int64)
        for b in range(batch):
            seen: dict = {}
            n = 0
            while len(seen) < want:
                drawn = np.floor(np.exp(call.rng.random(want) * log_range) + 0.5) - 1
                for v in drawn.astype(np.int64):
                    n += 1
                    seen.setdefault(int(v), None)
                    if len(seen) == want:
                        break
            out[b] = list(seen)
            counts[b] = n
        _store(xp, samples, out)
        _store(xp, tries, counts)
    return run
