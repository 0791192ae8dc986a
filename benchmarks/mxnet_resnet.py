"""MXNet 1.9.1 side of bench_onnxrt.py: ResNet-18 v1 inference time in ms, printed as one number.
Runs in a separate venv with mxnet==1.9.1 (an oracle, never a dependency):

    OMP_NUM_THREADS=2 /path/to/mxvenv/bin/python benchmarks/mxnet_resnet.py BATCH REPEAT
"""
import gzip
import statistics
import sys
import time
from pathlib import Path

import mxnet as mx
import numpy as np

ZOO = Path(__file__).resolve().parent.parent / "tests" / "data" / "json" / "zoo_resnet18_v1-symbol.json.gz"


def main() -> None:
    batch, repeat = int(sys.argv[1]), int(sys.argv[2])
    sym = mx.sym.load_json(gzip.decompress(ZOO.read_bytes()).decode())
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=(batch, 3, 224, 224))
    rng = np.random.default_rng(0)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = (np.abs(rng.standard_normal(arr.shape)) * 0.05 + 0.5).astype("f4")
    times = []
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        exe.forward(is_train=False)
        exe.outputs[0].wait_to_read()
        times.append(time.perf_counter() - t0)
    print(statistics.median(times[1:]) * 1e3)


if __name__ == "__main__":
    main()
