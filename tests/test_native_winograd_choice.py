"""The default backend's Winograd choice (``backends/default/winograd_choice.py``, issue 21):
with no strategy (``NONE``), 3x3 stride-1 convolutions with enough channels and output tiles
(and their backward nodes) run the native ``winograd`` variant, its transforms on the calling
thread beside numpy's products. Which nodes it takes and which it leaves (small maps at batch
1, few channels, strides, 1x1 kernels, float16, partitioned graphs, GRAPHEXEC_NATIVE_WINOGRAD=0,
no numba), and that outputs and gradients match the plain kernels' within float32 rounding,
a real model's too.
Skips (saying so) without numba."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.backends.default import winograd_choice
from graphexec.backends.default.kernels import winograd
from graphexec.core.runtime.blas_threads import PRODUCT_ATTR, register_product
from graphexec.core.runtime.blas_threads import split as thread_split
from graphexec.core.runtime.kernels import KERNEL_ATTR

S = gx.sym
DATA = Path(__file__).parent / "data" / "json"


@pytest.fixture(autouse=True)
def _needs_numba():
    pytest.importorskip("numba", reason="the Winograd transforms are compiled loops (numba)")


def _conv(k: int, kernel=(3, 3), stride=(1, 1), pad=(1, 1)):
    return S.Convolution(S.Variable("data"), kernel=kernel, stride=stride, pad=pad,
                         num_filter=k, name="c")


def _variants(exe) -> dict[str, str | None]:
    return {n.name: n.attrs.get(KERNEL_ATTR) for n in exe._plan.graph.indexed.nodes
            if n.op is not None}


def _chosen(sym, shape, dtype="float32", **kw) -> bool:
    exe = sym.simple_bind(gx.cpu(), grad_req="null", type_dict={"data": dtype}, data=shape,
                          **kw)
    return _variants(exe)["c"] == winograd.WINOGRAD


@pytest.mark.parametrize("shape,k,kw,want", [
    ((1, 64, 56, 56), 64, {}, True),            # 784 tiles x 64 channels: the least at batch 1
    ((1, 64, 54, 54), 64, {}, False),           # 729 tiles x 64
    ((1, 256, 28, 28), 256, {}, True),          # 196 tiles x 256
    ((1, 256, 14, 14), 256, {}, False),         # 49 tiles: the filters' transform dominates
    ((1, 128, 56, 56), 32, {}, False),          # 784 tiles x 32 filters
    ((2, 16, 8, 8), 16, {}, True),              # several images: 32 tiles
    ((2, 16, 6, 6), 16, {}, False),             # 18 tiles
    ((2, 8, 16, 16), 16, {}, False),            # 8 input channels
    ((2, 16, 16, 16), 8, {}, False),            # 8 filters
    ((2, 16, 16, 16), 16, {"stride": (2, 2)}, False),
    ((2, 16, 16, 16), 16, {"kernel": (1, 1), "pad": (0, 0)}, False),
    ((2, 16, 16, 16), 16, {"pad": (3, 3)}, False),  # padding beyond a tile's reach
])
def test_which_convolutions_it_takes(shape, k, kw, want):
    assert _chosen(_conv(k, **kw), shape) is want


def test_dtypes():
    sym = _conv(16)
    assert _chosen(sym, (2, 16, 8, 8), "float64")
    assert not _chosen(sym, (2, 16, 8, 8), "float16")


def test_strategies_the_switch_and_missing_numba_leave_it(monkeypatch):
    sym = _conv(16)
    assert not _chosen(sym, (2, 16, 8, 8), backend="fused")  # a strategy chooses its own
    monkeypatch.setenv("GRAPHEXEC_NATIVE_WINOGRAD", "0")
    assert not _chosen(sym, (2, 16, 8, 8))
    monkeypatch.setenv("GRAPHEXEC_NATIVE_WINOGRAD", "1")
    assert _chosen(sym, (2, 16, 8, 8))
    monkeypatch.setattr(winograd_choice.importlib.util, "find_spec", lambda name: None)
    assert not _chosen(sym, (2, 16, 8, 8))


def _net():
    x = S.Variable("data")
    y = S.Activation(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=24, name="c1"),
                     act_type="relu", name="r1")
    y = S.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True, name="c2")
    return S.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool")


def _run(sym, shape, chosen: bool, monkeypatch, train: bool):
    with monkeypatch.context() as patch:
        if not chosen:
            patch.setattr(winograd_choice, "winograd_nodes", lambda graph: set())
        exe = sym.simple_bind(gx.cpu(), grad_req="write" if train else "null", data=shape)
    rng = np.random.default_rng(7)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        low, high = (0.5, 1.5) if name.endswith("_var") else (-0.5, 0.5)  # BatchNorm's
        arr[...] = rng.uniform(low, high, arr.shape)                      # variances > 0
    exe.forward(is_train=train)
    got = [exe.outputs[0].copy()]
    if train:
        exe.backward(rng.standard_normal(exe.outputs[0].shape).astype("f4"))
        got += [exe.grad_dict[n].copy() for n in sorted(exe.grad_dict)]
    return exe, got


def _close(got: list, want: list, tol: float) -> None:
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=tol * max(float(np.abs(w).max()), 1.0))


def test_training_matches_the_plain_kernels(monkeypatch):
    """Forward and backward nodes of both layers run the variant; the output and every
    gradient (data, weights, bias) agree with the plain kernels' within float32 rounding."""
    sym = _net()
    exe, got = _run(sym, (2, 16, 10, 10), True, monkeypatch, train=True)
    variants = _variants(exe)
    for name in ("c1", "c2", "c1_backward", "c2_backward"):
        assert variants[name] == winograd.WINOGRAD, name
    _, want = _run(sym, (2, 16, 10, 10), False, monkeypatch, train=True)
    assert len(got) == len(want) == 5  # output; data, c1 weight and bias, c2 weight
    _close(got, want, 2e-6)


