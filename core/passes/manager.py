"""The pass manager: passes are named functions ``Graph -> Graph``; a failure names the pass
and the passes that ran before it.

Besides the passes the core runs by name, a plugin may add passes at a named point of the
bind pipeline (a *stage*, see :data:`STAGES`) through ``graphexec_register_passes``: the
pipeline runs every pass registered for a stage, in registration order, and knows none of
them by name (the fused backend's pointwise fusion is one).
"""
from __future__ import annotations

from typing import Callable

from ..ir.errors import GraphexecError, PassError
from ..ir.graph import Graph

__all__ = ["register_pass", "get_pass", "list_passes", "apply_passes", "run_stage", "STAGES"]

PassFn = Callable[[Graph], Graph]

#: Named points of the bind pipeline (``core/runtime/pipeline.py``) where registered passes run:
#: ``after_gradient``: on the executed graph, forward and backward, once the gradient pass,
#: the context assignment and shape/dtype inference are done (graph attrs ``shape``,
#: ``dtype``, ``default_ctx``, ``backend_options``, ``partition_plan`` and, in a training
#: bind, ``num_forward_nodes`` / ``num_forward_outputs``).
STAGES = ("after_gradient",)

_PASSES: dict[str, tuple[PassFn, tuple[str, ...]]] = {}
_STAGED: dict[str, list[str]] = {stage: [] for stage in STAGES}


def register_pass(name: str, requires: tuple[str, ...] = (), stage: str | None = None):
    """Decorator registering ``fn`` as pass ``name``; ``requires`` lists the graph attributes
    it reads (checked before it runs); ``stage`` (one of :data:`STAGES`) also runs it at that
    point of every bind."""
    if stage is not None and stage not in _STAGED:
        raise PassError(f"pass {name!r}: unknown stage {stage!r}; stages are {list(STAGES)}")

    def deco(fn: PassFn) -> PassFn:
        _PASSES[name] = (fn, tuple(requires))
        fn.pass_name = name  # type: ignore[attr-defined]
        if stage is not None and name not in _STAGED[stage]:
            _STAGED[stage].append(name)
        return fn
    return deco


def get_pass(name: str) -> PassFn:
    if name not in _PASSES:
        raise PassError(f"no graph pass named {name!r}; registered: {', '.join(sorted(_PASSES))}")
    return _PASSES[name][0]


def list_passes() -> list[str]:
    return sorted(_PASSES)


def run_stage(graph: Graph, stage: str) -> Graph:
    """Run the passes registered for ``stage`` (``graph`` itself when there are none)."""
    return apply_passes(graph, _STAGED[stage]) if _STAGED[stage] else graph


def apply_passes(graph: Graph, names: list[str]) -> Graph:
    """Run the passes in order. User-facing errors (GraphexecError) propagate unchanged; any
    other exception becomes a PassError naming the pass and the passes before it."""
    done: list[str] = []
    for name in names:
        fn = get_pass(name)
        missing = [r for r in _PASSES[name][1] if r not in graph.attrs]
        if missing:
            raise PassError(f"pass {name!r} needs graph attribute(s) {missing}, which no pass "
                            f"before it provided (ran: {done or 'none'})")
        try:
            graph = fn(graph)
        except GraphexecError:
            raise
        except Exception as exc:
            raise PassError(f"pass {name!r} failed after the following passes: {done}: "
                            f"{type(exc).__name__}: {exc}") from exc
        done.append(name)
    return graph
