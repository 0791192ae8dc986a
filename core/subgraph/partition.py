"""The partitioner (MXNet's BuildSubgraph): grows regions from seeds through a property's
selector, keeps every region convex (no path leaves it and re-enters), and replaces each by one
region node carrying the region as an inner symbol.

Guarantees: deterministic (topological order), the input symbol is not modified,
``list_arguments`` / ``list_auxiliary_states`` / ``list_inputs`` / ``list_outputs`` are
identical in content and order (a region whose contraction would reorder the inputs is
dropped), and every decision is recorded in a :class:`PartitionPlan`.
"""
from __future__ import annotations

import json
from typing import Any

from ..graph import Entry, IndexedGraph, Node
from ..symbol import Symbol, entry_name
from .api import SubgraphProperty
from .plan import PartitionPlan, Region
from .region import make_region_node

__all__ = ["partition_symbol"]


def partition_symbol(sym: Symbol, prop: SubgraphProperty, backend: str, prop_index: int,
                     plan: PartitionPlan, options: dict | None = None) -> Symbol:
    """Partition ``sym`` with one property; returns ``sym`` itself when nothing is claimed."""
    ig = IndexedGraph(sym.outputs)
    regions = _grow_regions(ig, prop, plan)
    if not regions:
        return sym
    while True:
        outputs, built = _build(ig, sym.outputs, regions, prop, backend, prop_index, options)
        new = Symbol(outputs)
        bad = _first_reordering_region(sym, ig, regions, prop, backend, prop_index, options) \
            if new.list_inputs() != sym.list_inputs() else None
        if bad is None:
            break
        for nid in regions.pop(bad):
            plan.decide(ig.nodes[nid].name, ig.nodes[nid].op.name, "order")
        if not regions:
            return sym
    start = len(plan.regions)
    for k, (members, info) in enumerate(zip(regions, built)):
        for nid in members:
            plan.claim(ig.nodes[nid].name, ig.nodes[nid].op.name, backend, start + k)
        plan.regions.append(Region(start + k, backend, prop.name, info["node"],
                                   [ig.nodes[n].name for n in members], info["inputs"],
                                   info["outputs"]))
    return new


# -- growing -------------------------------------------------------------------------------
def _grow_regions(ig: IndexedGraph, prop: SubgraphProperty, plan: PartitionPlan) -> list[list[int]]:
    consumers = ig.consumers()
    selector = prop.create_selector()
    taken: set[int] = set()
    regions: list[list[int]] = []
    for nid, node in enumerate(ig.nodes):
        if node.op is None or nid in taken or "subgraph" in node.op.traits:
            continue
        selector.reset()
        if not selector.select(node):
            plan.decide(node.name, node.op.name, "unsupported")
            continue
        members = _grow(ig, nid, selector, taken, consumers)
        kept_nodes = selector.filter([ig.nodes[n] for n in members])
        kept = {ig.node_id[id(n)] for n in kept_nodes} & set(members)
        _reject(ig, plan, set(members) - kept, "filter", taken)
        kept, removed = _convexify(ig, kept, consumers)
        _reject(ig, plan, removed, "cycle", taken)
        if len(kept) < max(int(prop.attrs.get("min_size", 1)), 1):
            _reject(ig, plan, kept, "min_size", taken)
            continue
        taken |= kept
        regions.append(sorted(kept))
    return regions


def _grow(ig: IndexedGraph, seed: int, selector, taken: set[int], consumers) -> list[int]:
    members = {seed}
    queue = [seed]
    while queue:
        nid = queue.pop(0)
        node = ig.nodes[nid]
        for e in node.inputs:
            p = ig.node_id[id(e.node)]
            if _candidate(ig, p, members, taken) and selector.select_input(node, e.node):
                members.add(p)
                queue.append(p)
        for c in consumers[nid]:
            if _candidate(ig, c, members, taken) and selector.select_output(node, ig.nodes[c]):
                members.add(c)
                queue.append(c)
    return sorted(members)


def _candidate(ig: IndexedGraph, nid: int, members: set[int], taken: set[int]) -> bool:
    node = ig.nodes[nid]
    return (nid not in members and nid not in taken and node.op is not None
            and "subgraph" not in node.op.traits)


def _reject(ig, plan, nids, reason, taken) -> None:
    for nid in nids:
        plan.decide(ig.nodes[nid].name, ig.nodes[nid].op.name, reason)
        taken.add(nid)


