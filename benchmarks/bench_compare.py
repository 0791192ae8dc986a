"""The cost-aware strategy (issue 8): on each zoo model, the forward time of ``auto`` against
the best single strategy (NONE, onnxrt, fused), both bound in this process and timed in
alternation, plus the time ``auto`` spends measuring at bind.

Run: python benchmarks/bench_compare.py [--models mlp,lenet,...] [--batch N]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_medians  # noqa: E402

from graphexec.tools.compare.models import load_model, make_inputs  # noqa: E402

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
    ap.add_argument("--repeat", type=int, default=15)
    opts = ap.parse_args()
    print(f"{'model':12s} {'NONE':>9s} {'onnxrt':>9s} {'fused':>9s} {'auto':>9s}  best single   "
          f"auto/best  auto bind s  auto's regions")
    for name in opts.models.split(","):
        model = load_model(name)
        inputs = make_inputs(model)
        exes = {s: bound(model, s, inputs)[0] for s in SINGLE}
        exes["auto"], auto_bind = bound(model, "auto", inputs)
        t = interleaved_medians({s: (lambda e=e: e.forward()) for s, e in exes.items()},
                                repeat=opts.repeat, number=3)
        best = min(SINGLE, key=t.get)
        regions = exes["auto"].partition_plan.regions
        chosen = ", ".join(sorted({f"{r.backend}" for r in regions})) or "none"
        print(f"{name:12s} " + " ".join(f"{t[s] * 1e3:8.2f}m" for s in SINGLE + ["auto"])
              + f"  {best:11s}  {t['auto'] / t[best]:8.3f}  {auto_bind:10.2f}   "
                f"{len(regions)} ({chosen})")


if __name__ == "__main__":
    main()
