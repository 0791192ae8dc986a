"""The partitioner (MXNet's BuildSubgraph): grows regions from seeds through a property's
selector, keeps every region convex (no path leaves it and re-enters), and replaces each by one
region node carrying the region as an inner symbol.

Guarantees: deterministic (topological order), the input symbol is not modified,
``list_arguments`` / ``list_auxiliary_states`` / ``list_inputs`` / ``list_outputs`` are
identical in content and order (a region whose contraction would reorder the inputs is
dropped), and every decision is recorded in a :class:`PartitionPlan`.
"""
from __future__ import annotations

import heapq

from ..ir.graph import Entry, IndexedGraph, Node
from ..ops.dynamic import DYNAMIC
from ..ops.registry import find_op
from ..symbol.symbol import Symbol, entry_name
from .api import SubgraphProperty, SubgraphSelector, VetoSelector
from .plan import PartitionPlan, Region
from .region import make_region_node

__all__ = ["partition_symbol", "grow_regions", "dynamic_nodes", "drop_cyclic_regions", "cycles",
           "discovery_order", "region_inputs", "region_outputs"]


def partition_symbol(sym: Symbol, prop: SubgraphProperty, backend: str, prop_index: int,
                     plan: PartitionPlan, options: dict | None = None) -> Symbol:
    """Partition ``sym`` with one property; returns ``sym`` itself when nothing is claimed."""
    ig = sym._indexed()
    regions = drop_cyclic_regions(ig, grow_regions(ig, prop, plan), plan)
    if not regions:
        return sym
    want = [ig.nodes[i].name for i in ig.input_nodes]
    while True:
        outputs, built = _build(ig, sym.outputs, regions, prop, backend, prop_index, options)
        new = Symbol(outputs)
        bad = _first_reordering_region(sym, ig, regions, prop, backend, prop_index, options) \
            if new.list_inputs() != want else None
        if bad is None:
            break
        for nid in regions.pop(bad):
            plan.decide(ig.nodes[nid], "order")
        if not regions:
            return sym
    start = len(plan.regions)
    for k, (members, info) in enumerate(zip(regions, built)):
        for nid in members:
            plan.claim(ig.nodes[nid], backend, start + k)
        plan.regions.append(Region(start + k, backend, prop.name, info["node"],
                                   [plan.label(ig.nodes[n]) for n in members], info["inputs"],
                                   info["outputs"]))
    return new


# -- growing -------------------------------------------------------------------------------
def grow_regions(ig: IndexedGraph, prop: SubgraphProperty, plan: PartitionPlan) -> list[list[int]]:
    consumers = ig.consumers()
    selector = _excluding(prop.create_selector(), prop.attrs.get("exclude_ops") or ())
    blocked = dynamic_nodes(ig, getattr(prop, "shapes", None))
    for nid, reason in blocked.items():
        plan.decide(ig.nodes[nid], reason)
    taken: set[int] = set(blocked)
    regions: list[list[int]] = []
    for nid, node in enumerate(ig.nodes):
        if node.op is None or nid in taken or "subgraph" in node.op.traits:
            continue
        selector.reset()
        if not selector.select(node):
            plan.decide(node, selector.why_not(node) or "unsupported")
            continue
        members = _grow(ig, nid, selector, taken, consumers)
        selector.filter_reason = None
        kept_nodes = selector.filter([ig.nodes[n] for n in members])
        kept = {ig.node_id[id(n)] for n in kept_nodes} & set(members)
        _reject(ig, plan, set(members) - kept, selector.filter_reason or "filter", taken)
        kept, removed = _convexify(ig, kept, consumers)
        for nid in removed:  # cut to keep this region convex: they may seed a later region
            plan.decide(ig.nodes[nid], "cycle")
        if len(kept) < max(int(prop.attrs.get("min_size", 1)), 1):
            _reject(ig, plan, kept, "min_size", taken)
            continue
        taken |= kept
        regions.append(sorted(kept))
    return regions


def dynamic_nodes(ig: IndexedGraph, shapes=None) -> dict[int, str]:
    """Nodes no region may take, with the reason: ops whose output shape depends on the data
    (``dynamic``) and the nodes after them whose shapes settle only at run time
    (``after_dynamic``; every node downstream when ``shapes``, a property's
    :class:`NodeShapes`, is not given). A region's runner is built for static shapes."""
    found = {nid: "dynamic" for nid, n in enumerate(ig.nodes)
             if n.op is not None and DYNAMIC in n.op.traits}
    if not found:
        return found
    consumers, stack, seen = ig.consumers(), list(found), set(found)
    while stack:
        for c in consumers[stack.pop()]:
            if c in seen:
                continue
            seen.add(c)
            stack.append(c)
            node = ig.nodes[c]
            if shapes is None or None in shapes.inputs(node) + shapes.outputs(node):
                found[c] = "after_dynamic"
    return found


