"""ONNX import (backends/onnxrt/importer.py): export -> import round trips against graphexec's
own forward; models built with onnx.helper against ONNX Runtime; unsupported-op errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import graphexec as gx  # noqa: E402
from graphexec.backends.onnxrt.api import (OnnxImportError, export_model,  # noqa: E402,E501
                                           import_model)
from graphexec.core.ir.errors import GraphexecError  # noqa: E402

S = gx.sym
DATA = Path(__file__).parent / "data" / "checkpoint"
F = TensorProto.FLOAT


def forward(sym, data: dict, arg_params: dict, aux_params: dict) -> list:
    exe = sym.bind(gx.cpu(), {**data, **arg_params}, grad_req="null",
                   aux_states=dict(aux_params))
    return [np.asarray(o) for o in exe.forward(is_train=False)]


def round_trip(sym, shapes, pos=False):
    rng = np.random.default_rng(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {n: rng.standard_normal(s).astype("f4") for n, s in
            zip(sym.list_arguments(), arg_shapes)}
    if pos:
        args = {k: np.abs(v) + 0.5 for k, v in args.items()}
    aux = {n: np.abs(rng.standard_normal(s)).astype("f4") + 0.5 for n, s in
           zip(sym.list_auxiliary_states(), aux_shapes)}
    data = {k: args.pop(k) for k in shapes}
    want = forward(sym, data, args, aux)
    model = export_model(sym, args, aux, shapes)
    isym, iargs, iaux = import_model(model)
    got = forward(isym, data, iargs, iaux)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return isym, iargs, iaux


x, y = S.Variable("x"), S.Variable("y")
X4 = {"x": (2, 3, 6, 6)}
X2 = {"x": (3, 4)}
XY = {"x": (3, 4), "y": (3, 4)}
ROUND = {
    "fc": (S.FullyConnected(x, num_hidden=5, name="fc"), X4),
    "fc_nobias": (S.FullyConnected(x, num_hidden=5, no_bias=True, name="fc"), X2),
    "conv": (S.Convolution(x, kernel=(3, 3), num_filter=4, stride=(2, 1), pad=(1, 0),
                           dilate=(1, 2), name="cv"), X4),
    "conv_group": (S.Convolution(x, kernel=(3, 3), num_filter=6, num_group=3, no_bias=True,
                                 name="cv"), X4),
    "maxpool": (S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max"), X4),
    "avgpool_pad": (S.Pooling(x, kernel=(3, 3), pad=(1, 1), pool_type="avg"), X4),
    "avgpool_nopad": (S.Pooling(x, kernel=(3, 3), pad=(1, 1), pool_type="avg",
                                count_include_pad=False), X4),
    "pool_full": (S.Pooling(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full"),
                  {"x": (1, 2, 8, 8)}),
    "global": (S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg")
               + S.Pooling(x, kernel=(1, 1), global_pool=True), X4),
    "bn": (S.BatchNorm(x, fix_gamma=False, eps=1e-3, name="bn"), X4),
    "bn_fix": (S.BatchNorm(x, name="bn"), X4),
    "flatten_reshape": (S.Reshape(S.Flatten(x), shape=(0, -1, 2)), X4),
    "transpose_concat": (S.Concat(S.transpose(x), S.transpose(y), dim=1), XY),
    "softmax": (S.softmax(x, axis=0) + S.log_softmax(x), X2),
    "dot": (S.dot(x, y, transpose_b=True), XY),
    "batch_dot": (S.batch_dot(x, y, transpose_a=True), {"x": (2, 3, 4), "y": (2, 3, 5)}),
    "act": (S.Activation(S.Activation(S.Activation(x, act_type="relu"), act_type="tanh"),
                         act_type="softrelu") + S.softsign(S.sigmoid(x)), X2),
    "leaky": (S.LeakyReLU(x, act_type="leaky", slope=0.2) + S.LeakyReLU(x, act_type="elu")
              + S.LeakyReLU(x, act_type="selu") + S.erf(x), X2),
    "prelu": (S.LeakyReLU(x, act_type="prelu", name="pr"), X4),
    "arith": (S.broadcast_div(S.broadcast_mul(x, y) - x, S.abs(y) + 1.0)
              + S.broadcast_maximum(x, y) - S.broadcast_minimum(x, y) * 2.0, XY),
    "scalars": (3.0 - (2.0 / (S.abs(x) + 0.5)) + S._power_scalar(S.abs(x), scalar=1.5), X2),
    "unary": (S.exp(x) + S.sin(x) + S.cos(x) + S.floor(x) + S.ceil(x) + S.negative(x)
              + S.sqrt(S.abs(x)) + S.log(S.abs(x) + 1.0) + S.reciprocal(S.abs(x) + 1.0), X2),
    "reduce": (S.sum(x, axis=(1, 3), keepdims=True), X4),
    "reduce_mean": (S.mean(x, axis=1, exclude=True), X4),
    "add_n_where": (S.where(S._greater(x, y), S.add_n(x, y, x), y), XY),
    "clip_cast": (S.Cast(S.clip(x, a_min=-0.5, a_max=0.7), dtype="float64"), X2),
    "expand_squeeze": (S.squeeze(S.expand_dims(x, axis=1)), X2),
    "multi_output": (S.Group([S.relu(x), S.tanh(x)]), X2),
}


@pytest.mark.parametrize("case", sorted(ROUND))
def test_round_trip(case):
    sym, shapes = ROUND[case]
    round_trip(sym, shapes)


def test_round_trip_names_params():
    _, args, aux = round_trip(ROUND["bn"][0], X4)
    assert set(args) == {"bn_gamma", "bn_beta"}
    assert set(aux) == {"bn_moving_mean", "bn_moving_var"}


def test_lenet_checkpoint(tmp_path):
    sym, arg_params, aux_params = gx.model.load_checkpoint(str(DATA / "lenet_small"), 3)
    expected = np.load(DATA / "expected.npz")
    path = tmp_path / "lenet.onnx"
    export_model(sym, arg_params, aux_params, {"data": expected["data"].shape}, path)
    isym, iargs, iaux = import_model(path)
    assert isym.list_inputs()[0] == "data"
    params = {k: np.asarray(v) for k, v in arg_params.items()}
    assert set(iargs) | set(iaux) == set(params) | set(aux_params)
    got = forward(isym, {"data": expected["data"]}, iargs, iaux)[0]
    np.testing.assert_allclose(got, expected["out0"], rtol=1e-5, atol=1e-6)


# ---- models built with onnx.helper, compared against ONNX Runtime ------------------------

def make_model(nodes, inputs: dict, outputs: list, inits: dict | None = None, opset=17):
    """A model of ``nodes``; the outputs' types come from ONNX shape inference."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, F, list(v)) for k, v in inputs.items()],
        [], initializer=[numpy_helper.from_array(np.asarray(v), k)
                         for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    infos = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    model.graph.output.extend(infos.get(o, helper.make_tensor_value_info(o, F, None))
                              for o in outputs)
    return model


def check_against_ort(model, inputs: dict, pos=False):
    rng = np.random.default_rng(1)
    feed = {k: rng.standard_normal(s).astype("f4") for k, s in inputs.items()}
    if pos:
        feed = {k: np.abs(v) + 0.5 for k, v in feed.items()}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feed)
    sym, args, aux = import_model(model)
    got = forward(sym, feed, args, aux)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g.astype(w.dtype), w, rtol=1e-5, atol=1e-5)


