"""MXNet JSON with several nodes of one name (Gluon reuses a block: i3d and slowfast apply one
ReLU block in every bottleneck). Legal in MXNet; it must work everywhere: native runs, ONNX
export (value names made unique: ONNX Runtime rejects graphs not in SSA form), onnxrt regions
(no silent fallback), the partition plan (one row per node), monitor callbacks, debug_str,
the plot and training."""
from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

import graphexec as gx

pytestmark = pytest.mark.usefixtures("subgraph_clean")

N, H = 2, 6


def _fc(name: str, src: int, weight: int) -> dict:
    return {"op": "FullyConnected", "name": name, "attrs": {"num_hidden": str(H)},
            "inputs": [[src, 0, 0], [weight, 0, 0], [weight + 1, 0, 0]]}


def dup_json(middle: str | None = "gammaln") -> str:
    """data -> fc0 -> relu -> fc1 -> relu -> [middle] -> fc2 -> relu -> + first relu; the
    three Activation nodes are all named ``relu`` (one Gluon block applied three times)."""
    nodes, args = [{"op": "null", "name": "data", "inputs": []}], [0]

    def add(node: dict) -> int:
        nodes.append(node)
        return len(nodes) - 1

    def params(layer: str) -> int:
        w = add({"op": "null", "name": f"{layer}_weight", "inputs": []})
        add({"op": "null", "name": f"{layer}_bias", "inputs": []})
        args.extend([w, w + 1])
        return w

    x = 0
    relus = []
    for k in range(3):
        x = add(_fc(f"fc{k}", x, params(f"fc{k}")))
        x = add({"op": "Activation", "name": "relu", "attrs": {"act_type": "relu"},
                 "inputs": [[x, 0, 0]]})
        relus.append(x)
        if k == 1 and middle:
            x = add({"op": middle, "name": "mid", "inputs": [[x, 0, 0]]})
    out = add({"op": "elemwise_add", "name": "add", "inputs": [[x, 0, 0], [relus[0], 0, 0]]})
    return json.dumps({"nodes": nodes, "arg_nodes": args,
                       "node_row_ptr": list(range(len(nodes) + 1)),
                       "heads": [[out, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}})


def params(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {"data": rng.uniform(0.5, 1.5, (N, H)).astype("f4")}
    for k in range(3):
        out[f"fc{k}_weight"] = rng.uniform(-0.2, 0.6, (H, H)).astype("f4")
        out[f"fc{k}_bias"] = rng.uniform(0.1, 0.3, (H,)).astype("f4")
    return out


def twin(a: dict, middle: str | None = "gammaln") -> tuple[np.ndarray, list[np.ndarray]]:
    """numpy: the output and the three ReLU outputs."""
    from math import lgamma
    x, relus = a["data"].astype("f8"), []
    for k in range(3):
        x = np.maximum(x @ a[f"fc{k}_weight"].T + a[f"fc{k}_bias"], 0)
        relus.append(x)
        if k == 1 and middle == "gammaln":
            x = np.vectorize(lgamma)(x)
    return x + relus[0], relus


def bind(sym, a, **kw):
    return sym.bind(gx.cpu(), {k: v.copy() for k, v in a.items()}, grad_req="null", **kw)


def test_json_keeps_every_node_and_round_trips():
    text = dup_json()
    sym = gx.sym.load_json(text)
    names = [n["name"] for n in json.loads(sym.tojson())["nodes"]]
    assert names.count("relu") == 3
    assert json.loads(sym.tojson())["nodes"] == json.loads(text)["nodes"]


def test_native_matches_numpy():
    a = params()
    out = bind(gx.sym.load_json(dup_json()), a).forward()[0]
    np.testing.assert_allclose(out, twin(a)[0], rtol=1e-5, atol=1e-5)


def test_onnxrt_regions_run_in_onnx_runtime_without_fallback():
    pytest.importorskip("onnxruntime")
    a = params()
    sym = gx.sym.load_json(dup_json())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to native would warn
        exe = bind(sym, a, backend="onnxrt")
        out = exe.forward()[0]
    np.testing.assert_allclose(out, twin(a)[0], rtol=1e-5, atol=1e-5)
    plan = exe.partition_plan
    assert plan.fallbacks == 0
    assert [d.node for d in plan.nodes.values()] == \
        ["fc0", "relu", "fc1", "relu#2", "mid", "fc2", "relu#3", "add"]
    regions = {d.node: d.region for d in plan.nodes.values()}
    assert regions["mid"] is None and plan.nodes["mid"].reason == "no ONNX converter for gammaln"
    assert regions["relu"] == regions["relu#2"] != regions["relu#3"] is not None
    assert all(st.get("fallback") is None for st in exe.region_states.values())


def test_export_model_makes_value_names_unique():
    ort = pytest.importorskip("onnxruntime")
    a = params()
    sym = gx.sym.load_json(dup_json(middle=None))
    weights = {k: v for k, v in a.items() if k != "data"}
    model = gx.onnx.export_model(sym, weights, {}, {"data": (N, H)})
    produced = [o for n in model.graph.node for o in n.output]
    assert len(produced) == len(set(produced))
    assert sum(o.startswith("relu_output") for o in produced) == 3
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = sess.run(None, {"data": a["data"]})[0]
    np.testing.assert_allclose(out, twin(a, None)[0], rtol=1e-5, atol=1e-5)


def test_export_model_repeated_head():
    ort = pytest.importorskip("onnxruntime")
    a = params()
    x = gx.sym.Variable("data")
    y = gx.sym.relu(x, name="r")
    model = gx.onnx.export_model(gx.sym.Group([y, y]), {}, {}, {"data": (N, H)})
    assert len({o.name for o in model.graph.output}) == 2
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for out in sess.run(None, {"data": a["data"] - 1}):
        np.testing.assert_array_equal(out, np.maximum(a["data"] - 1, 0))


def test_monitor_reports_each_node_in_order():
    a = params()
    exe = bind(gx.sym.load_json(dup_json()), a)
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, np.array(arr))))
    exe.forward()
    relu = [arr for name, arr in seen if name == "relu_output"]
    assert len(relu) == 3  # MXNet names monitor values by node name, repeats included
    for got, want in zip(relu, twin(a)[1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_debug_str_lists_every_node():
    text = bind(gx.sym.load_json(dup_json()), params()).debug_str()
    assert text.count("Op:Activation, Name=relu\n") == 3


def test_default_backend_plan_and_training():
    """The plan gives each same-named node its own row and region; gradients through the
    regions match the native ones."""
    gx.subgraph.set_op_names("default", {"Activation", "FullyConnected"})
    sym, a = gx.sym.load_json(dup_json()), params()
    grads = {}
    for backend in ("NONE", "default"):
        exe = sym.simple_bind(gx.cpu(), data=(N, H), backend=backend)
        exe.copy_params_from({k: v for k, v in a.items()})
        exe.forward(is_train=True)
        exe.backward(np.ones((N, H), "f4"))
        grads[backend] = {k: v.copy() for k, v in exe.grad_dict.items()}
    plan = exe.partition_plan
    assert {plan.nodes[k].region is not None for k in ("relu", "relu#2", "relu#3")} == {True}
    for k, g in grads["NONE"].items():
        np.testing.assert_allclose(grads["default"][k], g, rtol=1e-5, atol=1e-6, err_msg=k)


def test_plot_colours_each_node_by_its_own_decision():
    pytest.importorskip("onnxruntime")
    from graphexec.tools.compare.plot import graph_svg
    sym = gx.sym.load_json(dup_json())
    plan = bind(sym, params(), backend="onnxrt").partition_plan.to_dict()
    svg = graph_svg(sym, plan)
    boxes = re.findall(r'class="gx-node" data-backend="(\w+)"(?: data-region="(\d+)")?', svg)
    by_region = {r: b for b, r in boxes}
    assert sorted(b for b, _ in boxes) == ["native"] + ["onnxrt"] * 7
    relu = [plan["nodes"][k]["region"] for k in (1, 3, 6)]   # relu, relu#2, relu#3
    assert relu[0] == relu[1] != relu[2]
    assert [r for _, r in boxes].count(str(relu[2])) == 3    # fc2, relu#3, add
    assert by_region[str(relu[0])] == "onnxrt"
