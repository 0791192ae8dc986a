"""Core figures (issue 2): per-op forward cost of a 200-op tiny elementwise chain against a bare
numpy program in the same process, and simple_bind time of long chains.

With --mxnet, MXNet 1.9.1 is timed too, right before and right after each graphexec figure
(benchmarks/mxnet_oracle.py in that interpreter, another process).

Run: python benchmarks/bench_core.py [--mxnet /path/to/mxvenv/bin/python]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_medians, median_time, mxnet_ms  # noqa: E402

import graphexec as gx  # noqa: E402

MXNET_PER_OP_US = 0.69          # MXNet 1.9.1, bulk execution on, measured on this machine class
MXNET_BIND_S = {1000: 0.010, 5000: 0.050, 20000: 0.26}

# op cycle of the chain: (graphexec op, attrs, numpy ufunc, scalar operand or None)
CYCLE = [("sin", {}, np.sin, None), ("_mul_scalar", {"scalar": 0.9}, np.multiply, 0.9),
         ("_plus_scalar", {"scalar": 0.1}, np.add, 0.1), ("tanh", {}, np.tanh, None),
         ("abs", {}, np.abs, None), ("relu", {}, None, None)]


def chain_symbol(n: int) -> gx.sym.Symbol:
    x = gx.sym.Variable("x")
    for i in range(n):
        op, attrs = CYCLE[i % len(CYCLE)][:2]
        x = gx.core.symbol.create_op_symbol(op, [x], attrs)
    return x


def bare_numpy_program(n: int, x: np.ndarray):
    """The Python floor: a prebuilt op list with preallocated outputs."""
    prog, cur = [], x
    for i in range(n):
        _, _, fn, scalar = CYCLE[i % len(CYCLE)]
        out = np.empty_like(x)
        if fn is None:
            prog.append((np.maximum, (cur, np.float32(0)), out))
        elif scalar is None:
            prog.append((fn, (cur,), out))
        else:
            prog.append((fn, (cur, np.float32(scalar)), out))
        cur = out

    def run():
        for f, args, out in prog:
            f(*args, out=out)
    return run, cur


def around(mxnet: str | None, fn, *args):
    """(fn(), MXNet's figure averaged from right before and right after, or None)."""
    if not mxnet:
        return fn(), None
    before = mxnet_ms(mxnet, *args)[0]
    result = fn()
    return result, (before + mxnet_ms(mxnet, *args)[0]) / 2


def bench_tiny_chain(mxnet: str | None, n: int = 200) -> None:
    x = np.random.default_rng(0).uniform(-1, 1, (1, 16)).astype("f4")
    exes = {}
    for mode in ("0", "1"):  # bulk execution is decided at bind, from the environment
        os.environ["MXNET_EXEC_BULK_EXEC_INFERENCE"] = mode
        exes[mode] = chain_symbol(n).bind(gx.cpu(), {"x": x})
    del os.environ["MXNET_EXEC_BULK_EXEC_INFERENCE"]
    bare, bare_out = bare_numpy_program(n, x)
    bare()
    for exe in exes.values():
        np.testing.assert_allclose(exe.forward()[0], bare_out, rtol=1e-6)
    times, mx_ms = around(mxnet, lambda: interleaved_medians(
        {"0": exes["0"].forward, "1": exes["1"].forward, "bare": bare}, repeat=31, number=100),
        "tinychain", n, 31, 1)
    t_bare = times["bare"]
    print(f"tiny chain, {n} ops on (1,16), forward(is_train=False):")
    for mode, label in (("0", "node loop (bulk off)"), ("1", "bulk execution      ")):
        t = times[mode]
        print(f"  graphexec {label} {t / n * 1e6:6.3f} us/op  ({t * 1e6:7.1f} us/forward)  "
              f"ratio to bare numpy {t / t_bare:.3f}")
    print(f"  bare numpy program             {t_bare / n * 1e6:6.3f} us/op  "
          f"({t_bare * 1e6:7.1f} us/forward)")
    if mx_ms is not None:
        print(f"  MXNet 1.9.1 timed around it    {mx_ms * 1e3 / n:6.3f} us/op  "
              f"({mx_ms * 1e3:7.1f} us/forward)  bulk execution / MXNet "
              f"{times['1'] * 1e3 / mx_ms:.3f}")
    print(f"  goals: node loop <= 1.25 x bare numpy; bulk faster than MXNet 1.9.1 (recorded "
          f"{MXNET_PER_OP_US} us/op)")


def bench_bind(mxnet: str | None, sizes=(1000, 5000, 20000)) -> None:
    print("simple_bind (grad_req null) of elementwise chains:")
    prev = None
    for n in sizes:
        sym = chain_symbol(n)
        t, mx_ms = around(mxnet, lambda: median_time(
            lambda: sym.simple_bind(gx.cpu(), grad_req="null", x=(1, 16)), repeat=5),
            "bind", n, 5, 1)
        mx_s = MXNET_BIND_S[n] if mx_ms is None else mx_ms / 1e3
        label = "MXNet" if mx_ms is None else "MXNet timed around it"
        growth = f"  x{t / prev[1]:.2f} for x{n / prev[0]:.0f} nodes" if prev else ""
        print(f"  {n:6d} nodes: {t:7.4f} s   {label} {mx_s:.3f} s   ratio "
              f"{t / mx_s:.2f} (goal <= 2){growth}")
        prev = (n, t)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1, to time MXNet too")
    opts = ap.parse_args()
    bench_tiny_chain(opts.mxnet)
    bench_bind(opts.mxnet)
