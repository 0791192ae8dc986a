"""Gradients and training semantics of the nn, conv and loss families against MXNet 1.9.1.

tests/data/nn/grad_reference.* (made by make_grad_reference.py with the real MXNet) records,
per case, one operator bound with gradient buffers pre-filled with 7 and a sequence of
forward/backward calls: the gradients (and BatchNorm's gamma / moving statistics) after
every call, and the debug_str block of the backward node. Loss heads, whose gradients are not
those of sum(out * head), are checked here rather than by finite differences.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.symbol.symbol import create_op_symbol

DATA = Path(__file__).parent / "data"
REF = json.loads((DATA / "nn" / "grad_reference.json").read_text())
_BUFFERS = dict(np.load(DATA / "nn" / "grad_reference.npz"))


def ref(key: str) -> np.ndarray:
    code, offset, shape = REF["index"][key]
    size = int(np.prod(shape))
    return _BUFFERS[code][offset:offset + size].reshape(shape)


def _has(key: str) -> bool:
    return key in REF["index"]


def _bind(case_id: str):
    meta = REF["cases"][case_id]
    inputs = {n: ref(f"{case_id}:in:{n}").copy() for n in meta["inputs"]}
    sym = create_op_symbol(meta["op"], [gx.sym.Variable(n) for n in meta["inputs"]],
                           dict(meta["attrs"], name="node"))
    args = {n: inputs[n] for n in meta["grad_req"]}
    grads = {n: np.full_like(args[n], 7) for n, r in meta["grad_req"].items() if r != "null"}
    aux = {n: inputs[n] for n in meta["aux"]}
    exe = sym.bind(gx.cpu(), args, args_grad=grads, grad_req=meta["grad_req"],
                   aux_states=aux or None)
    return meta, exe, {**args, **aux}, grads


def _tolerance(case_id: str) -> dict:
    if case_id.startswith(("bn_", "ln_")):
        return {"rtol": 1e-4, "atol": 1e-5}
    return {"rtol": 1e-5, "atol": 1e-6}


@pytest.mark.parametrize("case_id", sorted(REF["cases"]))
def test_gradients_match_mxnet(case_id):
    """Replay the recorded calls; after each: every gradient buffer (7 where MXNet leaves it
    untouched) and, for BatchNorm, gamma and the moving statistics."""
    meta, exe, arrays, grads = _bind(case_id)
    heads = None
    if meta["heads"]:
        heads = [ref(f"{case_id}:head{k}") for k in range(len(exe.outputs))]
    tol = _tolerance(case_id)
    for i, (kind, is_train) in enumerate(meta["calls"]):
        if kind == "f":
            exe.forward(is_train=is_train)
        else:
            exe.backward(heads, is_train=is_train)
        for name, g in grads.items():
            np.testing.assert_allclose(g, ref(f"{case_id}:{i}:grad:{name}"), **tol,
                                       err_msg=f"{case_id} call {i}: gradient of {name}")
        for name, arr in arrays.items():
            if _has(f"{case_id}:{i}:arr:{name}"):
                np.testing.assert_allclose(arr, ref(f"{case_id}:{i}:arr:{name}"), **tol,
                                           err_msg=f"{case_id} call {i}: array {name}")


def _backward_blocks(text: str) -> list[list[str]]:
    blocks = [b.strip("\n").split("\n") for b in text.split("--------------------")]
    return [[line for line in b if not line.startswith("Total ")] for b in blocks
            if b[0].endswith("Name=node_backward")]


@pytest.mark.parametrize("case_id", sorted(REF["cases"]))
def test_backward_node_matches_mxnet(case_id):
    """Operator, inputs (in MXNet's order), attributes and control dependency of the backward
    node, as exe.debug_str() prints them."""
    _, exe, _, _ = _bind(case_id)
    want = REF["cases"][case_id]["backward_nodes"]
    got = _backward_blocks(exe.debug_str())
    # MXNet names the zero gradient of an unused output "zeros_without_dtype", the gradient
    # pass here "zeros" (max pooling's workspace output)
    got = [[line.replace("=zeros(0)", "=zeros_without_dtype(0)") for line in b] for b in got]
    assert got == want


# -- BatchNorm training semantics, spelled out ------------------------------------------------
def _bn_exe(reqs=("write", "write", "write"), **attrs):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (4, 3, 2, 2)).astype("f4")
    sym = gx.sym.BatchNorm(gx.sym.Variable("x"), name="bn", **attrs)
    exe = sym.simple_bind(gx.cpu(), x=x.shape,
                          grad_req=dict(zip(("x", "bn_gamma", "bn_beta"), reqs)))
    exe.arg_dict["x"][...] = x
    exe.arg_dict["bn_gamma"][...] = [0.5, 2.0, 3.0]
    exe.aux_dict["bn_moving_mean"][...] = [0.1, 0.2, 0.3]
    exe.aux_dict["bn_moving_var"][...] = [1.0, 2.0, 3.0]
    return exe, x


def test_batchnorm_moving_stats_move_in_each_training_backward_only():
    exe, x = _bn_exe(momentum=0.8)
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    mm, mv = exe.aux_dict["bn_moving_mean"], exe.aux_dict["bn_moving_var"]
    exe.forward(is_train=True)
    np.testing.assert_array_equal(mm, np.float32([0.1, 0.2, 0.3]))   # forward leaves them
    head = np.ones((4, 3, 2, 2), "f4")
    exe.backward(head)
    want_m = 0.8 * np.array([0.1, 0.2, 0.3]) + 0.2 * mean
    want_v = 0.8 * np.array([1.0, 2.0, 3.0]) + 0.2 * var      # the biased batch variance
    np.testing.assert_allclose(mm, want_m, rtol=1e-5)
    np.testing.assert_allclose(mv, want_v, rtol=1e-5)
    exe.backward(head)                                         # applied again
    np.testing.assert_allclose(mm, 0.8 * want_m + 0.2 * mean, rtol=1e-5)
    before = mm.copy(), mv.copy()
    exe.backward(head, is_train=False)                         # not in an inference backward
    np.testing.assert_array_equal(mm, before[0])
    np.testing.assert_array_equal(mv, before[1])


def test_batchnorm_inference_backward_uses_moving_statistics():
    exe, x = _bn_exe(fix_gamma=False)
    exe.forward(is_train=True)
    head = np.random.default_rng(0).standard_normal(x.shape).astype("f4")
    exe.backward(head, is_train=False)
    inv = 1 / np.sqrt(np.array([1.0, 2.0, 3.0]) + 1e-3)
    gamma = np.array([0.5, 2.0, 3.0])
    np.testing.assert_allclose(exe.grad_dict["x"], head * (gamma * inv)[:, None, None],
                               rtol=1e-5)
    xhat = (x - np.array([0.1, 0.2, 0.3])[:, None, None]) * inv[:, None, None]
    np.testing.assert_allclose(exe.grad_dict["bn_gamma"], (head * xhat).sum(axis=(0, 2, 3)),
                               rtol=1e-4)


@pytest.mark.parametrize("is_train", [False, True])
@pytest.mark.parametrize("reqs", [("write", "write", "write"), ("null", "add", "null"),
                                  ("null", "null", "write"), ("write", "null", "null")])
def test_fix_gamma_overwrites_gamma_when_the_node_is_differentiated(is_train, reqs):
    """MXNet writes ones into gamma's array in every forward (training or not) once any
    input of the BatchNorm gets a gradient, whether or not gamma's own grad_req is null."""
    exe, _ = _bn_exe(reqs)
    exe.forward(is_train=is_train)
    np.testing.assert_array_equal(exe.arg_dict["bn_gamma"], [1, 1, 1])
    if is_train and reqs[1] != "null":
        exe.backward(np.ones((4, 3, 2, 2), "f4"))
        np.testing.assert_array_equal(exe.grad_dict["bn_gamma"], [0, 0, 0])


def test_fix_gamma_leaves_gamma_alone_without_gradients():
    kept, _ = _bn_exe(("null", "null", "null"))
    kept.forward(is_train=True)
    np.testing.assert_array_equal(kept.arg_dict["bn_gamma"], np.float32([0.5, 2.0, 3.0]))


# -- random training forwards: the gradient uses what the forward drew ----------------------
def _monitored_backward(sym, x, heads, is_train=True):
    exe = sym.simple_bind(gx.cpu(), x=x.shape)
    exe.arg_dict["x"][...] = x
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, np.array(arr)))
    exe.forward(is_train=True)
    exe.backward(heads, is_train=is_train)
    return exe, seen


