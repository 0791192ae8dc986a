"""Context assignment (group2ctx): place every node on a device and insert
``_CrossDeviceCopy`` nodes where a value changes device.

Placement, as MXNet's PlaceDevice: a node whose ``__ctx_group__`` names a group in
``group2ctx`` runs there; a backward node runs with its forward node; any other operator takes
the device of its first input; a variable lives in its group's context or, without one, in
the default context.

Input attrs: ``default_ctx``, ``group2ctx`` (group name -> Context). Output: the graph with
copy nodes, attrs ``context`` (per node id) and an updated ``num_forward_nodes``.
"""
from __future__ import annotations

from ..ir.context import Context
from ..ir.errors import BindError
from ..ir.graph import Entry, Graph, Node
from ..ops.registry import get_op
from .manager import register_pass

__all__ = ["assign_context_pass", "check_group2ctx", "host_nodes", "variable_context"]


def host_nodes(graph: Graph) -> list[bool]:
    """For each node of ``graph``, whether it runs on the host: by its ``context`` where the
    bind assigned devices (group2ctx), else by the bind's ``default_ctx`` (the host when
    there is none)."""
    contexts = graph.attrs.get("context")
    if contexts is not None:
        return [ctx.device_type == "cpu" for ctx in contexts]
    default = graph.attrs.get("default_ctx")
    return [default is None or default.device_type == "cpu"] * len(graph.indexed.nodes)


@register_pass("assign_context", requires=("default_ctx", "group2ctx"))
def assign_context_pass(graph: Graph) -> Graph:
    default, group2ctx = graph.attrs["default_ctx"], graph.attrs["group2ctx"]
    ig = graph.indexed
    ctx_of: dict[int, object] = {}
    for node in ig.nodes:
        ctx_of[id(node)] = _place(node, ctx_of, default, group2ctx)
    if len(set(ctx_of.values())) == 1:
        return graph.with_attrs(context=[default] * len(ig.nodes))
    copies: dict[tuple, Entry] = {}
    replaced: dict[int, Node] = {}
    for node in ig.nodes:
        if node.op is None:
            continue
        want = ctx_of[id(node)]
        inputs = []
        for e in node.inputs:
            src = Entry(replaced.get(id(e.node), e.node), e.index, e.version)
            if ctx_of[id(e.node)] != want:
                src = _copy_entry(src, want, copies, ctx_of)
            inputs.append(src)
        deps = [replaced.get(id(d), d) for d in node.control_deps]
        if any(a.node is not b.node for a, b in zip(inputs, node.inputs)) or any(
                a is not b for a, b in zip(deps, node.control_deps)):
            twin = Node(node.op, node.name, node.attrs, node.params, inputs, deps,
                        node.subgraphs)
            ctx_of[id(twin)] = want
            replaced[id(node)] = twin
    outputs = [Entry(replaced.get(id(e.node), e.node), e.index, e.version)
               for e in graph.outputs]
    out = Graph(outputs, dict(graph.attrs))
    full = out.indexed
    if "num_forward_outputs" in graph.attrs:
        fwd = outputs[:graph.attrs["num_forward_outputs"]]
        out.attrs["num_forward_nodes"] = max(full.node_id[id(e.node)] for e in fwd) + 1
    return out.with_attrs(context=[ctx_of[id(n)] for n in full.nodes])


def _place(node: Node, ctx_of: dict, default, group2ctx: dict):
    group = node.attrs.get("__ctx_group__")
    if group is not None and group in group2ctx:
        return group2ctx[group]
    if node.op is None:
        return default
    if "backward" in node.op.traits and node.control_deps:
        return ctx_of[id(node.control_deps[0])]
    if node.inputs:
        return ctx_of[id(node.inputs[0].node)]
    return default


def _copy_entry(e: Entry, ctx, copies: dict, ctx_of: dict) -> Entry:
    key = (id(e.node), e.index, ctx)
    hit = copies.get(key)
    if hit is None:
        op = get_op("_CrossDeviceCopy")
        node = Node(op, f"{e.node.name}_output{e.index}_to_{ctx.device_type}{ctx.device_id}",
                    {}, op.parse({}), [e])
        ctx_of[id(node)] = ctx
        hit = copies[key] = Entry(node, 0)
    return hit


def variable_context(node: Node, default, group2ctx: dict):
    """Where a variable's array must live: its group's context, else the default."""
    return group2ctx.get(node.attrs.get("__ctx_group__"), default)


def check_group2ctx(group2ctx) -> dict:
    """Normalise ``group2ctx`` (a dict of group name -> Context)."""
    if not group2ctx:
        return {}
    if not isinstance(group2ctx, dict):
        raise BindError(f"group2ctx must be a dict of group name -> Context, got "
                        f"{type(group2ctx).__name__}")
    out = {}
    for name, ctx in group2ctx.items():
        if not isinstance(ctx, Context):
            raise BindError(f"group2ctx[{name!r}] must be a Context (gx.cpu(i) / gx.gpu(i)), "
                            f"got {ctx!r}")
        out[str(name)] = ctx
    return out
