"""Record what MXNet 1.9.1's mx.rnn.FusedRNNCell produces for tests/test_harness_rnn_fused.py:
the packed vector's __init__ attribute and size, unpack_weights' names (in order) and shapes,
state_info, the unfused stack's arguments and output name, and (in fused_rnn.npz) the
fused cell's outputs and input gradient for a fixed packed vector and input.

Run with the oracle python:
  MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /work/oracle-ops/bin/python \
      tests/data/harness/make_fused_rnn.py
"""
import json
from pathlib import Path

import mxnet as mx
import numpy as np

T, N, IN, H, LAYERS = 3, 2, 4, 5, 2
CONFIGS = [("lstm", True), ("lstm", False), ("gru", True), ("gru", False),
           ("rnn_tanh", False), ("rnn_relu", True)]
HERE = Path(__file__).resolve().parent


def record(mode, bidirectional, arrays):
    cell = mx.rnn.FusedRNNCell(H, num_layers=LAYERS, mode=mode, bidirectional=bidirectional,
                               get_next_state=True, prefix="")
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    arg_shapes, _, _ = out.infer_shape(data=(N, T, IN))
    size = arg_shapes[1][0]
    unpacked = cell.unpack_weights({"parameters": mx.nd.arange(size)})
    with mx.name.NameManager():  # automatic names count from 0, as in a fresh process
        unfused, _ = cell.unfuse().unroll(T, mx.sym.Variable("data"), layout="NTC",
                                          merge_outputs=True)
    key = f"{mode}_{'bi' if bidirectional else 'uni'}"
    rng = np.random.RandomState(len(arrays))
    params = rng.uniform(-0.5, 0.5, size).astype("f4")
    data = rng.uniform(-1, 1, (N, T, IN)).astype("f4")
    head = rng.uniform(-1, 1, (N, T, H * (1 + bidirectional))).astype("f4")
    grad = mx.nd.zeros((N, T, IN))
    exe = out.bind(mx.cpu(), {"data": mx.nd.array(data), "parameters": mx.nd.array(params)},
                   args_grad={"data": grad}, grad_req={"data": "write", "parameters": "null"})
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(head)])
    for name, value in (("params", params), ("data", data), ("head", head),
                        ("out", exe.outputs[0].asnumpy()), ("data_grad", grad.asnumpy())):
        arrays[f"{key}/{name}"] = value
    return key, {
        "init": out.attr_dict()["parameters"]["__init__"], "size": size,
        "unpacked": [[n, list(v.shape)] for n, v in unpacked.items()],
        "state_info": [{"shape": list(s["shape"]), "__layout__": s["__layout__"]}
                       for s in cell.state_info],
        "state_layouts": [s.attr("__layout__") for s in states],
        "unfused_arguments": unfused.list_arguments(),
        "unfused_output": unfused.list_outputs()[0],
    }


def main():
    arrays = {}
    result = dict(record(mode, bi, arrays) for mode, bi in CONFIGS)
    (HERE / "fused_rnn.json").write_text(json.dumps(result, indent=1) + "\n")
    np.savez_compressed(HERE / "fused_rnn.npz", **arrays)


if __name__ == "__main__":
    main()
