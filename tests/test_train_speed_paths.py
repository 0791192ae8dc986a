"""The ``torch`` strategy (issue 21): PyTorch's CPU kernels for convolutions, BatchNorm,
pooling, relu and FullyConnected, chosen per node after the gradient pass. Gradients, outputs
and moving statistics after two train steps match MXNet 1.9.1's (recorded by
tests/data/train_speed/make_train_speed.py) within float32 noise, as native execution does;
which nodes get the variant, and the errors. Skips (saying so) without PyTorch."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError, KernelNotFoundError
from graphexec.core.runtime.kernels import KERNEL_ATTR, KernelRegistry

DATA = Path(__file__).parent / "data" / "train_speed"
META = json.loads((DATA / "train_speed.json").read_text())
ARRAYS = np.load(DATA / "train_speed.npz")


def _needs_torch():
    pytest.importorskip("torch", reason="the torch strategy needs PyTorch (graphexec[torch])")


def _run(case: str, backend: str):
    meta = META["cases"][case]
    sym = gx.sym.load_json(meta["symbol"])
    shapes = {k: tuple(v) for k, v in meta["shapes"].items()}
    exe = sym.simple_bind(gx.cpu(), backend=backend, grad_req={
        n: "null" if n == "softmax_label" else "write" for n in sym.list_arguments()}, **shapes)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[...] = ARRAYS[f"{case}/in/{name}"]
    for _ in range(meta["steps"]):
        exe.forward(is_train=True)
        exe.backward()
    return exe


def _close(got, want, what: str) -> None:
    # float32 noise: relative to the array's scale, with a floor for gradients that are zero
    # up to rounding (a convolution's bias before BatchNorm)
    scale = max(float(np.abs(want).max()), 0.05)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * scale, err_msg=what)


def _marked(exe, variant: str = "torch") -> dict[str, str]:
    return {n.name: n.op.name for n in exe._plan.graph.indexed.nodes
            if n.op is not None and n.attrs.get(KERNEL_ATTR) == variant}


@pytest.mark.parametrize("case", sorted(META["cases"]))
@pytest.mark.parametrize("backend", ["NONE", "torch"])
def test_train_steps_match_mxnet(case, backend):
    if backend == "torch":
        _needs_torch()
    exe = _run(case, backend)
    _close(exe.outputs[0], ARRAYS[f"{case}/out/0"], f"{case} output")
    for name, grad in exe.grad_dict.items():
        if name != "softmax_label":
            _close(grad, ARRAYS[f"{case}/grad/{name}"], f"{case} gradient of {name}")
    for name, aux in exe.aux_dict.items():
        _close(aux, ARRAYS[f"{case}/aux/{name}"], f"{case} {name} after two steps")


def test_native_winograd_steps_match_mxnet(monkeypatch):
    """Natively (``NONE``), with the default backend's Winograd bounds lowered
    (backends/default/winograd_choice.py; at the defaults resnet_like's maps are too small),
    its three 3x3 stride-1 convolutions run the Winograd variant forward and backward, its
    transforms on the calling thread beside numpy's products, and two train steps still
    match MXNet's."""
    pytest.importorskip("numba", reason="the Winograd transforms need numba")
    from graphexec.backends.default import winograd_choice
    assert not _marked(_run("resnet_like", "NONE"), "winograd")
    monkeypatch.setattr(winograd_choice, "NATIVE_WINOGRAD_MIN_CHANNELS", 1)
    monkeypatch.setattr(winograd_choice, "NATIVE_WINOGRAD_MIN_BATCH_TILES", 1)
    exe = _run("resnet_like", "NONE")
    assert set(_marked(exe, "winograd")) == {f"{n}{s}" for n in ("b1a_conv", "b1b_conv",
                                                                    "b2b_conv")
                                             for s in ("", "_backward")}
    _close(exe.outputs[0], ARRAYS["resnet_like/out/0"], "resnet_like output")
    for name, grad in exe.grad_dict.items():
        if name != "softmax_label":
            _close(grad, ARRAYS[f"resnet_like/grad/{name}"], f"resnet_like d{name}")
    for name, aux in exe.aux_dict.items():
        _close(aux, ARRAYS[f"resnet_like/aux/{name}"], f"resnet_like {name} after two steps")


def test_which_nodes_run_torch_kernels():
    _needs_torch()
    from graphexec.backends.torchcpu import select
    exe = _run("mobilenet_like", "torch")
    marked = _marked(exe)
    ops = set(marked.values())
    assert {"Convolution", "_backward_Convolution", "FullyConnected",
            "_backward_FullyConnected"} <= ops
    # BatchNorm: the native compiled loops on numba's threads where numba is installed (a
    # large channels-last one with the relu reading its output: that relu in them too,
    # tests/test_batchnorm_relu.py; not at these sizes)
    bn = {"BatchNorm", "_backward_BatchNorm"}
    has_numba = importlib.util.find_spec("numba") is not None
    assert bn <= set(_marked(exe, "openmp").values()) if has_numba else bn <= ops
    assert {"Activation", "_backward_Activation"} <= ops
    reasons = {d.reason for d in exe.partition_plan.nodes.values()}
    assert any("numba's threads" in r for r in reasons) == has_numba
    # max pooling: the native compiled loops where numba is installed (MXNet's maxima and
    # first maxima, tests/test_pooling_nan.py), else PyTorch's ('full' whose output size
    # PyTorch's ceil_mode gives), its backward with it
    if has_numba:
        assert not {"pool_full", "pool_full_backward"} & set(marked)
        assert select.NATIVE_MAX_POOLING in reasons
    else:
        assert {"pool_full", "pool_full_backward"} <= set(marked)
    # global pooling stays native, and so does its backward
    assert "gpool" not in marked and "gpool_backward" not in marked
    # SoftmaxOutput's forward runs ATen's softmax, its backward stays native
    assert "SoftmaxOutput" in ops and "_backward_SoftmaxOutput" not in ops


def test_batch_norm_without_numba_runs_pytorchs_kernel(monkeypatch):
    """Without numba (or its variant) the strategy keeps PyTorch's BatchNorm, and the step
    still matches MXNet's."""
    _needs_torch()
    from graphexec.backends.torchcpu import select
    monkeypatch.setattr(select, "_openmp_batch_norm", lambda: False)
    exe = _run("resnet_like", "torch")
    assert {"BatchNorm", "_backward_BatchNorm"} <= set(_marked(exe).values())
    assert not _marked(exe, "openmp")
    _close(exe.outputs[0], ARRAYS["resnet_like/out/0"], "resnet_like output")
    for name, grad in exe.grad_dict.items():
        if f"resnet_like/grad/{name}" in ARRAYS:
            _close(grad, ARRAYS[f"resnet_like/grad/{name}"], f"resnet_like d{name}")


def test_winograd_convolutions_match_mxnet(monkeypatch):
    """With the thresholds lowered, resnet_like's 3x3 stride-1 convolutions (8 and 16
    channels) run the native Winograd variant on PyTorch's products, forward and backward,
    and two train steps still match MXNet's; at the default thresholds (64 channels, 64
    tiles) none does, nor where PyTorch's kernels use a vector extension not in
    WINOGRAD_CAPABILITIES (AVX-512: oneDNN's own convolutions won there)."""
    _needs_torch()
    pytest.importorskip("numba", reason="the Winograd transforms need numba")
    import torch

    from graphexec.backends.torchcpu import select
    from graphexec.core.runtime.blas_threads import PRODUCT_ATTR
    assert not _marked(_run("resnet_like", "torch"), "winograd")
    monkeypatch.setattr(select, "WINOGRAD_MIN_CHANNELS", 1)
    monkeypatch.setattr(select, "WINOGRAD_MIN_TILES", 1)
    monkeypatch.setattr(select, "WINOGRAD_CAPABILITIES", frozenset())
    assert not _marked(_run("resnet_like", "torch"), "winograd")
    monkeypatch.setattr(select, "WINOGRAD_CAPABILITIES",
                        frozenset({torch.backends.cpu.get_cpu_capability()}))
    exe = _run("resnet_like", "torch")
    marked = _marked(exe, "winograd")
    assert set(marked) == {f"{n}{s}" for n in ("b1a_conv", "b1b_conv", "b2b_conv")
                           for s in ("", "_backward")}
    assert {n.attrs.get(PRODUCT_ATTR) for n in exe._plan.graph.indexed.nodes
            if n.name in marked} == {"torch"}
    assert "Winograd" in exe.partition_plan.nodes["b1a_conv"].reason
    assert "PyTorch's kernel" in exe.partition_plan.nodes["b2a_conv"].reason  # stride 2
    _close(exe.outputs[0], ARRAYS["resnet_like/out/0"], "resnet_like output")
    for name, grad in exe.grad_dict.items():
        if f"resnet_like/grad/{name}" in ARRAYS:
            _close(grad, ARRAYS[f"resnet_like/grad/{name}"], f"resnet_like d{name}")


@pytest.mark.parametrize("shape", [(16, 64, 7, 7), (4, 6, 96, 96)])
def test_openmp_batch_norm_split_matches_one_thread(shape, monkeypatch):
    """The BatchNorm variant on numba's threads, forced to split the channels into three
    parts (short rows in lanes and long rows), computes what the plain kernel computes on
    one thread, bit for bit: outputs, gradients, moving statistics."""
    pytest.importorskip("numba", reason="the compiled loops need numba")
    from graphexec.backends.default.kernels import compiled
    from graphexec.core.runtime import blas_threads
    sym = gx.sym.BatchNorm(gx.sym.Variable("x"), fix_gamma=False, name="bn") * \
        gx.sym.Variable("w")

    def run(variant):
        exe = sym.simple_bind(gx.cpu(), x=shape, w=shape,
                              grad_req={"x": "write", "w": "null", "bn_gamma": "write",
                                        "bn_beta": "write"})
        if variant:
            for node in exe._plan.graph.indexed.nodes:
                if node.op is not None and "BatchNorm" in node.op.name:
                    node.attrs[KERNEL_ATTR] = variant
        rng = np.random.default_rng(7)
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            arr[...] = rng.uniform(0.5, 1.5, arr.shape) if name.endswith("var") else \
                rng.standard_normal(arr.shape) * 2 + 1
        exe.forward(is_train=True)
        exe.backward(rng.standard_normal(shape).astype("f4"))
        return [exe.outputs[0], *(exe.grad_dict[k] for k in ("x", "bn_gamma", "bn_beta")),
                *exe.aux_dict.values()]
    want = [a.copy() for a in run(None)]
    monkeypatch.setattr(blas_threads, "_blas_threads", lambda: 3)
    monkeypatch.setattr(compiled, "MIN_OPENMP_PART", 1)
    threads = []
    on_threads = blas_threads.on_numba_threads
    monkeypatch.setattr(blas_threads, "on_numba_threads",
                        lambda fn, n: threads.append(n) or on_threads(fn, n))
    got = run("openmp")
    assert threads == [3, 3], "the forward and backward ran on numba's threads in 3 parts"
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_unsupported_nodes_stay_native_with_a_reason():
    _needs_torch()
    x = gx.sym.Variable("data")
    y = gx.sym.Activation(x, act_type="tanh", name="t")
    y = gx.sym.Convolution(y, kernel=(3, 3), num_filter=4, layout="NHWC", name="c_last")
    y = gx.sym.Pooling(y, kernel=(3, 3), stride=(1, 1), pad=(2, 2), pool_type="max",
                       layout="NHWC", name="p")
    y = gx.sym.Convolution(gx.sym.transpose(y, axes=(0, 3, 1, 2)), kernel=(1, 1),
                           num_filter=2, name="c")
    exe = y.simple_bind(gx.cpu(), backend="torch", data=(2, 8, 8, 3))
    exe.forward(is_train=True)
    exe.backward(np.ones(exe.outputs[0].shape, "f4"))
    assert set(_marked(exe)) == {"c", "c_backward"}
    reasons = {name: d.reason for name, d in exe.partition_plan.nodes.items()}
    assert "act_type tanh" in reasons["t"]
    assert "layout NHWC" in reasons["c_last"]
    assert "PyTorch's kernel" in reasons["c"]
    ref = y.simple_bind(gx.cpu(), data=(2, 8, 8, 3))
    for name in exe.arg_dict:
        ref.arg_dict[name][...] = exe.arg_dict[name]
    _close(exe.forward()[0], ref.forward()[0], "mixed torch/native forward")


def test_optimized_symbol_does_not_carry_the_kernel_choice():
    _needs_torch()
    exe = _run("resnet_like", "torch")
    assert _marked(exe)
    assert "__kernel__" not in exe.get_optimized_symbol().tojson()


def test_inference_bind_uses_the_kernels_with_moving_statistics():
    _needs_torch()
    meta = META["cases"]["resnet_like"]
    sym = gx.sym.load_json(meta["symbol"])
    shapes = {k: tuple(v) for k, v in meta["shapes"].items()}
    outs = []
    for backend in ("NONE", "torch"):
        exe = sym.simple_bind(gx.cpu(), backend=backend, grad_req="null", **shapes)
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            arr[...] = ARRAYS[f"resnet_like/in/{name}"]
        outs.append(exe.forward(is_train=False)[0].copy())
    assert _marked(exe)
    _close(outs[1], outs[0], "inference output, torch against native")


def test_variant_lookup_never_falls_back_to_the_plain_kernel():
    reg = KernelRegistry()
    reg.register("relu", lambda call: None)
    with pytest.raises(KernelNotFoundError, match="kernel variant 'torch'"):
        reg.lookup("relu", "cpu", "torch")
    reg.register("relu", lambda call: None, device="cpu", variant="torch", inplace=True)
    assert reg.inplace_ok("relu", "cpu", "torch") and not reg.inplace_ok("relu", "cpu")


def test_pytorch_and_numba_share_one_openmp_runtime():
    """Loaded by the strategy (numba's OpenMP pool first), PyTorch takes the libgomp numba's
    pool loaded instead of its own copy: one OpenMP runtime, one thread pool, in the
    process (Linux, where /proc/self/maps lists the mapped libraries)."""
    _needs_torch()
    pytest.importorskip("numba")
    if not Path("/proc/self/maps").exists():
        pytest.skip("no /proc/self/maps to list the loaded libraries")
    script = (
        "import numpy as np\n"
        "from graphexec.backends.torchcpu.kernels import load_torch\n"
        "torch = load_torch()\n"
        "torch.relu_(torch.zeros(4096))\n"
        "import numba\n"
        "@numba.njit(parallel=True)\n"
        "def f(a):\n"
        "    for i in numba.prange(a.size):\n"
        "        a[i] += 1\n"
        "f(np.zeros(4096))\n"
        "print(numba.threading_layer())\n"
        "print(len({l.split()[-1] for l in open('/proc/self/maps') if 'libgomp' in l}))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": "2"}).stdout
    layer, libs = out.splitlines()[-2:]
    if layer != "omp":
        pytest.skip(f"numba runs its {layer} threading layer here, not OpenMP")
    assert libs == "1", f"{libs} OpenMP runtimes loaded"


