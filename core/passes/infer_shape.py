"""Shape and dtype inference passes: propagate known values forward and backward through
each op's rule until nothing changes.

Input: graph attrs ``shape_inputs`` / ``dtype_inputs`` (node id -> value for variables) and,
optionally, ``shape_outputs`` / ``dtype_outputs`` (one value or None per graph output: what is
already known about the heads, e.g. a region's outputs from the graph around it). Output: ``shape`` / ``dtype`` (a list indexed by entry id) and ``shape_num_unknown`` /
``dtype_num_unknown``.
"""
from __future__ import annotations

from typing import Callable

from ..ir.errors import ShapeInferenceError, TypeInferenceError
from ..ir.graph import Graph, IndexedGraph
from ..ops.common import fmt, known, merge
from ..ops.registry import InferError, ShapeConflict
from .manager import register_pass

__all__ = ["infer_shape_pass", "infer_dtype_pass", "node_rule", "apply_rule"]


@register_pass("infer_shape", requires=("shape_inputs",))
def infer_shape_pass(graph: Graph) -> Graph:
    values, unknown = _infer(graph.indexed, graph.attrs["shape_inputs"], "infer_shape_fn",
                             known, ShapeInferenceError, _shape_text, "shape",
                             graph.attrs.get("shape_outputs"))
    return graph.with_attrs(shape=values, shape_num_unknown=unknown)


@register_pass("infer_type", requires=("dtype_inputs",))
def infer_dtype_pass(graph: Graph) -> Graph:
    values, unknown = _infer(graph.indexed, graph.attrs["dtype_inputs"], "infer_type_fn",
                             lambda t: t is not None, TypeInferenceError, _dtype_text, "dtype",
                             graph.attrs.get("dtype_outputs"))
    return graph.with_attrs(dtype=values, dtype_num_unknown=unknown)


def _shape_text(s) -> str:
    return fmt(s) if s is not None else "unknown"


def _dtype_text(t) -> str:
    return str(t) if t is not None else "unknown"


def _infer(ig: IndexedGraph, seeds: dict, rule_attr: str, is_known: Callable,
           error_cls: type, text: Callable, kind: str,
           head_seeds: list | None = None) -> tuple[list, int]:
    """Sweep forward, then backward, until every entry is known or a sweep pair adds nothing."""
    values: list = [None] * ig.num_entries
    row_ptr = ig.row_ptr
    for nid, v in seeds.items():
        values[row_ptr[nid]] = v
    for eid, v in zip(ig.outputs, head_seeds or ()):
        if v is not None and values[eid] is None:
            values[eid] = v
    work = []
    for nid, node in enumerate(ig.nodes):
        if node.op is None:
            continue
        rule, in_ids = node_rule(ig, nid, rule_attr)
        if rule is not None:
            work.append((node, rule, in_ids, row_ptr[nid], row_ptr[nid + 1]))
    unknown = _count_unknown(values, is_known)
    partial: set[int] = set()  # work items last visited with some value unknown
    while unknown:
        for k, item in enumerate(work):
            _visit(item, values, error_cls, text, kind, is_known, partial, k)
        after = _count_unknown(values, is_known)
        if not after:
            unknown = 0
            break
        for k in range(len(work) - 1, -1, -1):
            _visit(work[k], values, error_cls, text, kind, is_known, partial, k)
        after = _count_unknown(values, is_known)
        if after >= unknown:
            unknown = after
            break
        unknown = after
    # A node visited before all its values were known is checked again against what was
    # inferred elsewhere (transpose(V) + (x + V) with x (2, 3) is a conflict, as MXNet says
    # at bind): rules both fill in and verify.
    for k in sorted(partial):
        _visit(work[k], values, error_cls, text, kind, is_known, None, k)
    return values, unknown


def node_rule(ig: IndexedGraph, nid: int, rule_attr: str = "infer_shape_fn"):
    """(rule, input entry ids) of node ``nid``: its op's rule over its inputs, or for a
    backward op without one, "output k is like the forward node's input k" over its inputs
    followed by the forward node's; (None, ...) when there is no rule."""
    node, in_ids = ig.nodes[nid], ig.node_inputs[nid]
    rule = getattr(node.op, rule_attr)
    if rule is None and "backward" in node.op.traits and node.control_deps:
        fwd_ids = ig.node_inputs[ig.node_id[id(node.control_deps[0])]]
        return _from_forward(len(in_ids)), in_ids + fwd_ids
    return rule, in_ids


def apply_rule(node, rule: Callable, ins: list, outs: list) -> None:
    """Run one node's shape rule on concrete lists (filled in place), raising
    :class:`ShapeInferenceError` naming the node (shapes settled at run time)."""
    _visit((node, rule, None, 0, 0), None, ShapeInferenceError, _shape_text, "shape",
           lists=(ins, outs))


def _from_forward(num_own: int) -> Callable:
    """Rule of backward operators: output k has the shape (dtype) of the forward node's input
    k; the forward node's input entries are appended to ``ins`` after the node's own inputs."""
    def rule(p, ins, outs):
        for k in range(len(outs)):
            fwd = num_own + k
            if outs[k] is None:
                outs[k] = ins[fwd]
            elif ins[fwd] is None:
                ins[fwd] = outs[k]
            elif outs[k] != ins[fwd]:
                if not isinstance(outs[k], tuple):  # dtypes: no partial values to merge
                    raise ShapeConflict("out", k, outs[k], ins[fwd])
                try:
                    outs[k] = ins[fwd] = merge(outs[k], ins[fwd])
                except ValueError:
                    raise ShapeConflict("out", k, outs[k], ins[fwd]) from None
    return rule


def _count_unknown(values: list, is_known: Callable) -> int:
    return sum(1 for v in values if not is_known(v))


def _visit(item, values: list, error_cls: type, text: Callable, kind: str,
           is_known: Callable | None = None, partial: set | None = None, k: int = 0,
           lists: tuple | None = None) -> None:
    node, rule, in_ids, start, stop = item
    if lists is None:
        ins = [values[e] for e in in_ids]
        outs = values[start:stop]
    else:
        ins, outs = lists
    if partial is not None:
        if all(map(is_known, ins)) and all(map(is_known, outs)):
            partial.discard(k)
        else:
            partial.add(k)
    try:
        rule(node.params, ins, outs)
    except ShapeConflict as c:
        raise error_cls(_conflict_message(node, c, text, kind)) from None
    except InferError as exc:
        raise error_cls(f"Error in operator {node.name}: {node.op.name}: {exc}") from None
    if lists is not None:
        return
    if stop - start == 1:
        values[start] = outs[0]
    else:
        values[start:stop] = outs
    for e, v in zip(in_ids, ins):
        values[e] = v


def _conflict_message(node, c: ShapeConflict, text: Callable, kind: str) -> str:
    if c.side == "in":
        names = node.op.input_names(node.params)
        what = f"input {names[c.index]!r} ({c.index}-th input)"
    else:
        names = node.op.output_names(node.params)
        what = f"output {names[c.index]!r}"
    return (f"Error in operator {node.name}: {node.op.name}: {kind} inconsistent at {what}: "
            f"provided {text(c.have)}, inferred {text(c.want)}")
