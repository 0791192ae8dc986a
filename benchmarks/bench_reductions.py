"""Reductions computed as MXNet computes them (sequential Kahan sums, LAPACK-scaled 2-norms:
backends/default/kernels/reducers.py) against MXNet 1.9.1's own kernels and numpy's pairwise
reductions, timed in alternation in the same run (one MXNet worker process per case, bound
once; see common.MXNetWorker): one inference forward of a graph holding the reduction alone.

Run: OMP_NUM_THREADS=2 python benchmarks/bench_reductions.py --mxnet /path/to/mxvenv/bin/python
     [--repeat 15]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import MXNetWorker, alternating_medians  # noqa: E402

import graphexec as gx  # noqa: E402

#: (operator, input shape, reduced axes)
CASES = [("sum", (1, 1000000), (1,)), ("sum", (1000, 1000), (1,)), ("sum", (1000, 1000), (0,)),
         ("sum", (64, 128, 7, 7), (0, 2, 3)), ("mean", (32, 512), (1,)),
         ("norm", (1000, 1000), (1,))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    tmp = Path(tempfile.mkdtemp())
    print(f"one forward of the reduction alone, median of {args.repeat} alternating runs")
    for op, shape, axes in CASES:
        sym = getattr(gx.sym, op)(gx.sym.Variable("x"), axis=axes)
        x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
        exe = sym.bind(gx.cpu(), {"x": x.copy()})
        numpy_fn = {"sum": np.sum, "mean": np.mean, "norm": np.linalg.norm}[op]
        out = np.empty([d for i, d in enumerate(shape) if i not in axes], np.float32)
        fns = {"graphexec": lambda: exe.forward(is_train=False),
               "numpy": (lambda: numpy_fn(x, axis=axes, out=out)) if op != "norm"
               else (lambda: numpy_fn(x, axis=axes[0]))}
        worker = None
        if args.mxnet:
            sym.save(str(tmp / "r-symbol.json"))
            spec = {"symbol": str(tmp / "r-symbol.json"), "shapes": {"x": list(shape)}}
            (tmp / "spec.json").write_text(json.dumps(spec))
            worker = MXNetWorker(args.mxnet, str(tmp / "spec.json"), threads)
        for fn in fns.values():
            fn()
        med = alternating_medians(fns, worker, {"graphexec": "forward"}, args.repeat)
        if worker is not None:
            worker.close()
        line = (f"{op:5s} {str(shape):16s} axis {str(axes):10s} graphexec "
                f"{med['graphexec'] * 1e3:7.3f} ms   numpy {med['numpy'] * 1e3:7.3f} ms "
                f"({med['graphexec'] / med['numpy']:5.1f}x)")
        if worker is not None:
            mx_ms = med["mxnet forward"] * 1e3
            line += f"   MXNet {mx_ms:7.3f} ms ({med['graphexec'] * 1e3 / mx_ms:4.2f}x)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
