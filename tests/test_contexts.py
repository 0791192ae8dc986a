"""group2ctx: nodes placed by __ctx_group__, copy nodes where values change context, storage
kept per context, results and gradients unchanged; context errors."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx


def _two_group_net():
    x = gx.sym.Variable("x")
    with gx.AttrScope(ctx_group="dev1"):
        h = gx.sym.exp(x * 0.5, name="h")
    with gx.AttrScope(ctx_group="dev2"):
        w = gx.sym.Variable("w")
        y = gx.sym.elemwise_mul(gx.sym.sin(h, name="s"), w, name="y")
    return y


def _run(sym, group2ctx):
    exe = sym.simple_bind(gx.cpu(), group2ctx=group2ctx, x=(3, 4), w=(3, 4))
    rng = np.random.default_rng(0)
    exe.arg_dict["x"][...] = rng.uniform(-1, 1, (3, 4))
    exe.arg_dict["w"][...] = rng.uniform(-1, 1, (3, 4))
    exe.forward(is_train=True)
    exe.backward(np.ones((3, 4), "f4"))
    return exe


def test_copy_nodes_between_contexts_and_same_results():
    sym = _two_group_net()
    plain = _run(sym, None)
    split = _run(sym, {"dev1": gx.cpu(0), "dev2": gx.cpu(1)})
    graph = split._plan.graph
    ops = [n.op.name for n in graph.indexed.nodes if n.op is not None]
    assert "_CrossDeviceCopy" in ops and "_CrossDeviceCopy" not in [
        n.op.name for n in plain._plan.graph.indexed.nodes if n.op is not None]
    ctx = dict(zip([n.name for n in graph.indexed.nodes], graph.attrs["context"]))
    assert ctx["h"] == gx.cpu(0) and ctx["s"] == gx.cpu(1) and ctx["y"] == gx.cpu(1)
    assert ctx["s_backward"] == gx.cpu(1) and ctx["h_backward"] == gx.cpu(0)
    np.testing.assert_allclose(split.outputs[0], plain.outputs[0], rtol=1e-6)
    for n in ("x", "w"):
        np.testing.assert_allclose(split.grad_dict[n], plain.grad_dict[n], rtol=1e-6)
    sids, devices = graph.attrs["storage_id"], graph.attrs["storage_context"]
    for nid, node in enumerate(graph.indexed.nodes):
        for e in range(graph.indexed.row_ptr[nid], graph.indexed.row_ptr[nid + 1]):
            if sids[e] >= 0:
                assert devices[sids[e]] == graph.attrs["context"][nid]
    assert sym.list_arguments() == ["x", "w"]  # the user's symbol is untouched


def test_group2ctx_errors():
    sym = _two_group_net()
    with pytest.raises(gx.BindError, match=r"group2ctx\['dev1'\] must be a Context"):
        sym.simple_bind(gx.cpu(), group2ctx={"dev1": "cpu"}, x=(2,), w=(2,))
    with pytest.raises(gx.BindError, match="group2ctx must be a dict"):
        sym.simple_bind(gx.cpu(), group2ctx=[gx.cpu()], x=(2,), w=(2,))


def test_unknown_group_stays_on_default_context():
    exe = _run(_two_group_net(), {"other": gx.cpu(3)})
    assert set(exe._plan.graph.attrs["context"]) == {gx.cpu(0)}


def test_host_nodes_and_forward_nodes():
    """``host_nodes`` (the passes' view of placement): per node by the assigned contexts
    where group2ctx placed them, else by the bind's default context; a graph with no context
    at all is on the host. ``IndexedGraph.forward_node``: a gradient node's forward node."""
    from graphexec.core.ir.graph import Graph
    from graphexec.core.passes.assign_context import host_nodes
    exe = _run(_two_group_net(), {"dev1": gx.cpu(0), "dev2": gx.cpu(1)})
    graph = exe._plan.graph
    ig = graph.indexed
    n = len(ig.nodes)
    assert host_nodes(graph) == [True] * n
    # dev2 on a GPU instead (no GPU needed: the contexts are only read)
    gpu = [gx.gpu(0) if c == gx.cpu(1) else c for c in graph.attrs["context"]]
    host = dict(zip([node.name for node in ig.nodes],
                    host_nodes(graph.with_attrs(context=gpu))))
    assert host["h"] and not host["s"] and not host["y"]
    assert host_nodes(Graph(graph.outputs, {"default_ctx": gx.gpu(0)}, ig)) == [False] * n
    assert host_nodes(Graph(graph.outputs, {"default_ctx": gx.cpu()}, ig)) == [True] * n
    assert host_nodes(Graph(graph.outputs, {}, ig)) == [True] * n
    names = [node.name for node in ig.nodes]
    backward = {names[i]: names[ig.forward_node(i)] for i in range(n)
                if ig.forward_node(i) is not None}
    assert backward["s_backward"] == "s" and backward["h_backward"] == "h"
    assert all(ig.forward_node(names.index(k)) is None for k in ("x", "h", "s"))
