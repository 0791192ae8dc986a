"""ExecPlan: the arrays of every graph entry and the kernel callables that fill them.

Kernels are specialised once per (plan, is_train, segment) at first use, so a forward is a
loop over zero-argument callables (the Python floor for per-node dispatch). The graph holds
the forward nodes first (``num_forward_nodes``) and the backward nodes after them.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ir.context import Context
from ..ir.errors import GraphexecError, KernelError
from ..ir.graph import Graph
from ..ir.random import generator
from ..passes.manager import apply_passes
from ..passes.plan_memory import EXTERNAL
from . import frozen
from .bulk import bulk_enabled, compile_segments, segment_size
from .dynamic import DynamicShapes
from .kernels import (MONITORED_KERNEL_ATTR, KernelCall, Workspace, kernel_registry,
                      kernel_variant)
from .layout import channels_last_entries, channels_last_view, inplace_allowed

__all__ = ["ExecPlan"]


class ExecPlan:
    """Allocates every entry without external storage and runs op nodes in topological order.

    ``external`` maps entry ids to user arrays (arguments, auxiliary states, gradient buffers,
    head gradients); ``reqs`` maps entry ids to 'write' / 'add' / 'null' (default 'write')."""

    def __init__(self, graph: Graph, ctx: Context, external: dict[int, Any],
                 reqs: dict[int, str] | None = None, arg_grad_reqs: dict[int, str] | None = None,
                 shared_pool: list | None = None, workspaces: list | None = None):
        self.graph = graph
        self._workspaces = workspaces if workspaces is not None else []
        self.ctx = ctx
        self.xp = ctx.xp
        ig = graph.indexed
        self.node_ctx = graph.attrs.get("context") or [ctx] * len(ig.nodes)
        #: entries whose shape settles at run time (None: every shape known at bind)
        self.dynamic = DynamicShapes.of(graph)
        self.reqs = reqs or {}
        self.arg_grad_reqs = arg_grad_reqs or {}
        self.num_forward_nodes = graph.attrs.get("num_forward_nodes", len(ig.nodes))
        self.unread = _unread_backward_entries(graph, self.num_forward_nodes)
        self.arrays = self._allocate(ig, external, shared_pool)
        op_nodes = [nid for nid, n in enumerate(ig.nodes) if n.op is not None]
        self.segments = {"forward": [n for n in op_nodes if n < self.num_forward_nodes],
                         "backward": [n for n in op_nodes if n >= self.num_forward_nodes]}
        #: whether a forward node draws random numbers (a replayed forward must redraw them)
        self.forward_draws = any(ig.nodes[n].op.draws_random(ig.nodes[n].params)
                                 for n in self.segments["forward"])
        self._kernels: dict[tuple[bool, str], list[Callable[[], None]]] = {}
        # bulk execution is decided at bind from the environment, as MXNet's executor does
        # (and is off with dynamic shapes, as in MXNet)
        self._bulk_enabled = {t: bulk_enabled(t) and self.dynamic is None for t in (False, True)}
        self._train_segment_size = segment_size(True, 0)
        self._bulk: dict[tuple[bool, str], list] = {}
        self._states: dict[int, dict] = {}
        self._monitor: tuple[Callable, bool] | None = None

    def _allocate(self, ig, external: dict[int, Any], shared_pool: list | None) -> list:
        """Run the memory planner and carve every planned entry out of the pool buffers."""
        registry, device = kernel_registry(), self.ctx.device_type
        dynamic = self.dynamic.entries if self.dynamic is not None else frozenset()
        given = set(external) | dynamic  # dynamic ones: sized at run time
        #: the entries stored channels-last (:mod:`.layout`)
        self.channels_last = channels_last_entries(self.graph, given)
        alike = inplace_allowed(self.graph, self.channels_last)
        self.graph = apply_passes(self.graph.with_attrs(
            external_entries=given,
            inplace_ok=lambda node: registry.inplace_ok(node.op.name, device,
                                                          kernel_variant(node)) and alike(node)),
            ["plan_memory"])
        attrs = self.graph.attrs
        shapes, dtypes, sids = attrs["shape"], attrs["dtype"], attrs["storage_id"]
        self.pool = self._pool_buffers(attrs["storage_bytes"], attrs["storage_context"],
                                       shared_pool)
        self.allocated_bytes = attrs["planned_bytes"]
        arrays: list[Any] = [None] * ig.num_entries
        for eid, arr in external.items():
            arrays[eid] = arr
        views: dict[tuple, Any] = {}  # one array object per (storage, shape, dtype)
        for eid in range(ig.num_entries):
            if arrays[eid] is not None or eid in dynamic:
                continue
            if sids[eid] == EXTERNAL:  # a variable the executor owns (head gradients)
                nid, _ = ig.entry_node(eid)
                arrays[eid] = self.node_ctx[nid].zeros(shapes[eid], dtypes[eid])
                continue
            last = eid in self.channels_last
            key = (sids[eid], shapes[eid], dtypes[eid], last)
            view = views.get(key)
            if view is None:
                dt = dtypes[eid]
                count = 1
                for d in shapes[eid]:
                    count *= d
                buf = self.pool[sids[eid]][:count * dt.itemsize].view(dt)
                view = views[key] = (channels_last_view(buf, shapes[eid]) if last
                                     else buf.reshape(shapes[eid]))
            arrays[eid] = view
        return arrays

    def _pool_buffers(self, sizes: list[int], devices: list, shared_pool: list | None) -> list:
        """One buffer per storage id, on its device. With a ``shared_pool`` (the buffers of a
        shared executor), the largest storages first take the smallest free buffer of their
        device that fits, and new buffers join the shared pool (MXNet's
        InitDataEntryMemory); the pool holds (context, buffer) pairs."""
        devices = [d or self.ctx for d in devices]
        if shared_pool is None:
            return [d.zeros(n, "uint8") for d, n in zip(devices, sizes)]
        free = sorted((b.nbytes, i) for i, (_, b) in enumerate(shared_pool))
        pool: list[Any] = [None] * len(sizes)
        for sid in sorted(range(len(sizes)), key=lambda s: -sizes[s]):
            k = next((j for j, (n, i) in enumerate(free)
                      if n >= sizes[sid] and shared_pool[i][0] == devices[sid]), None)
            if k is not None:
                pool[sid] = shared_pool[free.pop(k)[1]][1]
            else:
                pool[sid] = devices[sid].zeros(sizes[sid], "uint8")
                shared_pool.append((devices[sid], pool[sid]))
        return pool

    def workspace(self, ctx: Context) -> Workspace:
        """The scratch memory of ``ctx`` (shared with executors that share this pool)."""
        for c, ws in self._workspaces:
            if c == ctx:
                return ws
        ws = Workspace(ctx)
        self._workspaces.append((ctx, ws))
        return ws

    # -- kernels -----------------------------------------------------------------------------
    def kernels(self, is_train: bool, segment: str = "forward") -> list[Callable[[], None]]:
        plan = self._kernels.get((is_train, segment))
        if plan is None:
            dyn = self.dynamic.nodes if self.dynamic is not None else ()
            plan = self._kernels[(is_train, segment)] = [
                self.dynamic.step(self, nid, is_train) if nid in dyn else
                self.make_kernel(nid, is_train) for nid in self.segments[segment]]
        return plan

    def make_kernel(self, nid: int, is_train: bool) -> Callable[[], None]:
        """The kernel of node ``nid`` on the arrays it reads and writes now."""
        ig = self.graph.indexed
        node = ig.nodes[nid]
        rp = ig.row_ptr
        eids = range(rp[nid], rp[nid + 1])
        reqs = [self.reqs.get(e, "null" if e in self.unread else "write") for e in eids]
        targets = [self.arrays[e] for e in eids]
        outs = [self.node_ctx[nid].xp.zeros_like(t) if r == "add" else t
                for t, r in zip(targets, reqs)]
        in_ids = ig.node_inputs[nid]
        ctx = self.node_ctx[nid]
        call = KernelCall(node.name, node.op.name, node.params,
                          [self.arrays[e] for e in in_ids], outs,
                          ["null" if r == "null" else "write" for r in reqs], ctx.xp, ctx,
                          is_train, self._states.setdefault(self._state_owner(nid), {}),
                          generator(), node.attrs,
                          [self.arg_grad_reqs.get(e, "null") for e in in_ids],
                          self.workspace(ctx),
                          [ig.nodes[ig.entry_node(e)[0]].op is None for e in in_ids])
        try:
            fn = kernel_registry().lookup(node.op.name, ctx.device_type,
                                         kernel_variant(node, self._monitor is not None))(call)
        except GraphexecError as exc:
            raise type(exc)(f"node {node.name!r} ({node.op.name}): {exc}") from None
        except Exception as exc:
            raise KernelError(f"creating the kernel of node {node.name!r} ({node.op.name}) "
                              f"failed: {type(exc).__name__}: {exc}") from exc
        adds = [(t, o) for t, o, r in zip(targets, outs, reqs) if r == "add"]
        return fn if not adds else _accumulating(fn, adds, ctx.xp)

    def _state_owner(self, nid: int) -> int:
        """Whose kernel state node ``nid`` uses: a backward node shares its forward node's
        (its first control dependency), as MXNet's stateful operators share one state object
        between forward and backward: what a forward keeps for its backward lives there."""
        fwd = self.graph.indexed.forward_node(nid)
        return nid if fwd is None else fwd

    # -- running ------------------------------------------------------------------------------
    def run(self, is_train: bool, segment: str = "forward") -> None:
        plan = self.kernels(is_train, segment)
        if self._monitor is not None:
            self._run_monitored(plan, segment)
            return
        if self._bulk_enabled[is_train]:
            self._run_bulk(plan, is_train, segment)
            return
        i = 0
        try:
            for i, fn in enumerate(plan):
                fn()
        except Exception as exc:
            raise self._kernel_error(segment, i, exc) from exc

    def _run_bulk(self, plan: list, is_train: bool, segment: str) -> None:
        key = (is_train, segment)
        segments = self._bulk.get(key)
        if segments is None:
            segments = self._bulk[key] = compile_segments(
                plan, self._train_segment_size if is_train else max(len(plan), 1))
        seg = None
        try:
            for seg in segments:
                seg.run()
        except Exception as exc:
            i = seg.failed_index(exc) if seg is not None else None
            if i is None:
                raise
            raise self._kernel_error(segment, i, exc) from exc

    def _kernel_error(self, segment: str, i: int, exc: Exception) -> KernelError:
        nid = self.segments[segment][i]
        node = self.graph.indexed.nodes[nid]
        held = frozen.explain(self._named_arrays(nid)) if isinstance(exc, ValueError) else None
        return KernelError(f"While executing node {node.name!r} ({node.op.name}): "
                           f"{type(exc).__name__}: {exc}" + (f" ({held})" if held else ""))

    def _named_arrays(self, nid: int) -> list[tuple[str, Any]]:
        """(name, array) of the inputs and outputs of node ``nid``; an input is named after
        the variable or node output that feeds it."""
        ig = self.graph.indexed
        eids = list(ig.node_inputs[nid]) + list(range(ig.row_ptr[nid], ig.row_ptr[nid + 1]))
        return [(ig.nodes[ig.entry_node(e)[0]].name, self.arrays[e]) for e in eids]

    def set_monitor(self, callback: Callable | None, monitor_all: bool) -> None:
        """Watch (or stop watching) every node's outputs; the kernels are made again when
        that changes which variants run (``MONITORED_KERNEL_ATTR``)."""
        watched = self._monitor is not None
        self._monitor = None if callback is None else (callback, bool(monitor_all))
        if watched != (callback is not None) and any(
                MONITORED_KERNEL_ATTR in node.attrs for node in self.graph.indexed.nodes):
            self._kernels.clear()
            self._bulk.clear()

    def _run_monitored(self, plan: list, segment: str) -> None:
        callback, monitor_all = self._monitor
        ig = self.graph.indexed
        rp = ig.row_ptr
        for i, (nid, fn) in enumerate(zip(self.segments[segment], plan)):
            node = ig.nodes[nid]
            if monitor_all:
                self._monitor_inputs(callback, nid)
            try:
                fn()
            except Exception as exc:
                raise self._kernel_error(segment, i, exc) from exc
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


def _unread_backward_entries(graph: Graph, num_forward_nodes: int) -> set[int]:
    """Outputs of backward nodes that no node reads and no one receives (MXNet gives them
    the 'null' request: kernels may skip them, e.g. the data gradient of the first layer)."""
    ig = graph.indexed
    read = set(ig.outputs)
    for ins in ig.node_inputs:
        read.update(ins)
    start = ig.row_ptr[num_forward_nodes] if num_forward_nodes < len(ig.nodes) else ig.num_entries
    return {e for e in range(start, ig.num_entries) if e not in read}


def _accumulating(fn: Callable[[], None], pairs: list, xp) -> Callable[[], None]:
    """grad_req 'add': the kernel writes a scratch buffer that is then added to the target."""
    def run():
        fn()
        for target, scratch in pairs:
            xp.add(target, scratch, out=target)
    return run
