"""Channels-last storage (core/runtime/layout.py) as the ``torch`` strategy uses it: the
connected groups of PyTorch convolutions, pooling and relu, native BatchNorm and additions
that hold a depthwise convolution, and in dense networks the groups of elementwise nodes
between convolutions and pooling whose maps are large, keep the 4-D entries between them
N x H x W x C in memory, seen by every kernel as (N, C, H, W) arrays with other strides.
Results equal the native strategy's (forward, every gradient, moving statistics; a monitor
sees the same values); graph outputs, the executor's given arrays and entries read by other
nodes stay channel-first; no elementwise node sees two layouts and no kernel runs in place
across two layouts; a PyTorch crash at a layout edge is avoided. The BatchNorm loops over
channels-last rows against float64 sums. Skips (saying so) without PyTorch or numba."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx
from classifier_steps import bind_classifier
from graphexec.backends.torchcpu.select import (DENSE_CHANNELS_LAST_MIN_POSITIONS,
                                                LAYOUT_CONVERTERS, NATIVE_DEPTHWISE_MAX_POSITIONS)
from graphexec.core.runtime.kernels import KERNEL_ATTR
from graphexec.core.runtime.layout import LAYOUT_ATTR, SHAPE_ONLY_OPS

S = gx.sym


def _needs_torch_and_numba():
    pytest.importorskip("torch", reason="the torch strategy needs PyTorch")
    pytest.importorskip("numba", reason="channels-last BatchNorm runs numba's loops")


def _separable(residual: bool = True):
    """conv 3x3 -> BN -> relu -> depthwise 3x3 -> BN -> relu -> pointwise -> BN
    (+ the block's input) -> relu -> max pooling -> FC -> SoftmaxOutput."""
    x = S.Variable("data")
    y = S.Activation(S.BatchNorm(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=6,
                                               no_bias=True, name="c0"),
                                 fix_gamma=False, name="bn0"), act_type="relu", name="r0")
    z = S.Activation(S.BatchNorm(S.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=6,
                                               num_group=6, no_bias=True, name="dw"),
                                 fix_gamma=False, name="bn1"), act_type="relu", name="r1")
    z = S.BatchNorm(S.Convolution(z, kernel=(1, 1), num_filter=6, name="pw"),
                    fix_gamma=False, name="bn2")
    if residual:
        z = z + y
    z = S.Activation(z, act_type="relu", name="r2")
    z = S.Pooling(z, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    z = S.FullyConnected(z, num_hidden=5, name="fc")
    return S.SoftmaxOutput(z, S.Variable("softmax_label"), name="softmax")


def _step(sym, backend: str, monitor: list | None = None, shape=(3, 2, 9, 10)):
    exe = bind_classifier(sym, backend, shape, seed=5)
    if monitor is not None:
        exe.set_monitor_callback(lambda name, arr: monitor.append((name, np.array(arr))),
                                 monitor_all=True)
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward()
    return exe


def _matches_native(got, want) -> None:
    """The output, every gradient and the moving statistics of executor ``got`` are
    ``want``'s (the native strategy's) within float32 noise."""
    _output_and_gradients_match(got, want)
    for name in want.aux_dict:
        _close(got.aux_dict[name], want.aux_dict[name], f"{name} after two steps")


def _output_and_gradients_match(got, want) -> None:
    """The output and every gradient of executor ``got`` are ``want``'s within float32
    noise."""
    _close(got.outputs[0], want.outputs[0], "output")
    for name in want.grad_dict:
        if name == "softmax_label":
            continue
        if np.abs(want.grad_dict[name]).max() < ROUNDING_ZERO:
            # a bias feeding BatchNorm: zero up to how its sum of thousands of terms of
            # either sign was rounded (oneDNN adds them in another order than numpy)
            np.testing.assert_allclose(got.grad_dict[name], 0, atol=ROUNDING_ZERO,
                                       err_msg=f"gradient of {name}")
        else:
            _close(got.grad_dict[name], want.grad_dict[name], f"gradient of {name}")


#: gradients below this are zero up to rounding
ROUNDING_ZERO = 1e-4


def _close(got, want, what: str) -> None:
    # float32 noise relative to the array's scale, with a floor for gradients that are zero
    # up to rounding (a convolution's bias before BatchNorm: sums of 4096 terms of +-1e-3
    # leave 1e-5)
    scale = max(float(np.abs(want).max()), 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=3e-5 * scale, err_msg=what)


@pytest.mark.parametrize("any_size", [False, True])
@pytest.mark.parametrize("residual,shape", [(True, (3, 2, 9, 10)), (False, (3, 2, 9, 10)),
                                            (True, (4, 2, 32, 32)), (True, (3, 2, 7, 8)),
                                            (False, (5, 2, 4, 4))])
def test_separable_block_matches_native(residual, shape, any_size, monkeypatch):
    """Maps of at most 64 positions run the depthwise layer's native loops over rows
    (``openmp``), larger ones oneDNN's; where PyTorch's kernels use a vector extension of
    NATIVE_DEPTHWISE_ANY_SIZE_CAPABILITIES (``any_size``) every map size runs the loops."""
    _needs_torch_and_numba()
    import torch

    from graphexec.backends.torchcpu import select
    monkeypatch.setattr(select, "NATIVE_DEPTHWISE_ANY_SIZE_CAPABILITIES",
                        frozenset({torch.backends.cpu.get_cpu_capability()} if any_size else ()))
    sym = _separable(residual)
    want, got = _step(sym, "NONE", shape=shape), _step(sym, "torch", shape=shape)
    plan = got._plan
    ig = plan.graph.indexed
    assert plan.channels_last, "no entry stored channels-last"
    variant = {n.name: n.attrs.get(KERNEL_ATTR) for n in ig.nodes if n.op is not None}
    small = shape[2] * shape[3] <= NATIVE_DEPTHWISE_MAX_POSITIONS
    assert variant["dw"] == ("openmp" if small or any_size else "torch")
    assert variant["dw_backward"] == variant["dw"] and variant["pw"] == "torch"
    marked = {n.name for n in ig.nodes if n.op is not None and LAYOUT_ATTR in n.attrs}
    assert {"c0", "dw", "pw", "bn1", "r1", "pool", "pool_backward"} <= marked
    assert "fc" not in marked
    for e in plan.channels_last:
        arr = plan.arrays[e]
        assert arr.ndim == 4 and not arr.flags.c_contiguous
        assert arr.transpose(0, 2, 3, 1).flags.c_contiguous
    # what the executor hands out stays channel-first
    for arr in (*got.outputs, *got.arg_dict.values(), *got.grad_dict.values()):
        assert arr is None or arr.flags.c_contiguous  # None: no gradient asked
    # the pooling feeding the (channel-first) FullyConnected: input channels-last, output not
    pool = next(i for i, n in enumerate(ig.nodes) if n.name == "pool")
    assert ig.node_inputs[pool][0] in plan.channels_last
    assert ig.row_ptr[pool] not in plan.channels_last
    _matches_native(got, want)


@pytest.mark.parametrize("min_channels", [0, 6, 7, 12])
def test_pointwise_backward_of_few_channels_runs_onednn(min_channels, monkeypatch):
    """The pointwise layer (6 data channels, channels-last) takes its gradients from the
    products (``_pointwise_backward``) from POINTWISE_ROWS_MIN_CHANNELS data channels, below
    from oneDNN's channels-last backward; the numbers are the native strategy's either way."""
    _needs_torch_and_numba()
    from graphexec.backends.torchcpu import kernels
    monkeypatch.setattr(kernels, "POINTWISE_ROWS_MIN_CHANNELS", min_channels)
    calls = []
    real = kernels._pointwise_backward
    monkeypatch.setattr(kernels, "_pointwise_backward",
                        lambda *a: calls.append(a[-1]) or real(*a))
    sym = _separable()
    shape = (4, 2, 16, 16)
    want, got = _step(sym, "NONE", shape=shape), _step(sym, "torch", shape=shape)
    pw = next(i for i, n in enumerate(got._plan.graph.indexed.nodes) if n.name == "pw")
    assert got._plan.graph.indexed.node_inputs[pw][0] in got._plan.channels_last
    assert calls == (["rows"] if min_channels <= 6 else [])
    _matches_native(got, want)


def test_monitor_sees_channel_first_values():
    """Every entry a monitor is shown holds the native strategy's numbers, channels-last
    ones included (they are (N, C, H, W) arrays with other strides)."""
    _needs_torch_and_numba()
    sym = _separable()
    native, torch_seen = [], []
    _step(sym, "NONE", native)
    _step(sym, "torch", torch_seen)
    want = {name: arr for name, arr in native}
    island = ("c0", "dw", "pw", "bn", "r0", "r1", "r2", "_plus")  # not the pooling's argmax
    compared = 0
    for name, arr in torch_seen:
        if name in want and arr.ndim == 4 and name.startswith(island):
            _close(arr, want[name], f"monitored {name}")
            compared += 1
    assert compared > 10


def test_small_maps_without_depthwise_convolutions_keep_channel_first():
    """Dense convolutions whose maps have fewer than DENSE_CHANNELS_LAST_MIN_POSITIONS
    positions keep channel-first storage (oneDNN's channels-last calls lose there)."""
    _needs_torch_and_numba()
    x = S.Variable("data")
    y = S.Activation(S.BatchNorm(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4,
                                               name="c"), name="bn"), act_type="relu")
    sym = S.SoftmaxOutput(S.FullyConnected(y, num_hidden=3, name="fc"),
                          S.Variable("softmax_label"), name="softmax")
    exe = _step(sym, "torch")
    assert not exe._plan.channels_last
    assert not any(LAYOUT_ATTR in n.attrs for n in exe._plan.graph.indexed.nodes)


