"""ExecPlan: the arrays of every graph entry and the kernel callables that fill them.

Kernels are specialised once per (plan, is_train) at first use, so a forward is a loop over
zero-argument callables (the Python floor for per-node dispatch).
"""
from __future__ import annotations

from typing import Any, Callable

from .context import Context
from .errors import BindError, GraphexecError, KernelError
from .graph import Graph
from .kernels import KernelCall, kernel_registry
from .ops.common import known

__all__ = ["ExecPlan"]


class ExecPlan:
    """Allocates every non-variable entry and runs the op nodes in topological order."""

    def __init__(self, graph: Graph, ctx: Context, arg_arrays: list, aux_arrays: list):
        self.graph = graph
        self.ctx = ctx
        self.xp = ctx.xp
        ig = graph.indexed
        _check_complete(graph)
        self.arrays = self._allocate(ig, arg_arrays, aux_arrays)
        self.outputs = [self.arrays[e] for e in ig.outputs]
        self.op_nodes = [nid for nid, n in enumerate(ig.nodes) if n.op is not None]
        self._kernels: dict[bool, list[Callable[[], None]]] = {}
        self._states: dict[int, dict] = {}
        self._monitor: tuple[Callable, bool] | None = None

    def _allocate(self, ig, arg_arrays: list, aux_arrays: list) -> list:
        shapes, dtypes = self.graph.attrs["shape"], self.graph.attrs["dtype"]
        arrays: list[Any] = [None] * ig.num_entries
        rp = ig.row_ptr
        for nid, arr in zip(ig.arg_nodes, arg_arrays):
            arrays[rp[nid]] = arr
        aux_ids = [i for i in ig.input_nodes if i in ig.mutable_input_nodes]
        for nid, arr in zip(aux_ids, aux_arrays):
            arrays[rp[nid]] = arr
        zeros = self.xp.zeros
        total = 0
        for nid, node in enumerate(ig.nodes):
            if node.op is None:
                continue
            for e in range(rp[nid], rp[nid + 1]):
                arr = zeros(shapes[e], dtype=dtypes[e])
                arrays[e] = arr
                total += arr.nbytes
        self.allocated_bytes = total
        return arrays

    # -- kernels -----------------------------------------------------------------------------
    def kernels(self, is_train: bool) -> list[Callable[[], None]]:
        plan = self._kernels.get(is_train)
        if plan is None:
            plan = self._kernels[is_train] = [self._make_kernel(nid, is_train)
                                              for nid in self.op_nodes]
        return plan

    def _make_kernel(self, nid: int, is_train: bool) -> Callable[[], None]:
        from .random import generator
        ig = self.graph.indexed
        node = ig.nodes[nid]
        rp = ig.row_ptr
        outs = self.arrays[rp[nid]:rp[nid + 1]]
        call = KernelCall(node.name, node.op.name, node.params,
                          [self.arrays[e] for e in ig.node_inputs[nid]], outs,
                          ["write"] * len(outs), self.xp, self.ctx, is_train,
                          self._states.setdefault(nid, {}), generator(), node.attrs)
        device = self.ctx.device_type
        try:
            return kernel_registry().lookup(node.op.name, device)(call)
        except GraphexecError as exc:
            raise type(exc)(f"node {node.name!r} ({node.op.name}): {exc}") from None
        except Exception as exc:
            raise KernelError(f"creating the kernel of node {node.name!r} ({node.op.name}) "
                              f"failed: {type(exc).__name__}: {exc}") from exc

    # -- running ------------------------------------------------------------------------------
    def run(self, is_train: bool) -> None:
        plan = self.kernels(is_train)
        if self._monitor is not None:
            self._run_monitored(plan)
            return
        i = 0
        try:
            for i, fn in enumerate(plan):
                fn()
        except Exception as exc:
            raise self._kernel_error(i, exc) from exc

    def _kernel_error(self, i: int, exc: Exception) -> KernelError:
        node = self.graph.indexed.nodes[self.op_nodes[i]]
        return KernelError(f"While executing node {node.name!r} ({node.op.name}): "
                           f"{type(exc).__name__}: {exc}")

    def set_monitor(self, callback: Callable | None, monitor_all: bool) -> None:
        self._monitor = None if callback is None else (callback, bool(monitor_all))

    def _run_monitored(self, plan: list) -> None:
        callback, monitor_all = self._monitor
        ig = self.graph.indexed
        rp = ig.row_ptr
        for i, (nid, fn) in enumerate(zip(self.op_nodes, plan)):
            node = ig.nodes[nid]
            if monitor_all:
                self._monitor_inputs(callback, nid)
            try:
                fn()
            except Exception as exc:
                raise self._kernel_error(i, exc) from exc
            for k, name in enumerate(node.op.output_names(node.params)):
                callback(f"{node.name}_{name}", self.arrays[rp[nid] + k])

    def _monitor_inputs(self, callback: Callable, nid: int) -> None:
        ig = self.graph.indexed
        node = ig.nodes[nid]
        names = node.op.input_names(node.params) if node.op.named_inputs else None
        for k, (e, eid) in enumerate(zip(node.inputs, ig.node_inputs[nid])):
            if e.node.op is None:
                callback(e.node.name, self.arrays[eid])
            label = names[k] if names else f"input{k}"
            callback(f"{node.name}_{label}", self.arrays[eid])


def _check_complete(graph: Graph) -> None:
    ig = graph.indexed
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    bad = []
    for nid, node in enumerate(ig.nodes):
        for k in range(ig.row_ptr[nid], ig.row_ptr[nid + 1]):
            if not known(shapes[k]) or dtypes[k] is None:
                bad.append(f"{node.name} output {k - ig.row_ptr[nid]}: shape "
                           f"{shapes[k]}, dtype {dtypes[k]}")
    if bad:
        raise BindError("cannot bind: the shape or dtype of these entries could not be "
                        "inferred:\n  " + "\n  ".join(bad[:20]))
