"""The comparison tool's models: the built-in zoo (every model builds, binds and runs; the
ResNets match Gluon's export node for node), load_model for every source kind, input
generation, --shape parsing, and the error for each way a model can fail to load."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.tools.compare.models import (Model, ModelLoadError, checkpoint_epochs, init_param,
                                            load_model, make_inputs, parse_shapes)
from graphexec.tools.compare.zoo import ZOO, UnknownModelError, build_zoo_model, zoo_names

DATA = Path(__file__).parent / "data"
CHECKPOINT = DATA / "checkpoint" / "lenet_small"
GLUON_EXPORTS = {"resnet18_v1": DATA / "json" / "zoo_resnet18_v1-symbol.json.gz",
                 "resnet50_v1": DATA / "compare" / "zoo_resnet50_v1-symbol.json.gz"}


def run(model: Model, inputs: dict | None = None) -> list[np.ndarray]:
    exe = model.symbol.simple_bind(gx.cpu(), grad_req="null", **model.input_shapes)
    exe.copy_params_from(model.arg_params, model.aux_params)
    return [o.copy() for o in exe.forward(**(inputs or make_inputs(model)))]


def error(fn, *args, **kwargs) -> str:
    with pytest.raises(ModelLoadError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# -- the zoo ------------------------------------------------------------------------------------
def test_zoo_names_and_metadata():
    assert zoo_names() == ["mlp", "lenet", "resnet18_v1", "resnet50_v1", "lstm", "pointwise"]
    for name, zoo in ZOO.items():
        assert zoo.name == name and zoo.description
        assert set(zoo.label_names) <= set(zoo.input_shapes)


def test_unknown_zoo_name_lists_the_known_ones():
    with pytest.raises(UnknownModelError, match="'resnet19'.*mlp, lenet, resnet18_v1"):
        build_zoo_model("resnet19")


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_runs_with_finite_unsaturated_outputs(name):
    model = load_model(name)
    assert model.source == "zoo" and model.input_shapes == ZOO[name].input_shapes
    assert set(model.arg_params) | set(model.input_shapes) == set(model.symbol.list_arguments())
    assert set(model.aux_params) == set(model.symbol.list_auxiliary_states())
    out = run(model)[0]
    assert out.shape == next(iter(model.output_shapes().values()))
    assert np.isfinite(out).all() and 0 < out.std() < 10


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_builds_are_identical(name):
    assert build_zoo_model(name).tojson() == build_zoo_model(name).tojson()


@pytest.mark.parametrize("name", sorted(GLUON_EXPORTS))
def test_resnet_matches_the_gluon_export_node_for_node(name):
    text = gzip.decompress(GLUON_EXPORTS[name].read_bytes()).decode()
    built = build_zoo_model(name).tojson()
    want, got = json.loads(text)["nodes"], json.loads(built)["nodes"]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g["op"], g["name"], g.get("attrs"), g["inputs"]) == \
            (w["op"], w["name"], w.get("attrs"), w["inputs"])
    assert built == text


def test_lstm_inputs_are_token_ids_and_labels_in_the_vocabulary():
    model = load_model("lstm", shapes={"data": (4, 16)})
    assert model.input_shapes == {"data": (4, 16), "softmax_label": (4, 16)}
    inputs = make_inputs(model, seed=3)
    for name in ("data", "softmax_label"):
        x = inputs[name]
        assert x.dtype == np.float32 and np.array_equal(x, np.round(x))
        assert x.min() >= 0 and x.max() < 1000 and x.max() > 900
    probs = run(model, inputs)[0]
    assert probs.shape == (4, 16, 1000) and np.allclose(probs.sum(-1), 1, atol=1e-4)


def test_pointwise_model_gives_the_fused_backend_long_elementwise_chains():
    pytest.importorskip("numba")
    model = load_model("pointwise")
    ops = model.op_counts()
    assert ops["LayerNorm"] == 5 and ops["FullyConnected"] == 8 and ops["LeakyReLU"] == 2
    plan = gx.partition(model.symbol, "fused", input_shapes=model.input_shapes,
                        cost_model=False)
    assert max(len(r["members"]) for r in plan.to_dict()["regions"]) >= 8


# -- load_model: every source -------------------------------------------------------------------
def test_checkpoint_takes_the_highest_epoch_and_reproduces_mxnet():
    expected = np.load(DATA / "checkpoint" / "expected.npz")
    model = load_model(str(CHECKPOINT), shapes={"data": (2, 1, 16, 16)})
    assert (model.name, model.source) == ("lenet_small", "checkpoint")
    assert model.input_shapes == {"data": (2, 1, 16, 16), "softmax_label": (2,)}
    assert model.label_names == ["softmax_label"]
    assert set(model.aux_params) == {"bn1_moving_mean", "bn1_moving_var"}
    out = run(model, {"data": expected["data"], "softmax_label": np.zeros(2, "f4")})[0]
    np.testing.assert_allclose(out, expected["out0"], rtol=1e-5, atol=1e-6)


def test_checkpoint_by_params_file_and_by_epoch():
    shapes = {"data": (1, 1, 16, 16)}
    by_file = load_model(f"{CHECKPOINT}-0003.params", shapes=shapes)
    by_epoch = load_model(str(CHECKPOINT), shapes=shapes, epoch=3)
    assert checkpoint_epochs(str(CHECKPOINT)) == [3]
    for k, v in by_file.arg_params.items():
        np.testing.assert_array_equal(v, by_epoch.arg_params[k])
    assert "epochs saved under this prefix: 3" in error(load_model, str(CHECKPOINT),
                                                         shapes=shapes, epoch=7)
    assert "holds epoch 3" in error(load_model, f"{CHECKPOINT}-0003.params", epoch=4)


def test_checkpoint_errors(tmp_path):
    assert "cannot decide the shape of input(s) data;" in error(load_model, str(CHECKPOINT))
    msg = error(load_model, str(CHECKPOINT), shapes={"fc1_weight": (10, 216)})
    assert "fc1_weight, stored in the checkpoint as parameters" in msg
    assert "inputs are data, softmax_label" in msg
    load_model("mlp").symbol.save(str(tmp_path / "net-symbol.json"))
    assert "no " + str(tmp_path / "net") + "-NNNN.params file" in error(
        load_model, str(tmp_path / "net"), shapes={"data": (1, 784)})
    (tmp_path / "bad-symbol.json").write_text("{}")
    (tmp_path / "bad-0001.params").write_bytes(b"\x00" * 5)
    assert "cannot load checkpoint" in error(load_model, str(tmp_path / "bad"))


def test_symbol_json_gets_initialised_parameters(tmp_path):
    path = tmp_path / "mlp-symbol.json"
    build_zoo_model("mlp").save(str(path))
    model = load_model(str(path), shapes={"data": (3, 784)}, seed=5)
    assert (model.name, model.source) == ("mlp", "json")
    assert model.input_shapes == {"data": (3, 784), "softmax_label": (3,)}
    assert model.num_params == 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10
    assert not model.arg_params["fc1_bias"].any()
    assert np.isfinite(run(model)[0]).all()
    assert "cannot decide the shape of input(s) data;" in error(load_model, str(path))


def test_onnx_file_takes_static_shapes_from_the_graph(tmp_path):
    lenet = load_model("lenet", shapes={"data": (2, 1, 28, 28)})
    path = tmp_path / "lenet.onnx"
    gx.onnx.export_model(lenet.symbol, lenet.arg_params, lenet.aux_params,
                         {"data": (2, 1, 28, 28)}, str(path))
    model = load_model(str(path))
    assert (model.name, model.source, model.input_shapes) == ("lenet", "onnx",
                                                             {"data": (2, 1, 28, 28)})
    inputs = make_inputs(model)
    np.testing.assert_allclose(run(model, inputs)[0], run(lenet, {"data": inputs["data"]})[0],
                               rtol=1e-5, atol=1e-6)


def test_onnx_dynamic_dimensions_need_shapes(tmp_path):
    import onnx
    mlp = load_model("mlp", shapes={"data": (2, 784)})
    proto = gx.onnx.export_model(mlp.symbol, mlp.arg_params, {}, {"data": (2, 784)})
    proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    path = tmp_path / "mlp.onnx"
    onnx.save(proto, str(path))
    assert "dynamic dimensions need shapes: data (batch, 784)" in error(load_model, str(path))
    assert load_model(str(path), shapes={"data": (5, 784)}).input_shapes == {"data": (5, 784)}
    assert "has no input 'x'; its inputs are data" in error(load_model, str(path),
                                                            shapes={"x": (5, 784)})


def test_symbol_object_needs_shapes():
    net = gx.sym.FullyConnected(gx.sym.Variable("x"), num_hidden=3, name="fc")
    model = load_model(net, shapes={"x": (2, 5)})
    assert (model.name, model.source) == ("fc", "symbol")
    assert model.input_shapes == {"x": (2, 5)} and set(model.arg_params) == {"fc_weight",
                                                                             "fc_bias"}
    msg = error(load_model, net)
    assert "cannot decide the shape of argument(s) x, fc_weight, fc_bias" in msg
    assert "shapes given: none; give the shapes of the inputs" in msg


def test_zoo_shapes_override_the_defaults_and_labels_follow():
    model = load_model("resnet18_v1", shapes={"data": (2, 3, 64, 64)})
    assert model.input_shapes == {"data": (2, 3, 64, 64)}
    assert load_model("mlp", shapes={"data": (4, 784)}).input_shapes["softmax_label"] == (4,)


# -- errors for bad specs -----------------------------------------------------------------------
def test_unreadable_files_and_unknown_specs(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"not a protobuf \x00\x01\x02")
    assert "cannot read ONNX model" in error(load_model, str(tmp_path / "bad.onnx"))
    (tmp_path / "bad.json").write_text('{"nodes": [')
    assert "cannot read symbol JSON" in error(load_model, str(tmp_path / "bad.json"),
                                              shapes={"data": (1,)})
    (tmp_path / "notes.txt").write_text("hello")
    assert "exists but is none of the model formats" in error(load_model,
                                                              str(tmp_path / "notes.txt"))
    msg = error(load_model, str(tmp_path / "nothing"))
    assert "not a built-in model (mlp, lenet" in msg and "nothing-symbol.json" in msg
    assert "does not exist" in error(load_model, str(tmp_path / "missing.onnx"))
    assert "got int" in error(load_model, 3)


def test_bad_shapes_and_epochs():
    msg = error(load_model, "mlp", shapes={"dat": (1, 784)})
    assert "'dat', which the model does not have" in msg and "data, fc1_weight" in msg
    assert "not a tuple of positive integers" in error(load_model, "mlp",
                                                       shapes={"data": (1, -784)})
    assert "do not fit the model" in error(load_model, "mlp", shapes={"data": (2, 783),
                                                                      "fc1_weight": (512, 784)})
    assert "epoch=2 given, but 'mlp' is not a checkpoint" in error(load_model, "mlp", epoch=2)
    net = gx.sym.Variable("data") * 2
    assert "but a Symbol is not a checkpoint" in error(load_model, net, epoch=1)


# -- inputs, parameters, summary ----------------------------------------------------------------
def test_make_inputs_labels_are_class_indices():
    model = load_model("mlp")
    inputs = make_inputs(model, seed=1)
    label = inputs["softmax_label"]
    assert label.shape == (32,) and label.dtype == np.float32
    assert np.array_equal(label, np.round(label)) and 0 <= label.min() and label.max() <= 9
    assert -1 <= inputs["data"].min() < -0.9 and 0.9 < inputs["data"].max() < 1
    again = make_inputs(model, seed=1)
    assert all(np.array_equal(inputs[k], again[k]) for k in inputs)


def test_make_inputs_index_bounds_through_reshape():
    idx = gx.sym.Reshape(gx.sym.Variable("ids"), shape=(-1,))
    net = gx.sym.Embedding(idx, input_dim=7, output_dim=3, name="emb")
    model = load_model(net, shapes={"ids": (4, 50)})
    ids = make_inputs(model)["ids"]
    assert ids.min() == 0 and ids.max() == 6


def test_init_param_rules():
    w = init_param("conv_weight", (64, 32, 3, 3), seed=1)
    bound = np.sqrt(6 / ((32 + 64) * 9))
    assert w.dtype == np.float32 and np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.array_equal(w, init_param("conv_weight", (64, 32, 3, 3), seed=1))
    assert not np.array_equal(w, init_param("conv_weight", (64, 32, 3, 3), seed=2))
    assert not init_param("fc_bias", (4,)).any() and not init_param("bn_moving_mean", (4,)).any()
    assert (init_param("bn_gamma", (4,)) == 1).all()
    assert (init_param("bn_running_var", (4,)) == 1).all()
    assert (init_param("x", (2,), attrs={"__init__": '["one", {}]'}) == 1).all()
    assert init_param("h", (2, 2), dtype="float16").dtype == np.float16


def test_summary_and_info():
    model = load_model("lenet", shapes={"data": (2, 1, 28, 28)})
    text = model.summary()
    assert "model    lenet (zoo)" in text
    assert "input    softmax_label (2,) float32 (label)" in text
    assert "output   softmax_output (2, 10)" in text
    assert "431,080 values in 8 arrays" in text
    assert "Convolution 2" in text
    info = model.info()
    assert info["param_bytes"] == 4 * 431080 == model.param_bytes
    assert info["inputs"]["data"] == {"shape": [2, 1, 28, 28], "dtype": "float32"}


# -- --shape parsing ----------------------------------------------------------------------------
def test_parse_shapes():
    assert parse_shapes(["data=1,3,224,224", "softmax_label=1"]) == {
        "data": (1, 3, 224, 224), "softmax_label": (1,)}
    assert parse_shapes(["data=(2, 3); label=2,"]) == {"data": (2, 3), "label": (2,)}
    assert parse_shapes([]) == {}


@pytest.mark.parametrize("text, message", [
    ("data", "expected NAME=D1,D2"),
    ("=1,2", "expected NAME=D1,D2"),
    ("data=", "is not a list of positive integers"),
    ("data=1,x", "is not a list of positive integers"),
    ("data=1,0", "is not a list of positive integers"),
    ("data=1;data=2", "given twice"),
])
def test_parse_shapes_errors(text, message):
    assert message in error(parse_shapes, [text])
