"""Pointwise fusion after the gradient pass (MXNet's FusePointwise, ``MXNET_USE_FUSION=1``).

The pass runs on the executed graph once the gradient pass (and any subgraph backend) is
done and shapes and dtypes are inferred, and fuses connected chains of elementwise nodes,
forward ones left unclaimed by the subgraph backend and backward ones alike (``_backward_*``,
the ``elemwise_*`` nodes gradient rules insert, gradient sums), into ``_FusedOp`` nodes that
run one generated kernel each. What may be claimed, the cost model, the code generator and
the kernel all come from this backend (its ``PointwiseFusionProperty`` and ``_FusedOp``);
growing regions safely is the core partitioner's (``core/subgraph/partition.py``). The
backend's plugin registers the pass for the bind pipeline's ``after_gradient`` stage, so the
core runs it without knowing it.

Why a ``_FusedOp`` node rather than a ``_subgraph_op`` region: a region node infers its
shapes from its inner graph, and backward operators cannot do that once cut off from the
forward node they differentiate (their shape rule reads that node's inputs through the
control dependency). Here every shape is already known, so each ``_FusedOp`` records those of
its inner graph and the executed graph keeps the inferred shapes and dtypes of every entry.

Rules: a region lies in one pass (forward or backward: they run as separate segments) and on
one context; no region closes a cycle, through data edges (the partitioner) or through
control dependencies between the nodes left outside; an entry read outside its region stays
a region output; the forward variables keep their order (the executor binds arguments by
it). Control dependencies pointing into a region are dropped: they only order nodes (data
edges already order a ``_FusedOp``) and lend shape rules (shapes are final here).

MXNET_USE_FUSION is read at every bind. As in MXNet, unset it fuses on GPU contexts only
(numba CUDA kernels, :mod:`.cuda`; a graph with no node on a GPU is left alone); ``1`` fuses on
the CPU too (numba kernels compiled on the host: seconds for a new kernel, then cached on
disk), ``0`` nowhere. Options of the ``fused`` backend (``backend_options={"fused":
{...}}`` or ``MXNET_SUBGRAPH_BACKEND="fused:cost_model=false"``) apply here too.

Input attrs: ``shape``, ``dtype``; optional ``num_forward_nodes`` / ``num_forward_outputs``
(a training graph), ``context``, ``default_ctx``, ``partition_plan``, ``backend_options``
(the ``fused`` entry is used).
Output: the graph with ``_FusedOp`` nodes, the same attrs carried over to the new entry and
node ids, and a copy of the partition plan recording the regions (backend ``fused``,
property ``fuse_pointwise``) and why other nodes were not fused.
"""
from __future__ import annotations

import copy
import os
from typing import NamedTuple

from graphexec.core.ir.graph import Entry, Graph, IndexedGraph, Node, topo_order
from graphexec.core.subgraph.api import NodeShapes, SubgraphSelector
from graphexec.core.subgraph.partition import (cycles, discovery_order, drop_cyclic_regions,
                                               grow_regions, region_inputs, region_outputs)
from graphexec.core.subgraph.plan import PartitionPlan, Region
from graphexec.core.subgraph.region import region_input_names
from graphexec.core.symbol.symbol import Symbol, entry_name

from .cuda import cuda_available
from .fusedop import fused_node
from .subgraph import PointwiseFusionProperty

__all__ = ["fusion_mode", "fuse_pointwise_pass", "BACKEND", "PROPERTY"]

#: how the partition plan names the regions of this pass
BACKEND, PROPERTY = "fused", "fuse_pointwise"


def fusion_mode() -> str:
    """Where MXNET_USE_FUSION lets chains fuse: ``gpu`` (unset: GPU contexts only, MXNet's
    default), ``off`` (0) or ``all`` (any other value: the CPU too)."""
    value = os.environ.get("MXNET_USE_FUSION", "").strip()
    return "gpu" if not value else "off" if value == "0" else "all"


