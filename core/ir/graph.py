"""Graph IR: nodes, entries, the indexed (topologically sorted) view, and Graph.

A :class:`Node` is either a variable (``op is None``) or an operator application. An
:class:`Entry` names one output of a node. :class:`IndexedGraph` numbers nodes in DFS
post-order (MXNet/nnvm's order) and outputs as entry ids through ``row_ptr``.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

from .errors import GraphexecError

if TYPE_CHECKING:
    from .attrs import Params

__all__ = ["Node", "Entry", "Graph", "IndexedGraph", "topo_order"]


class Node:
    """One graph node. ``op`` is the operator's declaration (an ``OpDef`` of the op layer,
    ``core/ops/registry.py``; None for a variable), ``attrs`` holds the raw string attributes
    (as JSON stores them), ``params`` the parsed ones, ``subgraphs`` inner symbols of region
    nodes."""

    __slots__ = ("op", "name", "attrs", "params", "inputs", "control_deps", "subgraphs",
                 "version", "__weakref__")

    def __init__(self, op: Any, name: str, attrs: dict[str, str] | None = None,
                 params: "Params | None" = None, inputs: list["Entry"] | None = None,
                 control_deps: list["Node"] | None = None, subgraphs: list | None = None):
        self.op = op
        self.name = name
        self.attrs = attrs if attrs is not None else {}
        self.params = params
        self.inputs = inputs if inputs is not None else []
        self.control_deps = control_deps if control_deps is not None else []
        self.subgraphs = subgraphs if subgraphs is not None else []
        self.version = 0

    @property
    def is_variable(self) -> bool:
        return self.op is None

    @property
    def num_outputs(self) -> int:
        """All outputs, hidden ones included (BatchNorm has 3)."""
        return 1 if self.op is None else self.op.num_outputs(self.params)

    @property
    def num_visible_outputs(self) -> int:
        return 1 if self.op is None else self.op.num_visible_outputs(self.params)

    @property
    def op_name(self) -> str:
        return "null" if self.op is None else self.op.name

    def __repr__(self) -> str:
        return f"Node({self.op_name}, {self.name!r})"


class Entry(NamedTuple):
    """Output ``index`` of ``node``; ``version`` counts mutations of a variable (aux states)."""

    node: Node
    index: int = 0
    version: int = 0


def topo_order(heads: Iterable[Node]) -> list[Node]:
    """Nodes reachable from ``heads`` in DFS post-order (nnvm's order): inputs in order, then
    control deps. Iterative, so deep chains do not hit the recursion limit."""
    order: list[Node] = []
    seen: set[int] = set()
    for head in heads:
        if id(head) in seen:
            continue
        seen.add(id(head))
        nodes = [head]
        preds = [_preds(head)]
        pos = [0]
        while nodes:
            ps = preds[-1]
            k = pos[-1]
            n = len(ps)
            while k < n and id(ps[k]) in seen:
                k += 1
            if k < n:
                pred = ps[k]
                pos[-1] = k + 1
                seen.add(id(pred))
                nodes.append(pred)
                preds.append(_preds(pred))
                pos.append(0)
            else:
                order.append(nodes.pop())
                preds.pop()
                pos.pop()
    return order


def _preds(node: Node) -> list[Node]:
    if node.control_deps:
        return [e.node for e in node.inputs] + node.control_deps
    return [e.node for e in node.inputs]


class IndexedGraph:
    """Topologically sorted, integer-indexed view of a graph.

    ``nodes[i]`` is node id i; ``row_ptr[i]`` is the first entry id of node i;
    ``node_inputs[i]`` are the entry ids node i reads; ``outputs`` the head entry ids.
    """

    __slots__ = ("nodes", "node_id", "row_ptr", "node_inputs", "outputs", "input_nodes",
                 "mutable_input_nodes", "arg_nodes", "num_entries", "_consumers", "_readers")

    def __init__(self, heads: list[Entry]):
        nodes = topo_order(e.node for e in heads)
        self.nodes = nodes
        node_id = {id(n): i for i, n in enumerate(nodes)}
        self.node_id = node_id
        row_ptr = [0] * (len(nodes) + 1)
        total = 0
        for i, n in enumerate(nodes):
            row_ptr[i] = total
            total += 1 if n.op is None else n.op.num_outputs(n.params)
        row_ptr[len(nodes)] = total
        self.row_ptr = row_ptr
        self.num_entries = total
        mutable: set[int] = set()
        node_inputs = []
        for n in nodes:
            ins = [row_ptr[node_id[id(e.node)]] + e.index for e in n.inputs]
            node_inputs.append(ins)
            if n.op is not None and n.op.has_aux:
                for k in n.op.aux_indices(n.params):
                    if k < len(n.inputs):
                        mutable.add(node_id[id(n.inputs[k].node)])
        self.node_inputs = node_inputs
        self.outputs = [row_ptr[node_id[id(e.node)]] + e.index for e in heads]
        self.input_nodes = [i for i, n in enumerate(nodes) if n.op is None]
        self.mutable_input_nodes = mutable
        self.arg_nodes = [i for i in self.input_nodes if i not in mutable]
        self._consumers = None
        self._readers = None

    def entry_id(self, node: Node, index: int = 0) -> int:
        return self.row_ptr[self.node_id[id(node)]] + index

    def entry_node(self, eid: int) -> tuple[int, int]:
        """(node id, output index) of an entry id."""
        nid = bisect_right(self.row_ptr, eid) - 1
        while self.row_ptr[nid + 1] == self.row_ptr[nid]:
            nid += 1
        return nid, eid - self.row_ptr[nid]

    def forward_node(self, nid: int) -> int | None:
        """The id of the forward node whose gradient node ``nid`` is (a ``_backward_`` node's
        first control dependency, as the gradient pass links them), or None."""
        node = self.nodes[nid]
        if node.op is None or not node.op.name.startswith("_backward_") or not node.control_deps:
            return None
        return self.node_id.get(id(node.control_deps[0]))

    def entry_readers(self) -> list[list[int]]:
        """For each entry id, the ids of the nodes that read it (once per input slot)."""
        if self._readers is None:
            readers: list[list[int]] = [[] for _ in range(self.num_entries)]
            for nid, ins in enumerate(self.node_inputs):
                for e in ins:
                    readers[e].append(nid)
            self._readers = readers
        return self._readers

    def consumers(self) -> list[list[int]]:
        """For each node id, the ids of the nodes that read one of its outputs."""
        if self._consumers is None:
            cons: list[list[int]] = [[] for _ in self.nodes]
            for i, n in enumerate(self.nodes):
                for e in n.inputs:
                    cons[self.node_id[id(e.node)]].append(i)
            self._consumers = cons
        return self._consumers


class Graph:
    """Heads plus attributes computed by passes (``shape``, ``dtype``...).

    Passes never mutate a Graph they receive: :meth:`with_attrs` returns a new Graph that
    shares nodes and the indexed view with this one.
    """

    __slots__ = ("outputs", "attrs", "_indexed")

    def __init__(self, outputs: list[Entry], attrs: dict[str, Any] | None = None,
                 indexed: IndexedGraph | None = None):
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        self._indexed = indexed

    @property
    def indexed(self) -> IndexedGraph:
        if self._indexed is None:
            self._indexed = IndexedGraph(self.outputs)
        return self._indexed

    def with_attrs(self, **attrs: Any) -> "Graph":
        merged = dict(self.attrs)
        merged.update(attrs)
        return Graph(self.outputs, merged, self._indexed)

    def with_node_attrs(self, updates: dict[int, dict[str, str]]) -> "Graph":
        """A copy whose operator nodes ``updates`` names (by node id) carry these attributes
        too, same structure and node order, so this graph's entry-indexed attributes stay
        valid for it; variables are shared, not copied. ``self`` when there is nothing to
        update."""
        if not updates:
            return self
        ig = self.indexed
        new: list[Node] = []
        for nid, node in enumerate(ig.nodes):
            if node.op is None:
                new.append(node)
                continue
            attrs = {**node.attrs, **updates[nid]} if nid in updates else node.attrs
            copy_ = Node(node.op, node.name, attrs, node.params,
                         [Entry(new[ig.node_id[id(e.node)]], e.index, e.version)
                          for e in node.inputs],
                         [new[ig.node_id[id(d)]] for d in node.control_deps], node.subgraphs)
            copy_.version = node.version
            new.append(copy_)
        outputs = [Entry(new[ig.node_id[id(e.node)]], e.index, e.version) for e in self.outputs]
        out = Graph(outputs, self.attrs)
        if [n.name for n in out.indexed.nodes] != [n.name for n in ig.nodes]:
            raise GraphexecError("with_node_attrs: the copied graph lost the node order its "
                                 "entry-indexed attributes depend on")
        return out
