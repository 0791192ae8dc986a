"""gx.rnn FusedRNNCell / BidirectionalCell / unpack_weights / pack_weights: the names, shapes
and init attribute MXNet 1.9.1 gives (recorded by tests/data/harness/make_fused_rnn.py), the
fused cell's outputs against MXNet's, and the fused cell against its unfused stack through
Module after unpack/pack, as MXNet's test_operator check_rnn_consistency does."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

DATA = Path(__file__).resolve().parent / "data" / "harness"
REF = json.loads((DATA / "fused_rnn.json").read_text())
ARR = np.load(DATA / "fused_rnn.npz")
T, N, IN, H, LAYERS = 3, 2, 4, 5, 2
CONFIGS = [(k.rsplit("_", 1)[0], k.endswith("_bi")) for k in REF]


def _fused(mode, bidirectional, prefix=""):
    return gx.rnn.FusedRNNCell(H, num_layers=LAYERS, mode=mode, bidirectional=bidirectional,
                               get_next_state=True, prefix=prefix)


def _key(mode, bidirectional):
    return f"{mode}_{'bi' if bidirectional else 'uni'}"


@pytest.mark.parametrize("mode,bidirectional", CONFIGS)
def test_names_shapes_and_init_as_mxnet(mode, bidirectional):
    ref = REF[_key(mode, bidirectional)]
    cell = _fused(mode, bidirectional)
    out, states = cell.unroll(T, gx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    assert out.list_arguments() == ["data", "parameters"]
    assert out.infer_shape(data=(N, T, IN))[0][1] == (ref["size"],)
    assert out.attr_dict()["parameters"]["__init__"] == ref["init"]
    assert [s.attr("__layout__") for s in states] == ref["state_layouts"]
    assert [dict(s, shape=list(s["shape"])) for s in cell.state_info] == ref["state_info"]
    unpacked = cell.unpack_weights({"parameters": np.arange(ref["size"], dtype="f4")})
    assert [[n, list(v.shape)] for n, v in unpacked.items()] == ref["unpacked"]
    with gx.name.NameManager():
        stack, _ = cell.unfuse().unroll(T, gx.sym.Variable("data"), layout="NTC",
                                        merge_outputs=True)
    assert stack.list_arguments() == ref["unfused_arguments"]
    assert stack.list_outputs()[0] == ref["unfused_output"]


@pytest.mark.parametrize("mode,bidirectional", CONFIGS)
def test_fused_outputs_and_data_gradient_match_mxnet(mode, bidirectional):
    key = _key(mode, bidirectional)
    out, _ = _fused(mode, bidirectional).unroll(T, gx.sym.Variable("data"), layout="NTC",
                                                merge_outputs=True)
    grad = np.zeros((N, T, IN), "f4")
    exe = out.bind(gx.cpu(), {"data": ARR[f"{key}/data"], "parameters": ARR[f"{key}/params"]},
                   args_grad={"data": grad}, grad_req={"data": "write", "parameters": "null"})
    exe.forward(is_train=True)
    exe.backward([ARR[f"{key}/head"]])
    np.testing.assert_allclose(exe.outputs[0], ARR[f"{key}/out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["data"], ARR[f"{key}/data_grad"], rtol=1e-4,
                               atol=1e-6)


def _module(cell, grad_req="write"):
    out, _ = cell.unroll(T, gx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    mod = gx.mod.Module(out, label_names=None, context=gx.cpu())
    mod.bind(data_shapes=[("data", (N, T, IN))], label_shapes=None, inputs_need_grad=True,
             grad_req=grad_req)
    return mod


def _unfused_stack(mode, bidirectional):
    """The stack MXNet's test_operator builds by hand (test_lstm_bidirectional, ...)."""
    make = {"lstm": gx.rnn.LSTMCell, "gru": gx.rnn.GRUCell,
            "rnn_tanh": lambda h, prefix: gx.rnn.RNNCell(h, activation="tanh", prefix=prefix),
            "rnn_relu": lambda h, prefix: gx.rnn.RNNCell(h, activation="relu", prefix=prefix)}
    stack = gx.rnn.SequentialRNNCell()
    for i in range(LAYERS):
        if bidirectional:
            stack.add(gx.rnn.BidirectionalCell(make[mode](H, prefix=f"l{i}_"),
                                               make[mode](H, prefix=f"r{i}_"),
                                               output_prefix=f"bi_{mode}_{i}_"))
        else:
            stack.add(make[mode](H, prefix=f"l{i}_"))
    return stack


