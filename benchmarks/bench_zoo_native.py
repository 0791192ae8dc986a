"""Inference on the Gluon model zoo without oneDNN graph fusion (issue 21): graphexec's native
kernels (``NONE``) and the other strategies named, against MXNet 1.9.1 with
``MXNET_SUBGRAPH_BACKEND=NONE``, timed in alternation one forward at a time (a worker process
of the oracle venv, bound once; see common.MXNetWorker). The models are the zoo symbols in
tests/data/json (224x224, Inception v3 299x299), parameters uniform in +-0.05 on both sides.
Prints each model's ratio and their geometric mean; the goal: NONE <= 1.2x MXNet on the
geometric mean, no model over 1.5x. ``--calls N`` makes N forwards back to back in each
turn and reports the first (after the idle pause) and the others' mean (steady state:
threads awake, caches warm) apart, each with its own geometric mean.

Run: OMP_NUM_THREADS=2 python benchmarks/bench_zoo_native.py --mxnet /path/to/mxvenv/bin/python
     [--models resnet18_v1,mobilenet0.25] [--zoo DIR] [--strategies "NONE;torch"] [--batch 1]
     [--calls 3]
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import MXNetWorker, alternating_medians  # noqa: E402

import graphexec as gx  # noqa: E402

#: the keys of a turn of several calls: the first, after the idle pause, and the others' mean
SUFFIXES = ("", " steady")
ZOO = Path(__file__).resolve().parent.parent / "tests" / "data" / "json"


def load(name: str, batch: int, zoo: Path = ZOO):
    sym = gx.sym.load_json(gzip.decompress((zoo / f"zoo_{name}-symbol.json.gz")
                                           .read_bytes()).decode())
    size = 299 if name.startswith("inception") else 224
    return sym, {"data": (batch, 3, size, size)}


def bind(sym, shapes: dict, backend: str):
    exe = sym.simple_bind(gx.cpu(), grad_req="null", backend=backend, **shapes)
    rng = np.random.default_rng(0)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[...] = rng.uniform(-0.05, 0.05, arr.shape)
        if name.endswith("_var"):  # BatchNorm's moving variance, as mxnet_oracle.py fills it
            np.abs(arr, out=arr)
    return lambda: exe.forward(is_train=False)


def run(name: str, opts, tmp: str) -> dict:
    sym, shapes = load(name, opts.batch, opts.zoo)
    mx = None
    if opts.mxnet:
        path = os.path.join(tmp, f"{name}-symbol.json")
        sym.save(path)
        spec = os.path.join(tmp, f"{name}-spec.json")
        Path(spec).write_text(json.dumps({"symbol": path, "shapes": shapes, "trained": [],
                                          "int_inputs": {}}))
        mx = MXNetWorker(opts.mxnet, spec, opts.threads)
    fns = {b: bind(sym, shapes, b) for b in opts.strategies.split(";")}
    for fn in fns.values():
        fn()
    times = alternating_medians(fns, mx, {b: "forward" for b in fns}, opts.repeat, opts.calls)
    if mx:
        mx.close()
    ratios = {}
    for suffix in SUFFIXES if opts.calls > 1 else ("",):
        ref = times.get("mxnet forward" + suffix)
        cells = [f"{b + suffix} {times[b + suffix] * 1e3:8.1f} ms"
                 + (f" ({times[b + suffix] / ref:.2f}x)" if ref else "") for b in fns]
        print(f"  {name:18s} " + "   ".join(cells) +
              (f"   MXNet {ref * 1e3:8.1f} ms" if ref else ""), flush=True)
        if ref:
            ratios.update({b + suffix: times[b + suffix] / ref for b in fns})
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1, to time MXNet too")
    ap.add_argument("--models", default=None,
                    help="names, separated by ','; default: every zoo_*-symbol.json.gz of --zoo")
    ap.add_argument("--zoo", type=Path, default=ZOO,
                    help="folder of zoo_<name>-symbol.json.gz files (default tests/data/json; "
                         "benchmarks/make_zoo_symbols.py exports more in the oracle venv)")
    ap.add_argument("--strategies", default="NONE")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--calls", type=int, default=1,
                    help="forwards back to back in each turn: the first is timed right after "
                         "the idle pause, the others' mean (key 'steady') apart")
    opts = ap.parse_args()
    if opts.models is None:
        opts.models = ",".join(sorted(p.name[len("zoo_"):-len("-symbol.json.gz")]
                                      for p in opts.zoo.glob("zoo_*-symbol.json.gz")))
    opts.threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    turns = (f", {opts.calls} calls a turn (first after idle, 'steady': the others back to "
             f"back)" if opts.calls > 1 else "")
    print(f"Gluon zoo inference, batch {opts.batch}, threads {opts.threads}, median of "
          f"{opts.repeat}{turns}, ratio to MXNet 1.9.1 (MXNET_SUBGRAPH_BACKEND=NONE) in "
          f"alternation:")
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in opts.models.split(","):
            for b, r in run(name, opts, tmp).items():
                ratios.setdefault(b, []).append(r)
    for b, rs in ratios.items():
        geo = math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"  {b}: geometric mean {geo:.2f}x, worst {max(rs):.2f}x over {len(rs)} models")


if __name__ == "__main__":
    main()
