"""BatchNorm + relu in one pass (the ``torch`` strategy's BATCHNORM_RELU variant): a
channels-last BatchNorm whose output only a relu reads applies that relu in its
normalising pass and masks the relu's gradient in its backward; the relu's kernels then
have nothing to do where the memory plan ran them in place. Results equal the unfused
strategy's bit for bit, also where the relu does not run in place and on the numpy paths;
a monitor sees every node's own outputs (the plain kernels run while one watches, and a
backward after a watched forward, or the reverse, stays right); pairs whose BatchNorm
output is also read elsewhere, is a graph output or is channel-first are left alone.
Skips (saying so) without PyTorch or numba."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx
from classifier_steps import bind_classifier
from graphexec.core.runtime.kernels import KERNEL_ATTR, MONITORED_KERNEL_ATTR

S = gx.sym
FUSED = "batchnorm_relu"


@pytest.fixture(autouse=True)
def _needs_torch_and_numba():
    pytest.importorskip("torch", reason="the torch strategy needs PyTorch")
    pytest.importorskip("numba", reason="the fused pass is the compiled rows loops'")


def _conv_bn(x, name: str, channels: int, group: int = 1):
    return S.BatchNorm(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=channels,
                                     num_group=group, no_bias=True, name=f"{name}_conv"),
                       fix_gamma=False, name=f"{name}_bn")


def _separable():
    """conv -> BN -> relu -> depthwise -> BN -> relu -> BN + (the first relu) -> relu ->
    FC -> SoftmaxOutput: channels-last throughout (a depthwise group); the third BN's
    output is read by the addition, not a relu."""
    x = S.Variable("data")
    y = S.Activation(_conv_bn(x, "a", 6), act_type="relu", name="a_relu")
    z = S.Activation(_conv_bn(y, "b", 6, group=6), act_type="relu", name="b_relu")
    z = S.Activation(_conv_bn(z, "c", 6) + y, act_type="relu", name="c_relu")
    z = S.FullyConnected(z, num_hidden=5, name="fc")
    return S.SoftmaxOutput(z, S.Variable("softmax_label"), name="softmax")


def _bind(sym, shape=(4, 6, 28, 28)):
    return bind_classifier(sym, "torch", shape, seed=7)


def _results(exe, steps: int = 2) -> list:
    for _ in range(steps):
        exe.forward(is_train=True)
        exe.backward()
    return [exe.outputs[0].copy(), *(g.copy() for n, g in sorted(exe.grad_dict.items())
                                     if g is not None), *(a.copy() for _, a in
                                                          sorted(exe.aux_dict.items()))]


def _unfused(monkeypatch, sym, **kw):
    from graphexec.backends.torchcpu import select
    with monkeypatch.context() as patch:
        patch.setattr(select, "batch_norm_relu_nodes", lambda *a: set())
        return _bind(sym, **kw)


def _variants(exe) -> dict[str, str]:
    return {n.name: n.attrs.get(KERNEL_ATTR) for n in exe._plan.graph.indexed.nodes
            if n.op is not None}


def _same(got: list, want: list) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"result {k}")


def test_pairs_fused_and_results_unchanged(monkeypatch):
    exe = _bind(_separable())
    variants = _variants(exe)
    fused = {name for name, v in variants.items() if v == FUSED}
    assert fused == {"a_bn", "a_relu", "b_bn", "b_relu", "a_bn_backward", "a_relu_backward",
                     "b_bn_backward", "b_relu_backward"}
    assert variants["c_bn"] == "openmp" and variants["c_relu"] == "torch"
    nodes = {n.name: n for n in exe._plan.graph.indexed.nodes}
    assert nodes["a_bn"].attrs[MONITORED_KERNEL_ATTR] == "openmp"
    assert nodes["a_relu"].attrs[MONITORED_KERNEL_ATTR] == "torch"
    # a relu the memory plan ran in place: nothing left for its kernels to do
    plan = exe._plan
    ig = plan.graph.indexed
    in_place = {n.name for i, n in enumerate(ig.nodes) if n.name in fused and "relu" in n.name
                and np.shares_memory(plan.arrays[ig.node_inputs[i][0]],
                                     plan.arrays[ig.row_ptr[i]])}
    assert in_place, "no fused relu ran in place"
    _same(_results(exe), _results(_unfused(monkeypatch, _separable())))


def test_relu_out_of_place_and_numpy_paths_give_the_same_numbers(monkeypatch):
    """The relu kernels' own work where their output is not their input's array (masking
    twice is masking once), and BatchNorm's numpy paths (the relu after its pass, dY masked
    by numpy) against the compiled loops."""
    from graphexec.backends.default.kernels import nn, nn_grad
    want = _results(_unfused(monkeypatch, _separable()))
    with monkeypatch.context() as patch:
        patch.setattr(nn, "same_array", lambda a, b: False)
        patch.setattr(nn_grad, "same_array", lambda a, b: False)
        _same(_results(_bind(_separable())), want)
    with monkeypatch.context() as patch:
        patch.setattr(nn, "_compiled_batch_norm", lambda *a: None)
        patch.setattr(nn_grad, "_compiled_backward", lambda *a: None)
        unfused = _results(_unfused(patch, _separable()))
        got = _results(_bind(_separable()))
    for k, (g, w) in enumerate(zip(got, unfused)):
        np.testing.assert_array_equal(g, w, err_msg=f"numpy path, result {k}")


def test_monitor_sees_the_batch_norm_output_before_the_relu(monkeypatch):
    seen: dict[str, np.ndarray] = {}
    exe = _bind(_separable())
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, np.array(arr)))
    exe.forward(is_train=True)
    assert (seen["b_bn_output"] < 0).any(), "the monitor saw the relu's output"
    np.testing.assert_array_equal(seen["b_relu_output"], np.maximum(seen["b_bn_output"], 0))
    assert {_variants(exe)["b_bn"]} == {FUSED}  # the choice stays; the plain kernel runs


@pytest.mark.parametrize("watched_forward", [True, False])
def test_backward_after_the_monitor_changed(watched_forward, monkeypatch):
    """A forward watched by a monitor (the plain kernels) and a backward not watched (the
    fused ones), or the reverse: the gradients of the unfused strategy."""
    want = _results(_unfused(monkeypatch, _separable()), steps=1)
    exe = _bind(_separable())

    def monitor(name, arr):
        pass
    if watched_forward:
        exe.set_monitor_callback(monitor)
    exe.forward(is_train=True)
    if watched_forward:
        exe.set_monitor_callback(None)
    else:
        exe.set_monitor_callback(monitor)
    exe.backward()
    got = [exe.outputs[0].copy(), *(g.copy() for n, g in sorted(exe.grad_dict.items())
                                    if g is not None), *(a.copy() for _, a in
                                                         sorted(exe.aux_dict.items()))]
    _same(got, want)


def _fused(sym, shape) -> set[str]:
    exe = sym.simple_bind(gx.cpu(), backend="torch", data=shape)
    return {name for name, v in _variants(exe).items() if v == FUSED}


def test_pairs_left_alone():
    """A BatchNorm output also read by another node or returned by the graph, smaller than
    the memory planner runs in place, or channel-first (a dense network's small maps) keeps
    the plain kernels."""
    x = S.Variable("data")
    bn = _conv_bn(x, "a", 8, group=8)
    relu = S.Activation(bn, act_type="relu", name="r")
    big = (2, 8, 32, 32)  # 64 KiB: in place
    assert _fused(relu * 2, big) == {"a_bn", "r", "a_bn_backward", "r_backward"}
    assert not _fused(relu + bn, big)
    assert not _fused(S.Group([relu, bn]), big)
    assert not _fused(relu * 2, (2, 8, 16, 16))
    dense = S.Activation(_conv_bn(x, "d", 64), act_type="relu", name="r") * 2
    assert not _fused(dense, (2, 64, 12, 12))


def test_inference_bind_fuses_the_forward():
    """Without gradients (grad_req null) the forward pair alone runs fused, with the moving
    statistics: out = max(BatchNorm, 0) as the unfused kernels give it."""
    sym = S.Activation(_conv_bn(S.Variable("data"), "b", 6, group=6), act_type="relu",
                       name="r")
    exes = []
    for fuse in (True, False):
        exe = sym.simple_bind(gx.cpu(), backend="torch", grad_req="null", data=(2, 6, 40, 40))
        rng = np.random.default_rng(3)
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            arr[...] = rng.uniform(0.5, 1.5, arr.shape) if name.endswith("_var") else \
                rng.standard_normal(arr.shape)
        exes.append(exe)
    variants = _variants(exes[0])
    assert variants["b_bn"] == variants["r"] == FUSED
    out = exes[0].forward()[0].copy()
    exes[1].set_monitor_callback(lambda name, arr: None)  # the plain kernels
    np.testing.assert_array_equal(out, exes[1].forward()[0])
    assert (out == 0).any() and (out > 0).any()
