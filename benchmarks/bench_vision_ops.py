"""Vision operator figures (issue 17: resampling, geometry, normalisation), MXNet 1.9.1 timed
in alternation in the same run (a worker process of the oracle venv, bound once; see
common.MXNetWorker): one small graph per operator at the sizes GluonCV's heads use, inference
forward natively, the same symbol JSON on both sides, inputs uniform in +-0.05 (the
deformable offsets too).

Run: OMP_NUM_THREADS=2 python benchmarks/bench_vision_ops.py --mxnet /path/to/mxvenv/bin/python
     [--only resize,adaptive,...] [--repeat 15]
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

S = gx.sym


def _var(name):
    return S.Variable(name)


def cases() -> dict:
    """name -> (symbol, input shapes)."""
    x = _var("data")
    out = {
        # FCN/PSPNet: logits upsampled 8x back to the image
        "resize": (S._contrib_BilinearResize2D(x, height=480, width=480),
                   {"data": (1, 21, 60, 60)}),
        # PSPNet's pyramid pooling: 1, 2, 3, 6 bins of a 2048-channel map
        "adaptive": (S.Group([S._contrib_AdaptiveAvgPooling2D(x, output_size=s)
                              for s in (1, 2, 3, 6)]), {"data": (1, 2048, 60, 60)}),
        "upsampling": (S.UpSampling(x, _var("w"), scale=2, sample_type="bilinear",
                                    num_filter=256, num_args=1), {"data": (1, 256, 32, 32)}),
        "groupnorm": (S.GroupNorm(x, _var("g"), _var("b"), num_groups=32),
                      {"data": (8, 256, 32, 32)}),
        "instancenorm": (S.InstanceNorm(x, _var("g"), _var("b")), {"data": (8, 64, 64, 64)}),
        # SSD's conv4_3 normalisation
        "l2norm": (S.L2Normalization(x, mode="channel"), {"data": (8, 512, 38, 38)}),
        "lrn": (S.LRN(x, nsize=5), {"data": (8, 96, 55, 55)}),
        "sampler": (S.BilinearSampler(x, _var("grid")),
                    {"data": (8, 64, 32, 32), "grid": (8, 2, 32, 32)}),
        "correlation": (S.Correlation(x, _var("data2"), max_displacement=4, pad_size=4),
                        {"data": (4, 64, 24, 32), "data2": (4, 64, 24, 32)}),
        "deformconv": (S._contrib_DeformableConvolution(x, _var("offset"), kernel=(3, 3),
                                                        pad=(1, 1), num_filter=64),
                       {"data": (1, 64, 32, 32), "offset": (1, 18, 32, 32)}),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1")
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", 2)))
    opts = ap.parse_args()
    wanted = [n for n in opts.only.split(",") if n] or list(cases())
    rng = np.random.default_rng(0)
    print(f"forward, threads {opts.threads}, ratio = graphexec / MXNet 1.9.1 (in alternation)")
    for name, (sym, shapes) in cases().items():
        if name not in wanted:
            continue
        exe = sym.simple_bind(gx.cpu(), grad_req="null", **shapes)
        for arr in list(exe.arg_dict.values()) + list(exe.aux_dict.values()):
            arr[...] = rng.uniform(-0.05, 0.05, arr.shape)
        mx = None
        with tempfile.TemporaryDirectory() as tmp:
            if opts.mxnet:
                path = os.path.join(tmp, "op-symbol.json")
                sym.save(path)
                spec = os.path.join(tmp, "spec.json")
                Path(spec).write_text(json.dumps({"symbol": path, "shapes": shapes,
                                                  "trained": []}))
                mx = MXNetWorker(opts.mxnet, spec, opts.threads)
            fns = {"graphexec": lambda e=exe: e.forward(is_train=False)}
            fns["graphexec"]()
            times = alternating_medians(fns, mx, {"graphexec": "forward"}, opts.repeat)
            if mx:
                mx.close()
        ge, theirs = times["graphexec"], times.get("mxnet forward")
        ratio = f"{ge / theirs:6.2f}x" if theirs else "   -"
        mxt = f"{theirs * 1e3:8.2f}" if theirs else "       -"
        print(f"  {name:14s} graphexec {ge * 1e3:8.2f} ms   MXNet {mxt} ms   {ratio}")


if __name__ == "__main__":
    main()
