"""Regenerate reference.json / reference.npz with the MXNet 1.9.1 oracle (not part of the
test suite, which never imports mxnet):

    MXNET_SUBGRAPH_BACKEND=NONE /path/to/mxnet-venv/bin/python tests/data/tensor/generate.py

Each case is a one-op symbol as MXNet writes it (tojson), its inputs and MXNet's outputs.
"""
import json
import pathlib

import mxnet as mx
import numpy as np

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(7)
CASES = {}


def arange(*shape):
    return np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)


def case(name, op, inputs, **attrs):
    names = [f"in{i}" for i in range(len(inputs))]
    with mx.name.NameManager():
        sym = getattr(mx.sym, op)(*[mx.sym.var(n) for n in names], name=name, **attrs)
    exe = sym.bind(mx.cpu(), {n: mx.nd.array(a, dtype=a.dtype) for n, a in zip(names, inputs)})
    outs = [o.asnumpy() for o in exe.forward()]
    CASES[name] = {"symbol": sym.tojson(), "inputs": [np.asarray(a) for a in inputs],
                   "outputs": outs}


x234, x2345 = arange(2, 3, 4), arange(2, 3, 4, 5)
for i, (shape, kw) in enumerate([((-1, 0), {}), ((-1, 0), {"reverse": True}),
                                 ((4, 0, 2), {}), ((-2, 1, 1), {}), ((2, -4, -1, 3, -2), {}),
                                 ((-4, 1, 2, -2), {}), ((-2, -3), {"reverse": True})]):
    case(f"reshape{i}", "Reshape", [x234], shape=shape, **kw)
case("reshape_merge", "Reshape", [x2345], shape=(-3, -2))
case("reshape_target", "Reshape", [x234], target_shape=(0, 6))
case("reshape_keep", "Reshape", [x234], target_shape=(3, 0), keep_highest=True)
for i, (b, e, s) in enumerate([((0, None, None), (None, None, None), (1, 2, -2)),
                               ((None, 2), (None, 0), (None, -1)),
                               ((-1, -2), (None, None), ()),
                               ((None, None, 3), (None, None, 0), (1, 1, -1)),
                               ((1,), (-1,), ())]):
    case(f"slice{i}", "slice", [x234], begin=b, end=e, step=s)
case("slice_axis", "slice_axis", [x234], axis=1, begin=-2, end=None)
img = rng.standard_normal((2, 3, 2, 3)).astype("float32")
case("up_single", "UpSampling", [img], scale=2, sample_type="nearest")
case("up_concat", "UpSampling", [img, rng.standard_normal((2, 2, 4, 6)).astype("float32")],
     scale=2, sample_type="nearest")
case("up_sum", "UpSampling",
     [img[..., :2], rng.standard_normal((2, 3, 1, 1)).astype("float32")], scale=2,
     sample_type="nearest", multi_input_mode="sum")
for mode in ("reflect", "edge", "constant"):
    case(f"pad_{mode}", "Pad", [x2345], mode=mode, pad_width=(0, 0, 0, 0, 2, 3, 1, 3),
         constant_value=-1.5)
case("pad_reflect5d", "Pad", [arange(1, 2, 3, 4, 5)], mode="reflect",
     pad_width=(0, 0, 0, 0, 2, 1, 1, 2, 3, 4))
data, index = arange(3, 4), np.array([4.0, -1.0, 1.7], "float32")
case("pick_clip", "pick", [data, index])
case("pick_wrap", "pick", [data, index], mode="wrap")
case("pick_axis0", "pick", [data, np.array([-2.0, 5.0, 1.0, 2.9], "float32")], axis=0,
     mode="wrap", keepdims=True)
idx = np.array([[0, 4.6, 7], [-1, -6, 2.5]], "float32")
case("take_clip", "take", [arange(5, 3), idx])
case("take_wrap", "take", [arange(5, 3), idx], mode="wrap")
case("take_axis1", "take", [arange(5, 3), np.array([0, 1, -1, 3, 5, 1.9], "float32")], axis=1,
     mode="wrap")
case("embedding", "Embedding", [np.array([[0, 9.7], [11, -3]], "float32"), arange(10, 4)],
     input_dim=10, output_dim=4)
case("one_hot", "one_hot", [np.array([0, 3, 4, -1, 1.7, 2.2], "float32")], depth=4,
     on_value=5, off_value=-1)
case("gather_nd", "gather_nd", [arange(3, 4), np.array([[0, 2, -1], [1, 3, 0]], "float32")])
a, b = rng.standard_normal((2, 3, 4)).astype("float32"), rng.standard_normal((2, 5))
case("dot_ta", "dot", [a, b.astype("float32")], transpose_a=True)
case("dot_tb", "dot", [a, rng.standard_normal((5, 6, 4)).astype("float32")], transpose_b=True)
case("batch_dot", "batch_dot", [a, rng.standard_normal((2, 5, 4)).astype("float32")],
     transpose_b=True)
case("sum_exclude", "sum", [a], axis=(0, -1), exclude=True, keepdims=True)
case("norm", "norm", [a], ord=1, axis=1)
case("argmax_ties", "argmax", [np.array([[1, 3, 3], [2, 0, 2]], "float32")], axis=1)

meta = {name: {"symbol": c["symbol"], "inputs": len(c["inputs"]), "outputs": len(c["outputs"])}
        for name, c in CASES.items()}
(HERE / "reference.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
arrays = {f"{name}:in{i}": a for name, c in CASES.items() for i, a in enumerate(c["inputs"])}
arrays.update({f"{name}:out{i}": a for name, c in CASES.items()
               for i, a in enumerate(c["outputs"])})
np.savez_compressed(HERE / "reference.npz", **arrays)
