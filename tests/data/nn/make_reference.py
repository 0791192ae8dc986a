"""Regenerate reference.npz / reference.json with a real MXNet 1.9.1 (not run by the tests):

    MXNET_MKLDNN_ENABLED=0 MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 python make_reference.py

MXNet's native (non-oneDNN) kernels are used: oneDNN rejects Deconvolution with target_shape
("could not create a descriptor for a dilated deconvolution"); 3-D Deconvolution has no native
kernel, so it is checked against the numpy twin only.

Each case applies one operator to small random inputs (variables in0, in1, ... in the op's
input order; BatchNorm's moving stats are aux states) and records every visible output.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def case(op, shapes, is_train=False, **attrs):
    """(op, attrs in MXNet's string form, input shapes, is_train)."""
    return op, {k: str(v) for k, v in attrs.items()}, shapes, is_train


CASES = {
    "conv2d": case('Convolution', [(2, 3, 6, 6), (4, 3, 3, 3), (4,)], kernel=(3, 3), num_filter=4),
    "conv2d_stride_pad_dilate": case('Convolution', [(1, 3, 9, 8), (4, 3, 3, 3), (4,)],
        kernel=(3, 3), stride=(2, 2), pad=(1, 2), dilate=(2, 1), num_filter=4),
    "conv2d_groups": case('Convolution', [(2, 4, 5, 5), (4, 2, 3, 3)],
        kernel=(3, 3), num_group=2, num_filter=4, no_bias=True),
    "conv1d": case('Convolution', [(2, 2, 9), (3, 2, 3), (3,)],
        kernel=(3,), stride=(2,), pad=(1,), num_filter=3),
    "conv3d": case('Convolution', [(1, 2, 4, 5, 4), (2, 2, 2, 3, 2), (2,)],
        kernel=(2, 3, 2), pad=(1, 0, 1), num_filter=2),
    "conv1x1": case('Convolution', [(2, 3, 4, 4), (5, 3, 1, 1), (5,)],
        kernel=(1, 1), num_filter=5),
    "deconv2d_adj": case('Deconvolution', [(1, 2, 4, 4), (2, 3, 3, 3), (3,)],
        kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1), num_filter=3, no_bias=False),
    "deconv2d_target": case('Deconvolution', [(1, 2, 4, 4), (2, 2, 3, 3)],
        kernel=(3, 3), stride=(2, 2), target_shape=(8, 9), num_filter=2),
    "deconv2d_groups_dilate": case('Deconvolution', [(1, 4, 3, 3), (4, 2, 3, 3)],
        kernel=(3, 3), num_group=2, dilate=(2, 2), num_filter=4),
    "deconv1d": case('Deconvolution', [(2, 3, 5), (3, 2, 4)],
        kernel=(4,), stride=(2,), pad=(1,), num_filter=2),
    "pool_max": case('Pooling', [(2, 3, 6, 6)], kernel=(2, 2), stride=(2, 2)),
    "pool_max_pad": case('Pooling', [(1, 2, 7, 6)], kernel=(3, 3), stride=(2, 2), pad=(1, 1)),
    "pool_max_full": case('Pooling', [(1, 2, 4, 5)],
        kernel=(2, 2), stride=(3, 3), pad=(1, 1), pooling_convention='full'),
    "pool_avg_pad": case('Pooling', [(1, 2, 7, 6)],
        kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg'),
    "pool_avg_nopad_count": case('Pooling', [(1, 2, 7, 6)],
        kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg', count_include_pad=False),
    "pool_avg_full": case('Pooling', [(1, 2, 4, 5)],
        kernel=(2, 2), stride=(3, 3), pad=(1, 1), pool_type='avg', pooling_convention='full'),
    "pool_avg_full_nopad": case('Pooling', [(1, 2, 6, 6)],
        kernel=(3, 3), stride=(2, 2), pool_type='avg', pooling_convention='full',
        count_include_pad=False),
    "pool_sum": case('Pooling', [(1, 2, 4, 5)], kernel=(2, 3), pad=(1, 0), pool_type='sum'),
    "pool_lp1": case('Pooling', [(1, 2, 4, 4)], kernel=(2, 2), pool_type='lp', p_value=1),
    "pool_lp2": case('Pooling', [(1, 2, 4, 4)],
        kernel=(2, 2), pad=(1, 1), pool_type='lp', p_value=2),
    "pool_global_max": case('Pooling', [(2, 3, 4, 5)], kernel=(1, 1), global_pool=True),
    "pool_global_avg": case('Pooling', [(2, 3, 4, 5)], global_pool=True, pool_type='avg'),
    "pool_global_lp2": case('Pooling', [(2, 3, 4)], global_pool=True, pool_type='lp', p_value=2),
    "pool_1d_max": case('Pooling', [(2, 3, 9)], kernel=(3,), stride=(2,)),
    "pool_3d_avg": case('Pooling', [(1, 2, 3, 4, 4)],
        kernel=(2, 2, 2), pool_type='avg', stride=(1, 2, 2)),
    "pool_nhwc_max": case('Pooling', [(1, 4, 5, 3)], kernel=(2, 2), layout='NHWC'),
    "pool_nwc_avg": case('Pooling', [(2, 5, 3)],
        kernel=(3,), layout='NWC', pool_type='avg', pad=(1,)),
    "bn_infer": case('BatchNorm', [(2, 3, 4, 4), (3,), (3,), (3,), (3,)]),
    "bn_infer_gamma": case('BatchNorm', [(2, 3, 4, 4), (3,), (3,), (3,), (3,)],
        fix_gamma=False, eps=1e-05),
    "bn_train_mean_var": case('BatchNorm', [(4, 3, 2, 2), (3,), (3,), (3,), (3,)], True,
        fix_gamma=False, output_mean_var=True),
    "bn_train_global": case('BatchNorm', [(4, 3, 2, 2), (3,), (3,), (3,), (3,)], True,
        fix_gamma=False, use_global_stats=True, output_mean_var=True),
    "bn_train_axis_last": case('BatchNorm', [(4, 2, 3), (3,), (3,), (3,), (3,)], True,
        axis=-1, fix_gamma=False),
    "bn_train_2d": case('BatchNorm', [(6, 3), (3,), (3,), (3,), (3,)], True),
    "ln": case('LayerNorm', [(2, 3, 5), (5,), (5,)]),
    "ln_axis0_mean_std": case('LayerNorm', [(4, 3), (4,), (4,)], axis=0, output_mean_var=True),
    "fc": case('FullyConnected', [(2, 3, 4), (5, 12), (5,)], num_hidden=5),
    "fc_noflatten": case('FullyConnected', [(2, 3, 4), (5, 4), (5,)], num_hidden=5, flatten=False),
    "fc_nobias": case('FullyConnected', [(3, 4), (2, 4)], num_hidden=2, no_bias=True),
    "act_relu": case('Activation', [(3, 4)], act_type='relu'),
    "act_sigmoid": case('Activation', [(3, 4)], act_type='sigmoid'),
    "act_tanh": case('Activation', [(3, 4)], act_type='tanh'),
    "act_softrelu": case('Activation', [(3, 4)], act_type='softrelu'),
    "act_softsign": case('Activation', [(3, 4)], act_type='softsign'),
    "lrelu_leaky": case('LeakyReLU', [(3, 4)], slope=0.1),
    "lrelu_elu": case('LeakyReLU', [(3, 4)], act_type='elu', slope=0.7),
    "lrelu_selu": case('LeakyReLU', [(3, 4)], act_type='selu'),
    "lrelu_gelu": case('LeakyReLU', [(3, 4)], act_type='gelu'),
    "lrelu_prelu": case('LeakyReLU', [(2, 3, 4), (3,)], act_type='prelu'),
    "lrelu_prelu_scalar": case('LeakyReLU', [(2, 3), (1,)], act_type='prelu'),
    "softmax": case('softmax', [(3, 5)]),
    "softmax_axis0_temp": case('softmax', [(3, 5)], axis=0, temperature=2.0),
    "softmax_f64": case('softmax', [(3, 5)], dtype='float64'),
    "softmax_length": case('softmax', [(2, 4, 3), (2, 3)], use_length=True, axis=1),
    "log_softmax": case('log_softmax', [(2, 4, 3)], axis=1, temperature=0.5),
    "softmax_activation": case('SoftmaxActivation', [(2, 3, 4)]),
    "softmax_activation_channel": case('SoftmaxActivation', [(2, 3, 2, 2)], mode='channel'),
    "softmax_output": case('SoftmaxOutput', [(4, 5), (4,)]),
    "softmax_output_3d": case('SoftmaxOutput', [(2, 3, 4), (2, 3)]),
    "softmax_output_multi": case('SoftmaxOutput', [(2, 3, 4), (2, 4)], multi_output=True),
    "softmax_output_preserve": case('SoftmaxOutput', [(2, 3, 4), (2, 3)], preserve_shape=True),
    "logistic_output": case('LogisticRegressionOutput', [(4, 3), (4, 3)]),
    "linear_output": case('LinearRegressionOutput', [(4, 1), (4,)]),
    "mae_output": case('MAERegressionOutput', [(4, 3), (4, 3)]),
    "make_loss": case('MakeLoss', [(3, 4)], grad_scale=0.5),
    "make_loss_lower": case('make_loss', [(3, 4)]),
    "dropout_infer": case('Dropout', [(3, 4)], p=0.3),
}


def make_input(rng, case_id, op, index, shape):
    if op == "BatchNorm" and index == 4:
        return rng.uniform(0.5, 2.0, shape).astype("f4")
    if op == "softmax" and index == 1:
        return rng.integers(0, 5, shape).astype("i4")
    if op == "SoftmaxOutput" and index == 1:
        return rng.integers(0, 3, shape).astype("f4")
    return rng.uniform(-2, 2, shape).astype("f4")


def run(case_id, op, attrs, shapes, is_train, rng):
    names = [f"in{i}" for i in range(len(shapes))]
    sym = getattr(mx.sym, op)(*[mx.sym.Variable(n) for n in names], **attrs)
    arrays = {n: make_input(rng, case_id, op, i, s) for i, (n, s) in enumerate(zip(names, shapes))}
    aux = sym.list_auxiliary_states()
    args = {n: mx.nd.array(arrays[n], dtype=arrays[n].dtype) for n in sym.list_arguments()}
    exe = sym.bind(mx.cpu(), args, aux_states={n: mx.nd.array(arrays[n]) for n in aux} or None)
    outs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    mx.nd.waitall()
    return arrays, outs


def main():
    rng = np.random.default_rng(20240501)
    store, meta = {}, {}
    for case_id, (op, attrs, shapes, is_train) in CASES.items():
        arrays, outs = run(case_id, op, attrs, shapes, is_train, rng)
        for n, a in arrays.items():
            store[f"{case_id}:{n}"] = a
        for j, o in enumerate(outs):
            store[f"{case_id}:out{j}"] = o
        meta[case_id] = {"op": op, "attrs": attrs, "inputs": len(shapes), "outputs": len(outs),
                         "is_train": is_train}
    np.savez_compressed(os.path.join(HERE, "reference.npz"), **store)
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": meta}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