def _residual_net(extra_output: bool = False):
    """A small ResNet v1: conv -> BN -> relu -> max pooling, two basic blocks (conv, BN,
    relu, conv, BN, + shortcut, relu), a stride-2 block with a 1x1 downsampling
    convolution, global pooling, FC; with ``extra_output`` the first block's last relu is
    also an output of the graph."""
    def block(x, name, c, stride=1):
        y = S.Convolution(x, kernel=(3, 3), pad=(1, 1), stride=(stride, stride), num_filter=c,
                          no_bias=True, name=name + "c1")
        y = S.Activation(S.BatchNorm(y, fix_gamma=False, name=name + "bn1"), act_type="relu")
        y = S.BatchNorm(S.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=c, no_bias=True,
                                      name=name + "c2"), fix_gamma=False, name=name + "bn2")
        if stride > 1:
            x = S.Convolution(x, kernel=(1, 1), stride=(stride, stride), num_filter=c,
                              no_bias=True, name=name + "down")
        return S.Activation(y + x, act_type="relu", name=name + "out")
    x = S.Variable("data")
    y = S.Activation(S.BatchNorm(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=6,
                                               name="c0"), fix_gamma=False, name="bn0"),
                     act_type="relu", name="r0")
    y = S.Pooling(y, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="pool")
    first = block(y, "b1", 6)
    y = block(block(first, "b2", 6), "b3", 8, stride=2)
    y = S.Pooling(y, global_pool=True, kernel=(1, 1), pool_type="avg", name="gp")
    net = S.SoftmaxOutput(S.FullyConnected(y, num_hidden=5, name="fc"),
                          S.Variable("softmax_label"), name="softmax")
    return S.Group([net, first]) if extra_output else net


