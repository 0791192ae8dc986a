"""Hook specifications of graphexec plugins (pluggy project name ``graphexec``).

Every hook is an empty function whose docstring is its contract. Built-in features are
ordinary plugins listed in ``plugins.toml``; third-party packages register through the
entry-point group ``graphexec.plugins``. Implement hooks with ``@graphexec.hookimpl``.
"""
from __future__ import annotations

from typing import Any, Callable

import pluggy

hookspec = pluggy.HookspecMarker("graphexec")
hookimpl = pluggy.HookimplMarker("graphexec")

__all__ = ["hookspec", "hookimpl"]


@hookspec
def graphexec_register_ops(register: Callable[[Any], Any]) -> None:
    """Declare operators: call ``register(OpDef(...))`` once per operator.

    Called once, when ``graphexec`` is imported, before any other registration hook. A plugin
    may replace a built-in declaration by registering the same name. Not ``firstresult``:
    every plugin is called.
    """


@hookspec
def graphexec_register_kernels(registry: Any) -> None:
    """Register kernel factories: ``registry.register(op_name, factory, device="any")``.

    ``registry`` is the process-wide :class:`graphexec.core.runtime.kernels.KernelRegistry`; a factory
    takes a ``KernelCall`` and returns a zero-argument callable (see ``core/runtime/kernels.py``).
    Called once, after every plugin's ops are registered.
    """


@hookspec
def graphexec_register_passes(register: Callable[..., Any]) -> None:
    """Add graph passes: ``register(name, requires=(...), stage=None)(fn)`` with
    ``fn: Graph -> Graph``.

    Passes are pure: they return a new Graph (or the input unchanged). ``requires`` names the
    graph attributes the pass reads. With ``stage`` (one of
    ``graphexec.core.passes.manager.STAGES``, e.g. ``"after_gradient"``) the bind pipeline
    runs the pass at that point of every bind, without knowing it by name (the fused
    backend's MXNET_USE_FUSION pass is registered so). Called once at start-up.
    """


@hookspec
def graphexec_executor_bound(executor: Any) -> None:
    """Observe a newly bound executor (for logs, profilers, A/B reports). Return value ignored;
    called after every bind / simple_bind / reshape."""


@hookspec
def graphexec_register_subgraph_backends(register: Callable[[str, Callable[[], Any]], None]) -> None:
    """Register subgraph backends: ``register(name, factory)`` where ``factory()`` returns a
    fresh :class:`graphexec.core.subgraph.SubgraphBackend` (called at every partitioning, so
    per-bind options never leak). Called once at start-up; names must be unique."""


@hookspec
def graphexec_partition_done(symbol: Any, plan: Any) -> None:
    """Observe a partitioning: ``symbol`` is the partitioned symbol, ``plan`` the
    :class:`graphexec.core.subgraph.PartitionPlan` (regions, per-node decisions). Called after
    every bind / optimize_for / partition that applied at least one backend."""


@hookspec
def graphexec_executor_run(executor: Any, segment: str, is_train: bool, seconds: float) -> None:
    """Observe execution (profilers, A/B reports): called after every ``forward`` (segment
    "forward") and ``backward`` (segment "backward") with the wall time it took. Only executors
    bound while an implementation is registered call it, so it costs nothing otherwise."""
