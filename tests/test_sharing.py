"""Executor.reshape and simple_bind sharing (shared_exec / shared_arg_names / shared_buffer)."""
from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from refcase_replay import DATA

import graphexec as gx


def _fc():
    x = gx.sym.Variable("data")
    return gx.sym.Activation(gx.sym.FullyConnected(x, num_hidden=5, name="fc"), act_type="relu")


def test_reshape_shares_parameters_and_memory():
    exe = _fc().simple_bind(gx.cpu(), grad_req="null", data=(8, 10))
    small = exe.reshape(data=(4, 10))
    assert small.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    assert np.shares_memory(small.arg_dict["data"], exe.arg_dict["data"])
    small.arg_dict["fc_weight"][...] = 1
    assert exe.arg_dict["fc_weight"].sum() == 50
    assert small._plan.pool and all(any(b is p for _, p in exe._shared_pool) for b in small._plan.pool)
    big = exe.reshape(allow_up_sizing=True, data=(16, 10))
    assert big.arg_dict["data"].shape == (16, 10)
    assert not np.shares_memory(big.arg_dict["data"], exe.arg_dict["data"])


def test_reshape_error_texts_match_mxnet_order():
    meta = json.loads((DATA / "exec_reshape" / "meta.json").read_text())["reshape_errors"]
    exe = _fc().simple_bind(gx.cpu(), grad_req="null", data=(8, 10))
    with pytest.raises(gx.GraphexecError, match="New shape of arg: data is larger than original"):
        exe.reshape(data=(16, 10))
    # the data-grows check fires before the weight-changed one, as in MXNet
    assert "larger than original" in meta["reshape(data=(8,12)) without partial_shaping (weight shape would change)"]["message"]
    with pytest.raises(gx.GraphexecError, match="larger than original"):
        exe.reshape(data=(8, 12))
    with pytest.raises(gx.GraphexecError, match="Shape of unspecified arg: fc_weight changed"):
        exe.reshape(allow_up_sizing=True, data=(8, 12))
    ok = exe.reshape(partial_shaping=True, allow_up_sizing=True, data=(8, 12))
    assert ok.arg_dict["fc_weight"].shape == (5, 12)


def test_reshape_docstring_example():
    a, b = gx.sym.Variable("a"), gx.sym.Variable("b")
    exe = (2 * a + b).bind(gx.cpu(), {"a": np.zeros((2, 1), "f4"), "b": np.ones((2, 1), "f4")})
    new = exe.reshape(allow_up_sizing=True, a=(4, 2), b=(4, 2))
    assert new.forward()[0].shape == (4, 2)
    with pytest.raises(gx.GraphexecError, match="New shape of arg: a is larger"):
        exe.reshape(a=(4, 2), b=(4, 2))


def test_simple_bind_shares_nothing_without_shared_buffer():
    sym = _fc()
    base = sym.simple_bind(gx.cpu(), data=(8, 10))
    other = sym.simple_bind(gx.cpu(), data=(4, 10), shared_exec=base,
                            shared_arg_names=["fc_weight", "fc_bias"])
    assert other.arg_dict["fc_weight"] is not base.arg_dict["fc_weight"]


def test_simple_bind_shared_buffer_semantics(caplog):
    sym = _fc()
    buf: dict = {}
    params = ["fc_weight", "fc_bias"]
    base = sym.simple_bind(gx.cpu(), data=(8, 10), shared_exec=None, shared_arg_names=params,
                           shared_buffer=buf)
    assert set(buf) == {"data", "grad of data", "fc_weight", "grad of fc_weight", "fc_bias",
                        "grad of fc_bias"}
    small = sym.simple_bind(gx.cpu(), data=(4, 10), shared_exec=base, shared_arg_names=params,
                            shared_buffer=buf)
    assert small.arg_dict["fc_weight"] is base.arg_dict["fc_weight"]
    assert small.grad_dict["fc_weight"] is base.grad_dict["fc_weight"]
    assert np.shares_memory(small.arg_dict["data"], base.arg_dict["data"])
    with caplog.at_level(logging.WARNING, logger="graphexec"):
        big = sym.simple_bind(gx.cpu(), data=(16, 10), shared_exec=base, shared_arg_names=params,
                              shared_buffer=buf)
    assert "bucketing: data \"data\" has a shape (16, 10)" in caplog.text
    assert buf["data"] is big.arg_dict["data"]
    with pytest.raises(gx.BindError, match="shared argument 'fc_weight' is \\(5, 10\\)"):
        gx.sym.FullyConnected(gx.sym.Variable("data"), num_hidden=5, name="fc").simple_bind(
            gx.cpu(), data=(4, 12), shared_exec=base, shared_arg_names=params, shared_buffer={})


def test_reshape_keeps_the_subgraph_backend():
    exe = _fc().simple_bind(gx.cpu(), grad_req="null", data=(8, 10), backend="default",
                            backend_options={"default": {"op_names": {"Activation"}}})
    assert exe.partition_plan.num_claimed == 1
    small = exe.reshape(data=(4, 10))
    assert small.partition_plan is not None and small.partition_plan.num_claimed == 1