def _layouts_seen(plan) -> dict[str, set]:
    """For each node that is not a LAYOUT_CONVERTER nor reads only its input's shape
    (SHAPE_ONLY_OPS): whether its 4-D entries are stored channels-last (one set of booleans
    per node)."""
    ig = plan.graph.indexed
    shapes = plan.graph.attrs["shape"]
    seen = {}
    for nid, node in enumerate(ig.nodes):
        if node.op is None or node.op.name in LAYOUT_CONVERTERS | SHAPE_ONLY_OPS:
            continue
        entries = [*ig.node_inputs[nid], *range(ig.row_ptr[nid], ig.row_ptr[nid + 1])]
        seen[node.name] = {e in plan.channels_last for e in entries
                           if shapes[e] is not None and len(shapes[e]) == 4}
    return seen


def test_dense_networks_with_large_maps_go_channels_last():
    """The groups of elementwise nodes between convolutions (and pooling) whose maps have at
    least DENSE_CHANNELS_LAST_MIN_POSITIONS positions are stored channels-last (ResNet-18's
    first two stages), the stage after the stride-2 block (8x8) stays channel-first, no
    elementwise node sees two layouts, and the results are the native strategy's."""
    _needs_torch_and_numba()
    assert 8 * 8 < DENSE_CHANNELS_LAST_MIN_POSITIONS <= 16 * 16
    sym = _residual_net()
    shape = (3, 2, 32, 32)
    want, got = _step(sym, "NONE", shape=shape), _step(sym, "torch", shape=shape)
    plan = got._plan
    marked = {n.name for n in plan.graph.indexed.nodes if LAYOUT_ATTR in n.attrs}
    assert {"bn0", "r0", "pool", "b1bn1", "b1out", "b2out", "b2c2", "b3c1"} <= marked
    assert not {"b3bn1", "b3bn2", "b3out", "fc"} & marked
    seen = _layouts_seen(plan)
    assert all(len(layouts) <= 1 for layouts in seen.values()), seen
    assert seen["b1out"] == {True} and seen["b3out"] == {False}
    # the first convolution's backward: channel-first data (the graph's input) and a
    # channels-last dY, the data handed to oneDNN channels-last (both gradients asked)
    ig = plan.graph.indexed
    c0 = next(i for i, n in enumerate(ig.nodes) if n.name == "c0_backward")
    og, x = ig.node_inputs[c0][:2]
    assert og in plan.channels_last and x not in plan.channels_last
    _matches_native(got, want)


