"""nn and loss operators at run time: forward results against arrays recorded from MXNet
1.9.1 (tests/data/nn, made by make_reference.py), hidden outputs and implicit variables as
MXNet declares them, random training modes (Dropout, rrelu) by their statistics, and the
training-only side outputs (BatchNorm statistics, the max-pooling workspace)."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.symbol.symbol import create_op_symbol

DATA = pathlib.Path(__file__).parent / "data" / "nn"
REFERENCE = json.loads((DATA / "reference.json").read_text())["cases"]
x = gx.sym.Variable("x")


def _bind(sym, arrays: dict, **kw):
    aux = {n: arrays[n] for n in sym.list_auxiliary_states()}
    return sym.bind(gx.cpu(), {n: arrays[n] for n in sym.list_arguments()},
                    aux_states=aux or None, grad_req="null", **kw)


@pytest.fixture(scope="module")
def reference():
    with np.load(DATA / "reference.npz") as z:
        return dict(z)


@pytest.mark.parametrize("case_id", sorted(REFERENCE))
def test_forward_matches_mxnet(case_id, reference):
    case = REFERENCE[case_id]
    names = [f"in{i}" for i in range(case["inputs"])]
    sym = create_op_symbol(case["op"], [gx.sym.Variable(n) for n in names], dict(case["attrs"]))
    exe = _bind(sym, {n: reference[f"{case_id}:{n}"] for n in names})
    outs = exe.forward(is_train=case["is_train"])
    assert len(outs) == case["outputs"]
    for j, got in enumerate(outs):
        want = reference[f"{case_id}:out{j}"]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{case_id} out{j}")


# -- graph structure as MXNet declares it -------------------------------------------------
def _row_counts(sym):
    rows = json.loads(sym.tojson())["node_row_ptr"]
    return [b - a for a, b in zip(rows, rows[1:])]


@pytest.mark.parametrize("sym,outputs,hidden", [
    (gx.sym.Pooling(x, kernel=(2, 2), name="p"), ["p_output"], 2),
    (gx.sym.Pooling(x, kernel=(2, 2), pool_type="avg", name="p"), ["p_output"], 1),
    (gx.sym.Pooling(x, kernel=(2, 2), layout="NHWC", name="p"), ["p_output"], 1),
    (gx.sym.Dropout(x, name="d"), ["d_output"], 2),
    (gx.sym.BatchNorm(x, name="bn"), ["bn_output"], 3),
    (gx.sym.BatchNorm(x, output_mean_var=True, name="bn"), ["bn_output", "bn_mean", "bn_var"], 3),
    (gx.sym.LayerNorm(x, name="ln"), ["ln_output"], 3),
    (gx.sym.LayerNorm(x, output_mean_var=True, name="ln"), ["ln_output", "ln_mean", "ln_std"],
     3),
    (gx.sym.LeakyReLU(x, act_type="rrelu", name="r"), ["r_output", "r_mask"], 2),
    (gx.sym.make_loss(x, name="m"), ["m_loss"], 1),
])
def test_outputs_and_hidden_outputs(sym, outputs, hidden):
    assert sym.list_outputs() == outputs
    assert _row_counts(sym)[-1] == hidden


def test_implicit_variables_carry_mxnet_init_attrs():
    nodes = {n["name"]: n for n in json.loads(gx.sym.BatchNorm(x, name="bn").tojson())["nodes"]}
    assert nodes["bn_moving_mean"]["attrs"] == {"__init__": '["zero", {}]'}
    assert nodes["bn_moving_var"]["attrs"] == {"__init__": '["one", {}]'}
    prelu = gx.sym.LeakyReLU(x, act_type="prelu", name="p")
    gamma = {n["name"]: n for n in json.loads(prelu.tojson())["nodes"]}["p_gamma"]
    assert gamma["attrs"] == {"__init__": '["Constant", {"value": 0.25}]', "act_type": "prelu"}
    deconv = gx.sym.Deconvolution(x, kernel=(3, 3), num_filter=2, name="d")
    assert deconv.list_arguments() == ["x", "d_weight"]  # no_bias defaults to True here
    with gx.name.NameManager():
        assert gx.sym.Softmax(x).list_arguments() == ["x", "softmax0_label"]


# -- training-mode behaviour --------------------------------------------------------------
def _monitored(exe, is_train=True):
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, np.array(arr)))
    exe.forward(is_train=is_train)
    return seen


def test_dropout_training_mask_statistics():
    gx.random.seed(7)
    data = np.random.default_rng(0).uniform(1, 2, (200, 50)).astype("f4")
    exe = _bind(gx.sym.Dropout(x, p=0.3, name="d"), {"x": data})
    seen = _monitored(exe)
    mask, out = seen["d_mask"], seen["d_output"]
    assert set(np.unique(mask)) == {0.0, np.float32(1 / 0.7)}
    assert abs((mask == 0).mean() - 0.3) < 0.02
    np.testing.assert_allclose(out, data * mask, rtol=1e-6)
    first = mask.copy()
    assert not np.array_equal(_monitored(exe)["d_mask"], first)  # a fresh draw each forward
    np.testing.assert_array_equal(exe.forward(is_train=False)[0], data)  # inference: identity


def test_dropout_axes_share_the_mask_and_mode_always():
    data = np.ones((64, 3, 5), "f4")
    sym = gx.sym.Dropout(x, p=0.5, axes=(1,), mode="always", name="d")
    gx.random.seed(3)
    seen = _monitored(_bind(sym, {"x": data}), is_train=False)
    assert seen["d_mask"].shape == (64, 1, 5)
    out = seen["d_output"]
    assert (out == out[:, :1, :]).all() and 0.3 < (out == 0).mean() < 0.7
    gx.random.seed(3)
    np.testing.assert_array_equal(_bind(sym, {"x": data}).forward()[0], out)  # reproducible


def test_rrelu_training_draws_slopes_in_bounds():
    gx.random.seed(5)
    data = np.linspace(-3, 3, 600, dtype="f4").reshape(20, 30)
    exe = _bind(gx.sym.LeakyReLU(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.3),
                {"x": data})
    out, mask = exe.forward(is_train=True)
    assert ((mask >= 0.1) & (mask <= 0.3)).all() and mask.std() > 0.03
    np.testing.assert_allclose(out, np.where(data > 0, data, data * mask), rtol=1e-6)


def test_batchnorm_training_leaves_moving_stats_alone():
    rng = np.random.default_rng(1)
    arrays = {"x": rng.normal(size=(8, 3, 4)).astype("f4"), "bn_gamma": np.ones(3, "f4"),
              "bn_beta": np.zeros(3, "f4"), "bn_moving_mean": np.zeros(3, "f4"),
              "bn_moving_var": np.ones(3, "f4")}
    exe = _bind(gx.sym.BatchNorm(x, output_mean_var=True, name="bn"), arrays)
    out, mean, invstd = exe.forward(is_train=True)
    np.testing.assert_allclose(mean, arrays["x"].mean(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(arrays["x"].var(axis=(0, 2)) + 1e-3),
                               rtol=1e-5)
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_mean"], np.zeros(3))
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_var"], np.ones(3))


def test_max_pool_workspace_holds_window_argmax_in_training():
    data = np.random.default_rng(2).normal(size=(2, 3, 6, 7)).astype("f4")
    exe = _bind(gx.sym.Pooling(x, kernel=(3, 2), stride=(2, 2), name="p"), {"x": data})
    ws = _monitored(exe)["p_workspace"]
    assert ws.dtype == np.int32 and ws.shape == (2, 3, 2, 3)
    for i in range(2):
        for j in range(3):
            window = data[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 2].reshape(2, 3, -1)
            np.testing.assert_array_equal(ws[:, :, i, j], window.argmax(axis=-1))


# -- arrays the kernels must not assume contiguous / fresh ------------------------------
@pytest.mark.parametrize("make,shapes", [
    (lambda: gx.sym.FullyConnected(x, num_hidden=3, name="f"), {"x": (4, 2, 5)}),
    (lambda: gx.sym.Convolution(x, kernel=(1, 1), num_filter=3, name="f"), {"x": (2, 4, 3, 3)}),
    (lambda: gx.sym.Deconvolution(x, kernel=(2, 2), num_filter=3, name="f"), {"x": (2, 4, 3, 3)}),
])
def test_strided_input_arrays(make, shapes):
    sym = make()
    args = sym.infer_shape(**shapes)[0]
    rng = np.random.default_rng(4)
    dense = {n: rng.normal(size=s).astype("f4") for n, s in zip(sym.list_arguments(), args)}
    strided = {n: np.asfortranarray(a) for n, a in dense.items()}
    want = _bind(sym, dense).forward()[0].copy()
    exe = _bind(sym, strided)
    np.testing.assert_allclose(exe.forward()[0], want, rtol=1e-5)
    strided["x"][...] = 0  # a later forward must see the new values, not a stale copy
    np.testing.assert_allclose(exe.forward()[0], _bind(sym, {**dense, "x": strided["x"] * 1})
                               .forward()[0], rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
@pytest.mark.parametrize("shape", [(3,), (64, 512), (2, 3, 70, 70), (7, 3, 131)])
def test_max_min_against_scalar_match_numpy_exactly(dtype, shape):
    # relu / _maximum_scalar / _minimum_scalar compare against a constant block on the host
    # (numpy's scalar path is unvectorised): same bits, NaN and signed zeros included
    rng = np.random.default_rng(0)
    data = (rng.standard_normal(shape) * 3).astype(dtype)
    if data.dtype.kind == "f":
        flat = data.reshape(-1)
        flat[:4] = [np.nan, -0.0, 0.0, -np.inf][:flat.size]
    x = gx.sym.Variable("x")
    cases = {"relu": (gx.sym.relu(x), np.maximum(data, 0)),
             "act": (gx.sym.Activation(x, act_type="relu"), np.maximum(data, 0)),
             "max": (gx.sym._maximum_scalar(x, scalar=1.5), np.maximum(data, data.dtype.type(1.5))),
             "min": (gx.sym._minimum_scalar(x, scalar=-0.5), np.minimum(data, data.dtype.type(-0.5)))}
    for name, (sym, want) in cases.items():
        exe = sym.bind(gx.cpu(), {"x": data.copy()})
        got = exe.forward()[0]
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert (np.signbit(got) == np.signbit(want)).all(), name


def test_relu_of_a_strided_bound_array_is_right():
    base = np.arange(-20, 20, dtype="f4").reshape(8, 5)
    strided = base[:, ::2]
    exe = gx.sym.relu(gx.sym.Variable("x")).bind(gx.cpu(), {"x": strided})
    np.testing.assert_array_equal(exe.forward()[0], np.maximum(strided, 0))
