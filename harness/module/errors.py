"""Errors of the module API."""
from __future__ import annotations

from graphexec.core.ir.errors import GraphexecError

__all__ = ["ModuleError", "ModuleStateError"]


class ModuleError(GraphexecError, ValueError):
    """A module got inputs that do not fit it (names, shapes, batch sizes, arguments)."""


class ModuleStateError(GraphexecError, RuntimeError):
    """A module method was called before the step it needs (bind, init_params,
    init_optimizer)."""
