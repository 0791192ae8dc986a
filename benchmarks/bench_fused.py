"""fused backend figures (issue 7): two 10-op elementwise chains on 10M float32 (40 MB in,
40 MB out), run as one fused region, against the same chain in numpy with preallocated
outputs, graphexec's native kernels (backend NONE), ONNX Runtime (which runs the chain op by
op) and the floor: np.copyto of the same bytes, all measured in this process.

Goals (issue 7): arithmetic chain within 1.5x of the copy floor, transcendental chain within
2.5x; on the issue's 2-core machine numpy took 65 / 177 ms, ORT 50 / 50 ms, the floor 5.8 ms.
The fused kernel is also timed on one thread (numba.set_num_threads(1)).

``--avx512`` compiles with 512-bit vectors on CPUs that have them (LLVM prefers 256-bit ones
on Intel server parts): it sets NUMBA_CPU_FEATURES to the host's features plus
``-prefer-256-bit`` before numba starts, which any user can do the same way (the setting is
numba's and applies to the whole process, so graphexec does not make it for you).

Run: python benchmarks/bench_fused.py [--threads 2] [--size 10000000] [--repeat 15] [--avx512]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_medians  # noqa: E402

import graphexec as gx  # noqa: E402

GOALS = {"arithmetic": 1.5, "transcendental": 2.5}


def chains() -> dict[str, gx.sym.Symbol]:
    x = gx.sym.Variable("x")
    arith = gx.sym.clip(((x * 0.7 + 0.1) * x - 0.2) * x, a_min=-1, a_max=1) * 0.5 + gx.sym.abs(x)
    trans = gx.sym.tanh(x * 0.7 + 0.1) * gx.sym.sigmoid(x) + gx.sym.exp(-(x * x)) * 0.5
    return {"arithmetic": arith, "transcendental": trans}


def numpy_chain(name: str, x: np.ndarray, out: np.ndarray):
    """The chain in numpy, every step into a preallocated buffer."""
    t = np.empty_like(x)
    u = np.empty_like(x)

    def arithmetic():
        np.multiply(x, np.float32(0.7), out=t)
        np.add(t, np.float32(0.1), out=t)
        np.multiply(t, x, out=t)
        np.subtract(t, np.float32(0.2), out=t)
        np.multiply(t, x, out=t)
        np.clip(t, -1, 1, out=t)
        np.multiply(t, np.float32(0.5), out=t)
        np.abs(x, out=u)
        np.add(t, u, out=out)

    def transcendental():
        np.multiply(x, np.float32(0.7), out=t)
        np.add(t, np.float32(0.1), out=t)
        np.tanh(t, out=t)
        np.negative(x, out=u)
        np.exp(u, out=u)
        np.add(u, 1, out=u)
        np.divide(t, u, out=t)      # tanh(.) * sigmoid(x)
        np.multiply(x, x, out=u)
        np.negative(u, out=u)
        np.exp(u, out=u)
        np.multiply(u, np.float32(0.5), out=u)
        np.add(t, u, out=out)
    return {"arithmetic": arithmetic, "transcendental": transcendental}[name]


def ort_chain(sym, size: int, threads: int):
    import onnxruntime as ort
    model = gx.onnx.export_model(sym, {}, {}, {"x": (size,)})
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    # its threads would otherwise spin after each run, stealing the cores the next timed
    # function runs on (the timings interleave)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, sym.list_outputs()[0]


def measure(name: str, sym, x: np.ndarray, threads: int, repeat: int) -> dict:
    size = x.size
    t0 = time.perf_counter()
    fused = sym.simple_bind(gx.cpu(), grad_req="null", backend="fused", x=(size,))
    fused.arg_dict["x"][...] = x
    fused.forward()
    first_s = time.perf_counter() - t0
    import numba
    threads = numba.get_num_threads()
    plan = fused.partition_plan
    assert len(plan.regions) == 1 and plan.fallbacks == 0, plan.table()
    native = sym.simple_bind(gx.cpu(), grad_req="null", backend="NONE", x=(size,))
    native.arg_dict["x"][...] = x
    want = native.forward()[0]
    out, copy_dst = np.empty_like(x), np.empty_like(x)
    sess, out_name = ort_chain(sym, size, threads)
    one = sym.simple_bind(gx.cpu(), grad_req="null", backend="fused", x=(size,))
    one.arg_dict["x"][...] = x
    numba.set_num_threads(1)
    one.forward()  # its runner, built now, runs on one thread
    numba.set_num_threads(threads)
    t = interleaved_medians({
        "copy": lambda: np.copyto(copy_dst, x),
        "fused": fused.forward,
        "fused_1": one.forward,
        "numpy": numpy_chain(name, x, out),
        "native": native.forward,
        "ort": lambda: sess.run([out_name], {"x": x}),
    }, repeat=repeat)
    diff = float(np.max(np.abs(fused.outputs[0] - want)))
    return {"first_s": first_s, "diff": diff, **{k: v * 1e3 for k, v in t.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--avx512", action="store_true")
    opts = ap.parse_args()
    if opts.avx512:
        import llvmlite.binding as llvm
        os.environ["NUMBA_CPU_FEATURES"] = llvm.get_host_cpu_features().flatten() + \
            ",-prefer-256-bit"
    import numba
    numba.set_num_threads(min(opts.threads, numba.config.NUMBA_NUM_THREADS))
    x = np.random.default_rng(0).standard_normal(opts.size).astype("f4")
    print(f"{opts.size} float32, {numba.get_num_threads()} numba thread(s), ORT "
          f"{opts.threads} thread(s); ms (ratio to the np.copyto floor)")
    for name, sym in chains().items():
        r = measure(name, sym, x, opts.threads, opts.repeat)
        floor = r["copy"]
        ratio = r["fused"] / floor
        print(f"{name:15s} copy {floor:6.1f} | fused {r['fused']:6.1f} ({ratio:4.2f}x, goal "
              f"<= {GOALS[name]}x: {'met' if ratio <= GOALS[name] else 'MISSED'}; one thread "
              f"{r['fused_1']:6.1f}) | numpy "
              f"{r['numpy']:6.1f} ({r['numpy'] / floor:4.1f}x) | native {r['native']:6.1f} | "
              f"ORT {r['ort']:6.1f} ({r['ort'] / floor:4.1f}x) | first forward "
              f"{r['first_s']:.2f} s, max |fused - native| {r['diff']:.1e}")


if __name__ == "__main__":
    main()
