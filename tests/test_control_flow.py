"""Control flow with nested graphs (_foreach, _while_loop, _cond): symbol JSON written by MXNet
1.9.1 (mx.sym.contrib and a hybridized Gluon block, tests/data/rest/control_flow, recorded by
make_control_flow.py there) loads, runs forward and backward with MXNet's numbers, and saves
back; gx.sym.contrib builds the same nodes; backends leave them alone; bad attributes are
named."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import ArgumentTypeError, GraphexecError, JSONFormatError

S = gx.sym
DATA = Path(__file__).parent / "data" / "rest" / "control_flow"
META = json.loads((DATA / "control_flow.json").read_text())["cases"]
ARRAYS = np.load(DATA / "control_flow.npz")
TOL = {"rtol": 1e-4, "atol": 1e-5}

#: while_loop step outputs: the rows MXNet wrote (it leaves the rest unwritten; graphexec
#: writes zeros there)
STEPS = {"while_early_stop": 3}
#: gradients where MXNet 1.9.1's symbolic executor keeps only the first step's contribution
#: of a free variable of the body (its autograd, and graphexec, sum the steps): the
#: reference graphexec is compared with instead
SUMMED = {("foreach_rnn", "b"): "the autograd gradient (agrad/b)",
          ("while_data_cond", "k"): "the head gradient times 1 + 1.5 + 1.5^2 + 1.5^3"}


def _bind(name: str):
    case = META[name]
    sym = S.load_json(case["symbol_json"])
    ins = {n: ARRAYS[f"{name}/in/{n}"] for n in case["inputs"]}
    grads = case["grad_inputs"]
    exe = sym.bind(gx.cpu(), ins, args_grad={n: np.zeros_like(ins[n]) for n in grads},
                   grad_req={n: "write" if n in grads else "null" for n in ins})
    return sym, exe, ins


def _expected_grad(name: str, arg: str) -> np.ndarray:
    if (name, arg) == ("foreach_rnn", "b"):
        return ARRAYS["foreach_rnn/agrad/b"]
    if (name, arg) == ("while_data_cond", "k"):
        return ARRAYS["while_data_cond/hg1"] * (1 + 1.5 + 1.5 ** 2 + 1.5 ** 3)
    return ARRAYS[f"{name}/grad/{arg}"]


@pytest.mark.parametrize("name", sorted(META))
def test_mxnet_case_forward_and_backward(name):
    sym, exe, _ = _bind(name)
    assert sym.list_arguments() == META[name]["list_arguments"]
    assert sym.list_outputs() == META[name]["list_outputs"]
    outs = exe.forward(is_train=True)
    for k, got in enumerate(outs):
        want = ARRAYS[f"{name}/out{k}"]
        assert got.shape == want.shape
        rows = STEPS.get(name) if k < 2 else None
        np.testing.assert_allclose(got[:rows], want[:rows], **TOL, err_msg=f"{name} out{k}")
        if rows is not None:
            assert not got[rows:].any()
    exe.backward([ARRAYS[f"{name}/hg{k}"] for k in range(len(outs))])
    for arg in META[name]["grad_inputs"]:
        np.testing.assert_allclose(exe.grad_dict[arg], _expected_grad(name, arg), **TOL,
                                   err_msg=f"{name} gradient of {arg}")


def test_mxnet_symbolic_free_variable_gradients_are_the_first_step_only():
    """What SUMMED works around, checked on MXNet's own numbers."""
    np.testing.assert_allclose(ARRAYS["foreach_rnn/grad/b"], ARRAYS["foreach_rnn/hg0"][0])
    np.testing.assert_allclose(ARRAYS["while_data_cond/grad/k"],
                               ARRAYS["while_data_cond/hg1"] * 1.5 ** 3, rtol=1e-5)
    np.testing.assert_allclose(ARRAYS["foreach_rnn/agrad/b"],
                               ARRAYS["foreach_rnn/hg0"].sum(axis=0), rtol=1e-5)


@pytest.mark.parametrize("name", ["foreach_rnn", "while_early_stop", "cond_else"])
def test_inference_forward_matches_mxnet(name):
    _, exe, _ = _bind(name)
    outs = exe.forward(is_train=False)
    rows = STEPS.get(name)
    np.testing.assert_allclose(outs[0][:rows], ARRAYS[f"{name}/iout0"][:rows], **TOL)


@pytest.mark.parametrize("name", sorted(META))
def test_json_round_trip_writes_mxnets_text(name):
    """Loaded and saved, MXNet's file comes back byte for byte (subgraphs without the
    version attrs, as MXNet writes them)."""
    text = META[name]["symbol_json"]
    assert S.load_json(text).tojson() == text


def test_shapes_are_inferred_through_the_step_and_from_the_outputs():
    sym = S.load_json(META["gluon_foreach"]["symbol_json"])
    args, outs, _ = sym.infer_shape(data0=(5, 2, 3), data1=(2, 3))
    assert dict(zip(sym.list_arguments(), args))["cell_dense0_weight"] == (3, 3)
    assert outs == [(5, 2, 3), (2, 3)]
    args, outs, _ = S.load_json(META["while_max_iter"]["symbol_json"]).infer_shape(
        i=(1,), s=(3,), k=(3,))
    assert outs == [(4, 3), (4, 1), (1,), (3,)]


