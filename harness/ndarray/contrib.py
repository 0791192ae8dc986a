"""``gx.nd.contrib``: MXNet's ``mx.nd.contrib`` namespace, the ``_contrib_<name>`` operators
on NDArrays (``gx.nd.contrib.BilinearResize2D(x, height=4, width=4)``), resolved on
attribute access like ``gx.nd.<op>``."""
from __future__ import annotations

from typing import Any

from graphexec.core.ops.registry import all_names, op_function

from .imperative import invoke


def __getattr__(name: str) -> Any:
    return op_function("graphexec.nd.contrib", name, "_contrib_", invoke)


def __dir__() -> list[str]:
    return sorted(n[len("_contrib_"):] for n in all_names() if n.startswith("_contrib_"))