def test_transforms_run_on_the_calling_thread_beside_numpys_products(monkeypatch):
    """With numpy's products (no product named) the compiled loops run on one thread:
    OpenBLAS's spinning workers would take the cores numba's threads need. A named
    product (PyTorch's, in the ``torch`` strategy) keeps one part per BLAS thread."""
    seen = []

    def recording(fn, threads):
        seen.append(threads)
        return fn
    monkeypatch.setattr(winograd, "on_numba_threads", recording)
    sym = _net()
    _run(sym, (2, 16, 10, 10), True, monkeypatch, train=True)
    assert seen and set(seen) == {1}
    register_product("plain_for_test", lambda a, b, out: np.matmul(a, b, out=out))
    seen.clear()
    exe = _conv(16).simple_bind(gx.cpu(), grad_req="null", data=(2, 16, 8, 8))
    for node in exe._plan.graph.indexed.nodes:
        if node.op is not None and node.op.name == "Convolution":
            node.attrs[PRODUCT_ATTR] = "plain_for_test"
    exe.forward()
    assert seen and set(seen) == {len(thread_split(np, 16, 1))}


def test_a_zoo_model_at_batch_1(monkeypatch):
    """ResNet-18 v1 at 224x224: the four 64-channel 3x3 layers on 56x56 maps take the
    variant (784 tiles x 64 channels), the smaller maps and the strided layers do not; the
    class scores agree with the plain kernels'."""
    text = gzip.decompress((DATA / "zoo_resnet18_v1-symbol.json.gz").read_bytes()).decode()
    sym = S.load_json(text)
    exe, got = _run(sym, (1, 3, 224, 224), True, monkeypatch, train=False)
    taken = sorted(n for n, v in _variants(exe).items() if v == winograd.WINOGRAD)
    assert taken == [f"resnetv10_stage1_conv{i}_fwd" for i in range(4)]
    _, want = _run(sym, (1, 3, 224, 224), False, monkeypatch, train=False)
    _close(got, want, 1e-5)
