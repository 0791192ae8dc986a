"""The pass manager: passes are named functions ``Graph -> Graph``; a failure names the pass
and the passes that ran before it."""
from __future__ import annotations

from typing import Callable

from ..errors import GraphexecError, PassError
from ..graph import Graph

__all__ = ["register_pass", "get_pass", "list_passes", "apply_passes"]

PassFn = Callable[[Graph], Graph]
_PASSES: dict[str, tuple[PassFn, tuple[str, ...]]] = {}


def register_pass(name: str, requires: tuple[str, ...] = ()):
    """Decorator registering ``fn`` as pass ``name``; ``requires`` lists the graph attributes
    it reads (checked before it runs)."""
    def deco(fn: PassFn) -> PassFn:
        _PASSES[name] = (fn, tuple(requires))
        fn.pass_name = name  # type: ignore[attr-defined]
        return fn
    return deco


def get_pass(name: str) -> PassFn:
    if name not in _PASSES:
        raise PassError(f"no graph pass named {name!r}; registered: {', '.join(sorted(_PASSES))}")
    return _PASSES[name][0]


def list_passes() -> list[str]:
    return sorted(_PASSES)


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
