"""auto: the cost-aware strategy. Every other registered backend proposes its regions, each
region is timed with that backend and natively, and each goes to whichever is faster
(:mod:`.strategy`). It is a backend like the others, built only on the core's subgraph API,
and registered as a plugin (listed in plugins.toml)."""
from __future__ import annotations

from graphexec.core.hookspecs import hookimpl

from .strategy import AUTO, make_auto_backend

__all__ = ["graphexec_register_subgraph_backends"]


@hookimpl
def graphexec_register_subgraph_backends(register) -> None:
    """The ``auto`` strategy, registered like any backend."""
    register(AUTO, make_auto_backend)
