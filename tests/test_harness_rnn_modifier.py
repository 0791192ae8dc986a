"""gx.rnn ModifierCell / ResidualCell / ZoneoutCell: node and parameter names as MXNet 1.9.1
gives them (literals recorded with its mx.rnn), the residual output equal to the base output
plus the input, zoneout at inference equal to the base cell, and the misuse errors."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx

SHAPE = (2, 3, 4)  # N, T, C


def _forward(sym, args, is_train=False):
    exe = sym.bind(gx.cpu(), {k: gx.nd.array(v) for k, v in args.items()})
    exe.forward(is_train=is_train)
    return exe.outputs[0].asnumpy()


def _args(sym, seed):
    shapes = sym.infer_shape(data=SHAPE)[0]
    rng = np.random.RandomState(seed)
    return {n: rng.uniform(-1, 1, s).astype("f4") for n, s in zip(sym.list_arguments(), shapes)}


def test_residual_cell_names_and_values():
    cell = gx.rnn.ResidualCell(gx.rnn.LSTMCell(4, prefix="rl_"))
    with gx.name.NameManager():
        merged, states = cell.unroll(3, gx.sym.Variable("data"), merge_outputs=True)
    assert merged.name == "concat0_plus_residual" and len(states) == 2
    assert merged.list_arguments() == ["data", "rl_i2h_weight", "rl_i2h_bias", "rl_h2h_weight",
                                       "rl_h2h_bias"]
    steps, _ = cell.unroll(3, gx.sym.Variable("data"), merge_outputs=False)
    assert [s.name for s in steps] == ["rl_t0_out_plus_residual", "rl_t1_out_plus_residual",
                                       "rl_t2_out_plus_residual"]
    base, _ = gx.rnn.LSTMCell(4, prefix="rl_").unroll(3, gx.sym.Variable("data"),
                                                       merge_outputs=True)
    args = _args(merged, 0)
    np.testing.assert_allclose(_forward(merged, args), _forward(base, args) + args["data"],
                               rtol=1e-6, atol=1e-6)
    fused = gx.rnn.ResidualCell(gx.rnn.FusedRNNCell(4, num_layers=1, mode="gru", prefix="fg_"))
    out, states = fused.unroll(3, gx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    assert out.name == "fg_rnn_plus_residual" and states == []
    assert out.list_arguments() == ["data", "fg_parameters"]


def test_zoneout_cell_names_inference_and_weights():
    cell = gx.rnn.ZoneoutCell(gx.rnn.GRUCell(4, prefix="zg_"), zoneout_outputs=0.3,
                              zoneout_states=0.2)
    with gx.name.NameManager():
        out, states = cell.unroll(3, gx.sym.Variable("data"), merge_outputs=True)
    assert out.name == "concat0" and len(states) == 1
    assert out.infer_shape(data=SHAPE)[1] == [SHAPE]
    assert states[0].list_arguments() == ["data", "zg_i2h_weight", "zg_i2h_bias",
                                          "zg_h2h_weight", "zg_h2h_bias"]
    base, _ = gx.rnn.GRUCell(4, prefix="zg_").unroll(3, gx.sym.Variable("data"),
                                                      merge_outputs=True)
    args = _args(out, 1)
    np.testing.assert_allclose(_forward(out, args), _forward(base, args), rtol=1e-6, atol=1e-7)
    assert cell.begin_state()[0].name == "zg_begin_state_1"
    with pytest.raises(gx.rnn.RNNError, match="Call the modifier cell instead"):
        cell.base_cell.begin_state()
    whole = {f"zg_{g}_{k}": np.zeros((12, 4) if k == "weight" else 12, "f4")
             for g in ("i2h", "h2h") for k in ("weight", "bias")}
    assert list(cell.unpack_weights(whole)) == [
        "zg_i2h_r_weight", "zg_i2h_r_bias", "zg_i2h_z_weight", "zg_i2h_z_bias",
        "zg_i2h_o_weight", "zg_i2h_o_bias", "zg_h2h_r_weight", "zg_h2h_r_bias",
        "zg_h2h_z_weight", "zg_h2h_z_bias", "zg_h2h_o_weight", "zg_h2h_o_bias"]
    assert sorted(cell.pack_weights(cell.unpack_weights(whole))) == sorted(whole)


def test_zoneout_in_training_keeps_previous_values_or_new_ones():
    cell = gx.rnn.ZoneoutCell(gx.rnn.RNNCell(4, prefix="zr_"), zoneout_outputs=0.5)
    out, _ = cell.unroll(3, gx.sym.Variable("data"), merge_outputs=True)
    base, _ = gx.rnn.RNNCell(4, prefix="zr_").unroll(3, gx.sym.Variable("data"),
                                                      merge_outputs=True)
    args = _args(out, 2)
    got, new = _forward(out, args, is_train=True), _forward(base, args)
    # step 0 keeps either its new value or the zero "previous output"
    assert np.all(np.isclose(got[:, 0], new[:, 0], atol=1e-6) | (got[:, 0] == 0))


def test_zoneout_refuses_cells_that_cannot_step():
    with pytest.raises(gx.rnn.RNNError, match="FusedRNNCell doesn't support zoneout"):
        gx.rnn.ZoneoutCell(gx.rnn.FusedRNNCell(4))
    bi = gx.rnn.BidirectionalCell(gx.rnn.GRUCell(4, prefix="a_"), gx.rnn.GRUCell(4, prefix="b_"))
    with pytest.raises(gx.rnn.RNNError, match="BidirectionalCell doesn't support zoneout"):
        gx.rnn.ZoneoutCell(bi)
    stack = gx.rnn.SequentialRNNCell()
    stack.add(gx.rnn.BidirectionalCell(gx.rnn.GRUCell(4, prefix="c_"),
                                       gx.rnn.GRUCell(4, prefix="d_")))
    with pytest.raises(gx.rnn.RNNError, match="BidirectionalCell doesn't support zoneout"):
        gx.rnn.ZoneoutCell(stack)