@pytest.mark.parametrize("user", [{}, {"GOMP_SPINCOUNT": "7"},
                                  {"OMP_WAIT_POLICY": "PASSIVE"}])
def test_pytorch_threads_spin_briefly_unless_the_user_says(user):
    """Loading PyTorch, the strategy sets GOMP_SPINCOUNT to its SPIN_COUNT (30000, about
    1 ms: 10000 let the threads fall asleep between kernels after an idle pause) unless the
    user set GOMP_SPINCOUNT or OMP_WAIT_POLICY."""
    _needs_torch()
    from graphexec.backends.torchcpu.kernels import SPIN_COUNT
    assert SPIN_COUNT == "30000"
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    script = ("import os\n"
              "from graphexec.backends.torchcpu.kernels import load_torch\n"
              "load_torch()\n"
              "print(os.environ.get('GOMP_SPINCOUNT'))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={**env, **user}).stdout.split()[-1]
    want = user.get("GOMP_SPINCOUNT", "None" if user else SPIN_COUNT)
    assert out == want


def test_without_torch_the_strategy_says_so(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_torch)
    x = gx.sym.Convolution(gx.sym.Variable("data"), kernel=(1, 1), num_filter=2)
    with pytest.raises(GraphexecError, match="needs PyTorch"):
        x.simple_bind(gx.cpu(), backend="torch", data=(1, 2, 4, 4))


_S = gx.sym
_X = _S.Variable("data")
EDGE_CASES = {
    "conv1d_dilate_stride": (_S.Convolution(_X, kernel=(3,), num_filter=4, pad=(2,),
                                            dilate=(2,), stride=(2,)), (2, 3, 11)),
    "conv3d": (_S.Convolution(_X, kernel=(3, 3, 3), num_filter=4, pad=(1, 1, 1), no_bias=True),
               (2, 2, 5, 5, 5)),
    "grouped_multiplier": (_S.Convolution(_X, kernel=(3, 3), num_filter=8, num_group=4,
                                          pad=(1, 1)), (2, 4, 7, 7)),
    # pointwise convolutions as products: the weight gradient by one batched product (small
    # channel counts) or by one product over the samples' columns (1x1 maps), 1-D and 3-D
    "pointwise_bias": (_S.Convolution(_X, kernel=(1, 1), num_filter=5), (4, 3, 8, 8)),
    "pointwise_1x1_maps": (_S.Convolution(_X, kernel=(1, 1), num_filter=64, no_bias=True),
                           (8, 64, 1, 1)),
    "pointwise_1d": (_S.Convolution(_X, kernel=(1,), num_filter=4), (2, 3, 10)),
    "pointwise_3d": (_S.Convolution(_X, kernel=(1, 1, 1), num_filter=4, no_bias=True),
                     (2, 3, 3, 4, 5)),
    "avg_exclude_pad": (_S.Pooling(_X, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                                   count_include_pad=False), (2, 3, 9, 9)),
    "avg_include_pad": (_S.Pooling(_X, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                   pool_type="avg"), (2, 3, 9, 9)),
    "max_full": (_S.Pooling(_X, kernel=(2, 2), stride=(2, 2), pool_type="max",
                            pooling_convention="full"), (2, 3, 9, 9)),
    "bn_global_stats": (_S.BatchNorm(_X, use_global_stats=True, fix_gamma=False), (2, 3, 4, 4)),
    "bn_2d": (_S.BatchNorm(_X, fix_gamma=False), (5, 3)),
    "fc_no_bias_3d": (_S.FullyConnected(_X, num_hidden=3, no_bias=True, flatten=False),
                      (2, 3, 4)),
    "softmax_axis1": (_S.softmax(_X, axis=1), (2, 3, 4)),
    "gelu": (_S.LeakyReLU(_X, act_type="gelu"), (3, 7)),
    "layer_norm_last_axis": (_S.LayerNorm(_X, eps=1e-5), (2, 3, 6)),
    "softmax_output_flat": (_S.SoftmaxOutput(_X, name="so"), (2, 3, 4)),
    "softmax_output_multi": (_S.SoftmaxOutput(_X, multi_output=True, name="so"), (2, 3, 4)),
    "softmax_output_preserve": (_S.SoftmaxOutput(_X, preserve_shape=True, name="so"),
                                (2, 3, 4)),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_variant_matches_native_on_edge_cases(case, monkeypatch):
    """The native kernels are checked against MXNet per op (tests/opcases, refcases); here the
    variant against them, forward, every gradient and the moving statistics (PyTorch's
    BatchNorm and max pooling too: the strategy's choice where numba is missing)."""
    _needs_torch()
    from graphexec.backends.torchcpu import select
    monkeypatch.setattr(select, "_openmp_batch_norm", lambda: False)
    monkeypatch.setattr(select, "_native_max_pooling", lambda: False)
    sym, shape = EDGE_CASES[case]
    results = []
    for backend in ("NONE", "torch"):
        exe = sym.simple_bind(gx.cpu(), backend=backend, data=shape)
        rng = np.random.default_rng(1)
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            arr[...] = (rng.uniform(0.2, 1.2, arr.shape) if name.endswith("var")
                        else rng.standard_normal(arr.shape))
        exe.forward(is_train=True)
        exe.backward(np.ones(exe.outputs[0].shape, "f4"))
        results.append([exe.outputs[0].copy(), *(g.copy() for g in exe.grad_dict.values()),
                        *(a.copy() for a in exe.aux_dict.values())])
    assert _marked(exe), "the variant ran nowhere"
    for k, (want, got) in enumerate(zip(*results)):
        _close(got, want, f"{case} result {k}")


def _one_step(sym, backend: str, reqs: dict, shape: tuple, seed: int, start_grads=None):
    """The executor of ``sym`` under ``backend`` after one train step: arguments and the
    head gradient drawn from N(0, 1) with ``seed``, ``start_grads`` (name -> value) written
    into gradient arrays first (``add`` requests)."""
    exe = sym.simple_bind(gx.cpu(), backend=backend, grad_req=reqs, data=shape)
    rng = np.random.default_rng(seed)
    for arr in exe.arg_dict.values():
        arr[...] = rng.standard_normal(arr.shape)
    for name, value in (start_grads or {}).items():
        exe.grad_dict[name][...] = value
    exe.forward(is_train=True)
    exe.backward(rng.standard_normal(exe.outputs[0].shape).astype("f4"))
    return exe


@pytest.mark.parametrize("mkl", [True, False], ids=["mkl", "openblas"])
@pytest.mark.parametrize("kw, shape, data_req", [
    ({"num_hidden": 7}, (5, 3, 2, 2), "write"),
    ({"num_hidden": 7, "no_bias": True}, (5, 6), "write"),
    ({"num_hidden": 4, "flatten": False}, (2, 3, 6), "write"),
    ({"num_hidden": 7}, (5, 12), "null"),
])
def test_fully_connected_products_match_native(mkl, kw, shape, data_req, monkeypatch):
    """FullyConnected's variant on either library (MKL through PyTorch on Intel CPUs, numpy's
    OpenBLAS elsewhere: :func:`kernels.mkl_products`) against the native kernel: output and
    every gradient, with the data's gradient not asked too."""
    _needs_torch()
    from graphexec.backends.torchcpu import kernels
    monkeypatch.setattr(kernels, "mkl_products", lambda: mkl)
    fc = _S.FullyConnected(_X, name="fc", **kw)
    results = []
    reqs = {n: data_req if n == "data" else "write" for n in fc.list_arguments()}
    for backend in ("NONE", "torch"):
        exe = _one_step(fc, backend, reqs, shape, seed=2)
        results.append([exe.outputs[0].copy()] + [exe.grad_dict[n].copy() for n in reqs
                                                  if reqs[n] != "null"])
    assert set(_marked(exe).values()) == {"FullyConnected", "_backward_FullyConnected"}
    for k, (want, got) in enumerate(zip(*results)):
        _close(got, want, f"{kw} result {k}")


def test_pointwise_convolutions_run_as_products(monkeypatch):
    """Which convolutions the variant runs as products (1x1 kernels of stride 1, no padding
    or dilation, one group, fewer than POINTWISE_MAX_WEIGHT weights, contiguous arrays),
    and a pointwise one whose data needs no gradient still gives the weight's and bias's."""
    _needs_torch()
    from graphexec.backends.torchcpu import kernels
    calls = []
    real = kernels._pointwise
    monkeypatch.setattr(kernels, "_pointwise",
                        lambda p, ps, ts: calls.append(real(p, ps, ts)) or calls[-1])
    for kw, want in [({}, "planes"), ({"stride": (2, 2)}, None), ({"pad": (1, 1)}, None),
                     ({"num_group": 2}, None), ({"dilate": (2, 2)}, None)]:
        calls.clear()
        conv = _S.Convolution(_X, kernel=(1, 1), num_filter=8, name="c", **kw)
        exe = conv.simple_bind(gx.cpu(), backend="torch", grad_req="null", data=(2, 4, 3, 3))
        exe.forward()
        assert calls == [want], kw
    conv = _S.Convolution(_X, kernel=(1, 1), num_filter=8, name="c")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3, 3)).astype("f4")
    w_t = rng.standard_normal((1, 1, 4, 8)).astype("f4").T  # a strided (8, 4, 1, 1) view
    b = np.zeros(8, "f4")
    calls.clear()
    got = conv.bind(gx.cpu(), {"data": x, "c_weight": w_t, "c_bias": b},
                    backend="torch").forward()[0]
    assert calls == [None]  # oneDNN's convolution takes it
    want = conv.bind(gx.cpu(), {"data": x, "c_weight": np.ascontiguousarray(w_t), "c_bias": b},
                     backend="NONE").forward()[0]
    _close(got, want, "pointwise convolution of a strided weight")
    monkeypatch.setattr(kernels, "POINTWISE_MAX_WEIGHT", 32)  # the weight has 8 x 4
    calls.clear()
    conv.simple_bind(gx.cpu(), backend="torch", grad_req="null", data=(2, 4, 3, 3)).forward()
    assert calls == [None]
    monkeypatch.setattr(kernels, "POINTWISE_MAX_WEIGHT", 33)
    calls.clear()
    exe = conv.simple_bind(gx.cpu(), backend="torch", data=(2, 4, 3, 3))
    exe.forward(is_train=True)
    exe.backward(np.ones((2, 8, 3, 3), "f4"))
    assert calls == ["planes"] * 2  # forward and backward judge the same weight
    monkeypatch.undo()

    conv = _S.Convolution(_X, kernel=(1, 1), num_filter=3, name="c")
    results = []
    for backend in ("NONE", "torch"):
        exe = _one_step(conv, backend, {"data": "null", "c_weight": "write", "c_bias": "write"},
                        (2, 4, 5, 5), seed=2)
        results.append([exe.grad_dict["c_weight"].copy(), exe.grad_dict["c_bias"].copy()])
    for want, got in zip(*results):
        _close(got, want, "pointwise gradient with the data's gradient null")


