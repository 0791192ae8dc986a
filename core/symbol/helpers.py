"""MXNet's ``mx.sym`` helper functions that pick an operator from their arguments' kinds:
``maximum``, ``minimum``, ``pow`` / ``power``, ``hypot`` (a Symbol or a number on either
side, as MXNet 1.9.1's ``symbol.py``), and the ``_internal`` namespace."""
from __future__ import annotations

import numbers
from typing import Any

from ..ir.errors import ArgumentTypeError
from ..ops.registry import find_op, internal_name
from .symbol import Symbol, create_op_symbol, symbol_method

__all__ = ["maximum", "minimum", "pow", "power", "hypot", "internal", "arange", "linspace", "eye"]


def _pick(name: str, left: Any, right: Any, sym_op: str, scalar_op: str,
          rscalar_op: str, numeric) -> Any:
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return create_op_symbol(sym_op, [left, right], {})
    if isinstance(left, Symbol) and isinstance(right, numbers.Number):
        return create_op_symbol(scalar_op, [left], {"scalar": right})
    if isinstance(left, numbers.Number) and isinstance(right, Symbol):
        return create_op_symbol(rscalar_op, [right], {"scalar": left})
    if isinstance(left, numbers.Number) and isinstance(right, numbers.Number):
        return numeric(left, right)
    raise ArgumentTypeError(f"{name}: types ({type(left).__name__}, {type(right).__name__}) "
                            f"not supported; expected Symbols or numbers")


def maximum(left: Any, right: Any) -> Any:
    """Elementwise maximum of two symbols, a symbol and a number, or two numbers."""
    return _pick("maximum", left, right, "_Maximum", "_MaximumScalar", "_MaximumScalar",
                 lambda a, b: a if a > b else b)


def minimum(left: Any, right: Any) -> Any:
    """Elementwise minimum of two symbols, a symbol and a number, or two numbers."""
    return _pick("minimum", left, right, "_Minimum", "_MinimumScalar", "_MinimumScalar",
                 lambda a, b: a if a < b else b)


def pow(base: Any, exp: Any) -> Any:
    """``base ** exp`` elementwise; either may be a number (``_RPowerScalar`` when only
    ``exp`` is a symbol)."""
    return _pick("pow", base, exp, "_Power", "_PowerScalar", "_RPowerScalar",
                 lambda a, b: a ** b)


power = pow


def hypot(left: Any, right: Any) -> Any:
    """``sqrt(left**2 + right**2)`` elementwise; either may be a number."""
    return _pick("hypot", left, right, "_Hypot", "_HypotScalar", "_HypotScalar",
                 lambda a, b: (a ** 2 + b ** 2) ** 0.5)


class _Internal:
    """``gx.sym._internal.<op>``: every registered operator by name (MXNet keeps the
    underscore-prefixed ones there, ``_internal._plus``, ``_internal._copy``, ...)."""

    def __getattr__(self, name: str) -> Any:
        called = internal_name(name)
        op = find_op(called)
        if name.startswith("__") or op is None:
            raise AttributeError(f"gx.sym._internal has no operator {name!r}")

        def op_function(*args: Any, **kwargs: Any) -> Symbol:
            return create_op_symbol(called, args, kwargs)
        op_function.__name__ = name
        op_function.__doc__ = op.__doc__
        return op_function


internal = _Internal()


@symbol_method
def _gen_atomic_symbol(self: Symbol) -> Symbol:
    """MXNet's ``sym._gen_atomic_symbol()``: a new node applying this symbol's (single) node's
    operator with the same attributes to fresh input variables, with every output."""
    node = self._single_node("_gen_atomic_symbol")
    if node.op is None:
        raise ArgumentTypeError("_gen_atomic_symbol: a variable has no operator")
    attrs = {k: v for k, v in node.attrs.items() if not (k.startswith("__") and k.endswith("__"))}
    return create_op_symbol(node.op.name, [], {**attrs, "name": node.name})


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           infer_range: bool = False, name: str | None = None, dtype: Any = None) -> Symbol:
    """MXNet's ``mx.sym.arange``: ``_arange`` (float32 unless ``dtype``); in an integer
    dtype, start and step are converted first, as MXNet's kernel does."""
    return create_op_symbol("_arange", [], {
        "start": start, "stop": stop, "step": step, "repeat": repeat,
        "infer_range": infer_range, "name": name, "dtype": dtype or "float32"})


def linspace(start: float, stop: float, num: int, endpoint: bool = True,
             name: str | None = None, dtype: Any = None) -> Symbol:
    """MXNet's ``mx.sym.linspace``: ``_linspace`` (float32 unless ``dtype``)."""
    return create_op_symbol("_linspace", [], {"start": start, "stop": stop, "num": num,
                                              "endpoint": endpoint, "name": name,
                                              "dtype": dtype or "float32"})


def eye(N: int, M: int = 0, k: int = 0, dtype: Any = None, **kwargs: Any) -> Symbol:
    """MXNet's ``mx.sym.eye``: ``_eye`` (float32 unless ``dtype``)."""
    return create_op_symbol("_eye", [], {"N": N, "M": M, "k": k, "dtype": dtype or "float32",
                                         **kwargs})
