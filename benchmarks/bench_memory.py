"""Memory-planning figures (issue 4): bytes planned for ResNet-18 v1 (full width, 224x224)
binds, against what MXNet 1.9.1 plans for the same binds (its debug_str "Total N MB
allocated", MXNET_SUBGRAPH_BACKEND=NONE) and against no reuse at all.

Run: python benchmarks/bench_memory.py
"""
from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import graphexec as gx  # noqa: E402

ZOO = Path(__file__).resolve().parent.parent / "tests" / "data" / "json" / "zoo_resnet18_v1-symbol.json.gz"
# MXNet 1.9.1, MXNET_SUBGRAPH_BACKEND=NONE, measured on this machine class (MB)
MXNET_MB = {("inference", 1): 7, ("inference", 16): 113, ("training", 1): 23, ("training", 16): 376}


def resnet18(train: bool) -> gx.sym.Symbol:
    sym = gx.sym.load_json(gzip.decompress(ZOO.read_bytes()).decode())
    return gx.sym.SoftmaxOutput(sym, name="softmax") if train else sym


def planned(mode: str, batch: int) -> dict:
    train = mode == "training"
    sym = resnet18(train)
    shapes = {"data": (batch, 3, 224, 224)}
    if train:
        reqs = {n: ("write" if n not in ("data", "softmax_label") else "null")
                for n in sym.list_arguments()}
        exe = sym.simple_bind(gx.cpu(), grad_req=reqs, **shapes)
    else:
        exe = sym.simple_bind(gx.cpu(), grad_req="null", **shapes)
    return exe.memory_plan


def main() -> None:
    print("ResNet-18 v1 (full width, 224x224): planned internal memory, MB (>> 20 as debug_str)")
    modes = sys.argv[1:] or ["inference", "training"]
    for mode in modes:
        for batch in (1, 16):
            plan = planned(mode, batch)
            ours, none = plan["planned_bytes"] >> 20, plan["unplanned_bytes"] >> 20
            mx = MXNET_MB[(mode, batch)]
            print(f"  {mode:9s} batch {batch:2d}: graphexec {ours:5d} MB   MXNet 1.9.1 {mx:4d} MB   "
                  f"no reuse {none:5d} MB   ratio to MXNet {ours / mx:.2f} (goal <= 1.0)")


if __name__ == "__main__":
    main()
