"""MXNet's operator namespaces under ``gx.sym``: ``gx.sym.linalg`` (``mx.sym.linalg.gemm2``)
and ``gx.sym.random`` (``mx.sym.random.uniform``). Each function applies the registered
operator and names its node after the short name, as MXNet does (``det0``, ``uniform0``)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

from .symbol import Symbol, create_op_symbol

__all__ = ["linalg", "op_function"]

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
