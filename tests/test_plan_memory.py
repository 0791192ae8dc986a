"""The memory planner: reuse of dead buffers, in-place writes, external arrays untouched."""
from __future__ import annotations

import numpy as np

import graphexec as gx


def _chain(n, x=None):
    x = gx.sym.Variable("x") if x is None else x
    for i in range(n):
        x = gx.sym.sin(x) if i % 2 else x * 1.5
    return x


def test_deep_chain_reuses_buffers_and_stays_correct():
    sym = _chain(30)
    exe = sym.simple_bind(gx.cpu(), grad_req="null", x=(128, 256))  # 128 KiB entries
    attrs = exe._plan.graph.attrs
    assert attrs["planned_bytes"] < attrs["unplanned_bytes"] / 10
    xv = np.random.default_rng(0).uniform(-1, 1, (128, 256)).astype("f4")
    out = exe.forward(x=xv)[0].copy()
    ref = xv.astype(np.float64)
    for i in range(30):
        ref = np.sin(ref) if i % 2 else ref * 1.5
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(exe.arg_dict["x"], xv)  # the argument was not overwritten


def test_small_entries_are_reused_but_not_written_in_place():
    exe = _chain(10).simple_bind(gx.cpu(), grad_req="null", x=(4,))
    sids = exe._plan.graph.attrs["storage_id"]
    ig = exe._plan.graph.indexed
    for nid, node in enumerate(ig.nodes):
        if node.op is not None:
            for e in ig.node_inputs[nid]:
                assert sids[e] == -1 or sids[e] != sids[ig.row_ptr[nid]]


def test_in_place_for_large_entries_and_gradients_correct():
    x = gx.sym.Variable("x")
    y = gx.sym.exp(gx.sym.sin(x) * 2.0)
    exe = y.simple_bind(gx.cpu(), x=(256, 128))
    xv = np.random.default_rng(1).uniform(-1, 1, (256, 128)).astype("f4")
    exe.arg_dict["x"][...] = xv
    exe.forward(is_train=True)
    exe.backward(np.ones((256, 128), "f4"))
    expect = np.exp(2 * np.sin(xv)) * 2 * np.cos(xv)
    np.testing.assert_allclose(exe.grad_dict["x"], expect, rtol=1e-5, atol=1e-5)
    exe.backward(np.ones((256, 128), "f4"))  # forward values needed by backward survive
    np.testing.assert_allclose(exe.grad_dict["x"], expect, rtol=1e-5, atol=1e-5)


def test_outputs_stay_valid_after_backward():
    x = gx.sym.Variable("x")
    y = gx.sym.Group([gx.sym.sin(x), gx.sym.cos(x) * 3.0])
    exe = y.simple_bind(gx.cpu(), x=(64, 512))
    xv = np.random.default_rng(2).uniform(-1, 1, (64, 512)).astype("f4")
    exe.arg_dict["x"][...] = xv
    outs = [o.copy() for o in exe.forward(is_train=True)]
    exe.backward([np.ones((64, 512), "f4")] * 2)
    for got, want in zip(exe.outputs, outs):
        np.testing.assert_array_equal(got, want)


def test_debug_str_reports_planned_megabytes():
    exe = _chain(6).simple_bind(gx.cpu(), grad_req="null", x=(1024, 1024))
    total = exe._plan.graph.attrs["planned_bytes"]
    assert f"Total {total >> 20} MB allocated" in exe.debug_str()
    assert total >> 20 == 4  # the chain runs in place in one 4 MiB buffer


def _two_layer(monkeypatch, repeatable: str):
    monkeypatch.setenv("GRAPHEXEC_REPEATABLE_BACKWARD", repeatable)
    x = gx.sym.Variable("x")
    y = x
    for _ in range(2):
        y = gx.sym.tanh(gx.sym.sin(y) * 1.1)
    exe = y.simple_bind(gx.cpu(), x=(256, 256))
    exe.arg_dict["x"][...] = np.random.default_rng(4).uniform(-1, 1, (256, 256))
    exe.forward(is_train=True)
    exe.backward(np.ones((256, 256), "f4"))
    return exe


def test_repeated_backward_recomputes_reused_forward_values(monkeypatch):
    exe = _two_layer(monkeypatch, "0")
    assert exe._plan.graph.attrs["backward_clobbers_forward"]
    first = exe.grad_dict["x"].copy()
    exe.backward(np.ones((256, 256), "f4"))
    np.testing.assert_array_equal(exe.grad_dict["x"], first)


def test_repeated_backward_replays_dropout_masks(monkeypatch):
    monkeypatch.setenv("GRAPHEXEC_REPEATABLE_BACKWARD", "0")
    gx.random.seed(11)
    x = gx.sym.Variable("x")
    y = gx.sym.tanh(gx.sym.Dropout(gx.sym.sin(gx.sym.tanh(x) * 1.1), p=0.5) * 0.9)
    exe = y.simple_bind(gx.cpu(), x=(256, 256))
    assert exe._plan.graph.attrs["backward_clobbers_forward"]
    exe.arg_dict["x"][...] = np.random.default_rng(5).uniform(-1, 1, (256, 256))
    exe.forward(is_train=True)
    exe.backward(np.ones((256, 256), "f4"))
    first = exe.grad_dict["x"].copy()
    after = gx.random.generator().random()
    gx.random.seed(11)
    exe.forward(is_train=True)
    exe.backward(np.ones((256, 256), "f4"))
    exe.backward(np.ones((256, 256), "f4"))
    np.testing.assert_array_equal(exe.grad_dict["x"], first)
    assert gx.random.generator().random() == after  # the replay did not move the stream


def test_repeatable_backward_keeps_forward_values(monkeypatch):
    exe = _two_layer(monkeypatch, "1")
    assert not exe._plan.graph.attrs["backward_clobbers_forward"]
    first = exe.grad_dict["x"].copy()
    exe.backward(np.ones((256, 256), "f4"))
    np.testing.assert_array_equal(exe.grad_dict["x"], first)


def test_host_arrays_start_on_cache_lines():
    # BLAS reads 64-byte-aligned operands measurably faster (benchmarks/README.md, training)
    from graphexec.core.ir.context import HOST_ALIGNMENT, aligned_zeros
    x = gx.sym.Variable("x")
    y = gx.sym.FullyConnected(gx.sym.relu(gx.sym.FullyConnected(x, num_hidden=7)), num_hidden=3)
    exe = y.simple_bind(gx.cpu(), grad_req="write", x=(5, 3))
    arrays = [a for a in exe._plan.arrays if a is not None]
    arrays += list(exe.arg_arrays) + [g for g in exe.grad_arrays if g is not None]
    assert arrays and all(a.ctypes.data % HOST_ALIGNMENT == 0 for a in arrays)
    for shape, dtype in (((3, 5), "f2"), (7, "i8"), ((), "f4"), ((0, 4), "f8")):
        arr = aligned_zeros(shape, dtype)
        assert arr.shape == (shape if isinstance(shape, tuple) else (shape,))
        assert arr.dtype == dtype and (arr.size == 0 or arr.ctypes.data % HOST_ALIGNMENT == 0)
        assert arr.flags.c_contiguous and arr.flags.writeable and not arr.any()
