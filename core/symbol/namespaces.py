"""MXNet's operator namespaces under ``gx.sym``: ``gx.sym.linalg`` (``mx.sym.linalg.gemm2``)
and ``gx.sym.random`` (``mx.sym.random.uniform``). Each function applies the registered
operator and names its node after the short name, as MXNet does (``det0``, ``uniform0``)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

from ..ir.errors import ArgumentTypeError
from .symbol import Symbol, create_op_symbol

__all__ = ["linalg", "random", "op_function", "LINALG_OPS"]

LINALG_OPS = ("gemm", "gemm2", "potrf", "potri", "trmm", "trsm", "syrk", "gelqf", "syevd",
              "sumlogdiag", "extractdiag", "makediag", "extracttrian", "maketrian", "inverse",
              "det", "slogdet")


def op_function(op_name: str, hint: str) -> Callable[..., Symbol]:
    """A function applying ``op_name`` whose automatic node names count ``hint``."""
    def apply(*args: Any, **kwargs: Any) -> Symbol:
        return create_op_symbol(op_name, args, kwargs, hint=hint)
    apply.__name__ = hint
    apply.__doc__ = f"``{op_name}`` (MXNet's ``mx.sym.*.{hint}``)."
    return apply


#: ``gx.sym.linalg``: one function per ``_linalg_*`` operator
linalg = SimpleNamespace(**{short: op_function(f"_linalg_{short}", short)
                            for short in LINALG_OPS})


# -- gx.sym.random -------------------------------------------------------------------------------
#: distribution -> its parameters and their defaults, as mx.sym.random's functions take them
_RANDOM = {
    "uniform": (("low", 0), ("high", 1)),
    "normal": (("loc", 0), ("scale", 1)),
    "poisson": (("lam", 1),),
    "exponential": (("scale", 1),),
    "gamma": (("alpha", 1), ("beta", 1)),
    "negative_binomial": (("k", 1), ("p", 1)),
    "generalized_negative_binomial": (("mu", 1), ("alpha", 1)),
}


def _draw(distr: str, values: list, shape: Any, dtype: Any, kwargs: dict) -> Symbol:
    """MXNet's _random_helper: Symbol parameters give ``_sample_<distr>`` (one distribution
    per entry), numbers ``_random_<distr>``; mixing the two is an error."""
    if distr == "exponential":      # the operators take the rate, the function the scale
        values = [1.0 / values[0]]
    names = [n for n, _ in _RANDOM[distr]] if distr != "exponential" else ["lam"]
    extra = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
    if all(isinstance(v, Symbol) for v in values):
        return create_op_symbol(f"_sample_{distr}", values, {**extra, **kwargs})
    if any(isinstance(v, Symbol) for v in values) or \
            not all(isinstance(v, (int, float)) for v in values):
        raise ArgumentTypeError(f"random.{distr}: distribution parameters must be all Symbols "
                                f"or all numbers, got {[type(v).__name__ for v in values]}")
    return create_op_symbol(f"_random_{distr}", [],
                            {**dict(zip(names, values)), **extra, **kwargs})


def _distribution(distr: str) -> Callable[..., Symbol]:
    defaults = _RANDOM[distr]

    def draw(*args: Any, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
        values = list(args) + [kwargs.pop(n, d) for n, d in defaults[len(args):]]
        return _draw(distr, values, shape, dtype, kwargs)
    draw.__name__ = distr
    draw.__doc__ = (f"Samples of the {distr} distribution (mx.sym.random.{distr}): "
                    f"parameters {', '.join(n for n, _ in defaults)} as numbers "
                    f"(_random_{distr}) or Symbols (_sample_{distr}).")
    return draw


def _like(distr: str) -> Callable[..., Symbol]:
    names = [n for n, _ in _RANDOM[distr]] if distr != "exponential" else ["lam"]

    def draw(data: Symbol, *args: Any, **kwargs: Any) -> Symbol:
        kwargs.update(zip(names, args))
        return create_op_symbol(f"_random_{distr}_like", [data], kwargs,
                                hint=f"{distr}_like")
    draw.__name__ = f"{distr}_like"
    return draw


def _randn(*shape: int, loc: Any = 0, scale: Any = 1, dtype: Any = None,
           **kwargs: Any) -> Symbol:
    """Normal samples of the given shape (mx.sym.random.randn)."""
    return _draw("normal", [loc, scale], shape or None, dtype, kwargs)


def _randint(low: int, high: int, shape: Any = None, dtype: Any = None,
             **kwargs: Any) -> Symbol:
    """Integers drawn uniformly from [low, high) (mx.sym.random.randint)."""
    extra = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
    return create_op_symbol("_random_randint", [], {"low": low, "high": high, **extra,
                                                     **kwargs})


def _multinomial(data: Symbol, shape: Any = None, get_prob: bool = True,
                 dtype: Any = "int32", **kwargs: Any) -> Symbol:
    """Class indices drawn from the probabilities on data's last axis (and, as MXNet's
    function by default, their log-probabilities)."""
    extra = {"shape": shape} if shape is not None else {}
    return create_op_symbol("_sample_multinomial", [data],
                            {**extra, "get_prob": get_prob, "dtype": dtype, **kwargs})


def _shuffle(data: Symbol, **kwargs: Any) -> Symbol:
    """data with its first axis randomly permuted (mx.sym.random.shuffle)."""
    return create_op_symbol("_shuffle", [data], kwargs)


#: ``gx.sym.random``: mx.sym.random's functions
random = SimpleNamespace(
    **{d: _distribution(d) for d in _RANDOM},
    **{f"{d}_like": _like(d) for d in _RANDOM},
    randn=_randn, randint=_randint, multinomial=_multinomial, shuffle=_shuffle)
