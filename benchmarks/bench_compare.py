"""The cost-aware strategy (issues 8, 19): on each zoo model, the forward time of ``auto``
against the best single strategy (NONE, onnxrt, fused), all bound in this process and timed
round-robin (``graphexec.core.runtime.timing.interleave``, as ``graphexec compare`` does),
with the 95% interval of auto's time over the best's, plus the time ``auto`` spends measuring
at bind (bounded by its ``budget`` option).

Run: python benchmarks/bench_compare.py [--models mlp,lenet,...] [--batch N]
"""
from __future__ import annotations

import argparse
import statistics
import time

from graphexec.core.runtime.timing import interleave, speedup
from graphexec.tools.compare.models import load_model, make_inputs

SINGLE = ["NONE", "onnxrt", "fused"]


def bound(model, strategy: str, inputs: dict):
    t0 = time.perf_counter()
    exe = model.bind(strategy)
    bind_s = time.perf_counter() - t0
    for name, value in inputs.items():
        exe.arg_dict[name][...] = value
    exe.forward()
    return exe, bind_s


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mlp,lenet,lstm,pointwise,resnet18_v1")
    ap.add_argument("--repeat", type=int, default=15, help="rounds at least")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds of timing per model")
    opts = ap.parse_args()
    print(f"{'model':12s} {'NONE':>9s} {'onnxrt':>9s} {'fused':>9s} {'auto':>9s}  best single   "
          f"auto/best (95%)     auto bind s  auto's regions")
    for name in opts.models.split(","):
        model = load_model(name)
        inputs = make_inputs(model)
        exes = {s: bound(model, s, inputs)[0] for s in SINGLE}
        exes["auto"], auto_bind = bound(model, "auto", inputs)
        samples, _ = interleave({s: (lambda e=e: _seconds(e)) for s, e in exes.items()},
                                min_rounds=opts.repeat, max_rounds=10 * opts.repeat,
                                budget_s=opts.budget)
        t = {s: statistics.median(v) for s, v in samples.items()}
        best = min(SINGLE, key=t.get)
        ratio = speedup(samples[best], samples["auto"])   # best's time over auto's
        lo, hi = ratio["ci95"] or (float("nan"), float("nan"))
        regions = exes["auto"].partition_plan.regions
        chosen = ", ".join(sorted({f"{r.backend}" for r in regions})) or "none"
        print(f"{name:12s} " + " ".join(f"{t[s] * 1e3:8.2f}m" for s in SINGLE + ["auto"])
              + f"  {best:11s}  {1 / ratio['estimate']:.3f} ({1 / hi:.2f}-{1 / lo:.2f})"
                f"  {auto_bind:10.2f}   {len(regions)} ({chosen})")


def _seconds(exe, number: int = 3) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        exe.forward()
    return (time.perf_counter() - t0) / number


if __name__ == "__main__":
    main()