def _convexify(ig: IndexedGraph, region: set[int], consumers) -> tuple[set[int], set[int]]:
    """Drop the members that an outside descendant of the region feeds (and the members
    downstream of them) until no path leaves the region and comes back."""
    region = set(region)
    removed: set[int] = set()
    while region:
        last = max(region)
        down: set[int] = set()
        stack = [c for r in region for c in consumers[r] if c not in region and c < last]
        while stack:
            n = stack.pop()
            if n in down:
                continue
            down.add(n)
            stack.extend(c for c in consumers[n] if c not in region and c < last)
        bad = [r for r in region if any(ig.node_id[id(e.node)] in down for e in ig.nodes[r].inputs)]
        if not bad:
            break
        stack = bad
        while stack:
            n = stack.pop()
            if n in region:
                region.discard(n)
                removed.add(n)
                stack.extend(c for c in consumers[n] if c in region)
    return region, removed


# -- building ------------------------------------------------------------------------------
def _discovery(ig: IndexedGraph, heads: list[Entry]) -> dict[int, int]:
    """DFS discovery (pre-order) index of every node, in the traversal list_inputs uses."""
    order: dict[int, int] = {}
    for head in heads:
        stack = [head.node]
        while stack:
            node = stack.pop()
            nid = ig.node_id[id(node)]
            if nid in order:
                continue
            order[nid] = len(order)
            preds = [e.node for e in node.inputs] + list(node.control_deps)
            stack.extend(reversed(preds))
    return order


def _build(ig: IndexedGraph, heads: list[Entry], regions: list[list[int]],
           prop: SubgraphProperty, backend: str, prop_index: int, options: dict | None):
    region_of = {nid: k for k, members in enumerate(regions) for nid in members}
    discovery = _discovery(ig, heads)
    head_keys = {(ig.node_id[id(e.node)], e.index) for e in heads}
    consumers = ig.consumers()
    last = {max(members): k for k, members in enumerate(regions)}
    replaced: dict[int, Node] = {}          # id(original node) -> copy with new inputs
    region_out: dict[tuple[int, int], Entry] = {}
    info = [None] * len(regions)

    def outer(e: Entry) -> Entry:
        hit = region_out.get((ig.node_id[id(e.node)], e.index))
        if hit is not None:
            return hit
        return Entry(replaced.get(id(e.node), e.node), e.index, e.version)

    for nid, node in enumerate(ig.nodes):
        k = region_of.get(nid)
        if k is None:
            if node.op is not None:
                inputs = [outer(e) for e in node.inputs]
                if any(a.node is not b.node for a, b in zip(inputs, node.inputs)):
                    replaced[id(node)] = Node(node.op, node.name, node.attrs, node.params,
                                              inputs, node.control_deps, node.subgraphs)
            continue
        if nid not in last:
            continue
        members = regions[k]
        outs = _region_outputs(ig, members, region_of, k, consumers, head_keys)
        ins = _region_inputs(ig, members, region_of, k, discovery)
        rnode, names = make_region_node(ig, members, ins, outs, prop, backend, prop_index, k,
                                        options, outer)
        for j, key in enumerate(outs):
            region_out[key] = Entry(rnode, j)
        info[k] = {"node": rnode.name, "inputs": names,
                   "outputs": [entry_name(Entry(ig.nodes[n], i)) for n, i in outs]}
    return [outer(e) for e in heads], info


def _region_outputs(ig, members, region_of, k, consumers, head_keys) -> list[tuple[int, int]]:
    outs = set()
    for nid in members:
        for c in consumers[nid]:
            if region_of.get(c) != k:
                for e in ig.nodes[c].inputs:
                    if e.node is ig.nodes[nid]:
                        outs.add((nid, e.index))
        for i in range(ig.nodes[nid].num_outputs):
            if (nid, i) in head_keys:
                outs.add((nid, i))
    return sorted(outs)


def _region_inputs(ig, members, region_of, k, discovery) -> list[Entry]:
    seen: dict[tuple[int, int], Entry] = {}
    for nid in members:
        for e in ig.nodes[nid].inputs:
            p = ig.node_id[id(e.node)]
            if region_of.get(p) != k and (p, e.index) not in seen:
                seen[(p, e.index)] = e
    return [seen[key] for key in sorted(seen, key=lambda key: (discovery.get(key[0], 0), key[1]))]


def _first_reordering_region(sym, ig, regions, prop, backend, prop_index, options) -> int:
    """Index of the first region whose contraction alone changes the input order."""
    want = sym.list_inputs()
    multi = [k for k in range(len(regions))]
    for k in multi:
        outputs, _ = _build(ig, sym.outputs, [regions[k]], prop, backend, prop_index, options)
        if Symbol(outputs).list_inputs() != want:
            return k
    return multi[-1]


def options_json(options: dict[str, Any] | None) -> str:
    return json.dumps(options or {}, sort_keys=True, default=str)