@pytest.mark.parametrize("mode,bidirectional", CONFIGS)
def test_fused_and_unfused_agree_through_module(mode, bidirectional):
    fused, stack = _fused(mode, bidirectional), _unfused_stack(mode, bidirectional)
    mod1, mod2 = _module(fused), _module(stack)
    mod1.init_params(gx.init.Xavier())
    args, auxs = mod1.get_params()
    mod2.set_params(stack.pack_weights(fused.unpack_weights(args)), auxs)
    rng = np.random.RandomState(0)
    batch = gx.io.DataBatch(data=[gx.nd.array(rng.uniform(-1, 1, (N, T, IN)))])
    mod1.forward(batch, is_train=True)
    mod2.forward(batch, is_train=True)
    out1, out2 = mod1.get_outputs()[0].asnumpy(), mod2.get_outputs()[0].asnumpy()
    np.testing.assert_allclose(out1, out2, rtol=1e-5, atol=1e-6)
    head = gx.nd.array(rng.uniform(-1, 1, out1.shape))
    mod1.backward(out_grads=[head])
    mod2.backward(out_grads=[head])
    np.testing.assert_allclose(mod1.get_input_grads()[0].asnumpy(),
                               mod2.get_input_grads()[0].asnumpy(), rtol=1e-4, atol=1e-6)
    grads1 = dict(zip(mod1._exec_group.param_names, mod1._exec_group.grad_arrays))
    grads2 = dict(zip(mod2._exec_group.param_names, mod2._exec_group.grad_arrays))
    packed = fused.pack_weights(stack.unpack_weights({n: g[0] for n, g in grads2.items()}))
    np.testing.assert_allclose(np.asarray(grads1["parameters"][0]),
                               np.asarray(packed["parameters"]), rtol=1e-4, atol=1e-6)
    assert np.abs(np.asarray(packed["parameters"])).sum() > 0


def test_unpack_then_pack_is_identity_and_keeps_other_args():
    cell = _fused("lstm", True, prefix="enc_")
    size = REF["lstm_bi"]["size"]
    packed = gx.nd.array(np.random.RandomState(1).uniform(size=size))
    args = {"enc_parameters": packed, "fc_weight": gx.nd.ones((2, 2))}
    unpacked = cell.unpack_weights(args)
    assert "enc_parameters" not in unpacked and "enc_r1_h2h_o_bias" in unpacked
    again = cell.pack_weights(unpacked)
    assert sorted(again) == ["enc_parameters", "fc_weight"]
    np.testing.assert_array_equal(again["enc_parameters"].asnumpy(), packed.asnumpy())
    lstm = gx.rnn.LSTMCell(H, prefix="l0_")
    whole = {"l0_i2h_weight": np.arange(4 * H * IN, dtype="f4").reshape(4 * H, IN),
             "l0_i2h_bias": np.ones(4 * H, "f4"), "l0_h2h_weight": np.zeros((4 * H, H), "f4"),
             "l0_h2h_bias": np.zeros(4 * H, "f4")}
    split = lstm.unpack_weights(whole)
    np.testing.assert_array_equal(split["l0_i2h_f_weight"], whole["l0_i2h_weight"][H:2 * H])
    joined = lstm.pack_weights(split)
    assert sorted(joined) == sorted(whole)
    np.testing.assert_array_equal(joined["l0_i2h_weight"], whole["l0_i2h_weight"])


