"""Dynamic shapes (``_contrib_boolean_mask``): MXNet 1.9.1's numbers (tests/data/vision/dynamic,
recorded by make_dynamic.py there), shapes settled again at every forward, memory planning
of the static part, backends that keep dynamic nodes native and say why, and clear errors."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import BindError, GraphexecError

DATA = Path(__file__).parent / "data" / "vision" / "dynamic"
META = json.loads((DATA / "dynamic.json").read_text())
ARRAYS = np.load(DATA / "dynamic.npz")
CASES = sorted(META["cases"])
S = gx.sym

pytestmark = pytest.mark.usefixtures("subgraph_clean")


def _bind(name: str, backend: str = "NONE", train: bool = True):
    case = META["cases"][name]
    sym = S.load_json(case["symbol_json"])
    args = {k: ARRAYS[f"{name}/in/{k}"].copy() for k in case["inputs"]}
    grads = {k: np.zeros_like(args[k]) for k in case["grads"]} if train else {}
    exe = sym.bind(gx.cpu(), args, args_grad=grads or None,
                   grad_req={k: "write" if k in grads else "null" for k in args},
                   backend=backend)
    return case, exe


def _check_outputs(name: str, case: dict, outs) -> None:
    assert [list(o.shape) for o in outs] == case["out_shapes"], name
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o, ARRAYS[f"{name}/out{k}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} output {k}")


@pytest.mark.parametrize("name", CASES)
def test_matches_mxnet_forward_and_backward(name):
    case, exe = _bind(name)
    train = bool(case["grads"])
    _check_outputs(name, case, exe.forward(is_train=train))
    if not train:
        return
    exe.backward([ARRAYS[f"{name}/head{k}"] for k in range(len(case["out_shapes"]))])
    for k in case["grads"]:
        np.testing.assert_allclose(exe.grad_dict[k], ARRAYS[f"{name}/grad/{k}"], rtol=1e-5,
                                   atol=1e-6, err_msg=f"{name}: gradient of {k}")


@pytest.mark.parametrize("backend", ["onnxrt", "fused", "default"])
@pytest.mark.parametrize("name", ["mask_chain", "mask_computed_index", "mask_fc"])
def test_backends_keep_dynamic_nodes_native(name, backend):
    if backend == "onnxrt":
        pytest.importorskip("onnxruntime")
    gx.subgraph.set_op_names("default", {"_contrib_boolean_mask", "exp", "_mul_scalar", "sum",
                                         "tanh", "relu", "FullyConnected", "_minus_scalar"})
    case, exe = _bind(name, backend, train=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no region falls back at run time
        _check_outputs(name, case, exe.forward())
    plan = exe.partition_plan
    assert plan.nodes["bm"].region is None
    assert "depends on the data" in plan.table()
    after = [d for d in plan.nodes.values() if d.reason == "after_dynamic"]
    assert after and all(d.region is None for d in after)
    if name == "mask_computed_index" and backend == "onnxrt":
        # the static part before the mask still runs in ONNX Runtime
        assert {plan.nodes[n].backend for n in ("r", "rowsum")} == {"onnxrt"}


def test_shapes_settle_again_at_every_forward():
    """MXNet 1.9.1 keeps the first forward's shapes (and corrupts memory); graphexec settles
    them at every forward and re-plans the nodes after the mask."""
    data = np.arange(12, dtype="f4").reshape(4, 3) / 10
    m = S._contrib_boolean_mask(S.var("data"), S.var("index"), name="bm")
    net = S.Group([S.exp(m * 2, name="e"), S.sum(m, name="s")])
    exe = net.bind(gx.cpu(), {"data": data, "index": np.zeros(4, "f4")},
                   args_grad={"data": np.zeros((4, 3), "f4")},
                   grad_req={"data": "write", "index": "null"})
    assert exe.outputs[0] is None  # not settled before the first forward
    for flags in ([0, 1, 0, 1], [1, 1, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]):
        index = np.array(flags, "f4")
        outs = exe.forward(is_train=True, index=index)
        keep = data[index != 0]
        assert outs[0].shape == keep.shape and exe.output_dict["e_output"].shape == keep.shape
        np.testing.assert_allclose(outs[0], np.exp(keep * 2), rtol=1e-6)
        np.testing.assert_allclose(outs[1], [keep.sum()], rtol=1e-6)
        head = np.full(keep.shape, 0.5, "f4")
        exe.backward([head, np.ones(1, "f4")])
        want = np.zeros_like(data)
        want[index != 0] = 0.5 * 2 * np.exp(keep * 2) + 1
        np.testing.assert_allclose(exe.grad_dict["data"], want, rtol=1e-5)


def test_memory_plan_covers_the_static_part_and_reuses_dynamic_buffers():
    x = S.relu(S.var("data"), name="r") * 2
    net = S.tanh(S._contrib_boolean_mask(x, S.var("index"), name="bm"), name="t")
    exe = net.simple_bind(gx.cpu(), data=(64, 32), index=(64,), grad_req="null")
    # the two static entries (r, *2) are planned: 2 x 64 x 32 float32 at most
    assert 0 < exe.memory_plan["planned_bytes"] <= 2 * 64 * 32 * 4
    exe.arg_dict["data"][...] = 1
    exe.forward(index=np.ones(64, "f4"))
    big = exe.outputs[0]
    exe.forward(index=(np.arange(64) % 2).astype("f4"))
    small = exe.outputs[0]
    assert small.shape == (32, 32) and np.shares_memory(big, small)  # the buffer is reused
    np.testing.assert_allclose(small, np.tanh(2.0), rtol=1e-6)


def test_monitor_and_bulk_execution(monkeypatch):
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_INFERENCE", "1")
    m = S._contrib_boolean_mask(S.var("data"), S.var("index"), name="bm")
    exe = S.sqrt(m, name="q").bind(gx.cpu(), {"data": np.full((3, 2), 4, "f4"),
                                              "index": np.array([1, 0, 1], "f4")})
    seen = {}
    exe.set_monitor_callback(lambda n, a: seen.__setitem__(n, np.array(a)), monitor_all=True)
    exe.forward()
    assert seen["bm_output"].shape == (2, 2) and seen["q_output"].shape == (2, 2)
    exe.set_monitor_callback(None)
    np.testing.assert_array_equal(exe.forward(index=np.ones(3, "f4"))[0], np.full((3, 2), 2))


def test_region_loaded_from_json_refuses_dynamic_shapes():
    """A partitioned symbol whose region would take a dynamic shape: a clear bind error."""
    gx.subgraph.set_op_names("default", {"exp"})
    region = S.exp(S.var("x"), name="e").optimize_for("default")
    m = S._contrib_boolean_mask(S.var("data"), S.var("index"), name="bm")
    net = S.load_json(region(x=m).tojson())
    with pytest.raises(BindError, match="region .* settles only at run time"):
        net.bind(gx.cpu(), {"data": np.ones((3, 2), "f4"), "index": np.ones(3, "f4")})


@pytest.mark.parametrize("attrs,shapes,match", [
    ({"axis": 1}, {"data": (3, 2), "index": (2,)}, "axis=1 is not supported"),
    ({}, {"data": (3, 2), "index": (3, 1)}, "index must be 1-D"),
    ({}, {"data": (3, 2), "index": (4,)}, r"one flag per row of data \[3,2\]"),
])
def test_bad_input_names_node_and_expectation(attrs, shapes, match):
    m = S._contrib_boolean_mask(S.var("data"), S.var("index"), name="bm", **attrs)
    with pytest.raises(GraphexecError, match=match) as info:
        m.simple_bind(gx.cpu(), **shapes)
    assert "bm" in str(info.value)


def test_infer_shape_leaves_the_masked_dimension_unknown():
    m = S._contrib_boolean_mask(S.var("data"), S.var("index"))
    _, out, _ = m.infer_shape_partial(data=(4, 3), index=(4,))
    assert out == [(0, 3)]  # 0: unknown, as MXNet's legacy shapes


def test_imperative_call_settles_the_shape_from_the_values():
    """``gx.nd.contrib.boolean_mask`` as ``mx.nd.contrib.boolean_mask``: the output's rows
    follow the index at every call (one prepared plan for all), none kept gives (0, ...),
    ``out=`` must have the settled shape."""
    data = gx.nd.array(np.arange(24.0).reshape(3, 4, 2))
    kept = gx.nd.contrib.boolean_mask(data, gx.nd.array([1, 0, 1]))
    np.testing.assert_array_equal(kept, np.arange(24.0).reshape(3, 4, 2)[[0, 2]])
    assert gx.nd.contrib.boolean_mask(data, gx.nd.array([0, 0, 1])).shape == (1, 4, 2)
    assert gx.nd.contrib.boolean_mask(data, gx.nd.array([0, 0, 0])).shape == (0, 4, 2)
    target = gx.nd.zeros((2, 4, 2))
    gx.nd.contrib.boolean_mask(data, gx.nd.array([1, 1, 0]), out=target)
    np.testing.assert_array_equal(target, np.arange(16.0).reshape(2, 4, 2))
    with pytest.raises(GraphexecError, match=r"out\[0\] has shape \(2, 4, 2\).*\(1, 4, 2\)"):
        gx.nd.contrib.boolean_mask(data, gx.nd.array([1, 0, 0]), out=target)