def _on_gpus(graph: Graph) -> bool:
    ctxs = graph.attrs.get("context") or [graph.attrs.get("default_ctx")]
    return any(c is not None and c.device_type == "gpu" for c in ctxs)


def fuse_pointwise_pass(graph: Graph) -> Graph:
    """Fuse as MXNET_USE_FUSION says (module docstring); ``graph`` itself where nothing may
    fuse (registered for the ``after_gradient`` stage by the plugin in ``__init__.py``)."""
    mode = fusion_mode()
    if mode == "off" or (mode == "gpu" and not _on_gpus(graph)):
        return graph
    cpu = mode == "all"
    options = (graph.attrs.get("backend_options") or {}).get(BACKEND, {})
    prop = PointwiseFusionProperty(**options)
    plan = copy.deepcopy(graph.attrs.get("partition_plan")) or PartitionPlan()
    if prop.attrs["disable"]:
        plan.skipped.append(f"{BACKEND}/{PROPERTY}: disabled")
        return graph.with_attrs(partition_plan=plan)
    allowed = None
    while True:  # nodes a region left out to avoid a cycle may form regions of their own
        fused, allowed = _fuse_once(graph, prop, plan, allowed, cpu)
        if fused is graph or not allowed:
            return fused.with_attrs(partition_plan=plan)
        graph = fused


def _fuse_once(graph: Graph, prop, plan: PartitionPlan, allowed: set[int] | None,
               cpu: bool) -> tuple[Graph, set[int]]:
    """``graph`` with the regions one growing round finds among the ``allowed`` nodes (by
    id(); None: all) contracted, ``graph`` itself when it finds none; records them in
    ``plan``. Also returns the nodes (of the new graph) worth another round: those a region
    took in and then left out, other than by the cost model."""
    ig = graph.indexed
    prop.shapes = NodeShapes(ig, graph.attrs["shape"], graph.attrs["dtype"])
    prop.count_outputs = _output_counter(graph)
    selector = _Scoped(prop, _scopes(graph), allowed, cpu)
    regions = grow_regions(ig, selector, plan)
    regions = drop_cyclic_regions(ig, regions, plan)
    regions = _drop_control_cycles(ig, regions, plan)
    regions, done = _contract_keeping_order(graph, regions, plan,
                                            prop.serial_kernels(ig.nodes))
    if not regions:
        return graph, set()
    claimed = {id(ig.nodes[nid]) for members in regions for nid in members}
    left = selector.joined - selector.filtered - claimed
    renamed = {id(old): key for key, old in done.copied.items()}
    start = len(plan.regions)
    for k, (members, node) in enumerate(zip(regions, done.fused)):
        for nid in members:
            plan.claim(ig.nodes[nid], BACKEND, start + k)
        node.name = f"fused_pointwise{start + k}"
        plan.regions.append(Region(start + k, BACKEND, PROPERTY, node.name,
                                   [plan.label(ig.nodes[n]) for n in members],
                                   list(node.params.input_names),
                                   list(node.params.output_names)))
    return _carry_attrs(graph, done, plan), {renamed.get(key, key) for key in left}


# -- what may join a region --------------------------------------------------------------
def _scopes(graph: Graph) -> dict[int, tuple]:
    """Per node (by id()), its pass (0 forward, 1 backward) and context."""
    ig = graph.indexed
    nfwd = graph.attrs.get("num_forward_nodes", len(ig.nodes))
    ctxs = graph.attrs.get("context") or [graph.attrs.get("default_ctx")] * len(ig.nodes)
    return {id(n): (int(nid >= nfwd), ctxs[nid]) for nid, n in enumerate(ig.nodes)}


