"""MXNET_USE_FUSION=1: pointwise fusion after the gradient pass (backends/fused/fuse_pointwise.py)
on top of any subgraph backend. Fused and unfused training agree (float16/32/64, grad_req
write/add, repeated backward); backward chains fuse; onnxrt (skipped for training) and the
default backend underneath; graphs whose naive fusion would be a cycle, through data or
through control dependencies; nodes read inside and outside a region; every refcase replayed
with fusion on; inspection (plan, sources, debug_str, monitor, JSON of the optimized symbol).

Kernels share the fused backend tests' disk cache (pytest's cache folder): a second run
compiles nothing.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="fusion generates its kernels with numba "
                                            "(pip install 'graphexec[fused]')")

from refcase_replay import Replay, case_names, load_case, tolerance  # noqa: E402

import graphexec as gx  # noqa: E402
from graphexec.backends.fused import sources  # noqa: E402
from graphexec.backends.fused.subgraph import PointwiseFusionProperty  # noqa: E402
from graphexec.core.ir.errors import GraphexecError  # noqa: E402

S = gx.sym
pytestmark = pytest.mark.usefixtures("subgraph_clean", "fused_kernel_cache")
TOL = {"float16": (2e-2, 2e-2), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)}
CLAIM_ALL = {"fused": {"cost_model": False}}


def train(monkeypatch, sym, args: dict, fusion: bool, req: str = "write", backend=None,
          options=CLAIM_ALL, backwards: int = 2):
    """Bind with MXNET_USE_FUSION on or off, forward(is_train=True), then ``backwards``
    backward calls with fixed head gradients; the outputs, the gradients after each backward
    (buffers start at 0.5 so that 'add' shows), and the executor. No region may fall back."""
    monkeypatch.setenv("MXNET_USE_FUSION", "1" if fusion else "0")
    grads = {k: np.full_like(v, 0.5) for k, v in args.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exe = sym.bind(gx.cpu(), {k: v.copy() for k, v in args.items()}, args_grad=grads,
                       grad_req=req, backend=backend, backend_options=options)
        outs = [o.copy() for o in exe.forward(is_train=True)]
        rng = np.random.default_rng(7)
        heads = [rng.uniform(-1, 1, o.shape).astype(o.dtype) for o in outs]
        steps = []
        for _ in range(backwards):
            exe.backward(heads)
            steps.append({k: g.copy() for k, g in exe.grad_dict.items()})
    return outs, steps, exe


def assert_same(got, want, dtype: str) -> None:
    rtol, atol = TOL[dtype]
    outs, steps, _ = got
    w_outs, w_steps, _ = want
    for k, (a, b) in enumerate(zip(outs, w_outs)):
        assert a.dtype == b.dtype, f"output {k}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"output {k}")
    for step, (g, w) in enumerate(zip(steps, w_steps)):
        assert sorted(g) == sorted(w)
        for name in w:
            np.testing.assert_allclose(g[name], w[name], rtol=rtol, atol=atol,
                                       err_msg=f"gradient of {name} after backward {step + 1}")


def regions(exe, phase: str) -> list:
    """The fuse_pointwise regions of ``exe`` whose members are backward (or forward) nodes."""
    plan = exe.partition_plan
    return [r for r in plan.regions if r.property == "fuse_pointwise"
            and (phase == "backward") == any(plan.nodes[m].op.startswith("_backward_")
                                             for m in r.members)]


def mlp(dtype: str):
    """An MLP block: broadcast bias, GELU in its tanh form, sigmoid gate, FullyConnected."""
    x, b = S.Variable("x"), S.Variable("b")
    h = S.FullyConnected(x, num_hidden=6, name="fc1")
    h = S.broadcast_add(h, b)
    g = 0.5 * h * (1 + S.tanh(0.79788456 * (h + 0.044715 * h * h * h)))
    y = S.FullyConnected(g * S.sigmoid(h) - S.abs(h) * 0.1, num_hidden=5, name="fc2")
    rng = np.random.default_rng(0)
    args = {"x": rng.uniform(-1, 1, (4, 3)), "b": rng.uniform(-1, 1, (6,)),
            "fc1_weight": rng.uniform(-1, 1, (6, 3)), "fc1_bias": rng.uniform(-1, 1, (6,)),
            "fc2_weight": rng.uniform(-1, 1, (5, 6)), "fc2_bias": rng.uniform(-1, 1, (5,))}
    return S.Group([y, S.exp(h) * 2]), {k: v.astype(dtype) for k, v in args.items()}


# -- fused == unfused ---------------------------------------------------------------------------
@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_training_matches_unfused(dtype, req, monkeypatch):
    sym, args = mlp(dtype)
    fused = train(monkeypatch, sym, args, True, req)
    assert_same(fused, train(monkeypatch, sym, args, False, req), dtype)
    exe = fused[2]
    assert regions(exe, "forward") and regions(exe, "backward")
    assert exe.partition_plan.fallbacks == 0


def test_backward_chains_fuse_into_kernels_that_can_be_inspected(monkeypatch):
    sym, args = mlp("float32")
    _, _, exe = train(monkeypatch, sym, args, True)
    plan = exe.partition_plan
    backward = regions(exe, "backward")
    fused_ops = {plan.nodes[m].op for r in backward for m in r.members}
    assert {"_backward_tanh", "_backward_mul", "_backward_mul_scalar"} <= fused_ops
    assert max(len(r.members) for r in backward) >= 8, plan.table()
    assert all(r.backend == "fused" for r in plan.regions)
    assert set(sources(exe)) == {r.node for r in plan.regions}
    assert all("def kernel_serial(" in src for src in sources(exe).values())
    text = exe.debug_str()
    assert text.count("Op:_FusedOp") == len(plan.regions)
    assert "_backward_tanh" not in text  # inside a region now
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    exe.forward(is_train=True)
    exe.backward([np.ones((4, 5), "f4"), np.ones((4, 6), "f4")])
    region = backward[0]
    assert {f"{region.node}_{out}" for out in region.outputs} <= set(seen)


def test_fusion_is_off_unless_mxnet_use_fusion_is_set(monkeypatch):
    sym, args = mlp("float32")
    monkeypatch.delenv("MXNET_USE_FUSION", raising=False)
    exe = sym.bind(gx.cpu(), args, args_grad={k: np.zeros_like(v) for k, v in args.items()})
    assert exe.partition_plan is None and "_FusedOp" not in exe.debug_str()
    _, _, exe = train(monkeypatch, sym, args, False)
    assert exe.partition_plan is None


def test_the_fused_backend_options_apply_and_are_checked(monkeypatch):
    sym, args = mlp("float32")
    _, _, exe = train(monkeypatch, sym, args, True, options={"fused": {"min_size": 50}})
    assert not exe.partition_plan.regions
    assert "region below the minimum size" in exe.partition_plan.table()
    with pytest.raises(GraphexecError, match="min_size=0: expected an integer >= 1"):
        train(monkeypatch, sym, args, True, options={"fused": {"min_size": 0}})


def test_single_element_arrays(monkeypatch):
    """A loop domain of ones: the kernel must write the executor's arrays, not copies."""
    x = S.Variable("x")
    y = S.sigmoid(S.exp(x) * 2 + x)
    args = {"x": np.array([[0.3]], "f4")}
    assert_same(train(monkeypatch, y, args, True), train(monkeypatch, y, args, False), "float32")
    assert_same(train(monkeypatch, y, args, False, backend="fused", options=CLAIM_ALL),
                train(monkeypatch, y, args, False), "float32")


