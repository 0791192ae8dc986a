"""nn and loss operators at symbol level: shape and dtype inference (forward, and backward to
the parameters), and the error paths (attributes rejected when the symbol is made, shapes
rejected by inference with the node, op and shapes named). Run-time behaviour is in
test_ops_nn_forward.py."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx

x = gx.sym.Variable("x")


def arg_shapes(sym, **shapes):
    args, outs, aux = sym.infer_shape(**shapes)
    return dict(zip(sym.list_arguments(), args)), outs, dict(zip(sym.list_auxiliary_states(), aux))


# -- shape inference ----------------------------------------------------------------------
@pytest.mark.parametrize("sym,shape,params,out", [
    (gx.sym.FullyConnected(x, num_hidden=5, name="fc"), (2, 3, 4),
     {"fc_weight": (5, 12), "fc_bias": (5,)}, (2, 5)),
    (gx.sym.FullyConnected(x, num_hidden=5, flatten=False, name="fc"), (2, 3, 4),
     {"fc_weight": (5, 4), "fc_bias": (5,)}, (2, 3, 5)),
    (gx.sym.Convolution(x, kernel=(3, 3), num_filter=8, name="c"), (1, 3, 8, 8),
     {"c_weight": (8, 3, 3, 3), "c_bias": (8,)}, (1, 8, 6, 6)),
    (gx.sym.Convolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), dilate=(2, 2),
                        num_filter=8, name="c"), (1, 3, 9, 9), {"c_weight": (8, 3, 3, 3)},
     (1, 8, 4, 4)),
    (gx.sym.Convolution(x, kernel=(3, 3), num_group=2, num_filter=8, no_bias=True, name="c"),
     (1, 4, 8, 8), {"c_weight": (8, 2, 3, 3)}, (1, 8, 6, 6)),
    (gx.sym.Convolution(x, kernel=(3,), num_filter=8, name="c"), (2, 3, 10),
     {"c_weight": (8, 3, 3)}, (2, 8, 8)),
    (gx.sym.Convolution(x, kernel=(3, 3, 3), num_filter=8, name="c"), (2, 3, 5, 6, 7),
     {"c_weight": (8, 3, 3, 3, 3)}, (2, 8, 3, 4, 5)),
    (gx.sym.Convolution(x, kernel=(3, 3), num_filter=8, layout="NHWC", name="c"), (1, 8, 8, 4),
     {"c_weight": (8, 3, 3, 4)}, (1, 6, 6, 8)),
    (gx.sym.Deconvolution(x, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=8, name="d"),
     (1, 4, 5, 5), {"d_weight": (4, 8, 4, 4)}, (1, 8, 10, 10)),
    (gx.sym.Deconvolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1),
                          num_filter=8, name="d"), (1, 4, 5, 5), {}, (1, 8, 10, 10)),
    (gx.sym.Deconvolution(x, kernel=(3, 3), stride=(2, 2), target_shape=(9, 10), num_group=2,
                          num_filter=6, name="d"), (1, 4, 5, 5), {"d_weight": (4, 3, 3, 3)},
     (1, 6, 9, 10)),
    (gx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2)), (1, 3, 8, 8), {}, (1, 3, 3, 3)),
    (gx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full"), (1, 3, 8, 8),
     {}, (1, 3, 4, 4)),
    (gx.sym.Pooling(x, kernel=(2, 2), stride=(3, 3), pad=(1, 1), pooling_convention="full"),
     (1, 3, 4, 4), {}, (1, 3, 3, 3)),
    (gx.sym.Pooling(x, global_pool=True, pool_type="avg"), (1, 3, 8, 8, 2), {},
     (1, 3, 1, 1, 1)),
    (gx.sym.Pooling(x, kernel=(3,), pooling_convention="same", stride=(2,)), (1, 3, 9), {},
     (1, 3, 5)),
    (gx.sym.Pooling(x, kernel=(2,), layout="NWC"), (1, 5, 3), {}, (1, 4, 3)),
    (gx.sym.LayerNorm(x, axis=0, name="ln"), (4, 3, 5), {"ln_gamma": (4,), "ln_beta": (4,)},
     (4, 3, 5)),
    (gx.sym.LeakyReLU(x, act_type="prelu", name="p"), (4, 3, 5), {"p_gamma": (3,)}, (4, 3, 5)),
    (gx.sym.softmax(x, axis=1, use_length=True, name="s"), (4, 3, 5), {"s_length": (4, 5)},
     (4, 3, 5)),
    (gx.sym.SoftmaxOutput(x, name="so"), (4, 5), {"so_label": (4,)}, (4, 5)),
    (gx.sym.SoftmaxOutput(x, name="so"), (4, 5, 2, 3), {"so_label": (4, 5, 2)}, (4, 5, 2, 3)),
    (gx.sym.SoftmaxOutput(x, multi_output=True, name="so"), (4, 5, 2, 3), {"so_label": (4, 6)},
     (4, 5, 2, 3)),
    (gx.sym.LinearRegressionOutput(x, name="r"), (4, 3), {"r_label": (4, 3)}, (4, 3)),
    (gx.sym.LogisticRegressionOutput(x, name="r"), (4, 1), {"r_label": (4,)}, (4, 1)),
])
def test_infer_shape(sym, shape, params, out):
    args, outs, _ = arg_shapes(sym, x=shape)
    assert outs == [out]
    for name, want in params.items():
        assert args[name] == want, name


def test_batchnorm_infers_parameters_and_aux_states():
    sym = gx.sym.BatchNorm(x, axis=-1, name="bn")
    args, outs, aux = arg_shapes(sym, x=(2, 3, 5))
    assert args == {"x": (2, 3, 5), "bn_gamma": (5,), "bn_beta": (5,)}
    assert aux == {"bn_moving_mean": (5,), "bn_moving_var": (5,)} and outs == [(2, 3, 5)]
    # the channel count also flows from a known parameter to the others
    args, _, aux = gx.sym.BatchNorm(x, name="bn").infer_shape_partial(bn_gamma=(7,))
    assert args[2] == (7,) and aux == [(7,), (7,)]


def test_partial_shapes_keep_unknown_batch():
    sym = gx.sym.Convolution(x, kernel=(3, 3), num_filter=8, name="c")
    args, outs, _ = sym.infer_shape_partial(x=(0, 3, 8, 8))
    assert args[1] == (8, 3, 3, 3) and outs == [(0, 8, 6, 6)]
    fc = gx.sym.FullyConnected(x, num_hidden=5, name="fc")
    assert fc.infer_shape_partial(x=(0, 4))[0][1] == (5, 4)


def test_accepted_label_shapes():
    so = gx.sym.SoftmaxOutput(x, multi_output=True, name="so")
    assert arg_shapes(so, x=(4, 5, 2, 3), so_label=(4, 2, 3))[0]["so_label"] == (4, 2, 3)
    assert arg_shapes(gx.sym.SoftmaxOutput(x, name="so"), x=(4, 5), so_label=(4, 5))[1] == \
        [(4, 5)]
    reg = gx.sym.LinearRegressionOutput(x, name="r")
    assert arg_shapes(reg, x=(4, 2, 3), r_label=(4, 6))[0]["r_label"] == (4, 6)


@pytest.mark.parametrize("sym,types,want", [
    (gx.sym.BatchNorm(x, name="bn"), {"x": "float16"},
     ([np.float16, np.float32, np.float32], [np.float16], [np.float32, np.float32])),
    (gx.sym.BatchNorm(x, name="bn"), {"x": "float64"},
     ([np.float64] * 3, [np.float64], [np.float64] * 2)),
    (gx.sym.softmax(x, dtype="float64"), {"x": "float16"}, ([np.float16], [np.float64], [])),
    (gx.sym.SoftmaxOutput(x, name="so"), {"x": "float16"}, ([np.float16] * 2, [np.float16], [])),
    (gx.sym.Pooling(x, kernel=(2, 2)), {"x": "float64"}, ([np.float64], [np.float64], [])),
])
def test_infer_type(sym, types, want):
    assert tuple(sym.infer_type(**types)) == want


# -- error paths --------------------------------------------------------------------------
@pytest.mark.parametrize("sym,shapes,match", [
    (gx.sym.Convolution(x, kernel=(9, 9), num_filter=8, name="c"), {"x": (1, 3, 8, 8)},
     r"Error in operator c: Convolution: kernel size exceeds input.*9.*8"),
    (gx.sym.Convolution(x, kernel=(3, 3), num_filter=8, name="c"), {"x": (3, 8, 8)},
     r"Input data should be 4D in batch-num_filter-y-x, got \[3,8,8\]"),
    (gx.sym.Convolution(x, kernel=(3,), num_filter=8, name="c"), {"x": (3, 8, 8, 3)},
     "Input data should be 3D in batch-num_filter-x"),
    (gx.sym.Convolution(x, kernel=(3, 3), num_group=2, num_filter=8, name="c"),
     {"x": (1, 3, 8, 8)}, r"input channels \(3\) must be divisible by num_group \(2\)"),
    (gx.sym.Convolution(x, kernel=(3, 3), stride=(2,), num_filter=8, name="c"),
     {"x": (1, 3, 8, 8)}, "stride must have the same number of dimensions as kernel"),
    (gx.sym.Convolution(x, kernel=(3, 3, 3, 3), num_filter=8, name="c"),
     {"x": (1, 3, 8, 8, 8, 8)}, "4D convolution not supported"),
    (gx.sym.Convolution(x, kernel=(3, 3), num_filter=8, name="c"),
     {"x": (1, 3, 8, 8), "c_weight": (8, 3, 2, 2)},
     r"input 'weight' \(1-th input\): provided \[8,3,2,2\], inferred \[8,3,3,3\]"),
    (gx.sym.Deconvolution(x, kernel=(3, 3), stride=(2, 2), target_shape=(14, 14),
                          num_filter=8, name="d"), {"x": (1, 4, 5, 5)}, "too big target shape"),
    (gx.sym.Deconvolution(x, kernel=(3, 3), stride=(2, 2), adj=(2, 2), num_filter=8,
                          name="d"), {"x": (1, 4, 5, 5)}, "adj must be smaller than stride"),
    (gx.sym.Pooling(x, kernel=(9, 9), name="p"), {"x": (1, 3, 8, 8)},
     r"kernel size \(9\) exceeds input \(8 padded to 8\)"),
    (gx.sym.Pooling(x, kernel=(2, 2), name="p"), {"x": (3, 8, 8)},
     r"Pooling: Input data should be 4D in \(batch, channel, y, x\)"),
    (gx.sym.Pooling(x, kernel=(2, 2), pool_type="lp", name="p"), {"x": (1, 3, 4, 4)},
     "needs p_value"),
    (gx.sym.Pooling(x, name="p"), {"x": (1, 3, 4, 4)}, "0D pooling not supported"),
    (gx.sym.Pooling(x, kernel=(2, 2), pooling_convention="same", name="p"),
     {"x": (1, 3, 4, 4)}, "'same' supports 1-D pooling"),
    (gx.sym.SoftmaxOutput(x, name="so"), {"x": (4, 5), "so_label": (5,)},
     r"Error in operator so: SoftmaxOutput: .*label.*provided \[5\], inferred \[4\]"),
    (gx.sym.SoftmaxOutput(x, multi_output=True, name="so"),
     {"x": (4, 5, 2, 3), "so_label": (4, 5, 6)}, r"Expecting \[4,6\] or \[4,2,3\]\. But got"),
    (gx.sym.LinearRegressionOutput(x, name="r"), {"x": (4, 3), "r_label": (3, 4)},
     r"provided \[3,4\], inferred \[4,3\]"),
    (gx.sym.FullyConnected(x, num_hidden=5, name="fc"), {"x": (2, 3), "fc_weight": (5, 4)},
     r"provided \[5,4\], inferred \[5,3\]"),
    (gx.sym.BatchNorm(x, axis=3, name="bn"), {"x": (4, 3, 5)}, "Channel axis 3 is out of range"),
    (gx.sym.LayerNorm(x, name="ln"), {"x": (4, 3, 5), "ln_gamma": (3,)},
     r"provided \[3\], inferred \[5\]"),
    (gx.sym.LeakyReLU(x, act_type="prelu", name="p"), {"x": (4, 3, 5), "p_gamma": (5,)},
     r"provided \[5\], inferred \[3\]"),
    (gx.sym.SoftmaxActivation(x, mode="channel", name="s"), {"x": (4, 3)},
     "at least 3 dimensions when mode=channel"),
    (gx.sym.log_softmax(x, use_length=True, name="s"), {"x": (4, 3)}, "use_length"),
    (gx.sym.Dropout(x, axes=(3,), name="d"), {"x": (4, 3)}, "out of range"),
])
def test_shape_errors(sym, shapes, match):
    with pytest.raises(gx.ShapeInferenceError, match=match):
        sym.infer_shape(**shapes)


@pytest.mark.parametrize("make,match", [
    (lambda: gx.sym.Activation(x, act_type="foo"), r"act_type='foo'.*'relu', 'sigmoid'"),
    (lambda: gx.sym.Activation(x), "required attribute 'act_type' is missing"),
    (lambda: gx.sym.Convolution(x, kernel=(3, 3), num_filter=0), "num_filter='0'.*less than 1"),
    (lambda: gx.sym.Pooling(x, kernel=(2, 2), pool_type="median"), "pool_type='median'"),
    (lambda: gx.sym.Convolution(x, kernel=(3, 3), num_filter=2, layout="NWC"), "layout='NWC'"),
])
def test_bad_attributes_fail_when_the_symbol_is_made(make, match):
    with pytest.raises(gx.AttributeParseError, match=match):
        make()


def test_softmax_length_of_any_dtype():
    # MXNet 1.9.1's type rule leaves length's dtype free (its monitor test binds a float32 one)
    sym = gx.sym.softmax(x, use_length=True, name="s")
    assert sym.infer_type(x="float32", s_length="float32")[1] == [np.float32]
    out = sym.bind(gx.cpu(), {"x": np.zeros((2, 3), "f4"),
                              "s_length": np.array([1, 2], "f4")}).forward()[0]
    np.testing.assert_allclose(out, [[1, 0, 0], [0.5, 0.5, 0]])