PRODUCT_GRADIENT_CASES = [  # (convolution attributes, data shape, data's grad_req)
    ({"kernel": (3, 3), "pad": (1, 1), "num_filter": 6}, (2, 4, 5, 5), "write"),
    ({"kernel": (3, 3), "pad": (1, 1), "stride": (2, 2), "num_filter": 5, "no_bias": True},
     (3, 4, 7, 6), "write"),
    ({"kernel": (2, 3), "pad": (0, 2), "dilate": (2, 1), "stride": (1, 2), "num_filter": 3},
     (2, 3, 6, 7), "null"),
    ({"kernel": (3, 3), "num_filter": 4, "no_bias": True}, (1, 2, 4, 4), "add"),
]


@pytest.mark.parametrize("kw, shape, data_req", PRODUCT_GRADIENT_CASES)
def test_weight_gradient_as_one_product_matches_native(kw, shape, data_req, monkeypatch):
    """A convolution's weight gradient as one MKL product over im2col columns (forced here:
    every layer, MKL asked for on any CPU) gives the native strategy's gradients, with the
    data's gradient written, not asked or added to, with and without a bias."""
    _needs_torch()
    from graphexec.backends.torchcpu import kernels
    monkeypatch.setattr(kernels, "mkl_products", lambda: True)
    monkeypatch.setattr(kernels, "PRODUCT_WEIGHT_GRADIENT_MIN_RATIO", 0)
    calls = []
    real = kernels._product_weight_gradient
    monkeypatch.setattr(kernels, "_product_weight_gradient",
                        lambda *a: calls.append(a) or real(*a))
    conv = _S.Convolution(_X, name="c", **kw)
    results = []
    reqs = {n: data_req if n == "data" else "write" for n in conv.list_arguments()}
    for backend in ("NONE", "torch"):
        exe = _one_step(conv, backend, reqs, shape, seed=4,
                        start_grads={"data": 1.0} if data_req == "add" else None)
        results.append([g.copy() for n, g in exe.grad_dict.items() if reqs[n] != "null"])
    assert len(calls) == 1
    for k, (want, got) in enumerate(zip(*results)):
        _close(got, want, f"{kw} gradient {k}")


