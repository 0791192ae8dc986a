"""``gx.sym``: Symbol, Variable, Group, load/load_json and one function per operator
(``gx.sym.FullyConnected(...)``), resolved from the operator registry on attribute access so
plugin operators appear too."""
from __future__ import annotations

from typing import Any

from ..ops.registry import all_names, find_op
from . import contrib
from .helpers import arange, eye, hypot, linspace, maximum, minimum, pow, power  # noqa: A004
from .helpers import internal as _internal
from .json_io import load, load_json
from .namespaces import linalg, random
from .op_wrappers import histogram, split_v2
from .symbol import Group, Symbol, Variable, create_op_symbol, var

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "contrib", "histogram",
           "split_v2", "linalg", "random", "maximum", "minimum", "pow", "power", "hypot",
           "_internal", "arange", "linspace", "eye"]


def __getattr__(name: str) -> Any:
    if name.startswith("__") or find_op(name) is None:
        raise AttributeError(f"module 'graphexec.sym' has no attribute {name!r} (no operator "
                             f"of that name is registered)")

    def op_function(*args: Any, **kwargs: Any) -> Symbol:
        return create_op_symbol(name, args, kwargs)
    op_function.__name__ = name
    op_function.__doc__ = find_op(name).__doc__
    return op_function


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(all_names()))
