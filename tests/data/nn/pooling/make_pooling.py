"""Reference data for the native 2-D pooling's compiled loops (tests/test_pooling_loops.py),
recorded from MXNet 1.9.1 with its default CPU kernels (oneDNN's pooling; avg and sum add
each window's elements in row-major order from 0, then avg divides by the count):

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxnet-1.9.1/bin/python make_pooling.py

It writes pooling.npz next to this script: for each case "<name>/in" (the data),
"<name>/out" (MXNet's output) and "<name>/attrs" (the Pooling attributes, a literal); the
gradient cases ("grad_<type>_<name>", recorded in training; max with ties and NaN) also
"<name>/og" (the output gradient fed to backward) and "<name>/grad" (the data's gradient).
"""
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(31)
data = {}


def case(name, shape, dtype="float32", special=False, **attrs):
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 3, shape)).astype(dtype)
    if special:  # NaN, infinities and the lowest value, which max pooling never takes
        flat = x.reshape(-1)
        flat[::13] = np.nan
        flat[5::17] = -np.inf
        flat[7::29] = np.inf
        flat[3::31] = np.finfo(dtype).min
        x[0, 0, :3, :3] = np.nan  # a window of NaN only
    data[f"{name}/in"] = x
    data[f"{name}/out"] = mx.nd.Pooling(mx.nd.array(x, dtype=dtype), **attrs).asnumpy()
    data[f"{name}/attrs"] = np.array(repr(attrs))


for typ in ("avg", "sum", "max"):
    case(f"{typ}_3x3_s1_p1", (2, 5, 17, 17), pool_type=typ, kernel=(3, 3), pad=(1, 1))
    case(f"{typ}_3x3_s2", (2, 4, 15, 15), pool_type=typ, kernel=(3, 3), stride=(2, 2))
    case(f"{typ}_3x3_s2_p1", (1, 3, 12, 12), pool_type=typ, kernel=(3, 3), stride=(2, 2),
         pad=(1, 1))
    case(f"{typ}_2x2_s2", (2, 3, 10, 12), pool_type=typ, kernel=(2, 2), stride=(2, 2))
    case(f"{typ}_3x3_s2_full", (1, 3, 10, 10), pool_type=typ, kernel=(3, 3), stride=(2, 2),
         pooling_convention="full")
    case(f"{typ}_4x3_s3x1_p2x1", (1, 3, 13, 9), pool_type=typ, kernel=(4, 3), stride=(3, 1),
         pad=(2, 1))
    case(f"{typ}_5x5_s1_p2", (1, 2, 9, 11), pool_type=typ, kernel=(5, 5), pad=(2, 2))
    case(f"{typ}_whole_map", (2, 6, 8, 8), pool_type=typ, kernel=(8, 8), stride=(8, 8))
    case(f"{typ}_global", (2, 6, 7, 7), pool_type=typ, kernel=(1, 1), global_pool=True)
    case(f"{typ}_3x3_s1_p1_f64", (1, 3, 9, 9), "float64", pool_type=typ, kernel=(3, 3),
         pad=(1, 1))
case("avg_excluding_pad", (2, 3, 11, 11), pool_type="avg", kernel=(3, 3), pad=(1, 1),
     count_include_pad=False)
case("avg_excluding_pad_s2_full", (1, 3, 10, 10), pool_type="avg", kernel=(3, 3),
     stride=(2, 2), pad=(1, 1), count_include_pad=False, pooling_convention="full")
case("avg_full_counted", (1, 3, 10, 10), pool_type="avg", kernel=(3, 3), stride=(2, 2),
     pooling_convention="full")
case("avg_full_fitting", (1, 3, 11, 11), pool_type="avg", kernel=(3, 3), stride=(2, 2),
     pooling_convention="full")  # the windows end with the data: oneDNN's pooling
for typ in ("avg", "sum", "max"):  # 1-D
    case(f"{typ}_1d_3_p1", (2, 3, 17), pool_type=typ, kernel=(3,), pad=(1,))
    case(f"{typ}_1d_3_s2_full", (2, 3, 17), pool_type=typ, kernel=(3,), stride=(2,),
         pooling_convention="full")
    case(f"{typ}_1d_4_s2_full", (1, 3, 16), pool_type=typ, kernel=(4,), stride=(2,),
         pooling_convention="full")
    case(f"{typ}_1d_3_p1_f64", (1, 2, 15), "float64", pool_type=typ, kernel=(3,), pad=(1,))
    case(f"{typ}_1d_global", (2, 3, 9), pool_type=typ, kernel=(1,), global_pool=True)
