"""The default backend's relu fusion (``backends/default/fusion.py``): with no strategy
(``NONE``), a relu that is the only reader of a large enough BatchNorm or Convolution output
runs inside that node's last pass (variant ``native_relu_fused``). Outputs and gradients
equal the unfused kernels' bit for bit (NaN included, float16 and float64 on the numpy
paths, the relu kernel doing its work), depthwise and no-bias convolutions too; a monitor
sees the producer's own output; pairs whose output is read elsewhere, is a graph output or
is small, and graphs a strategy partitions, are left alone."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx
from graphexec.backends.default import fusion
from graphexec.backends.default.kernels.base import NATIVE_RELU_FUSED
from graphexec.core.runtime.kernels import KERNEL_ATTR

S = gx.sym
SHAPE = (2, 4, 48, 48)  # 73 KiB of float32 per BatchNorm output: above INPLACE_MIN_BYTES


def _net(extra_reader: bool = False, bn_output: bool = False):
    """conv -> BN -> relu -> conv -> BN -> relu -> pooling (optionally the first BN's output
    also read by an addition, or also a graph output)."""
    x = S.Variable("data")
    a = S.BatchNorm(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c1"),
                    fix_gamma=False, name="bn1")
    y = S.Activation(a, act_type="relu", name="r1")
    if extra_reader:
        y = y + a
    b = S.BatchNorm(S.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c2"),
                    fix_gamma=False, name="bn2")
    z = S.Pooling(S.Activation(b, act_type="relu", name="r2"), kernel=(2, 2), stride=(2, 2),
                  pool_type="avg", name="pool")
    return S.Group([z, a]) if bn_output else z


def _bind(sym, fused: bool, monkeypatch, dtype="float32", backend=None, grads=False,
          shape=SHAPE):
    with monkeypatch.context() as patch:
        if not fused:
            patch.setattr(fusion, "relu_pairs", lambda graph: [])
        kw = {} if backend is None else {"backend": backend}
        exe = sym.simple_bind(gx.cpu(), grad_req="write" if grads else "null",
                              type_dict={"data": dtype}, data=shape, **kw)
    rng = np.random.default_rng(3)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        values = rng.uniform(0.5, 1.5, arr.shape) if name.endswith("_var") else \
            rng.standard_normal(arr.shape)
        arr[...] = values
    exe.arg_dict["data"].reshape(-1)[::97] = np.nan
    return exe


def _variants(exe) -> dict[str, str | None]:
    return {n.name: n.attrs.get(KERNEL_ATTR) for n in exe._plan.graph.indexed.nodes
            if n.op is not None}


def _conv_net():
    """conv (bias) -> relu -> depthwise conv (bias) -> relu -> conv (no bias) -> relu ->
    pooling (average: max pooling, as MXNet's, would drop the NaN the tests send through):
    SqueezeNet's and VGG's pairs."""
    x = S.Variable("data")
    y = S.Activation(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="k1"),
                     act_type="relu", name="q1")
    y = S.Activation(S.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=4,
                                   name="k2"), act_type="relu", name="q2")
    y = S.Activation(S.Convolution(y, kernel=(1, 1), num_filter=4, no_bias=True, name="k3"),
                     act_type="relu", name="q3")
    return S.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool")


NETS = {"batchnorm": _net, "convolution": _conv_net}


def test_pairs_fused(monkeypatch):
    variants = _variants(_bind(_net(), True, monkeypatch))
    assert all(variants[n] == NATIVE_RELU_FUSED for n in ("bn1", "r1", "bn2", "r2"))
    assert variants["c1"] is None and variants["pool"] is None  # c1's reader is a BatchNorm
    variants = _variants(_bind(_conv_net(), True, monkeypatch))
    assert all(variants[n] == NATIVE_RELU_FUSED for n in ("k1", "q1", "k2", "q2", "k3", "q3"))


@pytest.mark.parametrize("net", sorted(NETS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_inference_equals_the_plain_kernels(monkeypatch, dtype, net):
    got = _bind(NETS[net](), True, monkeypatch, dtype).forward(is_train=False)[0].copy()
    want = _bind(NETS[net](), False, monkeypatch, dtype).forward(is_train=False)[0].copy()
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got).any() and not np.isnan(got).all()


@pytest.mark.parametrize("net", sorted(NETS))
def test_training_equals_the_plain_kernels(monkeypatch, net):
    results = []
    for fused in (True, False):
        exe = _bind(NETS[net](), fused, monkeypatch, grads=True)
        exe.arg_dict["data"][...] = np.nan_to_num(exe.arg_dict["data"])
        for _ in range(2):
            exe.forward(is_train=True)
            exe.backward(np.ones(exe.outputs[0].shape, np.float32))
        results.append([exe.outputs[0].copy(), *(g.copy() for _, g in
                                                 sorted(exe.grad_dict.items())),
                        *(a.copy() for _, a in sorted(exe.aux_dict.items()))])
    for k, (got, want) in enumerate(zip(*results)):
        np.testing.assert_array_equal(got, want, err_msg=f"result {k}")


@pytest.mark.parametrize("net", sorted(NETS))
def test_relu_kernel_working_and_numpy_paths_give_the_same_numbers(monkeypatch, net):
    """The relu kernel's own work (as where its output is not its input's array) and the
    numpy paths (the relu after the node's pass) against the plain kernels."""
    from graphexec.backends.default.kernels import conv, nn
    want = _bind(NETS[net](), False, monkeypatch).forward(is_train=False)[0].copy()
    with monkeypatch.context() as patch:
        patch.setattr(nn, "same_array", lambda a, b: False)
        got = _bind(NETS[net](), True, monkeypatch).forward(is_train=False)[0].copy()
    np.testing.assert_array_equal(got, want)
    with monkeypatch.context() as patch:
        patch.setattr(nn, "_compiled_batch_norm", lambda *a, **k: None)
        patch.setattr(conv, "shift_runner", lambda *a, **k: None)
        got = _bind(NETS[net](), True, monkeypatch).forward(is_train=False)[0].copy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # numpy's BatchNorm


@pytest.mark.parametrize("net,watched", [("batchnorm", "bn1_output"),
                                         ("convolution", "k1_output")])
def test_monitor_sees_the_output_before_the_relu(monkeypatch, net, watched):
    exe = _bind(NETS[net](), True, monkeypatch)
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, np.array(arr)))
    exe.forward(is_train=False)
    assert (seen[watched] < 0).any(), "the monitor saw the relu's output"
    exe.set_monitor_callback(None)
    got = exe.forward(is_train=False)[0].copy()
    want = _bind(NETS[net](), False, monkeypatch).forward(is_train=False)[0].copy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", ["extra reader", "graph output", "small"])
