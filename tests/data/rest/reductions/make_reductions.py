"""Reference data for MXNet's sequential reductions and its gradient formulas
(tests/test_mxnet_reductions.py), recorded from MXNet 1.9.1 (gradients of ops that need no
libm function beyond sqrt: exp, log, pow, hypot and cbrt differ between libm and numpy's
vectorised loops in the last bit, by machine):

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxnet-1.9.1/bin/python make_reductions.py

It writes reductions.npz next to this script: for each case "<name>/in<k>" (inputs),
"<name>/out" (the forward result) and, for gradient cases, "<name>/og" (the output gradient
fed to backward) and "<name>/grad<k>" (the input gradients).
"""
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(21)
data = {}
inf, nan = np.inf, np.nan


def normal(*shape, dtype="float32", scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def reduce_case(name, op, x, **attrs):
    """``mx.nd.<op>(x, **attrs)`` (attrs as a string literal, stored for the test)."""
    data[f"{name}/in0"] = x
    data[f"{name}/out"] = getattr(mx.nd, op)(mx.nd.array(x, dtype=x.dtype), **attrs).asnumpy()
    data[f"{name}/op"] = np.array(op)
    data[f"{name}/attrs"] = np.array(repr(attrs))


mixed = normal(6, 300) * (10.0 ** rng.integers(-3, 4, (6, 300))).astype("float32")
for tag, x in (("f32", mixed), ("f16", normal(6, 300, dtype="float16")),
               ("f64", normal(6, 300, dtype="float64"))):
    for op in ("sum", "mean", "nansum", "norm"):
        reduce_case(f"{op}_rows_{tag}", op, x, axis=1)
        reduce_case(f"{op}_columns_{tag}", op, np.ascontiguousarray(x.T), axis=0)
    reduce_case(f"norm1_rows_{tag}", "norm", x, ord=1, axis=1)
    reduce_case(f"prod_rows_{tag}", "prod", x[:, :12], axis=1)
    reduce_case(f"nanprod_rows_{tag}", "nanprod", x[:, :12], axis=1)
    reduce_case(f"sum_all_{tag}", "sum", x)
three = normal(4, 50, 3)
reduce_case("sum_middle_kept", "sum", three, axis=(0, 2))
reduce_case("sum_exclude", "sum", three, axis=1, exclude=True)
reduce_case("mean_2049_f16", "mean", normal(2, 2049, dtype="float16"), axis=1)
reduce_case("sum_kahan", "sum", np.array([[1e8, 1, 1, 1, 1, 1, 1, 1, 1]], "float32"), axis=1)
reduce_case("sum_inf", "sum", np.array([[1, inf, 5], [inf, -inf, 1], [3e38, 3e38, -3e38]],
                                       "float32"), axis=1)
reduce_case("nansum_inf", "nansum", np.array([[1, inf, 5], [nan, -inf, 6], [1, 2, inf]],
                                             "float32"), axis=1)
reduce_case("norm_inf", "norm", np.array([[inf, 1], [inf, inf], [inf, -inf], [nan, 1],
                                          [1e30, 1e30]], "float32"), axis=1)
reduce_case("norm1_inf", "norm", np.array([[inf, 1], [1, inf], [nan, 1]], "float32"), ord=1,
            axis=1)

S = mx.sym
a, b = S.Variable("a"), S.Variable("b")
GRADS = {
    "broadcast_add": (S.broadcast_add(a, b), {"a": (16, 100), "b": (1, 100)}),
    "broadcast_mul": (S.broadcast_mul(a, b), {"a": (8, 30, 20), "b": (8, 1, 20)}),
    "broadcast_div": (S.broadcast_div(a, b), {"a": (8, 1, 5), "b": (1, 40, 5)}),
    "elemwise_div": (S.elemwise_div(a, b), {"a": (4, 25), "b": (4, 25)}),
    "tile": (S.tile(a, reps=(30, 2)) * b, {"a": (7, 5), "b": (210, 10)}),
    "repeat": (S.repeat(a, repeats=40, axis=1) * b, {"a": (6, 5), "b": (6, 200)}),
    "broadcast_to": (S.broadcast_to(a, shape=(40, 7, 10)) * b, {"a": (1, 7, 1),
                                                               "b": (40, 7, 10)}),
    "sum_backward": (S.sum(a * b, axis=0), {"a": (200, 10), "b": (200, 10)}),
    "mean_backward": (S.mean(a * b, axis=(0, 2)), {"a": (20, 7, 3), "b": (20, 7, 3)}),
    "rdiv_scalar": (1.7 / a, {"a": (50,)}),
    **{op: (getattr(S, op)(a), {"a": (50,)}) for op in ("log10", "log2", "degrees", "radians")},
}
for name, (sym, shapes) in GRADS.items():
    args = {k: mx.nd.array(rng.uniform(0.1, 0.9, s).astype("float32")) for k, s in shapes.items()}
    grads = {k: mx.nd.zeros(s) for k, s in shapes.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    exe.forward(is_train=True)
    og = rng.standard_normal(exe.outputs[0].shape).astype("float32")
    exe.backward(mx.nd.array(og))
    data[f"grad_{name}/json"] = np.array(sym.tojson())
    data[f"grad_{name}/og"] = og
    data[f"grad_{name}/out"] = exe.outputs[0].asnumpy()
    for k in sorted(shapes):
        data[f"grad_{name}/in_{k}"] = args[k].asnumpy()
        data[f"grad_{name}/grad_{k}"] = grads[k].asnumpy()

np.savez_compressed(os.path.join(HERE, "reductions.npz"), **data)
print(len(data), "arrays")