def test_weight_gradient_as_one_product_of_channels_last_data(monkeypatch):
    """Inside a network whose maps are stored channels-last, the forced product path reads
    the data and dY in that layout and still gives the native strategy's numbers; without
    MKL (:func:`kernels.mkl_products`), or below the ratio, oneDNN's gradient runs."""
    _needs_torch()
    from graphexec.backends.torchcpu import kernels, select
    sym = _S.Activation(_S.Convolution(_X, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c0"),
                        act_type="relu")
    sym = _S.Activation(_S.Convolution(sym, kernel=(3, 3), pad=(1, 1), num_filter=5,
                                       name="c1"), act_type="relu")
    sym = _S.SoftmaxOutput(_S.FullyConnected(sym, num_hidden=3, name="fc"),
                           _S.Variable("softmax_label"), name="softmax")
    shape = (2, 3, 16, 16)  # 256 positions a map: channels-last between the two layers
    assert shape[2] * shape[3] >= select.DENSE_CHANNELS_LAST_MIN_POSITIONS
    calls = []
    real = kernels._product_weight_gradient
    monkeypatch.setattr(kernels, "_product_weight_gradient",
                        lambda *a: calls.append(a) or real(*a))
    from classifier_steps import bind_classifier

    def steps(backend):
        exe = bind_classifier(sym, backend, shape, seed=6)
        for _ in range(2):
            exe.forward(is_train=True)
            exe.backward()
        return exe
    want = steps("NONE")
    for mkl, ratio, runs in [(False, 0, 0), (True, 10 ** 9, 0), (True, 0, 2)]:
        monkeypatch.setattr(kernels, "mkl_products", lambda mkl=mkl: mkl)
        monkeypatch.setattr(kernels, "PRODUCT_WEIGHT_GRADIENT_MIN_RATIO", ratio)
        calls.clear()
        got = steps("torch")
        assert len(calls) == runs, (mkl, ratio)
        ig = got._plan.graph.indexed
        c1 = next(i for i, n in enumerate(ig.nodes) if n.name == "c1")
        assert ig.node_inputs[c1][0] in got._plan.channels_last
        for name in want.grad_dict:
            if name != "softmax_label":
                _close(got.grad_dict[name], want.grad_dict[name], f"gradient of {name}")


# the native convolution's paths (backends/default/kernels/conv_fast.py): columns-free
# offsets (few filters for the channels, stride 1), depthwise, one-group split products
NATIVE_CONV_CASES = [((2, 8, 9, 11), (3, 3), (1, 1), (1, 1), (1, 1), 3, 1),
                     ((1, 8, 8, 8), (3, 5), (2, 0), (2, 1), (1, 1), 3, 1),
                     ((3, 8, 6, 6), (2, 2), (0, 0), (1, 1), (1, 1), 4, 1),
                     ((1, 6, 7, 7), (7, 7), (3, 3), (1, 1), (1, 1), 2, 1),
                     ((2, 6, 7, 7), (3, 3), (1, 1), (1, 1), (2, 2), 6, 6),
                     ((2, 3, 7, 7), (3, 3), (1, 1), (1, 1), (2, 1), 16, 1),
                     ((1, 3, 7, 7), (3, 3), (0, 0), (1, 1), (1, 1), 40, 1),
                     # depthwise: the compiled loop's bounds (padding wider than half the
                     # kernel, none, dilation, strides 2 and 3, odd widths, several images)
                     ((2, 5, 9, 8), (3, 3), (1, 1), (1, 1), (1, 1), 5, 5),
                     ((1, 4, 10, 11), (3, 3), (1, 1), (1, 1), (2, 2), 4, 4),
                     ((1, 4, 9, 9), (3, 5), (3, 0), (1, 2), (1, 3), 4, 4),
                     ((2, 3, 12, 7), (5, 3), (1, 2), (2, 1), (3, 2), 3, 3),
                     ((1, 2, 4, 4), (3, 3), (4, 4), (1, 1), (1, 1), 2, 2)]


@pytest.fixture(params=["compiled", "numpy"])
def depthwise_path(request, monkeypatch):
    """Each test twice: with numba's compiled depthwise loop (when numba is installed) and
    with the numpy offsets."""
    from graphexec.backends.default.kernels import conv
    if request.param == "numpy":
        monkeypatch.setattr(conv, "compiled_depthwise_runner", lambda *a: None)
    else:
        pytest.importorskip("numba", reason="the compiled depthwise loop needs numba")
    return request.param


@pytest.mark.parametrize("shape,kernel,pad,dilate,stride,filters,groups", NATIVE_CONV_CASES)
def test_native_convolution_paths_match_a_direct_sum(shape, kernel, pad, dilate, stride,
                                                     filters, groups, depthwise_path):
    sym = gx.sym.Convolution(gx.sym.Variable("x"), kernel=kernel, pad=pad, dilate=dilate,
                             stride=stride, num_filter=filters, num_group=groups, name="c")
    exe = sym.simple_bind(gx.cpu(), grad_req="null", x=shape)
    rng = np.random.default_rng(0)
    for arr in exe.arg_dict.values():
        arr[...] = rng.standard_normal(arr.shape)
    got = exe.forward()[0]
    x, w, b = (np.asarray(exe.arg_dict[n], np.float64) for n in ("x", "c_weight", "c_bias"))
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    ho, wo = got.shape[2:]
    cin, cout = shape[1] // groups, filters // groups
    want = np.zeros(got.shape) + b.reshape(1, -1, 1, 1)
    for g in range(groups):
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                win = xp[:, g * cin:(g + 1) * cin,
                         i * dilate[0]:i * dilate[0] + stride[0] * (ho - 1) + 1:stride[0],
                         j * dilate[1]:j * dilate[1] + stride[1] * (wo - 1) + 1:stride[1]]
                want[:, g * cout:(g + 1) * cout] += np.einsum(
                    "fc,nchw->nfhw", w[g * cout:(g + 1) * cout, :, i, j], win)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _rnn(mode: str, layers: int = 2, bidirectional: bool = False, state_outputs: bool = True,
         p: float = 0.0):
    ins = [_X, _S.Variable("params"), _S.Variable("h0")]
    if mode == "lstm":
        ins.append(_S.Variable("c0"))
    out = _S.RNN(*ins, state_size=5, num_layers=layers, mode=mode, p=p,
                 bidirectional=bidirectional, state_outputs=state_outputs, name="rnn")
    return _S.Group([out[k] for k in range(len(out.list_outputs()))])


RNN_CASES = {
    "lstm_2l_states": _rnn("lstm"),
    "lstm_bidir_no_states": _rnn("lstm", bidirectional=True, state_outputs=False),
    "gru_bidir_2l": _rnn("gru", bidirectional=True),
    "rnn_tanh_1l": _rnn("rnn_tanh", layers=1),
    "rnn_relu_2l": _rnn("rnn_relu"),
    "lstm_1l_dropout": _rnn("lstm", layers=1, p=0.5),  # no layer after the only one: no mask
}


def _rnn_results(sym, backend: str, grad_req="write", passes=(True,)):
    exe = sym.simple_bind(gx.cpu(), backend=backend, data=(6, 3, 4), grad_req=grad_req)
    rng = np.random.default_rng(2)
    for arr in exe.arg_dict.values():
        arr[...] = rng.uniform(-0.5, 0.5, arr.shape)
    heads = [rng.standard_normal(o.shape).astype("f4") for o in exe.outputs]
    for is_train in passes:
        exe.forward(is_train=is_train)
        exe.backward(heads)
    return exe, [o.copy() for o in exe.outputs] + [g.copy() for g in exe.grad_dict.values()]


@pytest.mark.parametrize("case", sorted(RNN_CASES))
def test_rnn_variant_matches_native(case):
    """PyTorch's RNN (oneDNN's LSTM) against the native kernel (checked against MXNet in
    test_seq_*): outputs, final states and every gradient (data, parameters, begin states)."""
    _needs_torch()
    sym = RNN_CASES[case]
    _, want = _rnn_results(sym, "NONE")
    exe, got = _rnn_results(sym, "torch")
    assert set(_marked(exe)) == {"rnn", "rnn_backward"}
    for k, (g, w) in enumerate(zip(got, want)):
        _close(g, w, f"{case} result {k}")


def test_rnn_variant_backward_twice_after_inference_and_add():
    """Backward may run twice after one forward, after an inference forward (differentiating
    what it computed, as MXNet does), and accumulate with grad_req 'add'."""
    _needs_torch()
    sym = RNN_CASES["lstm_2l_states"]
    for passes, req in (((True, True), "write"), ((False,), "write"), ((True,), "add")):
        _, want = _rnn_results(sym, "NONE", req, passes)
        _, got = _rnn_results(sym, "torch", req, passes)
        for k, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"passes {passes} grad_req {req}: result {k}")