case("avg_1d_4_s2_p1_excluding_pad", (2, 3, 17), pool_type="avg", kernel=(4,), stride=(2,),
     pad=(1,), count_include_pad=False)
for typ in ("max", "avg"):
    case(f"{typ}_special_s1", (1, 2, 12, 12), special=True, pool_type=typ, kernel=(3, 3),
         pad=(1, 1))
    case(f"{typ}_special_s2", (1, 2, 13, 13), special=True, pool_type=typ, kernel=(3, 3),
         stride=(2, 2))


def grad_case(name, shape, dtype="float32", pool_type="max", **attrs):
    x = rng.standard_normal(shape).astype(dtype)
    if pool_type == "max":
        flat = x.reshape(-1)
        flat[5::13] = flat[6::13]  # ties: the first maximum takes the gradient
        flat[::17] = np.nan
    xa = mx.nd.array(x, dtype=dtype)
    xa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(xa, pool_type=pool_type, **attrs)
    og = (rng.standard_normal(y.shape) * 10.0 ** rng.integers(-3, 3, y.shape)).astype(dtype)
    y.backward(mx.nd.array(og, dtype=dtype))
    key = f"grad_{pool_type}_{name}"
    data[f"{key}/in"], data[f"{key}/out"] = x, y.asnumpy()
    data[f"{key}/og"], data[f"{key}/grad"] = og, xa.grad.asnumpy()
    data[f"{key}/attrs"] = np.array(repr(dict(attrs, pool_type=pool_type)))


grad_case("3x3_s2_p1", (2, 3, 11, 9), kernel=(3, 3), stride=(2, 2), pad=(1, 1))
grad_case("3x3_s1_p1", (2, 2, 6, 6), kernel=(3, 3), pad=(1, 1))
grad_case("3x3_s2", (1, 16, 20, 20), kernel=(3, 3), stride=(2, 2))
grad_case("2x3_s1x2", (2, 2, 7, 9), kernel=(2, 3), stride=(1, 2))
grad_case("3x3_s2_full", (1, 3, 10, 10), kernel=(3, 3), stride=(2, 2),
          pooling_convention="full")
grad_case("3x3_s1_p1_f64", (1, 3, 8, 8), "float64", kernel=(3, 3), pad=(1, 1))
for typ in ("avg", "sum"):
    grad_case("3x3_s1_p1", (1, 3, 9, 9), pool_type=typ, kernel=(3, 3), pad=(1, 1))
    grad_case("3x3_s2_p1", (2, 2, 9, 9), pool_type=typ, kernel=(3, 3), stride=(2, 2),
              pad=(1, 1))
    grad_case("4x3_s3x1_p2x1", (1, 3, 13, 9), pool_type=typ, kernel=(4, 3), stride=(3, 1),
              pad=(2, 1))
    grad_case("2x2_s2", (2, 3, 8, 8), pool_type=typ, kernel=(2, 2), stride=(2, 2))
    grad_case("global", (2, 3, 5, 5), pool_type=typ, kernel=(1, 1), global_pool=True)
    grad_case("3x3_s1_p1_f64", (1, 2, 7, 7), "float64", pool_type=typ, kernel=(3, 3),
              pad=(1, 1))
grad_case("excluding_pad", (1, 2, 7, 7), pool_type="avg", kernel=(3, 3), pad=(1, 1),
          count_include_pad=False)
for typ in ("max", "avg", "sum"):
    grad_case("1d_3_s2_p1", (2, 3, 17), pool_type=typ, kernel=(3,), stride=(2,), pad=(1,))
grad_case("3x3_s2_full", (1, 2, 10, 10), pool_type="sum", kernel=(3, 3), stride=(2, 2),
          pooling_convention="full")
np.savez_compressed(os.path.join(HERE, "pooling.npz"), **data)
print(len({k.split("/")[0] for k in data}), "cases")