# -- gx.sym.contrib builders ------------------------------------------------------------------
def _rnn():
    data, h0, w = S.var("data"), S.var("h0"), S.var("w")

    def step(x, states):
        h = S.tanh(x * w + states[0])
        return h * 2, [h]
    out, states = S.contrib.foreach(step, data, [h0])
    return S.Group([out] + states)


def test_foreach_builder_matches_numpy_and_finite_differences():
    rng = np.random.default_rng(0)
    args = {"data": rng.uniform(-1, 1, (3, 2, 2)), "h0": rng.uniform(-1, 1, (2, 2)),
            "w": rng.uniform(-1, 1, (2, 2))}
    sym = _rnn()
    exe = sym.bind(gx.cpu(), args, args_grad={n: np.zeros_like(a) for n, a in args.items()})
    outs = exe.forward(is_train=True)
    h, rows = args["h0"], []
    for t in range(3):
        h = np.tanh(args["data"][t] * args["w"] + h)
        rows.append(h * 2)
    np.testing.assert_allclose(outs[0], np.stack(rows))
    np.testing.assert_allclose(outs[1], h)
    heads = [rng.standard_normal(o.shape) for o in outs]
    exe.backward(heads)
    for name in args:
        arr, num = exe.arg_dict[name], np.zeros_like(args[name])
        for k in range(arr.size):
            orig = arr.flat[k]
            vals = []
            for delta in (1e-6, -1e-6):
                arr.flat[k] = orig + delta
                vals.append(sum(float((o * hg).sum()) for o, hg in
                                zip(exe.forward(is_train=True), heads)))
            arr.flat[k] = orig
            num.flat[k] = (vals[0] - vals[1]) / 2e-6
        np.testing.assert_allclose(exe.grad_dict[name], num, rtol=1e-5, atol=1e-7)


def test_while_loop_and_cond_builders():
    i, s, k = S.var("i"), S.var("s"), S.var("k")
    outs, final = S.contrib.while_loop(lambda i, s: i < 3,
                                       lambda i, s: ([s * k], [i + 1, s + k]), [i, s],
                                       max_iterations=5)
    exe = S.Group(outs + final).bind(gx.cpu(), {"i": np.zeros(1, "f4"),
                                                "s": np.ones(2, "f4"),
                                                "k": np.full(2, 2, "f4")})
    got = exe.forward()
    np.testing.assert_array_equal(got[0][:, 0], [2, 6, 10, 0, 0])
    np.testing.assert_array_equal(got[1], [3])
    np.testing.assert_array_equal(got[2], [7, 7])
    a, c = S.var("a"), S.var("c")
    branch = S.contrib.cond(S.sum(a) > 0, lambda: a * c, lambda: a - c)
    for sign, want in ((1, [3, 3]), (-1, [-4, -4])):
        exe = branch.bind(gx.cpu(), {"a": np.full(2, sign, "f4"), "c": np.full(2, 3, "f4")},
                          args_grad={"a": np.zeros(2, "f4"), "c": np.zeros(2, "f4")})
        np.testing.assert_array_equal(exe.forward(is_train=True)[0], want)
        exe.backward(np.ones(2, "f4"))
        np.testing.assert_array_equal(exe.grad_dict["c"], [sign] * 2 if sign > 0 else [-1, -1])


def _structure(doc) -> dict:
    """A symbol JSON without the version and the automatic names of operator nodes (their
    counters depend on what was built before)."""
    doc = json.loads(doc) if isinstance(doc, str) else doc
    doc.pop("attrs", None)
    for node in doc["nodes"]:
        if node["op"] != "null":
            node["name"] = node["op"]
        for sub in node.get("subgraphs", []):
            _structure(sub)
    return doc


def _mx_rnn():
    data, h0, w, b = (S.var(n) for n in ("data", "h0", "w", "b"))

    def step(x, states):
        h = S.tanh(x * w + states[0])
        return h * 2 + b, [h]
    out, states = S.contrib.foreach(step, data, [h0])
    return S.Group([out] + states)


def _mx_while():
    i, s, k = (S.var(n) for n in ("i", "s", "k"))
    outs, final = S.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: ([s * k, i * 2], [i + 1, s + S.tanh(s * k)]),
        [i, s], max_iterations=5)
    return S.Group(outs + final)


def _mx_cond():
    a, c = S.var("a"), S.var("c")
    return S.contrib.cond(S.sum(a) > 0, lambda: a * c + 1, lambda: S.exp(a) - c)


@pytest.mark.parametrize("name,build", [("foreach_rnn", _mx_rnn),
                                        ("while_early_stop", _mx_while),
                                        ("cond_then", _mx_cond)])