def _output_counter(graph: Graph):
    """For the cost model: how many of these nodes' results a region of them must store
    (read by a node outside it, or a graph output)."""
    ig = graph.indexed
    consumers = ig.consumers()
    heads = {ig.node_id[id(e.node)] for e in graph.outputs}

    def count(nodes: list) -> int:
        ids = {ig.node_id[id(n)] for n in nodes}
        return sum(1 for n in ids if n in heads or any(c not in ids for c in consumers[n]))
    return count


class _Scoped(SubgraphSelector):
    """The backend's selector, kept to the seed's pass and context, to the ``allowed`` nodes
    (by id(); None: all), to CPU contexts where ``cpu`` fusion is on and GPU contexts where
    numba's CUDA target is available. Records the nodes it let in (``joined``) and those
    the backend's filter turned down (``filtered``). Also the property ``grow_regions`` asks
    for it."""

    def __init__(self, prop, scopes: dict[int, tuple], allowed: set[int] | None,
                 cpu: bool):
        self.attrs = prop.attrs
        self._inner = prop.create_selector()
        self._scopes = scopes
        self._allowed = allowed
        self._cpu = cpu
        self._scope: tuple | None = None
        self.joined: set[int] = set()
        self.filtered: set[int] = set()

    def create_selector(self) -> "_Scoped":
        return self

    def _device(self, node) -> str | None:
        """Why the node's context takes no fused kernel, or None."""
        ctx = self._scopes[id(node)][1]
        kind = "cpu" if ctx is None else ctx.device_type
        if kind == "cpu":
            return None if self._cpu else ("MXNET_USE_FUSION is unset: fused on GPU contexts "
                                           "only, as MXNet (set it to 1 for the CPU)")
        if kind == "gpu":
            return None if cuda_available() else ("fused kernels on a GPU need numba's CUDA "
                                                  "target (numba.cuda.is_available() is False)")
        return f"no fused kernels on {kind} contexts"

    def why_not(self, node) -> str | None:
        device = self._device(node)
        if device is not None:
            return device
        if not self._allows(node):
            return "not fused in an earlier round"  # its first reason stays in the plan
        return self._inner.why_not(node)

    def _allows(self, node) -> bool:
        return self._allowed is None or id(node) in self._allowed

    def _took(self, node, ok: bool) -> bool:
        if ok:
            self.joined.add(id(node))
        return ok

    def select(self, node) -> bool:
        self._scope = self._scopes[id(node)]
        return self._took(node, self._allows(node) and self._device(node) is None
                          and self._inner.select(node))

    def select_input(self, node, input_node) -> bool:
        return self._took(input_node, self._allows(input_node)
                          and self._scopes[id(input_node)] == self._scope
                          and self._inner.select_input(node, input_node))

    def select_output(self, node, output_node) -> bool:
        return self._took(output_node, self._allows(output_node)
                          and self._scopes[id(output_node)] == self._scope
                          and self._inner.select_output(node, output_node))

    def filter(self, candidates: list) -> list:
        self._inner.filter_reason = None
        kept = self._inner.filter(candidates)
        self.filter_reason = self._inner.filter_reason
        self.filtered |= {id(n) for n in candidates} - {id(n) for n in kept}
        return kept

    def reset(self) -> None:
        self._inner.reset()


def _drop_control_cycles(ig: IndexedGraph, regions: list[list[int]],
                         plan: PartitionPlan) -> list[list[int]]:
    """The partitioner follows data edges; a control dependency between two nodes left
    outside still orders them, so a path may leave a region and come back through one (a
    gradient node depending on a mirrored node that reads the region). Drop the latest
    region of every such cycle."""
    if not any(n.control_deps for n in ig.nodes):
        return regions
    n = len(ig.nodes)
    while regions:
        unit = list(range(n))
        for k, members in enumerate(regions):
            for nid in members:
                unit[nid] = n + k
        succ: dict[int, set[int]] = {u: set() for u in unit}
        for nid, node in enumerate(ig.nodes):
            preds = [ig.node_id[id(e.node)] for e in node.inputs]
            if unit[nid] == nid:  # control deps of members and into regions are dropped
                preds += [ig.node_id[id(d)] for d in node.control_deps
                          if unit[ig.node_id[id(d)]] < n]
            for p in preds:
                if unit[p] != unit[nid]:
                    succ[unit[p]].add(unit[nid])
        drop = sorted({max(u - n for u in comp if u >= n) for comp in cycles(succ)
                       if any(u >= n for u in comp)}, reverse=True)
        if not drop:
            break
        for k in drop:
            for nid in regions.pop(k):
                plan.decide(ig.nodes[nid], "cycle")
    return regions


