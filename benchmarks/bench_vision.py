"""Vision figures (issue 17): GluonCV SSD-MobileNet and YOLOv3-MobileNet inference (the corpus
of tests/data/vision/models/make_models.py: random weights, calibrated BatchNorm, post-NMS
outputs) with each graphexec strategy against MXNet 1.9.1's default CPU backend (oneDNN
kernels on, MXNET_SUBGRAPH_BACKEND unset), timed in alternation: MXNet runs in a worker
process of the oracle venv (common.MXNetWorker, mxnet_oracle.py serve), one call at a time
in turn with graphexec's, so the two never run at once and drift hits both alike.

Run: GRAPHEXEC_VISION_MODELS=/work/refdata/vision python benchmarks/bench_vision.py \\
        --mxnet /work/oracle/bin/python [--threads 2] [--repeat 20] \\
        [--models ssd_512_mobilenet1.0_voc,yolo3_mobilenet1.0_voc] [--size 512]
        [--strategies NONE,onnxrt,fused,auto]
Prints per model and strategy the median ms, the ratio to MXNet (< 1: graphexec faster), the
largest score difference from MXNet's recorded outputs, and the best strategy.
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

MODELS = "ssd_512_mobilenet1.0_voc,yolo3_mobilenet1.0_voc"


def model_input(folder: Path, name: str, size: int) -> np.ndarray:
    """The recorded input, or a random image of ``size`` x ``size`` (GluonCV's SSD and YOLOv3
    exports take any size up to their anchor allocation)."""
    data = np.load(folder / f"{name}-io.npz")["data"]
    if not size:
        return data
    return np.random.default_rng(0).uniform(0, 1, (1, 3, size, size)).astype("f4")


def bind(folder: Path, name: str, strategy: str, threads: int, data: np.ndarray):
    sym, args, aux = gx.model.load_checkpoint(str(folder / name), 0)
    options = {"onnxrt": {"threads": threads}} if strategy in ("onnxrt", "auto") else None
    exe = sym.simple_bind(gx.cpu(), data=data.shape, grad_req="null", backend=strategy,
                          backend_options=options)
    exe.copy_params_from(args, aux)
    exe.arg_dict["data"][...] = data
    return exe


def score_diff(exe, io, size: int) -> float:
    """Largest difference of the sorted scores from MXNet's recorded ones (orders may differ
    on ties); NaN at another input size (nothing recorded)."""
    got = np.sort(np.asarray(exe.forward()[1]).ravel())
    if size:
        return float("nan")
    return float(np.abs(got - np.sort(io["out1"].ravel())).max())


def worker_for(folder: Path, name: str, python: str, threads: int,
               data: np.ndarray) -> MXNetWorker:
    inputs = Path(tempfile.mkdtemp()) / "inputs.npz"
    np.savez(inputs, data=data)
    spec = {"symbol": str(folder / f"{name}-symbol.json"), "shapes": {"data": list(data.shape)},
            "params": str(folder / f"{name}-0000.params"), "arrays": str(inputs),
            "trained": []}
    path = inputs.with_name("spec.json")
    path.write_text(json.dumps(spec))
    return MXNetWorker(python, str(path), threads, subgraph_backend="default")


def run(folder: Path, name: str, opts) -> None:
    io = np.load(folder / f"{name}-io.npz")
    data = model_input(folder, name, opts.size)
    execs = {s: bind(folder, name, s, opts.threads, data) for s in opts.strategies.split(",")}
    diffs = {s: score_diff(exe, io, opts.size) for s, exe in execs.items()}
    worker = worker_for(folder, name, opts.mxnet, opts.threads, data) if opts.mxnet else None
    try:
        t = alternating_medians({s: exe.forward for s, exe in execs.items()}, worker,
                                {s: "forward" for s in execs}, opts.repeat)
    finally:
        if worker is not None:
            worker.close()
    mx_ms = t.get("mxnet forward", float("nan")) * 1e3
    print(f"{name} {tuple(data.shape)}: MXNet 1.9.1 (default CPU backend) "
          f"{mx_ms:.1f} ms")
    for s, exe in execs.items():
        ms = t[s] * 1e3
        regions = len(exe.partition_plan.regions) if exe.partition_plan is not None else 0
        print(f"  {s:8s} {ms:8.1f} ms  {ms / mx_ms:5.2f}x MXNet  regions {regions:3d}  "
              f"max score diff {diffs[s]:.1e}")
    best = min(execs, key=lambda s: t[s])
    print(f"  best: {best} at {t[best] * 1e3 / mx_ms:.2f}x MXNet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--strategies", default="NONE,onnxrt,fused,auto")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--mxnet", default="", help="python of a venv with mxnet==1.9.1")
    ap.add_argument("--size", type=int, default=0,
                    help="input size (default: the corpus's recorded input, 128x128)")
    opts = ap.parse_args()
    folder = Path(os.environ.get("GRAPHEXEC_VISION_MODELS", "/work/refdata/vision"))
    for name in opts.models.split(","):
        if not (folder / f"{name}-symbol.json").is_file():
            print(f"{name}: not in {folder} (make it with "
                  f"tests/data/vision/models/make_models.py)")
            continue
        run(folder, name, opts)


if __name__ == "__main__":
    main()
