"""Generate lstm_case.npz with the MXNet 1.9.1 oracle: bucketing of an unrolled LSTM over two
sequence lengths sharing parameters (default bucket 5, then 3), as BucketingModule binds them.

Run: /tmp/mxvenv/bin/python tests/data/bucketing/make_lstm_case.py  (never imported by tests)
"""
import os
import sys

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from lstm_sym import BATCH, HIDDEN, INPUT, PARAMS, VOCAB, lstm_symbol  # noqa: E402

rng = np.random.default_rng(7)
out = {}
shapes = {5: None, 3: None}
buffer = {}
execs = {}
for key in (5, 3):
    s = lstm_symbol(mx.sym, key)
    dshapes = dict(data=(BATCH, key, INPUT), softmax_label=(BATCH, key), init_h=(BATCH, HIDDEN),
                   init_c=(BATCH, HIDDEN))
    grad_req = {n: ("write" if n in PARAMS else "null") for n in s.list_arguments()}
    exe = s.simple_bind(mx.cpu(), grad_req=grad_req, shared_exec=execs.get(5),
                        shared_arg_names=list(PARAMS), shared_buffer=buffer, **dshapes)
    execs[key] = exe
    if key == 5:
        for n in PARAMS:
            val = rng.uniform(-0.3, 0.3, exe.arg_dict[n].shape).astype("f4")
            exe.arg_dict[n][:] = val
            out[f"param:{n}"] = val
    inputs = {"data": rng.uniform(-1, 1, (BATCH, key, INPUT)).astype("f4"),
              "softmax_label": rng.integers(0, VOCAB, (BATCH, key)).astype("f4"),
              "init_h": rng.uniform(-0.5, 0.5, (BATCH, HIDDEN)).astype("f4"),
              "init_c": rng.uniform(-0.5, 0.5, (BATCH, HIDDEN)).astype("f4")}
    for n, v in inputs.items():
        exe.arg_dict[n][:] = v
        out[f"len{key}:in:{n}"] = v
    exe.forward(is_train=True)
    exe.backward()
    mx.nd.waitall()
    out[f"len{key}:out0"] = exe.outputs[0].asnumpy()
    for n in PARAMS:
        out[f"len{key}:grad:{n}"] = exe.grad_dict[n].asnumpy()
np.savez_compressed(os.path.join(os.path.dirname(__file__), "lstm_case.npz"), **out)
print(sorted(out))
