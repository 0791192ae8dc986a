"""gx.onnx.export_model / import_model with MXNet 1.9.1's mx.onnx signatures, and a dynamic
batch dimension checked by running the exported model at other batch sizes."""
from __future__ import annotations

import graphexec as gx
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")


def _net():
    d = gx.sym.var("data")
    net = gx.sym.Reshape(gx.sym.FullyConnected(d, num_hidden=4, name="fc"), shape=(-1, 2, 2))
    net = gx.sym.Convolution(gx.sym.Reshape(net, shape=(0, 1, 2, 2)), num_filter=3,
                             kernel=(1, 1), name="cv")
    rng = np.random.default_rng(0)
    params = {"arg:fc_weight": rng.standard_normal((4, 5)).astype("f4"),
              "arg:fc_bias": rng.standard_normal(4).astype("f4"),
              "arg:cv_weight": rng.standard_normal((3, 1, 1, 1)).astype("f4"),
              "arg:cv_bias": np.zeros(3, "f4")}
    return gx.sym.softmax(net, axis=1), params


def _native(net, params, x):
    args = {k.split(":", 1)[1]: v for k, v in params.items()}
    return net.bind(gx.cpu(), {**args, "data": x}).forward()[0]


def test_mxnet_signature_with_dynamic_batch(tmp_path):
    net, params = _net()
    path = gx.onnx.export_model(net, params, [(2, 5)], np.float32, str(tmp_path / "m.onnx"),
                                dynamic=True, dynamic_input_shapes=[(None, 5)])
    assert path == str(tmp_path / "m.onnx")
    meta = gx.onnx.get_model_metadata(path)
    assert meta["input_tensor_data"] == [("data", ("batch", 5))]
    assert meta["output_tensor_data"][0][1] == ("batch", 3, 2, 2)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for batch in (1, 3, 7):   # the Reshape targets follow the batch
        x = np.random.default_rng(batch).standard_normal((batch, 5)).astype("f4")
        np.testing.assert_allclose(sess.run(None, {"data": x})[0], _native(net, params, x),
                                   rtol=1e-5, atol=1e-6)
    sym, arg_params, aux_params = gx.onnx.import_model(path)
    assert set(arg_params) == {"fc_weight", "fc_bias", "cv_weight", "cv_bias"}


def test_mxnet_signature_static_and_params_file(tmp_path):
    net, params = _net()
    gx.nd.save(str(tmp_path / "p.params"), params)
    net.save(str(tmp_path / "s.json"))
    path = gx.onnx.export_model(str(tmp_path / "s.json"), str(tmp_path / "p.params"),
                                in_shapes=[(2, 5)], onnx_file_path=str(tmp_path / "s.onnx"))
    assert gx.onnx.get_model_metadata(path)["input_tensor_data"] == [("data", (2, 5))]
    with pytest.raises(gx.onnx.OnnxExportError, match="in_shapes gives 2 shapes"):
        gx.onnx.export_model(net, params, [(2, 5), (3,)], onnx_file_path=str(tmp_path / "x"))
    # graphexec's own signature is unchanged
    model = gx.onnx.export_model(net, {k[4:]: v for k, v in params.items()}, {}, {"data": (2, 5)})
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 2


def test_size_dependent_constant_that_cannot_be_dynamic_is_named(tmp_path):
    d = gx.sym.var("data")
    net = gx.sym.slice_axis(d, axis=0, begin=0, end=None) * 2
    with pytest.raises(gx.onnx.OnnxExportError, match="cannot be made dynamic|several"):
        gx.onnx.export_model(net, {}, [(4, 3)], onnx_file_path=str(tmp_path / "m.onnx"),
                             dynamic=True)
