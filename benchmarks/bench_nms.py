"""NMS figure (issue 17): ``_contrib_box_nms`` on 10k boxes against MXNet 1.9.1's box_nms,
timed in alternation in the same run (a worker process of the oracle venv, bound once, fed
the same boxes; see common.MXNetWorker).

The boxes are detector-like: [class id, score, x1, y1, x2, y2] with 20 classes, scores
uniform in [0, 1), corners uniform in a 512x512 image, sides uniform in [16, 128) (seed 0).
Settings: MXNet's defaults (class-agnostic, overlap 0.5), per-class suppression
(``id_index=0``, as SSD/YOLO post-processing), a looser overlap (0.7) and ``topk=1000``.

Run: OMP_NUM_THREADS=2 python benchmarks/bench_nms.py --mxnet /path/to/mxvenv/bin/python
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

SETTINGS = {
    "defaults (overlap 0.5)": {},
    "per class (id_index=0)": {"id_index": 0},
    "overlap 0.7": {"overlap_thresh": 0.7},
    "topk 1000": {"topk": 1000},
}


def boxes(n: int, seed: int = 0) -> np.ndarray:
    """(1, n, 6) rows [id, score, x1, y1, x2, y2] (see the module docstring)."""
    rng = np.random.RandomState(seed)
    xy = rng.uniform(0, 512, (n, 2))
    wh = rng.uniform(16, 128, (n, 2))
    rows = np.concatenate([rng.randint(0, 20, (n, 1)), rng.uniform(0, 1, (n, 1)), xy, xy + wh],
                          axis=1)
    return rows.astype("float32")[None]


def worker(opts, sym, data: np.ndarray, tmp: str, tag: str):
    if not opts.mxnet:
        return None
    path, arrays = os.path.join(tmp, f"{tag}-symbol.json"), os.path.join(tmp, f"{tag}.npz")
    sym.save(path)
    np.savez(arrays, data=data)
    spec = os.path.join(tmp, f"{tag}.json")
    Path(spec).write_text(json.dumps({"symbol": path, "shapes": {"data": list(data.shape)},
                                      "trained": [], "arrays": arrays}))
    return MXNetWorker(opts.mxnet, spec, opts.threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mxnet", default="", help="python of a venv with mxnet==1.9.1")
    parser.add_argument("--boxes", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS",
                                                                          "2")))
    opts = parser.parse_args()
    data = boxes(opts.boxes)
    print(f"box_nms on {opts.boxes} boxes, threads {opts.threads}, median of {opts.repeat} "
          f"runs in alternation:")
    with tempfile.TemporaryDirectory() as tmp:
        for k, (title, attrs) in enumerate(SETTINGS.items()):
            sym = gx.sym._contrib_box_nms(gx.sym.Variable("data"), **attrs)
            exe = sym.bind(gx.cpu(), {"data": data})
            kept = int((exe.forward()[0][0, :, 0] >= 0).sum())
            mx = worker(opts, sym, data, tmp, f"nms{k}")
            times = alternating_medians({"graphexec": lambda e=exe: e.forward()}, mx,
                                        {"graphexec": "forward"}, opts.repeat)
            ours, theirs = times["graphexec"], times.get("mxnet forward")
            ratio = f"  MXNet {theirs * 1e3:8.1f} ms  ratio {ours / theirs:.2f}x" if theirs \
                else ""
            print(f"  {title:26s} kept {kept:5d}  graphexec {ours * 1e3:8.1f} ms{ratio}")
            if mx:
                mx.close()


if __name__ == "__main__":
    main()
