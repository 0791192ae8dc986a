"""Linear-algebra figures (issue 18): a batched Gaussian log-likelihood built from the linalg
operators, graphexec's native kernels against MXNet 1.9.1 timed in alternation in the same
run (a worker process of the oracle venv, bound once; see common.MXNetWorker):

    K = syrk(A) + makediag(ones_like(v))        (B matrices of n x n, positive definite)
    L = potrf(K);  z = trsm(L, Y)
    loss = MakeLoss(sum(sumlogdiag(L)) + 0.5 * sum(z * z))

inference forward and train step (forward + backward to A and Y). The same symbol JSON
runs on both sides; inputs are uniform in +-0.05 on both (the identity keeps K definite).

Run: OMP_NUM_THREADS=2 python benchmarks/bench_linalg.py --mxnet /path/to/mxvenv/bin/python
     [--batch 64 --n 32 --cols 8 --repeat 30]
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


def loglik(batch: int, n: int, cols: int) -> tuple[gx.sym.Symbol, dict]:
    S, la = gx.sym, gx.sym.linalg
    a, y, v = S.Variable("A"), S.Variable("Y"), S.Variable("v")
    k = la.syrk(a) + la.makediag(S.ones_like(v))
    low = la.potrf(k)
    z = la.trsm(low, y)
    loss = S.sum(la.sumlogdiag(low)) + 0.5 * S.sum(z * z)
    shapes = {"A": (batch, n, n), "Y": (batch, n, cols), "v": (batch, n)}
    return S.MakeLoss(loss, name="loss"), shapes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--cols", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    sym, shapes = loglik(args.batch, args.n, args.cols)
    rng = np.random.default_rng(0)
    values = {k: rng.uniform(-0.05, 0.05, s).astype("f4") for k, s in shapes.items()}
    infer = sym.bind(gx.cpu(), dict(values))
    train = sym.bind(gx.cpu(), dict(values), args_grad={k: np.zeros(s, "f4") for k, s in
                                                        shapes.items() if k != "v"},
                     grad_req={"A": "write", "Y": "write", "v": "null"})

    def step():
        train.forward(is_train=True)
        train.backward()
    fns = {"forward": lambda: infer.forward(is_train=False), "train": step}
    worker = None
    if args.mxnet:
        tmp = Path(tempfile.mkdtemp())
        sym.save(str(tmp / "loglik-symbol.json"))
        spec = {"symbol": str(tmp / "loglik-symbol.json"),
                "shapes": {k: list(s) for k, s in shapes.items()}, "trained": ["A", "Y"]}
        (tmp / "spec.json").write_text(json.dumps(spec))
        worker = MXNetWorker(args.mxnet, str(tmp / "spec.json"),
                             int(os.environ.get("OMP_NUM_THREADS", "2")))
    for fn in fns.values():
        fn()
    med = alternating_medians(fns, worker, {"forward": "forward", "train": "train"},
                              args.repeat)
    if worker is not None:
        worker.close()
    print(f"batch {args.batch} of {args.n}x{args.n}, {args.cols} right-hand sides, "
          f"{args.repeat} alternating runs")
    for kind in ("forward", "train"):
        line = f"{kind:8s} graphexec {med[kind] * 1e3:8.3f} ms"
        if worker is not None:
            mx_ms = med[f"mxnet {kind}"] * 1e3
            line += f"   mxnet {mx_ms:8.3f} ms   ratio {med[kind] * 1e3 / mx_ms:5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
