"""The gradient pass: append the backward graph for the arguments whose grad_req is not null.

Each operator's ``gradient`` rule is a graph rewrite: ``rule(g, node, ograds)`` receives a
:class:`GradBuilder`, the forward node and one aggregated output-gradient entry per output,
and returns one gradient entry (or None) per input, built from ordinary operator nodes.
Several contributions to one entry are summed as MXNet's executor does: one ElementWiseSum
below MXNET_EXEC_INPLACE_GRAD_SUM_CAP (default 8), a chain of ``_grad_add`` at or above it;
``zeros_like`` contributions are dropped from sums.

Mirroring (MXNET_BACKWARD_DO_MIRROR=1, or the ``__force_mirroring__`` node attribute): the
gradient rules of mirrored nodes read a recomputed copy (``<node>_mirror``) instead of the
forward result, so the forward value need not stay alive until backward (the memory planner
then frees it early). Never mirrored: Dropout and the other random operators; with the
variable only: everything but Convolution, FullyConnected, Concat, SoftmaxOutput and
BatchNorm (MXNet's rule).

Input graph attrs: ``grad_args`` (node ids of the arguments to differentiate, in
list_arguments order), optional ``mirror`` (bool, default from MXNET_BACKWARD_DO_MIRROR). Output: outputs = forward outputs + one gradient entry per grad arg;
attrs ``num_forward_outputs``, ``num_forward_nodes``, ``head_grad_nodes`` (per forward output,
the ``_head_grad_<i>`` variable node, or None when the head is a loss that ignores it).
"""
from __future__ import annotations

import os
from typing import Callable

from ..ir.errors import GraphexecError
from ..ir.graph import Entry, Graph, IndexedGraph, Node
from ..ops.registry import get_op
from .manager import register_pass

__all__ = ["gradient_pass", "GradBuilder", "NoGradientError"]


class NoGradientError(GraphexecError, NotImplementedError):
    """An operator on the path to a requested gradient has no gradient rule."""


class GradBuilder:
    """What gradient rules use to create nodes (names follow MXNet: ``<node>_backward``)."""

    def make(self, op_name: str, name: str, inputs: list[Entry], attrs: dict | None = None,
             control_deps: list[Node] | None = None) -> Node:
        """A new operator node; ``attrs`` are MXNet string attributes."""
        op = get_op(op_name)
        attrs = dict(attrs or {})
        return Node(op, name, attrs, op.parse(attrs, name), list(inputs), list(control_deps or []))

    def backward_node(self, fwd: Node, op_name: str, inputs: list[Entry],
                      attrs: dict | None = None) -> Node:
        """MXNet's MakeGradNode: ``<fwd>_backward`` with the forward node's attributes (those
        the backward operator declares) and a control dependency on it."""
        fields = get_op(op_name).schema.fields
        merged = {k: v for k, v in fwd.attrs.items() if k in fields}
        merged.update(attrs or {})
        return self.make(op_name, f"{fwd.name}_backward", inputs, merged, [fwd])

    def outputs(self, node: Node, count: int | None = None) -> list[Entry]:
        n = node.num_outputs if count is None else count
        return [Entry(node, i) for i in range(n)]

    def zeros_like(self, fwd: Node, entry: Entry, k: int = 0) -> Entry:
        suffix = f"_in{k}" if k else ""
        return Entry(self.make("zeros_like", f"{fwd.name}_zeros{suffix}_backward", [entry]), 0)


def _sum_cap() -> int:
    return int(os.environ.get("MXNET_EXEC_INPLACE_GRAD_SUM_CAP", "8"))


def aggregate(b: GradBuilder, grads: list[Entry], like: Entry) -> Entry:
    """Sum gradient contributions (AggregateGradient in MXNet's executor)."""
    if not grads:
        return Entry(b.make("zeros_like", "zeros", [like]), 0)
    nonzero = [g for g in grads if g.node.op is None or g.node.op.name != "zeros_like"]
    grads = nonzero or grads[:1]
    if len(grads) == 1:
        return grads[0]
    if len(grads) < _sum_cap():
        return Entry(b.make("add_n", "sum_grad", grads, {"num_args": str(len(grads))}), 0)
    ret = grads[0]
    for i in range(1, len(grads)):
        ret = Entry(b.make("_grad_add", f"sum_grad_{i}", [ret, grads[i]]), 0)
    return Entry(b.make("_copy", "sum_grad_final", [ret]), 0)