@pytest.mark.parametrize("axes", [(), (1,)])
def test_dropout_backward_applies_the_forward_mask(axes):
    x = np.random.default_rng(1).uniform(1, 2, (6, 5, 4)).astype("f4")
    head = np.random.default_rng(2).standard_normal(x.shape).astype("f4")
    sym = gx.sym.Dropout(gx.sym.Variable("x"), p=0.4, axes=axes, name="d")
    exe, seen = _monitored_backward(sym, x, [head])
    mask = seen["d_mask"]
    assert set(np.unique(mask)) <= {0, np.float32(1 / 0.6)} and mask.min() == 0
    np.testing.assert_array_equal(exe.grad_dict["x"], head * mask)
    np.testing.assert_array_equal(seen["d_output"], x * mask)
    exe.backward([head], is_train=False)      # MXNet passes the gradient through then
    np.testing.assert_array_equal(exe.grad_dict["x"], head)


def test_rrelu_backward_uses_the_drawn_slopes():
    x = np.random.default_rng(1).uniform(-2, 2, (5, 6)).astype("f4")
    heads = [np.random.default_rng(2).standard_normal(x.shape).astype("f4"),
             np.full(x.shape, 100, "f4")]                    # the mask's head is ignored
    sym = gx.sym.LeakyReLU(gx.sym.Variable("x"), act_type="rrelu", name="r")
    exe, _ = _monitored_backward(sym, x, heads)
    mask = exe.outputs[1]
    assert ((mask >= 0.125) & (mask <= 0.334)).all() and np.unique(mask).size > 1
    np.testing.assert_allclose(exe.grad_dict["x"], heads[0] * np.where(x > 0, 1, mask),
                               rtol=1e-6)


