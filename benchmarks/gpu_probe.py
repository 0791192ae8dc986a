"""What runs on a CUDA device today (issue #22): one short run for the first session that has
a GPU, whose device time is minutes. For each case (a small graph of one operator family, and
the zoo's ResNet-18 v1) it binds the same symbol on ``gx.cpu()`` and ``gx.gpu(0)``, fills
both with the same parameters, runs forward (and forward + backward where ``train``), and
prints one line: ``ok`` with the largest difference relative to the CPU result's scale and
the device forward's median time, or ``FAIL`` with the exception that stopped it. Nothing is
asserted: the lines map which native kernels already run on CuPy and which need work.

Without CuPy or a CUDA device it says why and exits 0 (so it can sit in a prepared device
script). Run: python benchmarks/gpu_probe.py [--cases a,b] [--repeat 10]
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError

S = gx.sym
ZOO = Path(__file__).resolve().parent.parent / "tests" / "data" / "json"


def _elementwise():
    x = S.Variable("x")
    y = S.sqrt(S.relu(S.tanh(x * 1.5) + 1.0)) + S.exp(-S.square(x))
    return y, {"x": (64, 1000)}


def _fully_connected():
    h = S.FullyConnected(S.Variable("data"), num_hidden=256, name="fc1")
    h = S.FullyConnected(S.Activation(h, act_type="relu"), num_hidden=10, name="fc2")
    return S.SoftmaxOutput(h, S.Variable("softmax_label"), name="softmax"), \
        {"data": (32, 512), "softmax_label": (32,)}


def _convolution():
    y = S.Convolution(S.Variable("data"), kernel=(3, 3), pad=(1, 1), num_filter=32, name="c")
    return y, {"data": (8, 16, 28, 28)}


def _pooling():
    d = S.Variable("data")
    y = S.Pooling(d, kernel=(3, 3), stride=(2, 2), pool_type="max") + \
        S.Pooling(d, kernel=(3, 3), stride=(2, 2), pool_type="avg")
    return y, {"data": (8, 16, 28, 28)}


def _batch_norm():
    return S.BatchNorm(S.Variable("data"), fix_gamma=False, name="bn"), {"data": (8, 16, 14, 14)}


def _softmax():
    return S.softmax(S.Variable("x"), axis=-1), {"x": (64, 1000)}


def _resnet18():
    net = S.load_json(gzip.decompress((ZOO / "zoo_resnet18_v1-symbol.json.gz")
                                      .read_bytes()).decode())
    return S.SoftmaxOutput(net, S.Variable("softmax_label"), name="softmax"), \
        {"data": (16, 3, 112, 112), "softmax_label": (16,)}


#: name -> (builder, train)
CASES = {"elementwise": (_elementwise, True), "fully_connected": (_fully_connected, True),
         "convolution": (_convolution, True), "pooling": (_pooling, True),
         "batch_norm": (_batch_norm, True), "softmax": (_softmax, False),
         "resnet18_inference": (_resnet18, False), "resnet18_train": (_resnet18, True)}


def _fill(cpu_exe, gpu_exe, rng) -> None:
    for name, arr in list(cpu_exe.arg_dict.items()) + list(cpu_exe.aux_dict.items()):
        if name == "softmax_label":
            arr[...] = rng.integers(0, 10, arr.shape)
        else:
            arr[...] = rng.uniform(-0.5, 0.5, arr.shape)
            if name.endswith("_var"):
                np.abs(arr, out=arr)
    gpu_exe.copy_params_from(cpu_exe.arg_dict, cpu_exe.aux_dict)  # host arrays in


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _difference(expected, got) -> float:
    expected, got = _host(expected).astype(np.float64), _host(got).astype(np.float64)
    scale = max(float(np.abs(expected).max()), 1e-30)
    return float(np.abs(expected - got).max()) / scale


def probe(name: str, repeat: int, cupy) -> str:
    build, train = CASES[name]
    sym, shapes = build()
    req = "write" if train else "null"
    cpu_exe = sym.simple_bind(gx.cpu(), grad_req=req, **shapes)
    gpu_exe = sym.simple_bind(gx.gpu(0), grad_req=req, **shapes)
    _fill(cpu_exe, gpu_exe, np.random.default_rng(0))
    diffs = []
    for exe in (cpu_exe, gpu_exe):
        exe.forward(is_train=train)
        if train:  # the outputs as head gradients (loss heads ignore them)
            exe.backward([out.copy() for out in exe.outputs])
    diffs += [_difference(a, b) for a, b in zip(cpu_exe.outputs, gpu_exe.outputs)]
    if train:
        diffs += [_difference(cpu_exe.grad_dict[n], gpu_exe.grad_dict[n])
                  for n in cpu_exe.grad_dict if cpu_exe.grad_dict[n] is not None]
    times = []
    for _ in range(repeat):
        cupy.cuda.Device(0).synchronize()
        t0 = time.perf_counter()
        gpu_exe.forward(is_train=False)
        cupy.cuda.Device(0).synchronize()
        times.append(time.perf_counter() - t0)
    return (f"ok    largest difference {max(diffs):.1e} of the CPU result's scale, "
            f"forward {statistics.median(times) * 1e3:.2f} ms")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=10)
    opts = ap.parse_args()
    try:
        cupy = gx.gpu(0).xp
    except GraphexecError as exc:
        print(f"no GPU to probe: {exc}")
        return 0
    props = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"device 0: {props['name'].decode()}, CuPy {cupy.__version__}", flush=True)
    for name in opts.cases.split(","):
        try:
            line = probe(name, opts.repeat, cupy)
        except Exception as exc:  # noqa: BLE001 - the probe reports every failure and goes on
            where = traceback.extract_tb(exc.__traceback__)[-1]
            line = (f"FAIL  {type(exc).__name__}: {str(exc)[:300]} "
                    f"({Path(where.filename).name}:{where.lineno})")
        print(f"{name:20s} {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
