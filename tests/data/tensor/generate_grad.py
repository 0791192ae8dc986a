"""Regenerate grad_reference.json / grad_reference.npz with the MXNet 1.9.1 oracle (not part
of the test suite, which never imports mxnet):

    MXNET_SUBGRAPH_BACKEND=NONE /path/to/mxnet-venv/bin/python tests/data/tensor/generate_grad.py

Each case is a one-op symbol as MXNet writes it (tojson), its inputs, grad_req, head
gradients, MXNet's input gradients after one training forward and backward, and the
``debug_str()`` of that executor (the backward nodes MXNet builds).
"""
import json
import pathlib

import mxnet as mx
import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(11)
CASES = {}


def arange(*shape):
    return np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)


def normal(*shape):
    return rng.standard_normal(shape).astype("float32")


def case(name, op, inputs, null=(), **attrs):
    """``null``: indices of inputs bound with grad_req 'null' (the others 'write')."""
    names = [f"in{i}" for i in range(len(inputs))]
    with mx.name.NameManager():
        sym = getattr(mx.sym, op)(*[mx.sym.var(n) for n in names], name=name, **attrs)
    req = {n: "null" if i in null else "write" for i, n in enumerate(names)}
    args = {n: mx.nd.array(a, dtype=a.dtype) for n, a in zip(names, inputs)}
    grads = {n: mx.nd.zeros(a.shape, dtype=a.dtype) for n, a in args.items()
             if req[n] == "write"}
    exe = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
    outs = exe.forward(is_train=True)
    heads = [normal(*o.shape).astype(o.dtype) for o in outs]
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
    CASES[name] = {"symbol": sym.tojson(), "grad_req": req, "inputs": inputs, "heads": heads,
                   "grads": {n: g.asnumpy() for n, g in grads.items()},
                   "debug_str": exe.debug_str()}


# indexing: repeated and out-of-range indices, every mode
emb_idx = np.array([[0, 2, 2], [-1, 7, 1.9]], "float32")
case("embedding", "Embedding", [emb_idx, normal(5, 3)], null=(0,), input_dim=5, output_dim=3)
idx = np.array([[-1, 5, 1], [1, 2.7, 1]], "float32")
for mode in ("clip", "wrap"):
    case(f"take_{mode}", "take", [normal(4, 3), idx], mode=mode)
case("take_raise", "take", [normal(4, 3), np.array([0, 1, 1, 3], "float32")], mode="raise")
case("take_axis1", "take", [normal(2, 4, 3), np.array([-1, 4, 0, 3.5], "float32")], axis=1,
     mode="wrap")
pick_idx = np.array([-1, 3, 1.5, 5], "float32")
for mode in ("clip", "wrap"):
    case(f"pick_{mode}", "pick", [normal(4, 3), pick_idx], mode=mode)
case("pick_axis0", "pick", [normal(3, 4), np.array([2, 0, 2.5, -4], "float32")], axis=0,
     keepdims=True, mode="wrap")
case("gather_nd", "gather_nd", [normal(3, 4, 2), np.array([[2, 0, 2, 1], [3, 1, 3, 0]],
                                                           "float32")])
case("one_hot", "one_hot", [np.array([0, 2, 1.5], "float32")], depth=3)
# reductions: ties, a zero in prod, NaNs
ties = np.array([[1, 3, 3], [2, 2, 0], [-1, -1, -1]], "float32")
case("max_ties", "max", [ties], axis=1)
case("max_all", "max", [ties])
case("min_ties", "min", [ties], axis=1, keepdims=True)
case("prod_zero", "prod", [ties], axis=1)
case("norm2", "norm", [normal(2, 3, 4)], axis=(0, 2), keepdims=True)
case("norm1", "norm", [np.array([[1, -2, 0], [0.5, 3, -1]], "float32")], ord=1, axis=1)
nans = np.array([[1, np.nan, 3], [2, 2, np.nan]], "float32")
case("nansum", "nansum", [nans], axis=1)
case("nanprod", "nanprod", [nans], axis=0)
case("mean_exclude", "mean", [normal(2, 3, 4)], axis=1, exclude=True)
case("sum_all", "sum", [normal(2, 3)])
case("argmax", "argmax", [normal(2, 3)], axis=1)
# joining, splitting, slicing
case("concat", "Concat", [normal(2, 1), normal(2, 3), normal(2, 2)], dim=1, num_args=3)
case("stack", "stack", [normal(2, 3), normal(2, 3)], axis=1, num_args=2)
case("split", "SliceChannel", [normal(2, 6)], num_outputs=3)
case("split_squeeze", "SliceChannel", [normal(3, 2)], num_outputs=3, axis=0, squeeze_axis=True)
case("slice_steps", "slice", [normal(4, 5)], begin=(None, 4), end=(None, 0), step=(2, -2))
case("slice_axis", "slice_axis", [normal(3, 4)], axis=1, begin=-3, end=-1)
case("slice_like", "slice_like", [normal(3, 4), normal(2, 2)])
case("pad_constant", "Pad", [normal(1, 2, 3, 3)], mode="constant",
     pad_width=(0, 0, 0, 0, 1, 2, 2, 1), constant_value=2)
