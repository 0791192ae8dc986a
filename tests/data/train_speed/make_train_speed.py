"""Reference gradients for the ``torch`` strategy's kernels (issue 21): small networks with
the layers of ResNet-18 v1 and MobileNet v1 (convolutions with stride, padding, groups and
depthwise, BatchNorm with and without fix_gamma, max pooling with padding, avg pooling, relu,
FullyConnected flattened and not, residual sums), trained two steps by MXNet 1.9.1.

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxvenv/bin/python make_train_speed.py

Writes train_speed.json (per case: symbol JSON, input shapes) and train_speed.npz (inputs,
parameters, and after the steps: outputs, gradients, auxiliary states) next to this file.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
S = mx.sym


def conv_bn(x, name, channels, kernel=3, stride=1, pad=1, groups=1, fix_gamma=False,
            relu=True, bias=False):
    x = S.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride), pad=(pad, pad),
                      num_filter=channels, num_group=groups, no_bias=not bias,
                      name=f"{name}_conv")
    x = S.BatchNorm(x, fix_gamma=fix_gamma, momentum=0.9, eps=1e-5, name=f"{name}_bn")
    return S.Activation(x, act_type="relu", name=f"{name}_relu") if relu else x


def resnet_like():
    x = conv_bn(S.Variable("data"), "stem", 8, kernel=7, stride=2, pad=3)
    x = S.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="pool0")
    y = conv_bn(x, "b1a", 8)
    y = conv_bn(y, "b1b", 8, relu=False)
    x = S.Activation(x + y, act_type="relu", name="b1_out")
    y = conv_bn(x, "b2a", 16, stride=2)
    y = conv_bn(y, "b2b", 16, relu=False, fix_gamma=True)
    short = conv_bn(x, "b2s", 16, kernel=1, stride=2, pad=0, relu=False)
    x = S.Activation(short + y, act_type="relu", name="b2_out")
    x = S.Convolution(x, kernel=(1, 1), num_filter=16, name="head_conv")  # with a bias
    x = S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool1")
    x = S.FullyConnected(x, num_hidden=10, name="fc")
    return S.SoftmaxOutput(x, name="softmax"), {"data": (4, 3, 32, 32), "softmax_label": (4,)}


def mobilenet_like():
    x = conv_bn(S.Variable("data"), "stem", 8, stride=2)
    for i, (c, s) in enumerate(((16, 1), (16, 2), (32, 1))):
        x = conv_bn(x, f"dw{i}", x_channels[i], stride=s, groups=x_channels[i])
        x = conv_bn(x, f"pw{i}", c, kernel=1, pad=0)
    x = S.Pooling(x, kernel=(3, 3), stride=(2, 2), pool_type="max",
                  pooling_convention="full", name="pool_full")
    x = S.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg", name="gpool")
    x = S.Reshape(x, shape=(0, 1, -1))
    x = S.FullyConnected(x, num_hidden=10, flatten=False, name="fc")
    x = S.Reshape(x, shape=(0, -1))
    return S.SoftmaxOutput(x, name="softmax"), {"data": (4, 3, 24, 24), "softmax_label": (4,)}


x_channels = (8, 16, 16)
CASES = {"resnet_like": resnet_like, "mobilenet_like": mobilenet_like}


def run(name, build, arrays: dict) -> dict:
    sym, shapes = build()
    rng = np.random.default_rng(len(name))
    exe = sym.simple_bind(mx.cpu(), grad_req={n: "null" if n == "softmax_label" else "write"
                                              for n in sym.list_arguments()}, **shapes)
    for n, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        if n == "softmax_label":
            v = rng.integers(0, 10, arr.shape).astype("f4")
        elif n.endswith("moving_var"):
            v = rng.uniform(0.5, 1.5, arr.shape).astype("f4")
        elif n.endswith("gamma"):
            v = rng.uniform(0.5, 1.5, arr.shape).astype("f4")
        else:
            v = (rng.standard_normal(arr.shape) * 0.3).astype("f4")
        arr[:] = v
        arrays[f"{name}/in/{n}"] = v
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward()
    mx.nd.waitall()
    arrays[f"{name}/out/0"] = exe.outputs[0].asnumpy()
    for n, g in exe.grad_dict.items():
        if g is not None and n != "softmax_label":
            arrays[f"{name}/grad/{n}"] = g.asnumpy()
    for n, a in exe.aux_dict.items():
        arrays[f"{name}/aux/{n}"] = a.asnumpy()
    return {"symbol": sym.tojson(), "shapes": {k: list(v) for k, v in shapes.items()},
            "steps": 2}


def main():
    arrays, meta = {}, {"mxnet": mx.__version__, "cases": {}}
    for name, build in CASES.items():
        meta["cases"][name] = run(name, build, arrays)
    with open(os.path.join(HERE, "train_speed.json"), "w") as f:
        json.dump(meta, f, indent=1)
    np.savez_compressed(os.path.join(HERE, "train_speed.npz"), **arrays)


if __name__ == "__main__":
    main()