def test_strided_pointwise_layers_of_few_channels_at_a_layout_edge():
    """The 1x1 stride-2 downsampling of 6 channels reads channels-last data: its backward
    runs channel-first (oneDNN's channels-last weight gradient through PyTorch 2.x corrupted
    the heap there, crashing the process within a few steps), and many steps run clean."""
    _needs_torch_and_numba()
    exe = _step(_residual_net(), "torch", shape=(3, 2, 32, 32))
    ig = exe._plan.graph.indexed
    down = next(i for i, n in enumerate(ig.nodes) if n.name == "b3down")
    assert ig.node_inputs[down][0] in exe._plan.channels_last
    for _ in range(12):
        exe.forward(is_train=True)
        exe.backward()
    assert all(np.isfinite(g).all() for g in exe.grad_dict.values() if g is not None)


def test_max_pooling_in_a_group_runs_the_native_rows_loops(monkeypatch):
    """Where numba is installed the strategy leaves max pooling to the native kernels: in a
    channels-last group the compiled rows loops take it, its workspace stored channels-last
    too (the gradient pass's zeros_like reads only its shape), and the step is the native
    strategy's."""
    _needs_torch_and_numba()
    from graphexec.backends.default.kernels import conv
    from graphexec.backends.torchcpu.select import NATIVE_MAX_POOLING
    calls = []
    real = conv._compiled_max_rows
    monkeypatch.setattr(conv, "_compiled_max_rows",
                        lambda *a: calls.append(real(*a)) or calls[-1])
    sym = _residual_net()
    want, got = _step(sym, "NONE", shape=(3, 2, 32, 32)), _step(sym, "torch",
                                                                shape=(3, 2, 32, 32))
    plan = got._plan
    ig = plan.graph.indexed
    pool = next(i for i, n in enumerate(ig.nodes) if n.name == "pool")
    assert ig.nodes[pool].attrs.get(KERNEL_ATTR) is None
    assert NATIVE_MAX_POOLING in {d.reason for d in got.partition_plan.nodes.values()}
    data, out, ws = ig.node_inputs[pool][0], ig.row_ptr[pool], ig.row_ptr[pool] + 1
    assert {data, out, ws} <= plan.channels_last
    assert calls and all(run is not None for run in calls)
    _matches_native(got, want)