def test_pairs_left_alone(monkeypatch, case):
    sym = _net(extra_reader=case == "extra reader", bn_output=case == "graph output")
    shape = (1, 4, 8, 8) if case == "small" else SHAPE
    variants = _variants(_bind(sym, True, monkeypatch, shape=shape))
    assert variants["bn1"] is None and variants["r1"] is None
    if case != "small":  # the second pair is not concerned
        assert variants["bn2"] == NATIVE_RELU_FUSED


def test_a_strategy_chooses_its_own_kernels(monkeypatch):
    """A partitioned graph (here the ``default`` backend claiming the convolutions) is left
    to the strategy: no native fusion."""
    gx.subgraph.set_op_names("default", {"Convolution"})
    try:
        exe = _bind(_net(), True, monkeypatch, backend="default")
    finally:
        gx.subgraph.set_op_names("default", set())
    assert NATIVE_RELU_FUSED not in _variants(exe).values()


def test_device_executors_left_alone(monkeypatch):
    """The variants are host kernels: a graph bound for a GPU (its default context) or
    whose nodes are assigned to one gets no pairs."""
    from graphexec.core.ir.context import Context
    graph = _bind(_net(), False, monkeypatch)._plan.graph  # unmarked
    assert fusion.relu_pairs(graph.with_attrs(default_ctx=Context("cpu", 0)))
    assert fusion.relu_pairs(graph.with_attrs(default_ctx=Context("gpu", 0))) == []
    on_gpu = [Context("gpu", 0)] * len(graph.indexed.nodes)
    assert fusion.relu_pairs(graph.with_attrs(context=on_gpu)) == []