@register_pass("gradient", requires=("grad_args",))
def gradient_pass(graph: Graph) -> Graph:
    fwd_outputs = graph.outputs
    ig = graph.indexed
    b = GradBuilder()
    heads, head_vars = _head_gradients(b, fwd_outputs)
    contrib: dict[tuple[int, int], list[Entry]] = {}
    for out, hg in zip(fwd_outputs, heads):
        contrib.setdefault((id(out.node), out.index), []).append(hg)
    targets = {id(ig.nodes[nid]) for nid in graph.attrs["grad_args"]}
    needed = _nodes_needing_grad(ig, targets)
    do_mirror = graph.attrs.get("mirror", os.environ.get("MXNET_BACKWARD_DO_MIRROR", "0") != "0")
    mirrors = _mirror_map(ig, do_mirror)
    for nid in reversed(range(len(ig.nodes))):
        node = ig.nodes[nid]
        if node.op is None or nid not in needed:
            continue
        ograds = [aggregate(b, contrib.get((id(node), k), []), Entry(node, k))
                  for k in range(node.num_outputs)]
        if all(_is_zero(g) for g in ograds):
            continue  # MXNet skips nodes whose output gradients are all zero
        for k, g in enumerate(_apply_rule(b, mirrors.get(id(node), node), ograds)):
            if g is not None:
                contrib.setdefault((id(node.inputs[k].node), node.inputs[k].index), []).append(g)
    grads = _grad_outputs(b, ig, graph.attrs["grad_args"], contrib)
    full = Graph(list(fwd_outputs) + grads, dict(graph.attrs))
    used = {id(n) for n in full.indexed.nodes}
    num_fwd = max(full.indexed.node_id[id(e.node)] for e in fwd_outputs) + 1
    return full.with_attrs(num_forward_outputs=len(fwd_outputs), num_forward_nodes=num_fwd,
                           head_grad_nodes=[v if id(v) in used else None for v in head_vars])


_NEVER_MIRROR = frozenset(("Convolution", "FullyConnected", "Concat", "SoftmaxOutput",
                           "BatchNorm"))


def need_mirror(node: Node, do_mirror: bool) -> bool:
    """MXNet's need_mirror rule (graph_executor.cc). MXNet exempts Dropout; every operator
    that draws random numbers is exempt here, as a recomputed copy would draw new ones and
    its gradient (e.g. _sample_multinomial's) would not match the forward's draws."""
    if node.op is None or node.op.draws_random(node.params):
        return False
    if node.attrs.get("__force_mirroring__", "False").lower() in ("true", "1"):
        return True
    return do_mirror and node.op.name not in _NEVER_MIRROR


def _mirror_map(ig: IndexedGraph, do_mirror: bool) -> dict[int, Node]:
    """id(forward node) -> its ``_mirror`` copy, whose inputs are mirrored in turn."""
    mirrors: dict[int, Node] = {}
    for node in ig.nodes:
        if not need_mirror(node, do_mirror):
            continue
        copy = Node(node.op, f"{node.name}_mirror", dict(node.attrs), node.params,
                    [Entry(mirrors.get(id(e.node), e.node), e.index, e.version)
                     for e in node.inputs],
                    [mirrors.get(id(d), d) for d in node.control_deps])
        mirrors[id(node)] = copy
    return mirrors


def _head_gradients(b: GradBuilder, outputs: list[Entry]) -> tuple[list[Entry], list[Node]]:
    heads, head_vars = [], []
    for i, out in enumerate(outputs):
        var = Node(None, f"_head_grad_{i}")
        ident = b.make("_identity_with_attr_like_rhs", f"_head_grad_{i}_id", [Entry(var), out])
        heads.append(Entry(ident, 0))
        head_vars.append(var)
    return heads, head_vars


def _nodes_needing_grad(ig: IndexedGraph, targets: set[int]) -> set[int]:
    """Node ids with a path from a target argument (only they need gradient rules)."""
    needed: set[int] = set()
    for nid, node in enumerate(ig.nodes):
        if node.op is None:
            if id(node) in targets:
                needed.add(nid)
        elif any(ig.node_id[id(e.node)] in needed for e in node.inputs):
            needed.add(nid)
    return needed


def _is_zero(e: Entry) -> bool:
    return e.node.op is not None and e.node.op.name == "zeros_like"


def _apply_rule(b: GradBuilder, node: Node, ograds: list[Entry]) -> list[Entry | None]:
    rule: Callable | None = node.op.gradient
    if rule is None:
        raise NoGradientError(f"operator {node.op.name} (node {node.name!r}) has no gradient "
                              f"rule, but a gradient through it is requested; set grad_req "
                              f"'null' for the arguments that reach it")
    grads = list(rule(b, node, ograds))
    if len(grads) != len(node.inputs):
        raise GraphexecError(f"gradient rule of {node.op.name} returned {len(grads)} entries "
                             f"for {len(node.inputs)} inputs (node {node.name!r})")
    return grads


def _grad_outputs(b: GradBuilder, ig: IndexedGraph, grad_args: list[int],
                  contrib: dict) -> list[Entry]:
    """One entry per argument; an entry that is a variable, a forward output or already the
    gradient of another argument gets a ``_copy`` so that each writes its own array."""
    out: list[Entry] = []
    seen: set[tuple[int, int]] = set()
    for nid in grad_args:
        node = ig.nodes[nid]
        g = aggregate(b, contrib.get((id(node), 0), []), Entry(node))
        key = (id(g.node), g.index)
        if g.node.op is None or key in seen or not _is_backward_entry(g, ig):
            g = Entry(b.make("_copy", f"{node.name}_grad_copy", [g]), 0)
            key = (id(g.node), 0)
        seen.add(key)
        out.append(g)
    return out


def _is_backward_entry(e: Entry, ig: IndexedGraph) -> bool:
    return id(e.node) not in ig.node_id