def test_a_group_touching_a_graph_output_stays_channel_first():
    """A group of elementwise nodes one of whose entries is a graph output (never stored
    channels-last) keeps channel-first storage throughout, rather than mixing layouts."""
    _needs_torch_and_numba()
    sym = _residual_net(extra_output=True)
    exe = sym.simple_bind(gx.cpu(), backend="torch", data=(3, 2, 32, 32), softmax_label=(3,))
    seen = _layouts_seen(exe._plan)
    assert all(len(layouts) <= 1 for layouts in seen.values()), seen
    assert seen["b1out"] == {False} and seen["b2out"] == {False}
    assert seen["r0"] == {True}  # the stem's group does not touch the output


def _in_place_pairs(exe) -> list[tuple[str, bool, bool]]:
    """(node, output channels-last, input channels-last) for every output that shares its
    input's storage."""
    plan = exe._plan
    ig = plan.graph.indexed
    sids = plan.graph.attrs["storage_id"]
    return [(node.name, e_out in plan.channels_last, e_in in plan.channels_last)
            for nid, node in enumerate(ig.nodes) if node.op is not None
            for e_out in range(ig.row_ptr[nid], ig.row_ptr[nid + 1])
            for e_in in ig.node_inputs[nid] if sids[e_out] >= 0 and sids[e_out] == sids[e_in]]


def test_no_kernel_runs_in_place_across_layouts(monkeypatch):
    """Entries sharing storage in place have one layout (an elementwise kernel writing one
    while reading the other would read what it wrote): in an inference bind whose relu r2
    is also a graph output (so its output stays channel-first, its input does not), r2
    runs out of place, the channels-last nodes still run in place among themselves;
    without the planner's check r2 would run in place."""
    _needs_torch_and_numba()
    from graphexec.core.runtime import plan as plan_module
    sym = _separable()
    net = S.Group([sym, sym.get_internals()["r2_output"]])

    def bind():  # entries of 96 KiB: the planner runs in place from 64 KiB
        exe = net.simple_bind(gx.cpu(), backend="torch", grad_req="null",
                              data=(4, 2, 32, 32), softmax_label=(4,))
        exe.forward()
        return _in_place_pairs(exe)
    pairs = bind()
    assert all(out == inp for _, out, inp in pairs), pairs
    assert any(out for _, out, _ in pairs)
    assert "r2" not in {name for name, _, _ in pairs}
    monkeypatch.setattr(plan_module, "inplace_allowed", lambda graph, chosen: lambda n: True)
    assert ("r2", False, True) in bind()


@pytest.mark.parametrize("shape", [(16, 8, 7, 9), (2, 3, 5, 7), (3, 300, 3, 3), (5, 64, 2, 1),
                                   (2, 2, 40, 40)])
