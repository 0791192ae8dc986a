"""Reference values of MXNet 1.9.1 for dynamic shapes (``_contrib_boolean_mask`` and the
nodes after it), replayed by tests/test_dynamic_shapes.py:

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /work/oracle-ops/bin/python make_dynamic.py

Each case binds a fresh executor (MXNet 1.9.1 keeps the first forward's shapes: a second
forward with another mask count returns stale shapes and corrupts memory), runs
forward(is_train=True) and backward with recorded head gradients, and writes the symbol
JSON, inputs, outputs and argument gradients to dynamic.json / dynamic.npz next to this file.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
S = mx.sym


def _net_chain():
    m = S.contrib.boolean_mask(S.var("data"), S.var("index"), name="bm")
    e = S.exp(m * 0.5, name="e")
    return S.Group([e, S.sum(e, name="s")])


def _net_fc():
    m = S.contrib.boolean_mask(S.var("data"), S.var("index"), name="bm")
    return S.FullyConnected(m, num_hidden=4, name="fc")


def _net_computed_index():
    """The index comes from the graph (rows whose sum is positive); static ops before."""
    data = S.var("data")
    x = S.relu(data - 0.3, name="r") * 3
    keep = S.sum(data, axis=1, name="rowsum") > 0
    m = S.contrib.boolean_mask(x, keep, name="bm")
    return S.tanh(m, name="t")


def _plain():
    return S.contrib.boolean_mask(S.var("data"), S.var("index"), name="bm")


# name: (symbol, {input: array}, arguments that get gradients)
rng = np.random.default_rng(17)


def u(*shape):
    return rng.uniform(-1, 1, shape).astype("f4")


CASES = {
    "mask_2d": (_plain(), {"data": u(5, 3), "index": np.array([1, 0, 1, 1, 0], "f4")},
                ["data"]),
    "mask_3d_int_index": (_plain(), {"data": u(4, 2, 3), "index": np.array([0, 2, -1, 0],
                                                                          "int32")}, ["data"]),
    "mask_all_kept": (_plain(), {"data": u(3, 4), "index": np.ones(3, "f4")}, ["data"]),
    "mask_none_kept": (_plain(), {"data": u(3, 4), "index": np.zeros(3, "f4")}, []),
    "mask_chain": (_net_chain(), {"data": u(6, 2), "index": np.array([0, 1, 1, 0, 1, 0],
                                                                     "f4")}, ["data"]),
    "mask_fc": (_net_fc(), {"data": u(5, 3), "index": np.array([1, 1, 0, 0, 1], "f4"),
                            "fc_weight": u(4, 3), "fc_bias": u(4)},
                ["data", "fc_weight", "fc_bias"]),
    "mask_computed_index": (_net_computed_index(), {"data": u(6, 3)}, ["data"]),
}


def record(name, sym, inputs, grad_names):
    args = {k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()}
    grads = {k: mx.nd.zeros(inputs[k].shape) for k in grad_names}
    exe = sym.bind(mx.cpu(), args, args_grad=grads or None,
                   grad_req={k: ("write" if k in grads else "null") for k in args})
    outs = [o.asnumpy() for o in exe.forward(is_train=bool(grads))]
    arrays = {f"{name}/in/{k}": v for k, v in inputs.items()}
    arrays.update({f"{name}/out{k}": o for k, o in enumerate(outs)})
    if grads:
        heads = [rng.uniform(-1, 1, o.shape).astype("f4") for o in outs]
        exe.backward([mx.nd.array(h) for h in heads])
        arrays.update({f"{name}/head{k}": h for k, h in enumerate(heads)})
        arrays.update({f"{name}/grad/{k}": g.asnumpy() for k, g in grads.items()})
    meta = {"symbol_json": sym.tojson(), "inputs": sorted(inputs), "grads": grad_names,
            "out_shapes": [list(o.shape) for o in outs]}
    return meta, arrays


def main():
    meta, arrays = {"mxnet": mx.__version__, "cases": {}}, {}
    for name, (sym, inputs, grad_names) in CASES.items():
        meta["cases"][name], more = record(name, sym, inputs, grad_names)
        arrays.update(more)
    with open(os.path.join(HERE, "dynamic.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, "dynamic.npz"), **arrays)
    print(f"{len(CASES)} cases written")


if __name__ == "__main__":
    main()