def _excluding(selector, exclude_ops) -> SubgraphSelector:
    """``selector`` kept off the operators named in a property's ``exclude_ops`` (aliases
    such as ``_plus`` name their operator) and off ``opaque`` operators (Python custom
    operators: a region boundary for every backend, as in MXNet)."""
    excluded = {op.name if op is not None else name
                for name, op in ((n, find_op(n)) for n in exclude_ops or ())}

    def veto(node) -> str | None:
        if node.op.name in excluded:
            return "excluded by the exclude_ops option"
        if "opaque" in node.op.traits:
            return "a Python custom operator is a region boundary for every backend"
        return None
    return VetoSelector(selector, veto)


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
        plan.decide(ig.nodes[nid], reason)
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
def discovery_order(ig: IndexedGraph, heads: list[Entry]) -> dict[int, int]:
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
    discovery = discovery_order(ig, heads)
    head_keys = {(ig.node_id[id(e.node)], e.index) for e in heads}
    consumers = ig.consumers()
    replaced: dict[int, Node] = {}          # id(original node) -> copy with new inputs
    region_out: dict[tuple[int, int], Entry] = {}
    info = [None] * len(regions)

    def outer(e: Entry) -> Entry:
        hit = region_out.get((ig.node_id[id(e.node)], e.index))
        if hit is not None:
            return hit
        return Entry(replaced.get(id(e.node), e.node), e.index, e.version)

    order, _ = _contracted_order(ig, regions)
    for unit in order:
        if unit < len(ig.nodes):
            node = ig.nodes[unit]
            if node.op is not None:
                inputs = [outer(e) for e in node.inputs]
                if any(a.node is not b.node for a, b in zip(inputs, node.inputs)):
                    replaced[id(node)] = Node(node.op, node.name, node.attrs, node.params,
                                              inputs, node.control_deps, node.subgraphs)
            continue
        k = unit - len(ig.nodes)
        members = regions[k]
        outs = region_outputs(ig, members, region_of, k, consumers, head_keys)
        ins = region_inputs(ig, members, region_of, k, discovery)
        rnode, names = make_region_node(ig, members, ins, outs, prop, backend, prop_index, k,
                                        options, outer)
        for j, key in enumerate(outs):
            region_out[key] = Entry(rnode, j)
        info[k] = {"node": rnode.name, "inputs": names,
                   "outputs": [entry_name(Entry(ig.nodes[n], i)) for n, i in outs]}
    return [outer(e) for e in heads], info


def _contracted_order(ig: IndexedGraph, regions: list[list[int]]) -> tuple[list[int], dict]:
    """A topological order of the graph with every region contracted to one unit (node id
    for an outside node, ``len(ig.nodes) + k`` for region k), ties going to the smallest
    original node id; and the successor sets of the units left over, which lie on or behind
    a cycle through regions (empty when the contraction is acyclic)."""
    n = len(ig.nodes)
    unit = list(range(n))
    for k, members in enumerate(regions):
        for nid in members:
            unit[nid] = n + k
    first: dict[int, int] = {}
    for nid in range(n):
        first.setdefault(unit[nid], nid)
    succ: dict[int, set[int]] = {u: set() for u in first}
    indeg = dict.fromkeys(first, 0)
    for nid, node in enumerate(ig.nodes):
        u = unit[nid]
        for e in node.inputs:
            pu = unit[ig.node_id[id(e.node)]]
            if pu != u and u not in succ[pu]:
                succ[pu].add(u)
                indeg[u] += 1
    heap = [(first[u], u) for u, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        u = heapq.heappop(heap)[1]
        order.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (first[v], v))
    left = {u: succ[u] for u, d in indeg.items() if d > 0}
    return order, left


def drop_cyclic_regions(ig: IndexedGraph, regions: list[list[int]],
                         plan: PartitionPlan) -> list[list[int]]:
    """Convex regions can still close a cycle between them (A feeds B through outside nodes
    and B feeds A elsewhere); drop the latest-grown region of every such cycle until none is
    left."""
    n = len(ig.nodes)
    while True:
        _, left = _contracted_order(ig, regions)
        drop = sorted({max(u - n for u in comp if u >= n) for comp in cycles(left)},
                      reverse=True)
        if not drop:
            return regions
        for k in drop:
            for nid in regions.pop(k):
                plan.decide(ig.nodes[nid], "cycle")


def cycles(succ: dict[int, set[int]]) -> list[set[int]]:
    """The strongly connected components of more than one unit (iterative Tarjan)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    found = []
    for root in succ:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(succ[root]))]
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def region_outputs(ig, members, region_of, k, consumers, head_keys) -> list[tuple[int, int]]:
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


def region_inputs(ig, members, region_of, k, discovery) -> list[Entry]:
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
    for k in range(len(regions)):
        outputs, _ = _build(ig, sym.outputs, [regions[k]], prop, backend, prop_index, options)
        if Symbol(outputs).list_inputs() != want:
            return k
    return len(regions) - 1