def test_builders_write_what_mxnet_writes(name, build):
    """Bodies cut where MXNet cuts them (outside operators feed a variable named after
    their output), with the __subgraph_name__ scopes and location attributes MXNet writes."""
    from graphexec.core.symbol import contrib
    contrib._BODY_COUNTS.clear()
    with gx.name.NameManager():  # fresh counters: the cut variables are named after nodes
        built = build()
    assert _structure(built.tojson()) == _structure(META[name]["symbol_json"])


def test_two_loops_with_the_same_attributes_keep_their_own_bodies():
    data, h = S.var("data"), S.var("h")
    out1, _ = S.contrib.foreach(lambda x, s: (x + s[0], [s[0]]), data, [h])
    out2, _ = S.contrib.foreach(lambda x, s: (x * s[0], [s[0]]), data, [h])
    sym = S.load_json(S.Group([out1, out2]).tojson())
    args = {"data": np.full((2, 3), 2.0, "f4"), "h": np.full(3, 3.0, "f4")}
    got = sym.bind(gx.cpu(), args).forward()
    np.testing.assert_array_equal(got[0], np.full((2, 3), 5.0))
    np.testing.assert_array_equal(got[1], np.full((2, 3), 6.0))


def test_builder_json_loads_back():
    sym = _rnn()
    again = S.load_json(sym.tojson())
    assert again.tojson() == sym.tojson()
    assert [n["op"] for n in json.loads(sym.tojson())["nodes"]].count("_foreach") == 1


# -- backends and errors -----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["onnxrt", "fused"])
def test_backends_never_claim_a_loop(backend):
    sym = S.load_json(META["foreach_rnn"]["symbol_json"])
    ins = {n: ARRAYS[f"foreach_rnn/in/{n}"] for n in META["foreach_rnn"]["inputs"]}
    parted = sym.optimize_for(backend, args=ins)
    ops = [n["op"] for n in json.loads(parted.tojson())["nodes"]]
    assert "_foreach" in ops
    got = parted.bind(gx.cpu(), ins).forward()
    np.testing.assert_allclose(got[0], ARRAYS["foreach_rnn/iout0"], **TOL)


def _edited(name: str, **attrs) -> str:
    doc = json.loads(META[name]["symbol_json"])
    for node in doc["nodes"]:
        if "subgraphs" in node:
            node["attrs"].update(attrs)
    return json.dumps(doc)


@pytest.mark.parametrize("name,attrs,match", [
    ("foreach_rnn", {"in_state_locs": "[5]"}, "in_state_locs"),
    ("foreach_rnn", {"num_outputs": "3"}, "num_outputs"),
    ("foreach_rnn", {"num_out_data": "0"}, "in_state_locs"),
    ("while_max_iter", {"func_input_locs": "[0, 1]"}, "func_input_locs"),
    ("cond_then", {"then_input_locs": "[0, 7]"}, "then_input_locs"),
])
def test_bad_locations_name_node_and_attribute(name, attrs, match):
    with pytest.raises(JSONFormatError, match=match) as info:
        S.load_json(_edited(name, **attrs))
    assert "node" in str(info.value)


def test_missing_bodies_are_an_error():
    doc = json.loads(META["cond_then"]["symbol_json"])
    for node in doc["nodes"]:
        node.pop("subgraphs", None)
    with pytest.raises(JSONFormatError, match="subgraphs"):
        S.load_json(json.dumps(doc))


def test_builder_rejects_a_body_returning_the_wrong_states():
    data, h = S.var("data"), S.var("h")
    with pytest.raises(ArgumentTypeError, match="states"):
        S.contrib.foreach(lambda x, s: (x, [x, x]), data, [h])
    with pytest.raises(GraphexecError, match="max_iterations"):
        S.contrib.while_loop(lambda v: v < 1, lambda v: ([], [v]), [data], max_iterations=0)


def test_dropout_in_a_loop_body_gets_its_forward_masks_in_backward():
    """The backward loop runs the steps again: it replays the forward's random draws, so the
    gradient is that of the outputs the forward produced."""
    data, h, w = S.var("data"), S.var("h"), S.var("w")
    out, _ = S.contrib.foreach(
        lambda x, s: (S.Dropout(x * w, p=0.5), [s[0] + x]), data, [h])
    rng = np.random.default_rng(3)
    args = {"data": rng.uniform(0.5, 1.5, (4, 3, 5)), "h": np.zeros((3, 5)),
            "w": rng.uniform(0.5, 1.5, (3, 5))}
    exe = out.bind(gx.cpu(), args, args_grad={"w": np.zeros((3, 5))},
                   grad_req={"data": "null", "h": "null", "w": "write"})
    y = exe.forward(is_train=True)[0].copy()
    assert 0 < (y == 0).sum() < y.size
    exe.backward(np.ones_like(y))
    # out = mask * x * w / (1 - p): d sum(out) / d w = sum over steps of out / w
    np.testing.assert_allclose(exe.grad_dict["w"], (y / args["w"]).sum(axis=0), rtol=1e-12)