for mode in ("edge", "reflect"):
    case(f"pad_{mode}", "Pad", [normal(1, 2, 3, 4)], mode=mode,
         pad_width=(0, 0, 0, 0, 2, 1, 1, 3))
case("up_concat", "UpSampling", [normal(1, 2, 2, 2), normal(1, 1, 4, 4)], scale=2,
     sample_type="nearest", num_args=2)
case("up_sum", "UpSampling", [normal(1, 2, 2, 2), normal(1, 2, 3, 3)], scale=3,
     sample_type="nearest", num_args=2, multi_input_mode="sum")
# products
case("dot", "dot", [normal(2, 3, 4), normal(4, 5)])
case("dot_ta_tb", "dot", [normal(4, 3), normal(5, 4)], transpose_a=True, transpose_b=True)
case("dot_ta", "dot", [normal(2, 3, 4), normal(2, 5)], transpose_a=True)
for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
    lhs = normal(2, 4, 3) if ta else normal(2, 3, 4)
    rhs = normal(2, 5, 4) if tb else normal(2, 4, 5)
    case(f"batch_dot_{int(ta)}{int(tb)}", "batch_dot", [lhs, rhs], transpose_a=ta,
         transpose_b=tb)
# shape manipulation
case("transpose", "transpose", [normal(2, 3, 4)], axes=(2, 0, 1))
case("transpose_default", "transpose", [normal(2, 3)])
case("swapaxis", "SwapAxis", [normal(2, 3, 4)], dim1=0, dim2=2)
case("flatten", "Flatten", [normal(2, 3, 2)])
case("reshape", "Reshape", [normal(2, 3, 4)], shape=(-1, 0))
case("expand_dims", "expand_dims", [normal(2, 3)], axis=1)
case("squeeze", "squeeze", [normal(1, 3, 1)], axis=0)
case("tile", "tile", [normal(2, 3)], reps=(2, 1, 3))
case("repeat", "repeat", [normal(2, 3)], repeats=2, axis=0)
case("reverse", "reverse", [normal(2, 3, 4)], axis=(0, 2))
case("broadcast_to", "broadcast_to", [normal(1, 3, 1)], shape=(2, 3, 4))
case("broadcast_axis", "broadcast_axis", [normal(2, 1, 1)], axis=(1, 2), size=(3, 2))
case("broadcast_like", "broadcast_like", [normal(1, 3), normal(4, 3, 2)], lhs_axes=(0,),
     rhs_axes=(2,))

meta = {name: {"symbol": c["symbol"], "grad_req": c["grad_req"], "inputs": len(c["inputs"]),
               "heads": len(c["heads"]), "debug_str": c["debug_str"]}
        for name, c in CASES.items()}
(HERE / "grad_reference.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
arrays = {}
for name, c in CASES.items():
    arrays.update({f"{name}:in{i}": a for i, a in enumerate(c["inputs"])})
    arrays.update({f"{name}:head{i}": h for i, h in enumerate(c["heads"])})
    arrays.update({f"{name}:grad:{n}": g for n, g in c["grads"].items()})
np.savez_compressed(HERE / "grad_reference.npz", **arrays)
