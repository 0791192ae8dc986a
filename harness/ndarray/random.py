"""``gx.random`` / ``gx.nd.random``: MXNet's samplers (``uniform``, ``normal``, ``randn``,
``randint``, ``exponential``, ``gamma``, ``poisson``, ``negative_binomial``,
``multinomial``, ``shuffle``) and ``seed``, drawing from the one process-wide generator the
executor's random operators (Dropout) use, so ``seed`` makes both repeatable.

Distribution parameters are scalars, or NDArrays of one shape: then each parameter element
gets ``shape`` samples (output shape ``param.shape + shape``), as MXNet's ``_sample_*``.
The streams differ from MXNet's (another generator): seeded runs repeat, values do not match
MXNet's draws.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from graphexec.core.ir.ndarray import ArrayValueError, NDArray, user_array
from graphexec.core.ir.random import generator, seed

from .creation import as_ctx

__all__ = ["seed", "generator", "uniform", "normal", "randn", "randint", "exponential",
           "gamma", "poisson", "negative_binomial", "multinomial", "shuffle"]


def _shape(shape: Any) -> tuple[int, ...]:
    if shape is None or shape == ():
        return ()
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def _sample(draw: Callable, params: tuple, shape: Any, dtype: Any, ctx: Any, out: Any,
            default_dtype: str = "float32") -> NDArray:
    shape = _shape(shape)
    arrays = [p for p in params if isinstance(p, np.ndarray)]
    if arrays:
        base = arrays[0].shape
        if any(a.shape != base for a in arrays):
            raise ArrayValueError(f"sampling parameters must share one shape, got "
                                  f"{[a.shape for a in arrays]}")
        expanded = [np.asarray(p).reshape(base + (1,) * len(shape))
                    if isinstance(p, np.ndarray) else p for p in params]
        size = base + shape
        ctx = ctx or getattr(arrays[0], "context", None)
    else:
        expanded, size = list(params), shape or (1,)
    values = draw(generator(), *expanded, size=size)
    values = np.asarray(values, dtype=dtype or default_dtype)
    if out is not None:
        out[...] = values
        return out
    return user_array(values, as_ctx(ctx))


def uniform(low: Any = 0, high: Any = 1, shape: Any = None, dtype: Any = None, ctx: Any = None,
            out: Any = None, **kwargs: Any) -> NDArray:
    """Samples from U[low, high)."""
    return _sample(lambda g, a, b, size: g.uniform(a, b, size), (low, high), shape, dtype, ctx,
                   out)


def normal(loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None, ctx: Any = None,
           out: Any = None, **kwargs: Any) -> NDArray:
    """Samples from N(loc, scale^2)."""
    return _sample(lambda g, a, b, size: g.normal(a, b, size), (loc, scale), shape, dtype, ctx,
                   out)


def randn(*shape: int, loc: Any = 0, scale: Any = 1, dtype: Any = None, ctx: Any = None,
          out: Any = None, **kwargs: Any) -> NDArray:
    """Samples from N(loc, scale^2) with the shape given positionally."""
    return normal(loc, scale, shape, dtype, ctx, out)


def randint(low: int, high: int, shape: Any = None, dtype: Any = None, ctx: Any = None,
            out: Any = None, **kwargs: Any) -> NDArray:
    """Integers from [low, high) (int32 unless ``dtype``)."""
    return _sample(lambda g, a, b, size: g.integers(a, b, size), (low, high), shape, dtype, ctx,
                   out, "int32")


def exponential(scale: Any = 1, shape: Any = None, dtype: Any = None, ctx: Any = None,
                out: Any = None, **kwargs: Any) -> NDArray:
    """Samples from the exponential distribution with mean ``scale``."""
    return _sample(lambda g, s, size: g.exponential(s, size), (scale,), shape, dtype, ctx, out)


def gamma(alpha: Any = 1, beta: Any = 1, shape: Any = None, dtype: Any = None, ctx: Any = None,
          out: Any = None, **kwargs: Any) -> NDArray:
    """Samples from Gamma(shape ``alpha``, scale ``beta``)."""
    return _sample(lambda g, a, b, size: g.gamma(a, b, size), (alpha, beta), shape, dtype, ctx,
                   out)


def poisson(lam: Any = 1, shape: Any = None, dtype: Any = None, ctx: Any = None,
            out: Any = None, **kwargs: Any) -> NDArray:
    """Samples from Poisson(``lam``) (as floats, like MXNet)."""
    return _sample(lambda g, lm, size: g.poisson(lm, size), (lam,), shape, dtype, ctx, out)


def negative_binomial(k: Any = 1, p: Any = 1, shape: Any = None, dtype: Any = None,
                      ctx: Any = None, out: Any = None, **kwargs: Any) -> NDArray:
    """Failures before ``k`` successes of probability ``p``."""
    return _sample(lambda g, a, b, size: g.negative_binomial(a, b, size), (k, p), shape, dtype,
                   ctx, out)


def multinomial(data: NDArray, shape: Any = None, get_prob: bool = False, out: Any = None,
                dtype: Any = "int32", **kwargs: Any) -> Any:
    """Class indices drawn from the distributions in the last axis of ``data``; with
    ``get_prob`` also the log-probabilities of the draws."""
    probs = np.asarray(data, dtype=np.float64)
    n = int(np.prod(_shape(shape))) if shape not in (None, ()) else 1
    flat = probs.reshape(-1, probs.shape[-1])
    cdf = np.cumsum(flat, axis=1)
    u = generator().uniform(size=(len(flat), n)) * cdf[:, -1:]
    idx = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)])
    idx = np.minimum(idx, probs.shape[-1] - 1)
    out_shape = probs.shape[:-1] + _shape(shape)
    samples = user_array(idx.reshape(out_shape).astype(dtype), getattr(data, "context", None))
    if not get_prob:
        return samples
    logp = np.log(np.take_along_axis(flat, idx, axis=1)).reshape(out_shape).astype(data.dtype)
    return [samples, user_array(logp, getattr(data, "context", None))]


def shuffle(data: NDArray, **kwargs: Any) -> NDArray:
    """A copy of ``data`` with its first axis shuffled."""
    perm = generator().permutation(len(data))
    return user_array(np.asarray(data)[perm], getattr(data, "context", None))