def test_rnn_configurations_the_variant_leaves_native():
    _needs_torch()
    x, params, h0 = _X, _S.Variable("params"), _S.Variable("h0")
    cases = {"projection_size": dict(mode="lstm", projection_size=2),
             "lstm_state_clip": dict(mode="lstm", lstm_state_clip_min=-1.0,
                                     lstm_state_clip_max=1.0),
             "dropout between layers": dict(mode="gru", num_layers=2, p=0.3)}
    for why, kw in cases.items():
        kw = {"num_layers": 1, **kw}
        ins = [x, params, h0] + ([_S.Variable("c0")] if kw["mode"] == "lstm" else [])
        y = _S.RNN(*ins, state_size=4, name="r", **kw)
        exe = y.simple_bind(gx.cpu(), backend="torch", data=(3, 2, 4))
        assert not _marked(exe), why
        assert why.split()[0] in exe.partition_plan.nodes["r"].reason


def _batch_norm_results(shape, axis, is_train, dtype, **params):
    """Output, gradients of data, gamma and beta, moving statistics after one forward and
    backward of a BatchNorm (times a weight, so the head gradient is not uniform), natively."""
    sym = gx.sym.BatchNorm(gx.sym.Variable("x"), axis=axis, name="bn", **params) * \
        gx.sym.Variable("w")
    exe = sym.simple_bind(gx.cpu(), type_dict={"x": dtype, "w": dtype}, x=shape, w=shape,
                          grad_req={"x": "write", "w": "null", "bn_gamma": "write",
                                    "bn_beta": "write"})
    rng = np.random.default_rng(3)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        # data off zero (mean 4, std 3): the variance's two passes matter
        arr[...] = rng.uniform(0.5, 1.5, arr.shape) if name.endswith("var") else \
            rng.standard_normal(arr.shape) * 3 + (4 if name == "x" else 0)
    exe.forward(is_train=is_train)
    exe.backward(np.ones(shape, dtype))
    return [exe.outputs[0].copy(), *(exe.grad_dict[k].copy() for k in ("x", "bn_gamma",
            "bn_beta")), *(exe.aux_dict[k].copy() for k in ("bn_moving_mean", "bn_moving_var"))]