def test_fused_initializer_sets_the_forget_bias():
    cell = gx.rnn.FusedRNNCell(H, num_layers=1, mode="lstm", forget_bias=3.0, prefix="")
    out, _ = cell.unroll(T, gx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    arr = gx.nd.zeros(out.infer_shape(data=(T, N, IN))[0][1])
    desc = gx.init.InitDesc("parameters", out.attr_dict()["parameters"])
    gx.init.Xavier()(desc, arr)
    parts = cell.unpack_weights({"parameters": arr})
    assert parts["l0_i2h_f_bias"].asnumpy().tolist() == [3.0] * H
    assert parts["l0_h2h_f_bias"].asnumpy().tolist() == [3.0] * H
    assert parts["l0_i2h_i_bias"].asnumpy().tolist() == [0.0] * H
    assert np.abs(parts["l0_i2h_c_weight"].asnumpy()).sum() > 0


def test_bidirectional_unmerged_outputs_are_named_per_step():
    cell = gx.rnn.BidirectionalCell(gx.rnn.GRUCell(H, prefix="l_"), gx.rnn.GRUCell(H, prefix="r_"))
    steps = [gx.sym.Variable(f"x{t}") for t in range(T)]
    outputs, states = cell.unroll(T, steps, merge_outputs=False)
    assert [o.name for o in outputs] == ["bi_t0", "bi_t1", "bi_t2"]
    assert len(states) == 2 and len(states[0]) == 1
    assert outputs[0].infer_shape(x0=(N, IN), x1=(N, IN), x2=(N, IN))[1] == [(N, 2 * H)]
    with pytest.raises(gx.rnn.RNNError, match="cannot be stepped"):
        cell(steps[0], cell.begin_state())


def test_bad_mode_and_bad_parameter_names_are_clear_errors():
    with pytest.raises(gx.rnn.RNNError, match="mode must be one of .*'lstmm'"):
        gx.rnn.FusedRNNCell(H, mode="lstmm")
    cell = _fused("gru", False)
    with pytest.raises(gx.rnn.RNNError, match="expects a parameter named 'parameters'"):
        cell.unpack_weights({"params": np.zeros(10, "f4")})
    with pytest.raises(gx.rnn.RNNError, match="345.*fits no input size|fits no input size"):
        cell.unpack_weights({"parameters": np.zeros(346, "f4")})
    unpacked = cell.unpack_weights({"parameters": np.zeros(REF["gru_uni"]["size"], "f4")})
    del unpacked["l1_h2h_z_bias"]
    with pytest.raises(gx.rnn.RNNError, match="expects a parameter named 'l1_h2h_z_bias'"):
        cell.pack_weights(unpacked)
    with pytest.raises(gx.rnn.RNNError, match="expects a parameter named 'l0_i2h_weight'"):
        gx.rnn.LSTMCell(H, prefix="l0_").unpack_weights({"l0_i2h_wt": np.zeros(4)})
    with pytest.raises(gx.rnn.RNNError, match="cannot be stepped"):
        cell(gx.sym.Variable("x"), cell.begin_state())


def test_pack_weights_without_the_first_weight_names_it():
    with pytest.raises(gx.rnn.RNNError, match="needs a 2-D l0_i2h_weight"):
        gx.rnn.FusedRNNCell(H, mode="rnn_tanh", prefix="").pack_weights({"x": np.zeros(3)})


@pytest.mark.parametrize("grad_req", ["add", "null"])
def test_fused_and_unfused_agree_with_other_grad_reqs(grad_req):
    fused, stack = _fused("gru", True), _unfused_stack("gru", True)
    mod1, mod2 = _module(fused, grad_req), _module(stack, grad_req)
    mod1.init_params()
    args, auxs = mod1.get_params()
    mod2.set_params(stack.pack_weights(fused.unpack_weights(args)), auxs)
    batch = gx.io.DataBatch(data=[gx.nd.array(np.random.RandomState(3).uniform(size=(N, T, IN)))])
    head = gx.nd.ones((N, T, 2 * H))
    for _ in range(2):  # twice: "add" accumulates
        for mod in (mod1, mod2):
            mod.forward(batch, is_train=True)
            mod.backward(out_grads=[head])
    grads = [mod.get_input_grads()[0] for mod in (mod1, mod2)]
    if grad_req == "null":
        assert grads == [None, None]
    else:
        np.testing.assert_allclose(grads[0].asnumpy(), grads[1].asnumpy(), rtol=1e-4,
                                   atol=1e-6)
