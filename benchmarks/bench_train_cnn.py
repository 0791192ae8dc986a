"""Train-step figures on real networks (issue 21), MXNet 1.9.1 timed in alternation in the same
run (a worker process of the oracle venv, bound once, ``MXNET_SUBGRAPH_BACKEND=NONE``: its
default CPU backend, oneDNN kernels, or unset with ``--mxnet-backend default``; see
common.MXNetWorker):

- ``resnet18``: ResNet-18 v1 (the Gluon zoo symbol in tests/data/json) with SoftmaxOutput,
  batch 16, 112x112;
- ``mobilenet``: MobileNet v1 0.25 (the Gluon zoo symbol), same batch and size;
- ``lstm``: the LSTM LM of benchmarks/bench_seq.py (2x650, vocabulary 10000, batch 32,
  35 steps).

One train step is forward(is_train=True) + backward() of every parameter; each strategy
named in ``--strategies`` is bound once and timed in turn with MXNet, each turn after an idle
pause (common.SETTLE). ``--steps N`` runs N steps back to back in each turn: the first one,
right after the pause (threads asleep, caches holding the other process's data), and the
mean of the others (a training loop's steady state) are reported apart. The ratio to MXNet is
the estimate over the rounds' own ratios with its 95% interval (common.paired_ratio).
Parameters are uniform in +-0.05 on both sides (the same symbol JSON, written by graphexec).

Run: OMP_NUM_THREADS=2 python benchmarks/bench_train_cnn.py [resnet18,mobilenet,lstm]
     --mxnet /path/to/mxvenv/bin/python [--strategies "NONE;torch"] [--repeat 7] [--steps 1]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_seq import lstm_lm  # noqa: E402
from common import MXNetWorker, add_mxnet_backend, alternating_samples, paired_ratio  # noqa: E402

import graphexec as gx  # noqa: E402

ZOO = Path(__file__).resolve().parent.parent / "tests" / "data" / "json"
BATCH, SIZE, CLASSES = 16, 112, 1000


def zoo_classifier(name: str) -> tuple[gx.sym.Symbol, dict, dict]:
    """(symbol with SoftmaxOutput, input shapes, integer inputs and their range)."""
    net = gx.sym.load_json(gzip.decompress((ZOO / f"zoo_{name}-symbol.json.gz")
                                           .read_bytes()).decode())
    sym = gx.sym.SoftmaxOutput(net, gx.sym.Variable("softmax_label"), name="softmax")
    shapes = {"data": (BATCH, 3, SIZE, SIZE), "softmax_label": (BATCH,)}
    return sym, shapes, {"softmax_label": (0, CLASSES)}


MODELS = {"resnet18": lambda: zoo_classifier("resnet18_v1"),
          "mobilenet": lambda: zoo_classifier("mobilenet0.25"),
          "lstm": lstm_lm}


def fill(exe, ints: dict, rng) -> None:
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        if name in ints:
            arr[...] = rng.integers(*ints[name], arr.shape)
        else:
            arr[...] = rng.uniform(-0.05, 0.05, arr.shape)
            if name.endswith("_var"):  # BatchNorm's moving variance, as mxnet_oracle.py fills it
                np.abs(arr, out=arr)


def train_step(sym, shapes: dict, ints: dict, trained: list, backend: str):
    grads = {n: "write" if n in trained else "null" for n in sym.list_arguments()}
    exe = sym.simple_bind(gx.cpu(), grad_req=grads, backend=backend, **shapes)
    fill(exe, ints, np.random.default_rng(0))

    def step():
        exe.forward(is_train=True)
        exe.backward()
    return step


def run(model: str, opts, tmp: str) -> None:
    sym, shapes, ints = MODELS[model]()
    trained = [n for n in sym.list_arguments() if n not in shapes]
    mx = None
    if opts.mxnet:
        path = os.path.join(tmp, f"{model}-symbol.json")
        sym.save(path)
        spec = os.path.join(tmp, f"{model}-spec.json")
        Path(spec).write_text(json.dumps({"symbol": path, "shapes": shapes,
                                          "trained": trained, "int_inputs": ints}))
        mx = MXNetWorker(opts.mxnet, spec, opts.threads, opts.mxnet_backend)
    fns = {f"train step {b}": train_step(sym, shapes, ints, trained, b)
           for b in opts.strategies.split(";")}
    kinds = {name: "train" for name in fns}
    for fn in fns.values():  # warm up: kernels made, caches filled
        fn()
    samples = alternating_samples(fns, mx, kinds, opts.repeat, opts.steps)
    print(f"{model}: {shapes}, threads {opts.threads}, "
          f"median of {opts.repeat}" + (f", {opts.steps} steps a turn" if opts.steps > 1 else "")
          + ":")
    reported = [("", "")]
    if opts.steps > 1:
        later = "step 2" if opts.steps == 2 else f"steps 2-{opts.steps}"
        reported = [("", "after idle"), (" steady", f"{later}, back to back")]
    for suffix, what in reported:
        ref = samples.get("mxnet train" + suffix)
        for name in fns:
            got = samples[name + suffix]
            ratio = f"   / MXNet {paired_ratio(got, ref)}" if ref else ""
            print(f"  {name:24s} {statistics.median(got) * 1e3:9.1f} ms{ratio}   {what}".rstrip(),
                  flush=True)
        if ref:
            print(f"  {'MXNet 1.9.1 train step':24s} {statistics.median(ref) * 1e3:9.1f} ms   "
                  f"{what}{', ' if what else ''}timed in alternation")
    if mx:
        mx.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="?", default="resnet18,mobilenet,lstm")
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1, to time MXNet too")
    ap.add_argument("--strategies", default="NONE;torch",
                    help="strategies (bind backends) separated by ';'")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--steps", type=int, default=1,
                    help="steps run back to back in each turn: the first is timed right "
                         "after the idle pause, the others' mean as the steady state")
    add_mxnet_backend(ap)
    opts = ap.parse_args()
    opts.threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    with tempfile.TemporaryDirectory() as tmp:
        for model in opts.models.split(","):
            run(model, opts, tmp)


if __name__ == "__main__":
    main()
