"""Control-flow figures (issue 18): an RNN written with ``contrib.foreach`` (a tanh cell of two
FullyConnected layers, hidden 256, batch 32, 50 steps, loss = MakeLoss of the summed
outputs), inference forward and train step (forward + backward of every parameter), against
MXNet 1.9.1 timed in alternation in the same run (a worker process of the oracle venv bound
once on the same symbol JSON, written by graphexec; see common.MXNetWorker).

Run: OMP_NUM_THREADS=2 python benchmarks/bench_control_flow.py --mxnet /path/to/mxvenv/bin/python
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

HIDDEN, BATCH, STEPS = 256, 32, 50


def foreach_rnn() -> tuple[gx.sym.Symbol, dict]:
    S = gx.sym
    data, h0 = S.Variable("data"), S.Variable("h0")
    wx, wh, bias = S.Variable("wx"), S.Variable("wh"), S.Variable("bias")

    def step(x, states):
        h = S.tanh(S.FullyConnected(x, wx, bias, num_hidden=HIDDEN) +
                   S.FullyConnected(states[0], wh, no_bias=True, num_hidden=HIDDEN))
        return h, [h]
    out, _ = S.contrib.foreach(step, data, [h0])
    loss = S.MakeLoss(S.sum(out))
    shapes = {"data": (STEPS, BATCH, HIDDEN), "h0": (BATCH, HIDDEN)}
    return loss, shapes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", 2)))
    ap.add_argument("--repeat", type=int, default=15)
    opts = ap.parse_args()
    sym, shapes = foreach_rnn()
    trained = [n for n in sym.list_arguments() if n not in shapes]
    rng = np.random.default_rng(0)
    execs = {}
    for kind, req in (("forward", "null"), ("train", {n: "write" if n in trained else "null"
                                                      for n in sym.list_arguments()})):
        exe = sym.simple_bind(gx.cpu(), grad_req=req, **shapes)
        for arr in exe.arg_dict.values():
            arr[...] = rng.uniform(-0.05, 0.05, arr.shape)
        execs[kind] = exe

    def train():
        execs["train"].forward(is_train=True)
        execs["train"].backward()
    fns = {"forward": lambda: execs["forward"].forward(is_train=False), "train step": train}
    kinds = {"forward": "forward", "train step": "train"}
    worker = None
    with tempfile.TemporaryDirectory() as tmp:
        if opts.mxnet:
            path = os.path.join(tmp, "foreach-symbol.json")
            sym.save(path)
            spec = os.path.join(tmp, "spec.json")
            Path(spec).write_text(json.dumps({"symbol": path, "shapes": shapes,
                                              "trained": trained}))
            worker = MXNetWorker(opts.mxnet, spec, opts.threads)
        for fn in fns.values():
            fn()
        times = alternating_medians(fns, worker, kinds, opts.repeat)
        if worker is not None:
            worker.close()
    print(f"foreach RNN, hidden {HIDDEN}, batch {BATCH}, {STEPS} steps, threads {opts.threads}:")
    for name, t in fns.items():
        mx = times.get(f"mxnet {kinds[name]}")
        ratio = f"   / MXNet {times[name] / mx:.3f}" if mx else ""
        print(f"  {name:12s} {times[name] * 1e3:8.2f} ms{ratio}")
    for name, t in times.items():
        if name.startswith("mxnet "):
            print(f"  {name:12s} {t * 1e3:8.2f} ms   (MXNet 1.9.1, timed in alternation)")


if __name__ == "__main__":
    main()