def test_backward_of_an_unsupported_variant_stays_native(monkeypatch):
    """LeakyReLU prelu (a learned slope) is not fused, and neither is its backward node."""
    x, g = S.Variable("x"), S.Variable("g")
    y = S.LeakyReLU(S.exp(x) * 2 + 1, g, act_type="prelu", name="pr") * 3 - 1
    rng = np.random.default_rng(3)
    args = {"x": rng.uniform(-1, 1, (3, 4)).astype("f4"), "g": np.full((4,), 0.2, "f4")}
    fused = train(monkeypatch, y, args, True)
    assert_same(fused, train(monkeypatch, y, args, False), "float32")
    plan = fused[2].partition_plan
    assert plan.nodes["pr_backward"].region is None
    assert "LeakyReLU act_type=prelu" in plan.nodes["pr_backward"].reason
    assert regions(fused[2], "backward")


# -- on top of other backends -------------------------------------------------------------------
def test_onnxrt_training_bind_is_skipped_and_fusion_applies(monkeypatch):
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "onnxrt")
    sym, args = mlp("float32")
    fused = train(monkeypatch, sym, args, True)
    plan = fused[2].partition_plan
    assert any("onnxrt" in s and "inference_only" in s for s in plan.skipped)
    assert regions(fused[2], "backward")
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "NONE")
    assert_same(fused, train(monkeypatch, sym, args, False), "float32")


def test_default_backend_regions_stay_and_the_rest_fuses(monkeypatch):
    gx.subgraph.set_op_names("default", {"FullyConnected"})
    sym, args = mlp("float32")
    fused = train(monkeypatch, sym, args, True, backend="default")
    plan = fused[2].partition_plan
    assert {r.backend for r in plan.regions} == {"default", "fused"}
    assert plan.nodes["fc1"].backend == "default"
    assert regions(fused[2], "backward")
    assert_same(fused, train(monkeypatch, sym, args, False, backend="NONE"), "float32")