# -- loss heads and the executor ------------------------------------------------------------
def test_loss_heads_need_and_ignore_no_head_gradients():
    x, lab = gx.sym.Variable("x"), gx.sym.Variable("label")
    net = gx.sym.Group([gx.sym.SoftmaxOutput(x, lab, name="s"),
                        gx.sym.LinearRegressionOutput(x, gx.sym.Variable("y"), name="l"),
                        gx.sym.MakeLoss(x * 2, name="m")])
    exe = net.simple_bind(gx.cpu(), x=(3, 4), label=(3,), y=(3, 4),
                          grad_req={"x": "write", "label": "null", "y": "null"})
    rng = np.random.default_rng(0)
    exe.arg_dict["x"][...] = rng.standard_normal((3, 4))
    exe.arg_dict["label"][...] = [0, 3, 1]
    exe.forward(is_train=True)
    exe.backward()
    first = exe.grad_dict["x"].copy()
    exe.backward([rng.standard_normal((3, 4)).astype("f4") * 100 for _ in range(3)])
    np.testing.assert_array_equal(exe.grad_dict["x"], first)


def _monitor_trace(exe, monitor_all: bool) -> list[tuple[str, list | None]]:
    trace = []
    exe.set_monitor_callback(lambda n, a: trace.append((n, np.array(a).ravel().tolist())),
                             monitor_all)
    exe.forward(is_train=True)
    trace.append(("--- end of forward(is_train=True)", None))
    exe.backward()
    trace.append(("--- end of backward", None))
    return trace


@pytest.mark.parametrize("monitor_all", [False, True])
def test_mlp_softmax_monitor_names_and_values_match_mxnet(monitor_all):
    """Backward nodes report softmax_backward_output0/1, relu_backward_output,
    fc_backward_output0..2 (and their inputs with monitor_all), in MXNet's order; values
    where MXNet writes them (grad_req null outputs hold stale memory there)."""
    folder = DATA / "refcases" / "mlp_softmax"
    want = json.loads((folder / "monitor.json").read_text())[f"monitor_all={monitor_all}"]
    sym = gx.sym.load(str(folder / "symbol.json"))
    inputs = dict(np.load(folder / "inputs.npz"))
    meta = json.loads((folder / "meta.json").read_text())
    exe = sym.simple_bind(gx.cpu(), grad_req=meta["grad_req"], data=inputs["data"].shape)
    for name, arr in exe.arg_dict.items():
        arr[...] = inputs[name]
    got = _monitor_trace(exe, monitor_all)
    assert [n for n, _ in got] == [e["name"] for e in want]
    for (name, values), e in zip(got, want):
        if e.get("values") is not None:
            np.testing.assert_allclose(values, e["values"], rtol=1e-6, atol=1e-7, err_msg=name)


# -- every dtype a case runs in gives the float64 gradients -----------------------------------
def _dtype_cases():
    from opcases import conv, loss, nn

    from graphexec.core.ops import get_op
    out = []
    for case in nn.CASES + conv.CASES + loss.CASES:
        random_forward = case.op == "Dropout" or case.attrs.get("act_type") == "rrelu"
        if get_op(case.op).gradient is not None and not random_forward:
            out.extend((case, dt) for dt in case.dtypes if dt != "float64")
    return out


def _case_grads(case, dtype, inputs64):
    names = [f"in{i}" for i in range(len(inputs64))]
    sym = create_op_symbol(case.op, [gx.sym.Variable(n) for n in names], dict(case.attrs))
    aux_names = sym.list_auxiliary_states()
    per_channel = case.op == "BatchNorm"   # float32 parameters for float16 data
    arrays = {n: a.astype("float32" if per_channel and i and dtype == "float16" else dtype)
              if a.dtype.kind == "f" else a for i, (n, a) in enumerate(zip(names, inputs64))}
    args = {n: a for n, a in arrays.items() if n not in aux_names}
    grads = {n: np.zeros_like(a) for n, a in args.items() if a.dtype.kind == "f"
             and not (case.op in ("SoftmaxOutput", "Softmax") and n == "in1")}
    exe = sym.bind(gx.cpu(), args, args_grad=grads, grad_req={n: "write" if n in grads else
                                                              "null" for n in args},
                   aux_states={n: arrays[n] for n in aux_names} or None)
    outs = exe.forward(is_train=True)
    rng = np.random.default_rng(5)
    exe.backward([rng.standard_normal(o.shape).astype(o.dtype) for o in outs])
    return grads


