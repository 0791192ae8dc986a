"""RNN beyond the per-op cases: the threaded recurrence (hidden units split across threads)
computes what one thread does; dropout between layers draws from graphexec's seeded
generator; bad inputs get sentences naming the node, the attribute and what was expected;
graphs with mx.rnn-style begin states (``_zeros(shape=(0, H))``) bind and run inside fused and
onnxrt regions."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import graphexec as gx
from graphexec.backends.default.kernels import rnn_cells
from graphexec.core.runtime import blas_threads
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ops.rnn import param_size, reserve_layout

S = gx.sym


def rnn_symbol(mode="lstm", **attrs):
    ins = [S.Variable("data"), S.Variable("params"), S.Variable("state")]
    if mode == "lstm":
        ins.append(S.Variable("cell"))
    if attrs.get("use_sequence_length"):
        ins.append(S.Variable("lengths"))
    return S.RNN(*ins, mode=mode, state_outputs=True, name="rnn", **attrs)


def rnn_args(sym, rng, lengths=None, **shapes):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {n: rng.uniform(-0.5, 0.5, s).astype("f4")
            for n, s in zip(sym.list_arguments(), arg_shapes)}
    if lengths is not None:
        args["lengths"] = np.array(lengths, "f4")
    return args


def run(sym, args, heads_seed=1, train=True):
    grads = {n: np.zeros_like(a) for n, a in args.items() if n != "lengths"}
    exe = sym.bind(gx.cpu(), args, args_grad=grads,
                   grad_req={n: "write" if n in grads else "null" for n in args})
    outs = [o.copy() for o in exe.forward(is_train=train)]
    rng = np.random.default_rng(heads_seed)
    exe.backward([rng.standard_normal(o.shape).astype("f4") for o in outs])
    return outs, {n: g.copy() for n, g in exe.grad_dict.items() if g is not None}


@pytest.mark.parametrize("mode,attrs", [
    ("lstm", {"num_layers": 2, "bidirectional": True}),
    ("gru", {"num_layers": 1, "use_sequence_length": True}),
    ("rnn_tanh", {"num_layers": 1, "bidirectional": True, "use_sequence_length": True}),
    ("lstm", {"num_layers": 1, "use_sequence_length": True, "lstm_state_clip_min": -0.3,
              "lstm_state_clip_max": 0.3}),
])
def test_work_split_across_threads_gives_the_same_numbers(mode, attrs, monkeypatch):
    sym = rnn_symbol(mode, state_size=8, **attrs)
    args = rnn_args(sym, np.random.default_rng(0), [5, 2, 4] if "use_sequence_length" in attrs
                    else None, data=(5, 3, 4))
    one = run(sym, args)
    monkeypatch.setattr(blas_threads, "_blas_threads", lambda: 3)
    monkeypatch.setattr(rnn_cells, "MIN_UNITS", 2)
    monkeypatch.setattr(blas_threads, "MIN_ROWS", 2)  # the large products split too
    assert len(blas_threads.split(np, 8, 2)) == 3
    three = run(sym, args)
    for a, b in zip(one[0], three[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    for n in one[1]:
        np.testing.assert_allclose(one[1][n], three[1][n], rtol=1e-5, atol=1e-6, err_msg=n)


def test_an_error_in_one_thread_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(blas_threads, "_blas_threads", lambda: 2)

    def fail(j, u0, u1, sync):
        if j == 1:
            raise ValueError("part 1 failed")
        sync()
    with pytest.raises(ValueError, match="part 1 failed"):
        blas_threads.run_parts(np, [(0, 4), (4, 8)], fail)


# -- dropout between layers -------------------------------------------------------------------
def _dropout_exe(p=0.5):
    sym = rnn_symbol("lstm", state_size=64, num_layers=2, p=p)
    args = rnn_args(sym, np.random.default_rng(0), data=(6, 8, 16))
    return sym, args, sym.bind(gx.cpu(), args)


def test_dropout_between_layers_follows_the_seeded_generator():
    _, _, exe = _dropout_exe()
    gx.random.seed(7)
    first = exe.forward(is_train=True)[0].copy()
    again = exe.forward(is_train=True)[0].copy()
    gx.random.seed(7)
    replay = exe.forward(is_train=True)[0].copy()
    inference = exe.forward(is_train=False)[0].copy()
    np.testing.assert_array_equal(first, replay)
    assert not np.array_equal(first, again)
    assert not np.array_equal(first, inference)
    np.testing.assert_array_equal(inference, exe.forward(is_train=False)[0])


def test_dropout_masks_keep_one_minus_p_scaled():
    sym, args, _ = _dropout_exe(p=0.3)
    grads = {"params": np.zeros_like(args["params"])}
    exe = sym.bind(gx.cpu(), args, args_grad=grads,
                   grad_req={n: "write" if n in grads else "null" for n in args})
    exe.forward(is_train=True)
    reserve = _reserve(exe)
    layout = reserve_layout(sym._indexed().nodes[-1].params, 6, 8)
    offset = 0
    for name, shape in layout.items():
        n = int(np.prod(shape))
        if name == "l0_mask":
            m = reserve[offset:offset + n]
            kept = m != 0
            assert 0.62 < kept.mean() < 0.78
            np.testing.assert_allclose(m[kept], 1 / 0.7, rtol=1e-6)
        offset += n


def _reserve(exe):
    ig = exe._plan.graph.indexed  # noqa: SLF001
    nid = next(i for i, n in enumerate(ig.nodes) if n.op is not None and n.op.name == "RNN")
    return exe._plan.arrays[ig.row_ptr[nid + 1] - 1]  # noqa: SLF001


def test_dropout_gradient_matches_finite_differences():
    """With the generator reseeded before every forward the masks stay the same."""
    sym = rnn_symbol("gru", state_size=3, num_layers=2, p=0.4)
    rng = np.random.default_rng(2)
    args = {n: a.astype("f8") for n, a in rnn_args(sym, rng, data=(3, 2, 2)).items()}
    exe = sym.bind(gx.cpu(), args, args_grad={"data": np.zeros_like(args["data"])},
                   grad_req={"data": "write", "params": "null", "state": "null"})
    heads = [rng.standard_normal(o.shape) for o in exe.outputs]

    def objective():
        gx.random.seed(3)
        return sum(float((o * h).sum()) for o, h in zip(exe.forward(is_train=True), heads))
    objective()
    exe.backward(heads)
    analytic = exe.grad_dict["data"].copy()
    flat, numeric = exe.arg_dict["data"].reshape(-1), np.zeros(args["data"].size)
    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + 1e-6
        up = objective()
        flat[k] = orig - 1e-6
        numeric[k] = (up - objective()) / 2e-6
        flat[k] = orig
    np.testing.assert_allclose(analytic.reshape(-1), numeric, rtol=1e-4, atol=1e-7)


# -- bad input --------------------------------------------------------------------------------
def _bind_error(sym, **arrays):
    with pytest.raises(GraphexecError) as info:
        exe = sym.bind(gx.cpu(), {k: np.zeros(v, "f4") if isinstance(v, tuple) else v
                                  for k, v in arrays.items()})
        exe.forward()
    return str(info.value)


def test_wrong_parameter_vector_size_names_node_and_expected_size():
    sym = rnn_symbol("lstm", state_size=5, num_layers=2, bidirectional=True)
    msg = _bind_error(sym, data=(3, 2, 4), params=(100,), state=(4, 2, 5), cell=(4, 2, 5))
    want = param_size(sym._indexed().nodes[-1].params, 4)
    assert "rnn" in msg and "parameters" in msg and "100" in msg and str(want) in msg, msg


def test_state_contradicting_the_data_is_named():
    sym = rnn_symbol("gru", state_size=5, num_layers=1)
    msg = _bind_error(sym, data=(3, 2, 4), params=(165,), state=(1, 3, 5))
    assert "rnn" in msg and "state" in msg and "[1,3,5]" in msg and "[1,2,5]" in msg, msg


def test_sequence_length_out_of_range_is_named():
    sym = rnn_symbol("gru", state_size=5, num_layers=1, use_sequence_length=True)
    msg = _bind_error(sym, data=(3, 2, 4), params=(165,), state=(1, 2, 5),
                      lengths=np.array([2, 4], "f4"))
    assert "rnn" in msg and "sequence_length" in msg and "[1, 3]" in msg, msg


@pytest.mark.parametrize("attrs,fragment", [
    ({"mode": "gru", "projection_size": 3}, "projection_size=3 needs mode='lstm'"),
    ({"mode": "lstm", "projection_size": 9}, "projection_size=9 must be in [1, state_size=5]"),
    ({"mode": "gru", "lstm_state_clip_min": -1.0, "lstm_state_clip_max": 1.0},
     "mode='lstm' only"),
    ({"mode": "lstm", "lstm_state_clip_min": -1.0}, "give both"),
    ({"mode": "lstm", "p": 1.0}, "p=1.0"),
])
def test_attribute_combinations_mxnet_rejects(attrs, fragment):
    sym = rnn_symbol(state_size=5, num_layers=1, **attrs)
    with pytest.raises(GraphexecError, match="rnn") as info:
        sym.infer_shape(data=(3, 2, 4))
    assert fragment in str(info.value)


# -- backends on mx.rnn-style graphs ------------------------------------------------------------
def unrolled_lstm(steps=3, hidden=48):
    """Two mx.rnn LSTMCell steps' worth of graph, begin states ``_zeros(shape=(0, H))``."""
    x = S.Variable("data")
    h = S.zeros(shape=(0, hidden), name="lstm_begin_state_0")
    c = S.zeros(shape=(0, hidden), name="lstm_begin_state_1")
    w = {n: S.Variable(n) for n in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")}
    outs = []
    for t in range(steps):
        xt = S.slice_axis(x, axis=1, begin=t, end=t + 1)
        i2h = S.FullyConnected(xt, weight=w["i2h_weight"], bias=w["i2h_bias"],
                               num_hidden=4 * hidden, name=f"t{t}_i2h")
        h2h = S.FullyConnected(h, weight=w["h2h_weight"], bias=w["h2h_bias"],
                               num_hidden=4 * hidden, name=f"t{t}_h2h")
        gates = S.SliceChannel(i2h + h2h, num_outputs=4, name=f"t{t}_slice")
        i, f = S.Activation(gates[0], act_type="sigmoid"), S.Activation(gates[1], act_type="sigmoid")
        g, o = S.Activation(gates[2], act_type="tanh"), S.Activation(gates[3], act_type="sigmoid")
        c = f * c + i * g
        h = o * S.Activation(c, act_type="tanh")
        outs.append(h)
    return S.Group([S.Concat(*outs, dim=1), c])


@pytest.mark.parametrize("backend", ["fused", "onnxrt", "onnxrt,fused"])
def test_zero_begin_states_bind_and_run_in_regions(backend, fused_kernel_cache):
    sym = unrolled_lstm()
    rng = np.random.default_rng(0)
    arg_shapes, _, _ = sym.infer_shape(data=(2, 3, 8))
    args = {n: rng.uniform(-0.3, 0.3, s).astype("f4")
            for n, s in zip(sym.list_arguments(), arg_shapes)}
    want = [o.copy() for o in sym.bind(gx.cpu(), args, backend="NONE").forward()]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*runs with the native kernels instead.*")
        exe = sym.bind(gx.cpu(), args, backend=backend)
        got = [o.copy() for o in exe.forward()]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    claimed = {d.region is not None for d in exe.partition_plan.nodes.values()}
    assert True in claimed


def test_region_inner_shapes_come_from_outside():
    """A region holding ``_zeros(shape=(0, 4))`` whose batch only the graph after the region
    decides (gamma has no ONNX converter) runs in ONNX Runtime, not natively."""
    z = S.sin(S.exp(S.zeros(shape=(0, 4), name="z"), name="e"), name="s")
    y = S.elemwise_add(S.gamma(z, name="g"), S.Variable("data"), name="y")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*runs with the native kernels instead.*")
        exe = y.bind(gx.cpu(), {"data": np.ones((3, 4), "f4")}, backend="onnxrt")
        out = exe.forward()[0]
    np.testing.assert_allclose(out, np.full((3, 4), 1 + np.exp(
        __import__("scipy").special.gammaln(np.sin(1.0)))), rtol=1e-5)
    assert exe.partition_plan.nodes["z"].region is not None


def test_onnxrt_leaves_nodes_whose_shapes_are_undecided():
    z = S.exp(S.zeros(shape=(0, 4), name="z"), name="e")
    plan = gx.partition(S.Group([z, S.Variable("data") * 2]), "onnxrt",
                        input_shapes={"data": (3, 4)})
    assert plan.nodes["e"].region is None
    assert "shapes not inferred" in plan.nodes["e"].reason
