"""``gx.nd.contrib``: MXNet's ``mx.nd.contrib`` namespace, the ``_contrib_<name>`` operators
on NDArrays (``gx.nd.contrib.BilinearResize2D(x, height=4, width=4)``), resolved on
attribute access like ``gx.nd.<op>``."""
from __future__ import annotations

from typing import Any

from graphexec.core.ops.registry import all_names, find_op

from .imperative import invoke


def __getattr__(name: str) -> Any:
    op_name = f"_contrib_{name}"
    if name.startswith("__") or find_op(op_name) is None:
        raise AttributeError(f"module 'graphexec.nd.contrib' has no attribute {name!r} (no "
                             f"operator {op_name!r} is registered)")

    def op_function(*args: Any, **kwargs: Any) -> Any:
        return invoke(op_name, args, kwargs)
    op_function.__name__ = name
    op_function.__doc__ = find_op(op_name).__doc__
    return op_function


def __dir__() -> list[str]:
    return sorted(n[len("_contrib_"):] for n in all_names() if n.startswith("_contrib_"))
