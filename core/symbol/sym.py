"""``gx.sym``: Symbol, Variable, Group, load/load_json and one function per operator
(``gx.sym.FullyConnected(...)``), resolved from the operator registry on attribute access so
plugin operators appear too."""
from __future__ import annotations

from typing import Any

from ..ops.registry import all_names, op_function
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
    return op_function("graphexec.sym", name, "", create_op_symbol)


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(all_names()))