_BN_CASES = {"nchw": ((2, 3, 5, 4), 1, {}), "2-d": ((4, 6), 1, {}),
             "last axis": ((2, 5, 3), 2, {}), "rows over a block": ((2, 3, 5000), 1, {}),
             "rows of one": ((8, 4, 1), 1, {}), "fix_gamma": ((3, 4, 7), 1, {"fix_gamma": True}),
             "global stats": ((3, 4, 6), 1, {"use_global_stats": True, "fix_gamma": False})}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("is_train", [False, True])
@pytest.mark.parametrize("case", sorted(_BN_CASES))
def test_native_batch_norm_compiled_loops_match_numpy(case, is_train, dtype, monkeypatch):
    """BatchNorm's compiled loops (numba: batch statistics, the per-channel affine pass, the
    backward's sums and data gradient) against the numpy path: with moving statistics the
    forward is the same multiply then add, bit for bit; batch statistics and gradients agree
    within rounding (the loops sum in float64 blocks, numpy pairwise in the data type)."""
    pytest.importorskip("numba", reason="the compiled loops need numba")
    from graphexec.backends.default.kernels import nn, nn_grad
    shape, axis, params = _BN_CASES[case]
    probe = np.zeros(shape, dtype)
    assert nn._compiled_batch_norm(np, probe, probe, axis, probe.dtype, True) is not None
    params = {"fix_gamma": False, **params}
    got = _batch_norm_results(shape, axis, is_train, dtype, **params)
    with monkeypatch.context() as patch:
        patch.setattr(nn, "_compiled_batch_norm", lambda *a: None)
        patch.setattr(nn_grad, "_compiled_backward", lambda *a: None)
        want = _batch_norm_results(shape, axis, is_train, dtype, **params)
    names = ["output", "d data", "d gamma", "d beta", "moving mean", "moving var"]
    if not is_train or params.get("use_global_stats"):
        np.testing.assert_array_equal(got[0], want[0])
    for name, g, w in zip(names, got, want):
        scale = max(float(np.abs(w).max()), 1e-3)
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, err_msg=name)


