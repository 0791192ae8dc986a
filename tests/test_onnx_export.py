"""ONNX export (backends/onnxrt): every converter run by ONNX Runtime against graphexec's own
forward(is_train=False); the LeNet checkpoint; errors for unsupported nodes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import graphexec as gx  # noqa: E402
from graphexec.backends.onnxrt.api import OnnxExportError, export_model  # noqa: E402
from graphexec.backends.onnxrt.converters import CONVERTERS  # noqa: E402
from graphexec.core.ir.errors import GraphexecError  # noqa: E402

S = gx.sym
DATA = Path(__file__).parent / "data" / "checkpoint"


def run_both(sym, shapes, gen=None, dtypes=None, pos=False):
    """Random data + params; graphexec forward vs ONNX Runtime on the exported model."""
    rng = np.random.default_rng(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    dtypes = dtypes or {}

    def make(name, shape):
        if gen and name in gen:
            return gen[name](rng, shape)
        a = rng.standard_normal(shape).astype(dtypes.get(name, "f4"))
        return np.abs(a) + 0.5 if pos else a
    args = {n: make(n, s) for n, s in zip(sym.list_arguments(), arg_shapes)}
    aux = {n: np.abs(make(n, s)) + 0.5 for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    exe = sym.bind(gx.cpu(), args, grad_req="null", aux_states=aux)
    want = [np.asarray(o) for o in exe.forward(is_train=False)]
    params = {k: v for k, v in args.items() if k not in shapes}
    model = export_model(sym, params, aux, shapes, input_dtypes=dtypes)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(sym.list_outputs(), {k: args[k] for k in shapes})
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return model


x, y, c = S.Variable("x"), S.Variable("y"), S.Variable("c")
X4 = {"x": (2, 3, 6, 6)}
X2 = {"x": (3, 4)}
XY = {"x": (3, 4), "y": (3, 4)}
CASES = {
    "fc": (S.FullyConnected(x, num_hidden=5, name="fc"), X4),
    "fc_noflat": (S.FullyConnected(x, num_hidden=5, flatten=False, name="fc"), {"x": (2, 3, 4)}),
    "fc_nobias": (S.FullyConnected(x, num_hidden=5, no_bias=True, name="fc"), X2),
    "conv2d": (S.Convolution(x, kernel=(3, 3), num_filter=4, stride=(2, 1), pad=(1, 0),
                             dilate=(1, 2), name="cv"), X4),
    "conv_group": (S.Convolution(x, kernel=(3, 3), num_filter=6, num_group=3, no_bias=True,
                                 name="cv"), X4),
    "conv1d": (S.Convolution(x, kernel=(3,), num_filter=2, name="cv"), {"x": (2, 3, 8)}),
    "maxpool": (S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max"), X4),
    "avgpool_pad": (S.Pooling(x, kernel=(3, 3), pad=(1, 1), pool_type="avg"), X4),
    "avgpool_nopad": (S.Pooling(x, kernel=(3, 3), pad=(1, 1), pool_type="avg",
                                count_include_pad=False), X4),
    "pool_full": (S.Pooling(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full"),
                  {"x": (1, 2, 8, 8)}),
    "global_avg": (S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg"), X4),
    "global_max": (S.Pooling(x, kernel=(1, 1), global_pool=True), X4),
    "bn_fix": (S.BatchNorm(x, name="bn"), X4),
    "bn_gamma": (S.BatchNorm(x, fix_gamma=False, eps=1e-3, name="bn"), X4),
    "bn_global": (S.BatchNorm(x, use_global_stats=True, fix_gamma=False, name="bn"), X4),
    "dropout": (S.Dropout(x, p=0.3), X2),
    "flatten": (S.Flatten(x), X4),
    "reshape": (S.Reshape(x, shape=(0, -1, 2)), X4),
    "reshape_codes": (S.Reshape(x, shape=(-3, -2)), X4),
    "transpose": (S.transpose(x, axes=(0, 2, 3, 1)), X4),
    "transpose_rev": (S.transpose(x), X2),
    "concat": (S.Concat(x, y, dim=0), XY),
    "split": (S.SliceChannel(x, num_outputs=3, axis=1), X4),
    "split_squeeze": (S.SliceChannel(x, num_outputs=3, squeeze_axis=True), X4),
    "softmax": (S.softmax(x, axis=0), X2),
    "softmax_temp": (S.softmax(x, temperature=2.0), X2),
    "log_softmax": (S.log_softmax(x, axis=1), X4),
    "softmax_output": (S.SoftmaxOutput(x, name="so"), X2),
    "softmax_output_4d": (S.SoftmaxOutput(x, name="so"), X4),
    "softmax_multi": (S.SoftmaxOutput(x, multi_output=True, name="so"), X4),
    "softmax_preserve": (S.SoftmaxOutput(x, preserve_shape=True, name="so"), X4),
    "dot": (S.dot(x, y, transpose_b=True), XY),
    "dot_ta": (S.dot(x, y, transpose_a=True), XY),
    "batch_dot": (S.batch_dot(x, y, transpose_a=True), {"x": (2, 3, 4), "y": (2, 3, 5)}),
    "where": (S.where(c, x, y), {"c": (3, 4), "x": (3, 4), "y": (3, 4)}),
    "add_n": (S.add_n(x, y, x), XY),
    "zeros_like": (S.zeros_like(x) + x, X2),
    "ones_like": (S.ones_like(x) * x, X2),
    "clip": (S.clip(x, a_min=-0.5, a_max=0.7), X2),
    "cast": (S.Cast(x, dtype="float64"), X2),
    "expand_dims": (S.expand_dims(x, axis=1), X2),
    "squeeze": (S.squeeze(S.Reshape(x, shape=(3, 1, 4))), X2),
    "slice_axis": (S.slice_axis(x, axis=1, begin=1, end=None), X2),
    "slice_axis_neg": (S.slice_axis(x, axis=-1, begin=-3, end=-1), X2),
    "identity": (S.BlockGrad(S.identity(S.MakeLoss(x))), X2),
}
CASES.update({
    "deconv": (S.Deconvolution(x, kernel=(3, 3), num_filter=4, stride=(2, 2), pad=(1, 1),
                               adj=(1, 1), name="dc"), X4),
    "deconv_target": (S.Deconvolution(x, kernel=(3, 3), num_filter=2, stride=(2, 2),
                                      target_shape=(12, 11), no_bias=False, name="dc"), X4),
    "conv_nhwc": (S.Convolution(x, kernel=(3, 3), num_filter=4, layout="NHWC", name="cv"),
                  {"x": (2, 6, 6, 3)}),
    "layer_norm": (S.LayerNorm(x, name="ln"), X4),
    "batchnorm_last": (S.BatchNorm(x, axis=-1, fix_gamma=False, name="bn"), X4),
    "pad_reflect": (S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 2, 2, 1)), X4),
    "upsampling": (S.UpSampling(x, scale=2, sample_type="nearest", num_args=1), X4),
    "round_mod": (S.broadcast_mod(S.round(x * 3.0), y), {"x": (3, 4), "y": (1, 4)}),
    "norm_argmax": (S.argmax(S.norm(x, axis=1, keepdims=True), axis=2), X4),
    "take": (S.take(x, y * 3.0, axis=1, mode="wrap"), XY),
    "one_hot": (S.one_hot(S.floor(x * 2.0), depth=3), X2),
    "stack_tile": (S.tile(S.stack(x, y, axis=1), reps=(2, 1, 1)), XY),
    "slice_reverse": (S.reverse(S.slice(x, begin=(None, 1), end=(None, None), step=(-1, 2)),
                                axis=1), X2),
    "repeat_swap": (S.SwapAxis(S.repeat(x, repeats=2, axis=0), dim1=0, dim2=1), X2),
    "broadcast_like": (S.broadcast_like(S.sum(x, axis=1, keepdims=True), x), X2),
})
for _act in ("relu", "sigmoid", "tanh", "softrelu", "softsign"):
    CASES[f"act_{_act}"] = (S.Activation(x, act_type=_act), X2)
for _act in ("leaky", "elu", "selu", "gelu"):
    CASES[f"leaky_{_act}"] = (S.LeakyReLU(x, act_type=_act, slope=0.3), X2)
CASES["prelu"] = (S.LeakyReLU(x, act_type="prelu", name="pr"), X4)
for _r in ("sum", "mean", "max", "min", "prod"):
    CASES[f"{_r}_all"] = (getattr(S, _r)(x), X4)
    CASES[f"{_r}_axis"] = (getattr(S, _r)(x, axis=(1, 3), keepdims=True), X4)
    CASES[f"{_r}_exclude"] = (getattr(S, _r)(x, axis=1, exclude=True), X4)
for _op in ("elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_maximum",
            "_minimum", "_equal", "_not_equal", "_greater", "_lesser", "_greater_equal",
            "_lesser_equal", "_logical_and", "_logical_or", "_logical_xor"):
    args = (S.floor(x), S.floor(y)) if "equal" in _op else (x, y)
    CASES[_op] = (getattr(S, _op)(*args), XY)
for _op in ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
            "broadcast_maximum", "broadcast_minimum", "broadcast_greater",
            "broadcast_lesser_equal", "broadcast_not_equal", "broadcast_logical_and"):
    CASES[_op] = (getattr(S, _op)(x, y), {"x": (3, 4), "y": (1, 4)})
for _op in ("_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
            "_rdiv_scalar", "_maximum_scalar", "_minimum_scalar", "_equal_scalar",
            "_not_equal_scalar", "_greater_scalar", "_lesser_scalar", "_greater_equal_scalar",
            "_lesser_equal_scalar", "_logical_and_scalar", "_logical_or_scalar",
            "_logical_xor_scalar"):
    CASES[_op] = (getattr(S, _op)(x, scalar=0.5), X2)
POSITIVE = {"log", "sqrt", "rsqrt", "log2", "log10", "log1p", "arccosh", "_power",
            "_power_scalar", "_rpower_scalar", "broadcast_power", "reciprocal"}
for _op in ("exp", "log", "sqrt", "abs", "negative", "sin", "cos", "tan", "tanh", "sigmoid",
            "relu", "erf", "floor", "ceil", "sign", "reciprocal", "arctan", "sinh", "cosh",
            "arcsinh", "arccosh", "softsign", "square", "rsqrt", "log1p", "expm1", "log2",
            "log10", "logical_not", "rint"):
    CASES[_op] = (getattr(S, _op)(x), X2)
CASES["_power"] = (S._power(x, y), XY)
CASES["broadcast_power"] = (S.broadcast_power(x, y), {"x": (3, 4), "y": (1, 4)})
CASES["_power_scalar"] = (S._power_scalar(x, scalar=1.5), X2)
CASES["_rpower_scalar"] = (S._rpower_scalar(x, scalar=1.5), X2)
CASES["arcsin"] = (S.arcsin(S.tanh(x)), X2)
CASES["arccos"] = (S.arccos(S.tanh(x)), X2)
CASES["arccosh"] = (S.arccosh(x + 1.0), X2)
CASES["arctanh"] = (S.arctanh(S.tanh(x) * 0.9), X2)


@pytest.mark.parametrize("case", sorted(CASES))
def test_converter_matches_graphexec(case):
    sym, shapes = CASES[case]
    run_both(sym, shapes, pos=case in POSITIVE)


def test_embedding():
    sym = S.Embedding(x, input_dim=7, output_dim=3, name="emb")
    idx = {"x": lambda rng, s: rng.integers(0, 7, s).astype("f4")}
    run_both(sym, {"x": (2, 5)}, gen=idx)


def test_cast_int_input():
    run_both(S.Cast(x, dtype="float32") * 2, {"x": (3,)}, dtypes={"x": "int32"},
             gen={"x": lambda rng, s: rng.integers(-5, 5, s).astype("i4")})


def test_lenet_checkpoint(tmp_path):
    sym, arg_params, aux_params = gx.model.load_checkpoint(str(DATA / "lenet_small"), 3)
    expected = np.load(DATA / "expected.npz")
    path = tmp_path / "lenet.onnx"
    model = export_model(sym, arg_params, aux_params, {"data": expected["data"].shape}, path)
    assert [i.name for i in model.graph.input] == ["data"]
    assert {i.name for i in model.graph.initializer} >= set(arg_params) | set(aux_params)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"data": expected["data"]})[0]
    assert [o.name for o in sess.get_outputs()] == sym.list_outputs()
    np.testing.assert_allclose(got, expected["out0"], rtol=1e-5, atol=1e-6)


def test_unsupported_ops_are_all_listed():
    sym = S.gammaln(S.LeakyReLU(x, act_type="leaky"), name="gl")
    with pytest.raises(OnnxExportError) as err:
        export_model(S.Dropout(S.Reshape(sym, shape=(2, 1, 12)), p=0.5, mode="always",
                               name="d"), {}, {}, {"x": (2, 3, 4)})
    msg = str(err.value)
    assert "gl (gammaln)" in msg and "d (Dropout)" in msg and "mode='always'" in msg
    assert isinstance(err.value, GraphexecError) and isinstance(err.value, ValueError)


def test_unknown_input_name_and_supports_declared():
    with pytest.raises(OnnxExportError, match="not inputs"):
        export_model(S.relu(x), {}, {}, {"z": (2,)})
    assert CONVERTERS["Dropout"].supports(S.Dropout(x, mode="always")._indexed().nodes[-1],
                                          [(2,)]) != True  # noqa: E712
