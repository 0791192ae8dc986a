"""Record MXNet 1.9.1's tojson of symbols built with attributes, hidden keys and AttrScope.

Run with the oracle (mxnet 1.9.1):  python tests/data/attrs/make_attrs.py
The same builder runs in tests/test_symbol_behaviours.py against graphexec (``mx`` is then
graphexec), which compares the JSON text."""
import json
import os
import sys


def build(mx, np):
    """name -> symbol, the same code for MXNet and graphexec."""
    out = {}
    with mx.AttrScope(group="4", __data__="great", ctx_group="dev1"):
        data = mx.sym.Variable("data", attr={"mood": "angry", "force_mirroring": "True"},
                               lr_mult=1, shape=(2, 3), dtype="float16")
        e = mx.sym.exp(data, name="e")
    conv = mx.sym.Convolution(data=e, name="conv", kernel=(1, 1), num_filter=1,
                              attr={"__mood__": "so so", "wd_mult": "x"}, lr_mult=2)
    out["conv"] = conv
    fc = mx.sym.FullyConnected(data=conv, num_hidden=np.int64(3), name="fc", wd_mult=0.5,
                               mirror_stage="True")
    t = mx.sym.transpose(fc, axes=(np.int64(1), np.int32(0)), name="t")
    r = mx.sym.repeat(t, 2, name="r")
    out["chain"] = mx.sym.Group([r, mx.sym.sum(r, axis=None, name="s")])
    w = mx.sym.Variable("w", wd_mult=0.1, init="zeros")
    out["var"] = mx.sym.broadcast_add(data, w, name="b", attr={"ctx_group": "g2"})
    return out


if __name__ == "__main__":
    import mxnet as mx
    import numpy as np
    here = os.path.dirname(os.path.abspath(__file__))
    texts = {k: v.tojson() for k, v in build(mx, np).items()}
    with open(os.path.join(here, "attrs.json"), "w") as f:
        json.dump(texts, f, indent=1, sort_keys=True)
    print("wrote", len(texts), "symbols", file=sys.stderr)