@pytest.mark.parametrize("shape,loc,scale", [((4, 3, 5000), 1000.0, 0.01),
                                             ((16, 2, 49), 1000.0, 0.01),
                                             ((3, 2, 20000), -50.0, 1e-3),
                                             ((16, 8, 784), 3.0, 2.0), ((8, 4, 1), 5.0, 1.0),
                                             ((40, 300, 16), 1e4, 1.0)])
def test_batch_norm_statistics_loop_is_exact_within_rounding(shape, loc, scale):
    """The compiled training forward's statistics against float64 sums of the same float32
    data, also far from zero (mean 1e5 standard deviations away: numpy's float32 variance is
    off by up to 1e-4 there), long rows and short ones (in lanes, several blocks of rows):
    the mean and the variance within 1e-6; the output as numpy computes it from them."""
    pytest.importorskip("numba", reason="the compiled loops need numba")
    from graphexec.backends.default.kernels.compiled import compiled_for
    x = (loc + scale * np.random.default_rng(5).standard_normal(shape)).astype("f4")
    c = shape[1]
    gamma, beta = np.linspace(0.5, 2, c, dtype="f4"), np.linspace(-1, 1, c, dtype="f4")
    mean, var, invstd, scale_, shift = (np.empty(c, "f4") for _ in range(5))
    out = np.empty_like(x)
    args = (x, gamma, beta, np.float32(1e-3), False, mean, var, invstd, scale_, shift, out, 0, c)
    compiled_for("batch_norm_train", *args)(*args)
    exact = x.astype("f8")
    np.testing.assert_allclose(mean, exact.mean(axis=(0, 2)), rtol=1e-6)
    np.testing.assert_allclose(var, exact.var(axis=(0, 2)), rtol=1e-6)
    inv = np.reciprocal(np.sqrt(var + np.float32(1e-3)))
    np.testing.assert_array_equal(invstd, inv)
    s = inv * gamma
    np.testing.assert_array_equal(out, x * s[:, None] + (beta - mean * s)[:, None])


