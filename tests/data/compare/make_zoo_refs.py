"""Regenerate ``zoo_resnet50_v1-symbol.json.gz`` with a real MXNet 1.9.1 (not run by the tests).

    /path/to/mxnet-venv/bin/python tests/data/compare/make_zoo_refs.py

Gluon's ``export()`` of ``resnet50_v1`` (pretrained=False, hybridized, one forward on zeros),
gzipped. Run it in a fresh process: Gluon numbers models per process, and the first one gets
the ``resnetv10_`` prefix that graphexec's zoo builder uses. (The ResNet-18 reference is
``tests/data/json/zoo_resnet18_v1-symbol.json.gz``, made the same way.)
"""
import gzip
import os
import tempfile

import mxnet as mx
from mxnet.gluon.model_zoo import vision

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    net = vision.resnet50_v1()
    net.initialize()
    net.hybridize()
    net(mx.nd.zeros((1, 3, 224, 224)))
    with tempfile.TemporaryDirectory() as tmp:
        net.export(os.path.join(tmp, "resnet50_v1"))
        with open(os.path.join(tmp, "resnet50_v1-symbol.json"), "rb") as f:
            text = f.read()
    with open(os.path.join(HERE, "zoo_resnet50_v1-symbol.json.gz"), "wb") as f:
        f.write(gzip.compress(text, 9, mtime=0))


if __name__ == "__main__":
    main()