# -- graph safety -------------------------------------------------------------------------------
def assert_topological(exe) -> None:
    """Every node of the executed graph comes after its inputs and control dependencies."""
    ig = exe._plan.graph.indexed
    for nid, node in enumerate(ig.nodes):
        for pred in [e.node for e in node.inputs] + list(node.control_deps):
            assert ig.node_id[id(pred)] < nid, f"{node.name} runs before {pred.name}"


def test_cross_coupled_graph_stays_acyclic(monkeypatch):
    """exp(x)*2 feeds softmax (not fusable), whose result meets tanh(x)+1 again: one region
    holding both ends, forward or backward, would be a cycle through softmax."""
    x = S.Variable("x")
    u = S._mul_scalar(S.exp(x, name="e"), scalar=2, name="u")
    v = S._plus_scalar(S.tanh(x, name="t"), scalar=1, name="v")
    w = S.elemwise_mul(v, S.softmax(u, axis=-1), name="w")
    sym = S.Group([w, S.elemwise_mul(u, v, name="uv")])
    args = {"x": np.random.default_rng(1).uniform(-1, 1, (3, 6)).astype("f4")}
    fused = train(monkeypatch, sym, args, True)
    assert_same(fused, train(monkeypatch, sym, args, False), "float32")
    exe = fused[2]
    plan = exe.partition_plan
    assert plan.nodes["e"].region is not None
    assert plan.nodes["w"].region != plan.nodes["e"].region
    assert_topological(exe)
    gx.validate_partition(sym, exe.get_optimized_symbol())


def test_control_dependency_cycle_is_avoided(monkeypatch):
    """With mirroring, the gradient of the reshape depends (control only) on the mirrored
    reshape, which reads the mirrored tanh: a region of that tanh and its gradient would leave
    through the reshape and come back through that dependency."""
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    x = S.Variable("x")
    r = S.Reshape(S.tanh(x * 2, name="t1"), shape=(0, 0), name="r")
    args = {"x": np.linspace(-1, 1, 12, dtype="f4").reshape(3, 4)}
    fused = train(monkeypatch, r, args, True)
    assert_same(fused, train(monkeypatch, r, args, False), "float32")
    plan = fused[2].partition_plan
    assert plan.nodes["t1_mirror"].reason == "cycle"
    assert plan.nodes["t1"].region is not None
    assert_topological(fused[2])


def test_node_read_inside_and_outside_a_region_keeps_both_consumers(monkeypatch):
    x = S.Variable("x")
    t = S._mul_scalar(S.exp(x, name="e"), scalar=2, name="t")
    sym = S.Group([t + 1, S.softmax(t, axis=-1), S.sigmoid(t)])
    args = {"x": np.random.default_rng(2).uniform(-1, 1, (2, 7)).astype("f4")}
    fused = train(monkeypatch, sym, args, True)
    assert_same(fused, train(monkeypatch, sym, args, False), "float32")
    region = next(r for r in fused[2].partition_plan.regions if "t" in r.members)
    assert "t_output" in region.outputs


def test_optimized_symbol_round_trips_through_json(monkeypatch):
    sym, args = mlp("float32")
    outs, _, exe = train(monkeypatch, sym, args, True)
    loaded = gx.sym.load_json(exe.get_optimized_symbol().tojson())
    assert "_FusedOp" in loaded.tojson()
    again = loaded.bind(gx.cpu(), args, grad_req="null", backend="NONE")
    for got, want in zip(again.forward(), outs):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- acceptance: refcases -----------------------------------------------------------------------
@pytest.mark.parametrize("name", case_names())
def test_refcase_full_replay_matches_with_fusion(name, monkeypatch):
    """Forward, backward, gradients, aux states, grad_req add, reshape; every supported
    region fused (no cost model)."""
    monkeypatch.setenv("MXNET_USE_FUSION", "1")
    monkeypatch.setattr(PointwiseFusionProperty, "default_attrs",
                        {**PointwiseFusionProperty.default_attrs, "cost_model": False})
    meta, expected = load_case(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = Replay(name, backward=True, reshape=True)
    for key, want in expected.items():
        rtol, atol = tolerance(meta, key)
        got = rep.results[key]
        assert got.dtype == want.dtype, f"{name} {key}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=max(atol, 1e-5),
                                   err_msg=f"{name} {key}")
    assert all(e.partition_plan.fallbacks == 0 for e in rep.execs.values())