# -- contracting ---------------------------------------------------------------------------
class _Contraction(NamedTuple):
    """The graph with regions contracted: its ``outputs``, the ``_FusedOp`` node of each
    region, per copied outside node (by id()) the old node, and per ``_FusedOp`` the old entry
    ids its outputs stand for."""

    outputs: list[Entry]
    fused: list[Node]
    copied: dict[int, Node]
    fused_entries: list[list[int]]


def _contract_keeping_order(graph: Graph, regions: list[list[int]], plan: PartitionPlan,
                            serial: bool) -> tuple[list[list[int]], _Contraction | None]:
    """Contract the regions (``serial``: their kernels run on one thread); one whose
    contraction would change the order of the forward variables is dropped (reason "order")
    and the rest contracted again."""
    ig = graph.indexed
    nfo = graph.attrs.get("num_forward_outputs", len(graph.outputs))
    want = _variable_order(graph.outputs[:nfo])
    while regions:
        done = _contract(graph, regions, serial)
        if _variable_order(done.outputs[:nfo]) == want:
            return regions, done
        bad = next((k for k in range(len(regions))
                    if _variable_order(_contract(graph, [regions[k]], serial).outputs[:nfo])
                    != want),
                   len(regions) - 1)
        for nid in regions.pop(bad):
            plan.decide(ig.nodes[nid], "order")
    return [], None


def _variable_order(heads: list[Entry]) -> list[int]:
    return [id(n) for n in topo_order(e.node for e in heads) if n.op is None]


def _contract(graph: Graph, regions: list[list[int]], serial: bool) -> _Contraction:
    """Every region replaced by a ``_FusedOp`` node; nodes outside are copied where an input
    or a control dependency changed."""
    ig = graph.indexed
    region_of = {nid: k for k, members in enumerate(regions) for nid in members}
    consumers, discovery = ig.consumers(), discovery_order(ig, graph.outputs)
    heads = {(ig.node_id[id(e.node)], e.index) for e in graph.outputs}
    slot: dict[tuple[int, int], tuple[int, int]] = {}
    fused, inputs_of, entries = [], [], []
    for k, members in enumerate(regions):
        outs = region_outputs(ig, members, region_of, k, consumers, heads)
        ins = region_inputs(ig, members, region_of, k, discovery)
        fused.append(_fused_node(graph, members, ins, outs, serial))
        inputs_of.append(ins)
        entries.append([ig.row_ptr[n] + i for n, i in outs])
        slot.update((key, (k, j)) for j, key in enumerate(outs))
    copies: dict[int, Node] = {}

    def outer(e: Entry) -> Entry:
        hit = slot.get((ig.node_id[id(e.node)], e.index))
        if hit is not None:
            return Entry(fused[hit[0]], hit[1])
        return Entry(copies.get(id(e.node), e.node), e.index, e.version)

    copied: dict[int, Node] = {}
    for nid, node in enumerate(ig.nodes):
        if node.op is None or nid in region_of:
            continue
        inputs = [outer(e) for e in node.inputs]
        deps = [copies.get(id(d), d) for d in node.control_deps
                if ig.node_id[id(d)] not in region_of]
        if deps != node.control_deps or any(a.node is not b.node
                                            for a, b in zip(inputs, node.inputs)):
            copy_ = Node(node.op, node.name, node.attrs, node.params, inputs, deps,
                         node.subgraphs)
            copies[id(node)] = copy_
            copied[id(copy_)] = node
    for node, ins in zip(fused, inputs_of):
        node.inputs = [outer(e) for e in ins]
    return _Contraction([outer(e) for e in graph.outputs], fused, copied, entries)


