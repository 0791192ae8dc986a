"""The ``counting`` plugin: a subgraph backend whose regions run with graphexec's native
kernels, each run counted in :data:`gx_counting.RUNS`, plus an observer of partitionings.

graphexec imports this module through the entry point ``counting = "gx_counting.plugin"``
(group ``graphexec.plugins``) and calls its ``@hookimpl`` functions; nothing here runs at
import time except the class definitions.
"""
from __future__ import annotations

from typing import Any, Callable

import gx_counting

from graphexec.core.hookspecs import hookimpl
from graphexec.core.subgraph import RegionCall, SubgraphBackend, SubgraphProperty, native_runner

__all__ = ["CountingProperty", "make_backend", "graphexec_register_subgraph_backends",
           "graphexec_partition_done", "DEFAULT_OPS"]

#: the operators the backend claims unless the ``op_names`` option replaces them
DEFAULT_OPS = frozenset({"exp", "sin", "cos", "tanh", "elemwise_add", "_mul_scalar"})


class CountingProperty(SubgraphProperty):
    """Claims the operators in ``op_names`` (the inherited op-name selector grows convex
    regions of them); a region runs as a nested native plan and counts each run."""

    name = "counting"
    default_attrs = {"op_names": DEFAULT_OPS}

    def create_runner(self, region: RegionCall) -> Callable[[], None]:
        run = native_runner(region)
        node = region.node_name

        def counted() -> None:
            run()
            gx_counting.RUNS[node] += 1
        return counted


def make_backend() -> SubgraphBackend:
    """A fresh ``counting`` backend (graphexec calls this at every partitioning)."""
    return SubgraphBackend("counting", [CountingProperty()],
                           options=("op_names", "min_size", "exclude_ops"))


@hookimpl
def graphexec_register_subgraph_backends(
        register: Callable[[str, Callable[[], SubgraphBackend]], None]) -> None:
    """Register the ``counting`` backend."""
    register("counting", make_backend)


@hookimpl
def graphexec_partition_done(symbol: Any, plan: Any) -> None:
    """Keep the last partition plan (of any backend) in :data:`gx_counting.LAST_PLAN`."""
    gx_counting.LAST_PLAN = plan
