"""Common-subexpression elimination (MXNET_ELIMINATE_COMMON_EXPR, default on).

Two operator nodes are merged when they apply the same operator with the same attributes to
the same input entries. Nodes with auxiliary (mutable) inputs, control dependencies, inner
subgraphs or randomness are never merged. The input graph is not modified: nodes whose inputs
change are copied. When nothing merges, the input graph itself is returned (so a second run
is a no-op).

As MXNet 1.9.1's pass, an output entry that appears again among the graph's outputs (two
outputs merged into one node, or a symbol grouped twice) is given a ``_copy`` node named
``<node>_<k>_copy``, so that every output is its own array.
"""
from __future__ import annotations

import os

from ..ir.graph import Entry, Graph, Node
from ..ops.registry import get_op
from .manager import register_pass

__all__ = ["eliminate_common_expr_pass", "cse_enabled"]


def cse_enabled() -> bool:
    return os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1") not in ("0", "false", "False")


@register_pass("eliminate_common_expr")
def eliminate_common_expr_pass(graph: Graph) -> Graph:
    ig = graph.indexed
    replaced: dict[int, Node] = {}   # id(original node) -> node standing for it
    seen: dict[tuple, Node] = {}
    merged = False
    for node in ig.nodes:
        if node.op is None:
            continue
        current = node
        if replaced and any(id(e.node) in replaced for e in node.inputs):
            current = Node(node.op, node.name, node.attrs, node.params,
                           [Entry(replaced.get(id(e.node), e.node), e.index, e.version)
                            for e in node.inputs], node.control_deps, node.subgraphs)
        if _mergeable(current):
            attrs = current.attrs
            key = (current.op.name,
                   tuple(sorted(attrs.items())) if len(attrs) > 1 else tuple(attrs.items()),
                   tuple([(id(e.node), e.index) for e in current.inputs]))
            twin = seen.get(key)
            if twin is not None:
                current = twin
                merged = True
            else:
                seen[key] = current
        if current is not node:
            replaced[id(node)] = current
    outputs = [Entry(replaced.get(id(e.node), e.node), e.index, e.version) for e in graph.outputs]
    outputs, copied = _unique_outputs(outputs)
    if not merged and not copied:
        return graph
    return Graph(outputs, dict(graph.attrs))


def _unique_outputs(outputs: list[Entry]) -> tuple[list[Entry], bool]:
    seen: dict[tuple, int] = {}
    out = []
    for e in outputs:
        key = (id(e.node), e.index)
        if key not in seen:
            seen[key] = 0
            out.append(e)
            continue
        copy_op = get_op("_copy")
        name = f"{e.node.name}_{seen[key]}_copy"
        seen[key] += 1
        out.append(Entry(Node(copy_op, name, {}, copy_op.parse({}, name), [e]), 0))
    return out, len(out) != len(seen) or any(seen.values())


def _mergeable(node: Node) -> bool:
    op = node.op
    return (op is not None and not op.has_aux and not node.control_deps and not node.subgraphs
            and not op.draws_random(node.params))