N = helper.make_node
W = np.random.default_rng(2).standard_normal((5, 4)).astype("f4")
HELPER = {
    "gemm_general": ([N("Gemm", ["a", "w", "c"], ["o"], alpha=0.5, beta=2.0, transA=1)],
                     {"a": (4, 3)}, {"w": W.T.copy(), "c": np.ones((3, 5), "f4")}),
    "gemm_fc": ([N("Gemm", ["a", "w", "b"], ["o"], transB=1)], {"a": (3, 4)},
                {"w": W, "b": np.arange(5, dtype="f4")}),
    "matmul_nd": ([N("MatMul", ["a", "w"], ["o"])], {"a": (2, 3, 5)}, {"w": W}),
    "matmul_3d": ([N("MatMul", ["a", "b"], ["o"])], {"a": (2, 3, 4), "b": (2, 4, 5)}, {}),
    "bn": ([N("BatchNormalization", ["a", "s", "b", "m", "v"], ["o"], epsilon=1e-3)],
           {"a": (2, 3, 4)}, {"s": np.full(3, 2, "f4"), "b": np.ones(3, "f4"),
                              "m": np.arange(3, dtype="f4"), "v": np.full(3, 4, "f4")}),
    "bn_chain": ([N("BatchNormalization", ["a", "s", "b", "m", "v"], ["t"]),
                  N("BatchNormalization", ["t", "s", "b", "v", "m"], ["o"])],
                 {"a": (2, 3, 4)}, {"s": np.full(3, 2, "f4"), "b": np.ones(3, "f4"),
                                    "m": np.arange(3, dtype="f4"), "v": np.full(3, 4, "f4")}),
    "prelu_channel": ([N("PRelu", ["a", "s"], ["o"])], {"a": (2, 3, 4, 4)},
                      {"s": np.array([[[0.1]], [[0.2]], [[0.3]]], "f4")}),
    "prelu_general": ([N("PRelu", ["a", "s"], ["o"])], {"a": (2, 3, 4)},
                      {"s": np.linspace(0, 1, 4, dtype="f4")}),
    "reduce_attr": ([N("ReduceMax", ["a"], ["o"], axes=[1], keepdims=0)], {"a": (2, 3, 4)}, {}),
    "reduce_input": ([N("ReduceSum", ["a", "ax"], ["o"], keepdims=1)], {"a": (2, 3, 4)},
                     {"ax": np.array([0, 2])}),
    "reduce_min_mean": ([N("ReduceMin", ["a"], ["t"], axes=[-1]),
                         N("ReduceMean", ["t"], ["o"], axes=[1], keepdims=0)],
                        {"a": (2, 3, 4)}, {}),
    "unsqueeze_squeeze": ([N("Unsqueeze", ["a", "ax"], ["t"]), N("Squeeze", ["t", "sq"], ["o"])],
                          {"a": (3, 4)}, {"ax": np.array([0, -1]), "sq": np.array([0])}),
    "clip_inputs": ([N("Clip", ["a", "lo", "hi"], ["o"])], {"a": (3, 4)},
                    {"lo": np.float32(-0.3), "hi": np.float32(0.4)}),
    "clip_max_only": ([N("Clip", ["a", "", "hi"], ["o"])], {"a": (3, 4)},
                      {"hi": np.float32(0.4)}),
    "gather_embedding": ([N("Gather", ["w", "i"], ["o"])], {}, {"w": W, "i": np.array([[4, 0]])}),
    "gather_take": ([N("Gather", ["a", "i"], ["o"], axis=1)], {"a": (3, 4)},
                    {"i": np.array([3, -1, 0])}),
    "reshape_codes": ([N("Reshape", ["a", "s"], ["o"])], {"a": (2, 3, 4)},
                      {"s": np.array([0, -1])}),
    "flatten_axis0": ([N("Flatten", ["a"], ["o"], axis=0)], {"a": (2, 3)}, {}),
    "compare_where": ([N("Greater", ["a", "b"], ["g"]), N("Less", ["a", "z"], ["l"]),
                       N("Equal", ["g", "l"], ["e"]), N("Where", ["e", "a", "b"], ["o"])],
                      {"a": (3, 4), "b": (3, 4)}, {"z": np.float32(0)}),
    "variadic": ([N("Max", ["a", "b", "c"], ["m"]), N("Min", ["a", "b"], ["n"]),
                  N("Sum", ["m", "n", "a"], ["o"])], {"a": (3, 4), "b": (3, 4), "c": (1, 4)}, {}),
    "scalar_left": ([N("Sub", ["k", "a"], ["t"]), N("Div", ["t", "k"], ["u"]),
                     N("Pow", ["k", "u"], ["o"])], {"a": (3, 4)}, {"k": np.float32(2)}),
    "constant_node": ([N("Constant", [], ["k"], value=numpy_helper.from_array(
        np.array([1.5], "f4"))), N("Mul", ["a", "k"], ["o"])], {"a": (3, 4)}, {}),
    "cast_identity_dropout": ([N("Cast", ["a"], ["c"], to=TensorProto.DOUBLE),
                               N("Identity", ["c"], ["d"]), N("Dropout", ["d"], ["o"])],
                              {"a": (3, 4)}, {}),
    "softmax_axis": ([N("Softmax", ["a"], ["s"], axis=1), N("LogSoftmax", ["s"], ["o"])],
                     {"a": (2, 3, 4)}, {}),
    "conv_pool": ([N("Conv", ["a", "w"], ["c"], pads=[1, 1, 1, 1], group=1),
                   N("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                   N("AveragePool", ["p"], ["q"], kernel_shape=[2, 2], pads=[1, 1, 1, 1],
                     count_include_pad=1),
                   N("GlobalMaxPool", ["q"], ["o"])],
                  {"a": (1, 2, 8, 8)}, {"w": np.ones((3, 2, 3, 3), "f4") / 9}),
    "elu_leaky_selu": ([N("Elu", ["a"], ["e"], alpha=0.5), N("LeakyRelu", ["e"], ["l"]),
                        N("Selu", ["l"], ["o"])], {"a": (3, 4)}, {}),
    "unary": ([N(t, ["a"], [t]) for t in ("Exp", "Sin", "Cos", "Abs", "Neg", "Floor", "Ceil",
                                          "Erf", "Softplus", "Softsign", "Sigmoid", "Tanh")]
              + [N("Relu", ["a"], ["o"])], {"a": (3, 4)}, {}),
    "conv_asymmetric_pads": ([N("Conv", ["a", "w"], ["o"], pads=[0, 1, 1, 2], strides=[2, 1])],
                             {"a": (1, 2, 7, 7)}, {"w": np.ones((3, 2, 3, 3), "f4")}),
    "conv_same_upper": ([N("Conv", ["a", "w"], ["o"], auto_pad="SAME_UPPER")],
                        {"a": (1, 2, 6, 6)}, {"w": np.ones((3, 2, 2, 2), "f4")}),
    "conv_transpose": ([N("ConvTranspose", ["a", "w"], ["o"], strides=[2, 2], pads=[1, 0, 0, 1],
                          output_padding=[1, 1])],
                       {"a": (1, 2, 4, 4)}, {"w": np.ones((2, 3, 3, 3), "f4")}),
    "pool_ceil_same": ([N("MaxPool", ["a"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                          ceil_mode=1),
                        N("AveragePool", ["m"], ["o"], kernel_shape=[2, 2], auto_pad="SAME_UPPER")],
                       {"a": (1, 2, 8, 8)}, {}),
    "matmul_broadcast": ([N("MatMul", ["a", "b"], ["m"]), N("MatMul", ["v", "m"], ["o"])],
                         {"a": (2, 1, 3, 4), "b": (3, 4, 5), "v": (3,)}, {}),
    "layernorm_axis": ([N("LayerNormalization", ["a", "s", "b"], ["o"], axis=1)],
                       {"a": (2, 3, 4)}, {"s": np.full((3, 4), 2, "f4"),
                                          "b": np.ones((3, 4), "f4")}),
    "where_broadcast": ([N("Greater", ["a", "z"], ["g"]), N("Where", ["g", "a", "b"], ["o"])],
                        {"a": (3, 4), "b": (4,)}, {"z": np.zeros((1, 4), "f4")}),
    "flatten_slice_split": ([N("Flatten", ["a"], ["f"], axis=2),
                             N("Slice", ["f", "st", "en", "ax", "sp"], ["s"]),
                             N("Split", ["s", "sz"], ["p", "o"], axis=1)],
                            {"a": (2, 3, 4, 5)}, {"st": np.array([-1, 1]), "en": np.array(
                                [-100, 19]), "ax": np.array([0, 1]), "sp": np.array([-1, 2]),
                                                  "sz": np.array([3, 6])}),
    "expand_tile_pad": ([N("Expand", ["a", "sh"], ["e"]), N("Tile", ["e", "r"], ["t"]),
                         N("Pad", ["t", "p"], ["o"], mode="reflect")],
                        {"a": (3, 1)}, {"sh": np.array([2, 1, 4]), "r": np.array([1, 2, 1]),
                                        "p": np.array([0, 1, 1, 0, 1, 2])}),
    "mod_argmax_hardmax": ([N("Mod", ["a", "b"], ["m"], fmod=1),
                            N("ArgMax", ["m"], ["i"], axis=1, select_last_index=1),
                            N("Hardmax", ["a"], ["h"], axis=0), N("Cast", ["i"], ["c"], to=F),
                            N("Mul", ["h", "c"], ["o"])], {"a": (3, 4), "b": (3, 4)}, {}),
    "activations": ([N("HardSwish", ["a"], ["h"]), N("Celu", ["h"], ["c"], alpha=0.5),
                     N("Selu", ["c"], ["s"], alpha=1.5, gamma=2.0),
                     N("ThresholdedRelu", ["s"], ["t"], alpha=0.1),
                     N("Clip", ["t", "lo"], ["o"])], {"a": (3, 4)}, {"lo": np.float32(0.05)}),
    "shape_constants": ([N("Shape", ["a"], ["s"]), N("ConstantOfShape", ["s"], ["z"]),
                         N("Add", ["a", "z"], ["o"])], {"a": (2, 3)}, {}),
}


@pytest.mark.parametrize("case", sorted(HELPER))
def test_helper_model_matches_onnxruntime(case):
    nodes, inputs, inits = HELPER[case]
    outs = [nodes[-1].output[0]] if case != "unary" else [n.output[0] for n in nodes]
    check_against_ort(make_model(nodes, inputs, outs, inits), inputs)


def test_positive_unary_ops():
    nodes = [N(t, ["a"], [t]) for t in ("Log", "Sqrt", "Reciprocal")]
    check_against_ort(make_model(nodes, {"a": (3, 4)}, ["Log", "Sqrt", "Reciprocal"]),
                      {"a": (3, 4)}, pos=True)


def test_unsupported_ops_are_all_listed():
    model = make_model([N("Relu", ["a"], ["r"], name="ok"),
                        N("TopK", ["r", "k"], ["v", "i"], name="top"),
                        N("NonZero", ["v"], ["o"], name="nz")], {"a": (3, 4)}, ["o"],
                       {"k": np.array([2])})
    with pytest.raises(OnnxImportError) as err:
        import_model(model)
    msg = str(err.value)
    assert "top (TopK)" in msg and "nz (NonZero)" in msg and "ok (Relu)" not in msg
    assert isinstance(err.value, GraphexecError) and isinstance(err.value, ValueError)


@pytest.mark.parametrize("node, inits, match", [
    (N("MaxPool", ["a"], ["o"], kernel_shape=[2, 2], dilations=[2, 2]), {}, "dilations"),
    ([N("ReduceMax", ["a"], ["m"], axes=[0, 1, 2], keepdims=0),
      N("Cast", ["m"], ["s"], to=onnx.TensorProto.INT64),
      N("Reshape", ["a", "s"], ["o"])], {}, "must be a constant"),
    (N("Pad", ["a", "p"], ["o"], mode="wrap"), {"p": np.array([0, 0, 1, 1, 0, 0, 1, 1])},
     "mode 'wrap'"),
    (N("Reshape", ["a", "s"], ["o"], allowzero=1), {"s": np.array([0, 18])}, "allowzero"),
])
def test_attribute_errors_name_the_node(node, inits, match):
    nodes = node if isinstance(node, list) else [node]
    with pytest.raises(OnnxImportError, match=match):
        import_model(make_model(nodes, {"a": (1, 2, 3, 3)}, ["o"], inits))
