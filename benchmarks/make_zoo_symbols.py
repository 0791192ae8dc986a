"""Export Gluon model-zoo symbols (random initialisation, no weights needed) for
bench_zoo_native.py --zoo DIR. Runs in the MXNet 1.9.1 oracle venv:

    /path/to/mxvenv/bin/python benchmarks/make_zoo_symbols.py DIR [name ...]

writes DIR/zoo_<name>-symbol.json.gz for each model (default: the whole Gluon vision zoo
but the ones already in tests/data/json)."""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import mxnet as mx
from mxnet.gluon.model_zoo import vision

DEFAULT = ["resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet34_v2", "resnet50_v2",
           "vgg16", "vgg16_bn", "vgg19", "densenet169", "densenet201", "squeezenet1.1",
           "mobilenet1.0", "mobilenet0.5", "mobilenetv2_1.0", "mobilenetv2_0.5"]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[2:] or DEFAULT:
        net = vision.get_model(name)
        net.initialize(mx.init.Xavier())
        net.hybridize()
        size = 299 if name.startswith("inception") else 224
        net(mx.nd.zeros((1, 3, size, size)))
        sym = net(mx.sym.var("data"))
        (out / f"zoo_{name}-symbol.json.gz").write_bytes(gzip.compress(sym.tojson().encode()))
        print(name)


if __name__ == "__main__":
    main()
