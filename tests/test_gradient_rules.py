"""The gradient pass itself: summing rules, zero gradients, head gradients, names."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx


def _grad(sym, shapes, **extra):
    exe = sym.simple_bind(gx.cpu(), **shapes)
    rng = np.random.default_rng(0)
    for arr in exe.arg_arrays:
        arr[...] = rng.uniform(-1, 1, arr.shape)
    exe.forward(is_train=True)
    exe.backward([np.ones(o.shape, o.dtype) for o in exe.outputs], **extra)
    return exe


def test_blockgrad_and_comparisons_give_zero_gradient():
    x = gx.sym.Variable("x")
    exe = _grad(gx.sym.Group([gx.sym.BlockGrad(x * 3), x > 0.5]), {"x": (2, 3)})
    assert not exe.grad_dict["x"].any()


def test_contributions_summed_with_elementwise_sum_below_cap(monkeypatch):
    x = gx.sym.Variable("x")
    y = gx.sym.sin(x) + gx.sym.cos(x) + gx.sym.exp(x)
    exe = _grad(y, {"x": (3,)})
    xv = exe.arg_dict["x"]
    np.testing.assert_allclose(exe.grad_dict["x"], np.cos(xv) - np.sin(xv) + np.exp(xv), rtol=1e-6)
    ops = [n.op.name for n in exe._plan.graph.indexed.nodes if n.op is not None]
    assert "add_n" in ops and "_grad_add" not in ops
    monkeypatch.setenv("MXNET_EXEC_INPLACE_GRAD_SUM_CAP", "2")
    exe2 = _grad(y, {"x": (3,)})
    names = [n.name for n in exe2._plan.graph.indexed.nodes if n.op is not None]
    assert {"sum_grad_1", "sum_grad_2", "sum_grad_final"} <= set(names)
    exe2.arg_dict["x"][...] = xv
    exe2.forward(is_train=True)
    exe2.backward([np.ones(3, "f4")])
    np.testing.assert_allclose(exe2.grad_dict["x"], exe.grad_dict["x"], rtol=1e-6)


def test_grad_req_add_accumulates_and_write_overwrites():
    x = gx.sym.Variable("x")
    y = gx.sym.square(x)
    exe = y.simple_bind(gx.cpu(), grad_req="add", x=(2,))
    exe.arg_dict["x"][...] = [1, 2]
    exe.forward(is_train=True)
    exe.backward(np.ones(2, "f4"))
    exe.backward(np.ones(2, "f4"))
    np.testing.assert_array_equal(exe.grad_dict["x"], [4, 8])
    exe_w = y.simple_bind(gx.cpu(), grad_req="write", x=(2,))
    exe_w.arg_dict["x"][...] = [1, 2]
    exe_w.forward(is_train=True)
    exe_w.backward(np.ones(2, "f4"))
    exe_w.backward(np.ones(2, "f4"))
    np.testing.assert_array_equal(exe_w.grad_dict["x"], [2, 4])


def test_same_gradient_entry_for_two_arguments_gets_copies():
    a, b = gx.sym.Variable("a"), gx.sym.Variable("b")
    exe = _grad(a + b, {"a": (2,), "b": (2,)})
    np.testing.assert_array_equal(exe.grad_dict["a"], [1, 1])
    np.testing.assert_array_equal(exe.grad_dict["b"], [1, 1])
    assert not np.shares_memory(exe.grad_dict["a"], exe.grad_dict["b"])


def test_backward_errors():
    a, b = gx.sym.Variable("a"), gx.sym.Variable("b")
    exe = (a * b).simple_bind(gx.cpu(), a=(2,), b=(2,))
    exe.backward(np.ones(2, "f4"))   # before any forward: the buffers' zeros, as MXNet
    np.testing.assert_array_equal(exe.grad_dict["a"], [0, 0])
    exe.forward(is_train=True)
    with pytest.raises(gx.HeadGradientError, match="head_gradient is required"):
        exe.backward()
    with pytest.raises(ValueError, match=r"out_grads\[0\].*has shape \(3,\)"):
        exe.backward(np.ones(3, "f4"))
    exe.backward([np.ones(2, "f4"), np.ones(5, "f4")])   # MXNet ignores extra out_grads
    with pytest.raises(TypeError, match="must be an array"):
        exe.backward([[1, 2]])
    exe.backward({exe.symbol.list_outputs()[0]: np.ones(2, "f4")})
    np.testing.assert_array_equal(exe.grad_dict["a"], exe.arg_dict["b"])


def test_missing_gradient_rule_is_named():
    from graphexec.core.ops.common import same_shape, same_type
    from graphexec.core.ops.registry import OpDef, register_op
    register_op(OpDef("_test_nograd", infer_shape=same_shape, infer_type=same_type))
    try:
        y = gx.core.symbol.create_op_symbol("_test_nograd", [gx.sym.Variable("x")], {})
        with pytest.raises(gx.GraphexecError, match="_test_nograd .*has no gradient rule"):
            y.simple_bind(gx.cpu(), x=(2,))
        y.simple_bind(gx.cpu(), grad_req="null", x=(2,))
    finally:
        from graphexec.core.ops import registry
        registry._OPS.pop("_test_nograd"), registry._CANONICAL.pop("_test_nograd")


def test_backward_without_gradients_is_a_no_op():
    x = gx.sym.Variable("x")
    exe = gx.sym.exp(x).simple_bind(gx.cpu(), grad_req="null", x=(2,))
    exe.forward()
    exe.backward()


def _mirror_case(monkeypatch, mirror: bool):
    """FullyConnected layers (never mirrored: checkpoints) joined by elementwise chains whose
    intermediate values mirroring recomputes in backward instead of keeping."""
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1" if mirror else "0")
    with gx.name.NameManager():
        y = gx.sym.Variable("x")
        for i in range(4):
            y = gx.sym.FullyConnected(y, num_hidden=256, name=f"fc{i}")
            y = gx.sym.tanh(gx.sym.exp(gx.sym.sin(y) * 0.5))
    exe = y.simple_bind(gx.cpu(), x=(256, 256))
    rng = np.random.default_rng(3)
    for arr in exe.arg_arrays:
        arr[...] = rng.uniform(-0.1, 0.1, arr.shape)
    exe.forward(is_train=True)
    exe.backward(np.ones((256, 256), "f4"))
    return exe


def test_mirroring_recomputes_and_saves_memory(monkeypatch):
    plain = _mirror_case(monkeypatch, False)
    mirrored = _mirror_case(monkeypatch, True)
    names = [n.name for n in mirrored._plan.graph.indexed.nodes]
    assert any(n.endswith("_mirror") for n in names)
    np.testing.assert_allclose(mirrored.grad_dict["x"], plain.grad_dict["x"], rtol=1e-6)
    assert mirrored.memory_plan["planned_bytes"] < plain.memory_plan["planned_bytes"]
    assert mirrored.memory_plan["mirror_saved_bytes"] > 0


def test_force_mirroring_attribute(monkeypatch):
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "0")
    x = gx.sym.Variable("x")
    y = gx.sym.exp(gx.sym.sin(x, attr={"__force_mirroring__": "True"}, name="s"), name="e")
    exe = y.simple_bind(gx.cpu(), x=(3,))
    names = [n.name for n in exe._plan.graph.indexed.nodes]
    assert "s_mirror" in names and "e_mirror" not in names