def _fused_node(graph: Graph, members: list[int], ins: list[Entry],
                outs: list[tuple[int, int]], serial: bool) -> Node:
    """The ``_FusedOp`` of one region (inputs unconnected): the members copied into an inner
    graph whose variables stand for ``ins`` (named after them), with the shape and dtype of
    every inner entry taken from ``graph``."""
    ig = graph.indexed
    var_of: dict[tuple[int, int], Node] = {}
    origin: dict[int, int] = {}  # id(inner node) -> its first entry id in ``graph``
    for e, name in zip(ins, region_input_names(ins)):
        key = (ig.node_id[id(e.node)], e.index)
        var_of[key] = Node(None, name)
        origin[id(var_of[key])] = ig.row_ptr[key[0]] + key[1]
    copies: dict[int, Node] = {}
    for nid in members:  # topological order
        node = ig.nodes[nid]
        inputs = [Entry(copies[p], e.index) if p in copies else Entry(var_of[(p, e.index)])
                  for e, p in ((e, ig.node_id[id(e.node)]) for e in node.inputs)]
        copies[nid] = Node(node.op, node.name, dict(node.attrs), node.params, inputs)
        origin[id(copies[nid])] = ig.row_ptr[nid]
    inner = Symbol([Entry(copies[n], i) for n, i in outs])
    eids = [origin[id(n)] + k for n in inner._indexed().nodes for k in range(n.num_outputs)]
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    return fused_node(PROPERTY, inner, [var_of[k].name for k in var_of],
                      [entry_name(Entry(ig.nodes[n], i)) for n, i in outs],
                      [shapes[e] for e in eids], [dtypes[e] for e in eids], serial)


# -- attributes ----------------------------------------------------------------------------
def _carry_attrs(graph: Graph, done: _Contraction, plan: PartitionPlan) -> Graph:
    """The contracted graph with ``graph``'s attributes moved to its entry and node ids."""
    old, attrs = graph.indexed, graph.attrs
    new = Graph(done.outputs)
    ig = new.indexed
    per_entry: list[int] = []   # new entry id -> old entry id
    per_node: list[int] = []    # new node id -> an old node id (a member for _FusedOp)
    fused = {id(n): k for k, n in enumerate(done.fused)}
    for node in ig.nodes:
        k = fused.get(id(node))
        if k is not None:
            per_entry += done.fused_entries[k]
            per_node.append(old.entry_node(done.fused_entries[k][0])[0])
            continue
        nid = old.node_id[id(done.copied.get(id(node), node))]
        per_entry += range(old.row_ptr[nid], old.row_ptr[nid + 1])
        per_node.append(nid)
    moved = {key: [attrs[key][e] for e in per_entry] for key in ("shape", "dtype")}
    if attrs.get("context"):
        moved["context"] = [attrs["context"][n] for n in per_node]
    by_var = {nid: ig.node_id[id(old.nodes[nid])] for nid in old.input_nodes
              if id(old.nodes[nid]) in ig.node_id}
    for key in ("shape_inputs", "dtype_inputs"):
        if key in attrs:
            moved[key] = {by_var[n]: v for n, v in attrs[key].items() if n in by_var}
    if "grad_args" in attrs:
        moved["grad_args"] = [by_var[n] for n in attrs["grad_args"]]
    if "num_forward_outputs" in attrs:
        fwd = done.outputs[:attrs["num_forward_outputs"]]
        moved["num_forward_nodes"] = max(ig.node_id[id(e.node)] for e in fwd) + 1
    merged = dict(attrs)
    merged.update(moved, partition_plan=plan)
    return Graph(done.outputs, merged, ig)