@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("relu", [False, True], ids=["plain", "relu"])
def test_batch_norm_rows_loops(shape, batch, relu):
    """The loops over channels-last rows (the whole row range split across numba's
    threads, remainders past the last run of whole rows included) against float64 sums:
    statistics, output, data gradient and the sums the parameter gradients come from; with
    the relu after the BatchNorm in the forward's pass and its gradient's mask in the
    backward's (the BATCHNORM_RELU variant): out = max(BatchNorm, 0), the sums and the
    data gradient of dY where that output is positive."""
    pytest.importorskip("numba", reason="the loops need numba")
    from graphexec.backends.default.kernels import compiled
    from graphexec.backends.default.kernels.nn import _compiled_batch_norm
    n, c, h, w = shape
    rng = np.random.default_rng(sum(shape))
    # data around 50, beta within 0.5 of 0: a good part of the relu's inputs are negative
    x = (rng.standard_normal((n, h, w, c)) * 3 + 50).astype("f4").transpose(0, 3, 1, 2)
    g = rng.standard_normal((n, h, w, c)).astype("f4").transpose(0, 3, 1, 2)
    out = np.empty((n, h, w, c), "f4").transpose(0, 3, 1, 2)
    dx = np.empty((n, h, w, c), "f4").transpose(0, 3, 1, 2)
    f4 = np.dtype("f4")
    gamma, beta = rng.uniform(0.5, 1.5, c).astype("f4"), rng.uniform(-0.5, 0.5, c).astype("f4")
    x64 = x.astype("f8")
    axes, b = (0, 2, 3), (None, slice(None), None, None)
    store = np.zeros((2, c), "f4") if relu else None
    if batch:
        train, _, fused = _compiled_batch_norm(np, x, out, 1, f4, True, True, store, relu)
        mean, var, inv = (np.empty(c, "f4") for _ in range(3))
        train(gamma, beta, np.float32(1e-5), False, mean, var, inv)
        m, v = x64.mean(axis=axes), x64.var(axis=axes)
        np.testing.assert_allclose(mean, m, rtol=1e-6)
        np.testing.assert_allclose(var, v, rtol=2e-5, atol=1e-6)
    else:
        _, affine, fused = _compiled_batch_norm(np, x, out, 1, f4, False, True, store, relu)
        m = (x64.mean(axis=axes) + rng.standard_normal(c)).astype("f4")
        inv = rng.uniform(0.5, 1.5, c).astype("f4")
        if relu:
            store[0], store[1] = inv * gamma, beta - m * inv * gamma
        affine(inv * gamma, beta - m * inv * gamma)
        mean, v = m, 1 / inv.astype("f8") ** 2 - 1e-5
    assert fused == relu
    ref = (x64 - m[b]) / np.sqrt(v + 1e-5)[b] * gamma[b] + beta[b]
    # float32 products of data around 50: a few ulps of 50 apart from the float64 numbers
    np.testing.assert_allclose(out, np.maximum(ref, 0) if relu else ref, rtol=1e-5, atol=5e-5)
    if relu:
        # the forward's own numbers: x * scale + shift in float32, then max(., 0)
        pre = x * store[0][b] + store[1][b]
        np.testing.assert_array_equal(out, np.maximum(pre, 0))
        assert 0.1 < (pre > 0).mean() < 0.9

    (g2, x2, dx2), rows = compiled.channel_rows(np, f4, 1, g, x, dx)
    assert rows and g2.shape == (n * h * w, c)
    masks = store if relu else np.zeros((2, c), "f4")
    loop = compiled.over_rows(compiled.compiled_for(
        "batch_norm_rows_backward", g2, x2, mean, inv, inv, np.zeros((c, 2)), dx2, batch,
        True, masks, relu, np.zeros(2, np.int64)), g2.shape)
    sums = np.zeros((c, 2))
    scale = inv * gamma
    loop(g2, x2, mean, inv, scale, sums, dx2, batch, True, masks, relu)
    g64, xhat = g.astype("f8"), (x64 - mean.astype("f8")[b]) * inv.astype("f8")[b]
    if relu:
        g64 = np.where(pre > 0, g64, 0)
    np.testing.assert_allclose(sums[:, 0], g64.sum(axis=axes), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(sums[:, 1], (g64 * xhat).sum(axis=axes), rtol=1e-5, atol=1e-3)
    want = g64 * scale.astype("f8")[b]
    if batch:
        count = n * h * w
        want = (g64 - (g64.sum(axis=axes)[b] + xhat * (g64 * xhat).sum(axis=axes)[b]) / count) \
            * scale.astype("f8")[b]
    np.testing.assert_allclose(dx, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_pytorchs_batch_norm_between_channels_last_nodes(monkeypatch):
    """Without the native BatchNorm loops (no numba) BatchNorm runs PyTorch's kernel
    channel-first: the entries around it change layout at its edges, and the step still
    matches the native one."""
    pytest.importorskip("torch", reason="the torch strategy needs PyTorch")
    from graphexec.backends.torchcpu import select
    monkeypatch.setattr(select, "_openmp_batch_norm", lambda: False)
    sym = _separable()
    want, got = _step(sym, "NONE"), _step(sym, "torch")
    ig = got._plan.graph.indexed
    assert not any(LAYOUT_ATTR in n.attrs for n in ig.nodes
                   if n.op is not None and n.op.name == "BatchNorm")
    _output_and_gradients_match(got, want)