@pytest.mark.parametrize("params", [{"fix_gamma": False}, {"fix_gamma": True},
                                    {"fix_gamma": False, "momentum": 0.7}])
def test_batch_norm_bookkeeping_loop_is_numpys(params, monkeypatch):
    """The backward's compiled bookkeeping (parameter gradients, moving statistics) gives
    numpy's numbers bit for bit, fix_gamma's zero gradient included."""
    pytest.importorskip("numba", reason="the compiled loops need numba")
    from graphexec.backends.default.kernels import nn_grad
    got = _batch_norm_results((4, 5, 6, 7), 1, True, "float32", **params)
    monkeypatch.setattr(nn_grad, "_compiled_finish", lambda *a: None)
    want = _batch_norm_results((4, 5, 6, 7), 1, True, "float32", **params)
    for g, w in zip(got[2:], want[2:]):
        np.testing.assert_array_equal(g, w)
    if params["fix_gamma"]:
        assert not got[2].any()


@pytest.mark.parametrize("shape", [(16, 64, 7, 7), (4, 6, 96, 96)])
def test_batch_norm_loops_split_across_threads(shape, monkeypatch):
    """The compiled BatchNorm loops with the channels split across three threads (short and
    long rows) compute what one thread computes, forward and backward."""
    pytest.importorskip("numba", reason="the compiled loops need numba")
    from graphexec.backends.default.kernels import compiled
    from graphexec.core.runtime import blas_threads
    want = _batch_norm_results(shape, 1, True, "float32", fix_gamma=False)
    monkeypatch.setattr(blas_threads, "_blas_threads", lambda: 3)
    monkeypatch.setattr(compiled, "MIN_PART", 1)
    split_into = []
    run_parts = blas_threads.run_parts
    monkeypatch.setattr(blas_threads, "run_parts",
                        lambda xp, parts, *a, **k: split_into.append(len(parts)) or
                        run_parts(xp, parts, *a, **k))
    got = _batch_norm_results(shape, 1, True, "float32", fix_gamma=False)
    assert split_into == [3, 3], "the forward and backward ran on Python threads in 3 parts"
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_loop_numba_cannot_compile_leaves_the_numpy_code(monkeypatch):
    """numba failing on a compiled loop (a broken install, an unsupported version) does not
    fail the bind: one warning per loop, and the kernels run their numpy code."""
    pytest.importorskip("numba", reason="the compiled loops need numba")
    from graphexec.backends.default.kernels import compiled
    from graphexec.core.runtime import jit_cache
    x = gx.sym.Variable("x")
    net = gx.sym.BatchNorm(gx.sym.Convolution(x, kernel=(3, 3), num_filter=4, num_group=4,
                                              pad=(1, 1), no_bias=True, name="dw"),
                           fix_gamma=False, name="bn")

    def run():
        exe = net.simple_bind(gx.cpu(), x=(2, 4, 6, 6))
        rng = np.random.default_rng(1)
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            arr[...] = rng.uniform(0.5, 1.5, arr.shape)
        exe.forward(is_train=True)
        exe.backward(rng.standard_normal((2, 4, 6, 6)).astype("f4"))
        return [exe.outputs[0].copy(), exe.grad_dict["x"].copy(),
                exe.grad_dict["bn_gamma"].copy()]
    want = run()

    def broken(*args, **kwargs):
        raise RuntimeError("numba exploded")
    monkeypatch.setattr(jit_cache, "compile_cached", broken)
    monkeypatch.setattr(compiled, "_FAILED", set())
    with pytest.warns(RuntimeWarning, match="numba exploded") as caught:
        got = run()
        run()   # warned once per loop, not per kernel
    loops = {re.search(r"loop '(\w+)'", str(w.message)).group(1) for w in caught}
    assert loops == {"depthwise", "batch_norm_train", "batch_norm_backward"}
    assert len(caught) == len(loops)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.abs(w).max()))


@pytest.mark.parametrize("axis", [-1, 1])
def test_masked_softmax_variant_matches_native(axis):
    """softmax with use_length: int32 lengths (as BERT's), a row of length 0 (all zeros),
    full rows; the backward stays native on the variant's output."""
    _needs_torch()
    sym = _S.softmax(_X, _S.Variable("length", dtype="int32"), axis=axis, use_length=True,
                     name="sm")
    results = []
    for backend in ("NONE", "torch"):
        exe = sym.simple_bind(gx.cpu(), backend=backend, data=(3, 5, 4),
                              type_dict={"data": "float32", "length": "int32"},
                              grad_req={"data": "write", "length": "null"})
        rng = np.random.default_rng(4)
        exe.arg_dict["data"][...] = rng.standard_normal((3, 5, 4))
        lengths = {-1: [[0, 1, 4, 2, 3], [4, 4, 1, 2, 3], [2, 0, 0, 1, 4]],
                   1: [[0, 1, 5, 2], [5, 3, 1, 2], [2, 0, 4, 1]]}[axis]
        exe.arg_dict["length"][...] = lengths
        exe.forward(is_train=True)
        exe.backward(np.ones((3, 5, 4), "f4"))
        results.append((exe.outputs[0].copy(), exe.grad_dict["data"].copy()))
    assert "sm" in _marked(exe)
    for k, (want, got) in enumerate(zip(*results)):
        _close(got, want, f"masked softmax result {k}")
