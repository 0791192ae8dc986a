"""GPU figure of issue 22: one fused pointwise chain of 10 ops over N float32 (default 100M)
on a CUDA device, against the device's copy bandwidth and against the same chain in CuPy op
by op, all timed in alternation in one run (CUDA events around each call, medians).

The fused kernel is the code generator's (backends/fused/codegen.py) built by
backends/fused/cuda.py and launched on CuPy arrays; the copy moves the same bytes as the
chain (N floats read, N written), so copy time / fused time is the fraction of the copy
bandwidth the chain reaches (goal >= 0.7), unfused / fused its speed-up over CuPy (goal >=
4x). Needs CuPy and numba's CUDA target on a machine with a GPU.

``--simulate`` runs the same code path small under numba's CUDA simulator on NumPy arrays
(``NUMBA_ENABLE_CUDASIM=1`` is set before numba is imported): a check of the script and of
the results, no timing that means anything.

Run: python benchmarks/bench_gpu.py [--size 100000000] [--repeat 20] [--simulate]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

#: the chain: ten pointwise ops, as graphexec symbols and as CuPy/NumPy calls
OPS = 10


def chain_symbol(S):
    x = S.Variable("x")
    y = x * 1.5               # 1 _mul_scalar
    y = y + 0.25              # 2 _plus_scalar
    y = S.tanh(y)             # 3 tanh
    y = y * y                 # 4 elemwise_mul
    y = S.exp(-y)             # 5 negative, 6 exp
    y = y + x                 # 7 elemwise_add
    y = S.relu(y)             # 8 relu
    y = y + 1.0               # 9 _plus_scalar
    return S.sqrt(y)          # 10 sqrt


def chain_eager(xp, x):
    """The chain op by op (each call a kernel and a temporary, as CuPy runs it)."""
    y = x * xp.float32(1.5)
    y = y + xp.float32(0.25)
    y = xp.tanh(y)
    y = y * y
    y = xp.exp(-y)
    y = y + x
    y = xp.maximum(y, xp.float32(0))
    y = y + xp.float32(1)
    return xp.sqrt(y)


def _timer(xp, simulate: bool):
    if simulate:
        def timed(fn) -> float:
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0
        return timed
    start, stop = xp.cuda.Event(), xp.cuda.Event()

    def timed(fn) -> float:
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        return xp.cuda.get_elapsed_time(start, stop) / 1e3
    return timed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--simulate", action="store_true")
    opts = ap.parse_args()
    if opts.simulate:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        opts.size = min(opts.size, 4096)
    import graphexec as gx
    from graphexec.backends.fused.codegen import generate
    from graphexec.backends.fused.cuda import cuda_runner
    from graphexec.core.subgraph import RegionCall

    ctx = gx.cpu() if opts.simulate else gx.gpu(0)
    xp = ctx.xp
    sym = chain_symbol(gx.sym)
    x = xp.asarray(np.random.default_rng(0).uniform(-2, 2, opts.size).astype("f4"))
    out, copy = xp.empty_like(x), xp.empty_like(x)
    kernel = generate(sym, ["x"], [x.shape], [x.dtype])
    fused = cuda_runner(kernel, RegionCall(sym, ["x"], [x], [out], ctx, False, "chain"))
    fused()
    want = chain_eager(xp, x)
    err = float(abs(out - want).max())
    fns = {"fused": fused, "copy": lambda: xp.copyto(copy, x),
           "cupy": lambda: chain_eager(xp, x)}
    timed = _timer(xp, opts.simulate)
    for fn in fns.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(opts.repeat):
        for name, fn in fns.items():
            samples[name].append(timed(fn))
    med = {k: statistics.median(v) for k, v in samples.items()}
    gbs = 2 * 4 * opts.size / 1e9
    device = "numba CUDA simulator (NumPy)" if opts.simulate else \
        xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{device}: {OPS}-op chain over {opts.size} float32, median of {opts.repeat}, "
          f"max |fused - op by op| {err:.2e}")
    print(f"  copy   {med['copy'] * 1e3:9.3f} ms  {gbs / med['copy']:8.1f} GB/s")
    print(f"  fused  {med['fused'] * 1e3:9.3f} ms  {gbs / med['fused']:8.1f} GB/s  "
          f"{med['copy'] / med['fused']:.2f} of the copy bandwidth")
    print(f"  op by op {med['cupy'] * 1e3:7.3f} ms  fused is {med['cupy'] / med['fused']:.1f}x "
          f"faster")
    if err > 1e-5 * max(1.0, float(abs(want).max())):
        sys.exit(f"fused results differ from the op-by-op chain by {err}")


if __name__ == "__main__":
    main()