@pytest.mark.parametrize("case,dtype", _dtype_cases(),
                         ids=[f"{c.name}-{d}" for c, d in _dtype_cases()])
def test_gradients_in_float32_and_float16_agree_with_float64(case, dtype):
    inputs = case.make_inputs(np.random.default_rng(1), "float64")
    want = _case_grads(case, "float64", inputs)
    got = _case_grads(case, dtype, inputs)
    for name, g in got.items():
        assert g.dtype == np.dtype(dtype) or (case.op == "BatchNorm" and name != "in0")
        scale = np.abs(want[name]).max() + 1e-12
        err = np.abs(g.astype("f8") - want[name]).max() / scale
        assert err <= (2e-2 if dtype == "float16" else 1e-5), f"{name}: relative error {err}"


def test_in_place_activations_and_their_backward_keep_gradients(monkeypatch):
    """With every size eligible, the planner runs the activations and the elementwise
    backward ops in place; the gradients must not change."""
    from graphexec.core.passes import plan_memory

    def net():
        h = gx.sym.Variable("x")
        for act in ("sigmoid", "tanh", "softrelu", "softsign", "relu"):
            h = gx.sym.Activation(gx.sym.FullyConnected(h, num_hidden=6), act_type=act)
        h = gx.sym.LeakyReLU(gx.sym.LeakyReLU(h, act_type="elu"), act_type="gelu")
        h = gx.sym.LayerNorm(gx.sym.BatchNorm(h, fix_gamma=False) * 2)
        h = gx.sym.log_softmax(gx.sym.softmax(h, axis=0) * 3)
        return gx.sym.SoftmaxActivation(gx.sym.Dropout(h, p=0.0, mode="always"))

    def grads(min_bytes):
        monkeypatch.setattr(plan_memory, "INPLACE_MIN_BYTES", min_bytes)
        exe = net().simple_bind(gx.cpu(), x=(4, 5))
        rng = np.random.default_rng(0)
        for arr in exe.arg_arrays:
            arr[...] = rng.uniform(-1, 1, arr.shape)
        exe.forward(is_train=True)
        exe.backward([rng.standard_normal((4, 6)).astype("f4")])
        return [g.copy() for g in exe.grad_arrays], _in_place_ops(exe)

    separate, none = grads(1 << 40)
    shared, ops = grads(0)
    assert not none
    assert {"Activation", "_backward_Activation", "_backward_LeakyReLU", "_backward_BatchNorm",
            "_backward_LayerNorm"} <= ops
    for k, g in enumerate(separate):
        np.testing.assert_allclose(shared[k], g, rtol=1e-6, atol=1e-7, err_msg=f"argument {k}")


def _in_place_ops(exe) -> set[str]:
    """Ops of the nodes whose output 0 shares storage with their input 0."""
    ig, sids = exe._plan.graph.indexed, exe._plan.graph.attrs["storage_id"]
    return {node.op.name for nid, node in enumerate(ig.nodes)
            if node.op is not None and node.inputs
            and sids[ig.row_ptr[nid]] == sids[ig.node_inputs[nid][0]] >= 0}


def test_layer_norm_parameter_gradients_over_many_rows_stay_accurate():
    """dgamma/dbeta of a (4096, 512) LayerNorm sum 4096 rows: accumulated row by row in
    float32 they drift past 1e-4 on cancelling terms (MXNet's test_layer_norm caught it)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 512)).astype("f4")
    gamma, beta = rng.normal(size=512).astype("f4"), rng.normal(size=512).astype("f4")
    # rows of +-100 that cancel: the exact sums are small, row-by-row float32 sums are not
    sign = np.where(np.arange(4096)[:, None] % 2, 100.0, -100.0)
    dy = (rng.normal(size=(4096, 512)) + sign).astype("f4")
    sym = gx.sym.LayerNorm(gx.sym.Variable("x"), gx.sym.Variable("g"), gx.sym.Variable("b"),
                           eps=1e-3)
    exe = sym.bind(gx.cpu(), {"x": x, "g": gamma, "b": beta},
                   args_grad={k: np.zeros_like(v) for k, v in
                              (("x", x), ("g", gamma), ("b", beta))})
    exe.forward(is_train=True)
    exe.backward([dy])
    # dbeta is the pure sum (dgamma adds the float32 rounding of each product dY * xhat)
    np.testing.assert_allclose(exe.grad_dict["b"], dy.astype("f8").sum(0), rtol=1e-5,
                               atol=1e-5)
