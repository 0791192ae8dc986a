"""Core figures (issue 2): per-op forward cost of a 200-op tiny elementwise chain against a bare
numpy program in the same process, and simple_bind time of long chains.

Run: python benchmarks/bench_core.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import graphexec as gx  # noqa: E402
from common import interleaved_medians, median_time  # noqa: E402

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


def bench_tiny_chain(n: int = 200) -> None:
    x = np.random.default_rng(0).uniform(-1, 1, (1, 16)).astype("f4")
    exe = chain_symbol(n).bind(gx.cpu(), {"x": x})
    bare, bare_out = bare_numpy_program(n, x)
    exe.forward()
    bare()
    np.testing.assert_allclose(exe.outputs[0], bare_out, rtol=1e-6)
    def forward_with(mode):
        def run():
            os.environ["MXNET_EXEC_BULK_EXEC_INFERENCE"] = mode
            exe.forward()
        return run
    times = interleaved_medians({"0": forward_with("0"), "1": forward_with("1"), "bare": bare},
                                repeat=31, number=100)
    t_bare = times["bare"]
    print(f"tiny chain, {n} ops on (1,16), forward(is_train=False):")
    for mode, label in (("0", "node loop (bulk off)"), ("1", "bulk execution      ")):
        t = times[mode]
        print(f"  graphexec {label} {t / n * 1e6:6.3f} us/op  ({t * 1e6:7.1f} us/forward)  "
              f"ratio to bare numpy {t / t_bare:.3f}")
    print(f"  bare numpy program             {t_bare / n * 1e6:6.3f} us/op  "
          f"({t_bare * 1e6:7.1f} us/forward)")
    print(f"  goals: node loop <= 1.25 x bare numpy; bulk < MXNet 1.9.1's {MXNET_PER_OP_US} us/op")


def bench_bind(sizes=(1000, 5000, 20000)) -> None:
    print("simple_bind (grad_req null) of elementwise chains:")
    prev = None
    for n in sizes:
        sym = chain_symbol(n)
        t = median_time(lambda: sym.simple_bind(gx.cpu(), grad_req="null", x=(1, 16)), repeat=5)
        growth = f"  x{t / prev[1]:.2f} for x{n / prev[0]:.0f} nodes" if prev else ""
        print(f"  {n:6d} nodes: {t:7.4f} s   MXNet {MXNET_BIND_S[n]:.3f} s   ratio "
              f"{t / MXNET_BIND_S[n]:.2f} (goal <= 2){growth}")
        prev = (n, t)


if __name__ == "__main__":
    bench_tiny_chain()
    bench_bind()
