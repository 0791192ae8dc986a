"""Untrusted ONNX files (issue #15, items 2 and 8): attributes checked against ranks and shapes
before use, no allocation beyond what the file holds or declares, a model ONNX Runtime
refuses does not import, every failure an OnnxImportError naming what is wrong."""
from __future__ import annotations

import signal
import subprocess
import sys
import tracemalloc
from contextlib import contextmanager

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import graphexec as gx
from graphexec.backends.onnxrt.errors import OnnxImportError
from graphexec.backends.onnxrt.importer import IMPORTERS, MAX_COMPUTED_BYTES, import_model
from onnx_fuzz_cases import CaseMaker

ort.set_default_logger_severity(4)


def _model(nodes, inputs, inits=(), opset=17, outputs=("y",)):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, T.FLOAT, s) for k, s in inputs.items()],
        [helper.make_tensor_value_info(o, T.FLOAT, None) for o in outputs],
        initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


@contextmanager
def bounded(seconds: int = 60):
    """Fail instead of hanging (a guard, not a timing assertion)."""
    def stop(*_):
        raise AssertionError(f"the import ran for more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


N = helper.make_node
X3 = {"x": [2, 3, 4]}


@pytest.mark.parametrize("nodes, inputs, inits, match, opset", [(*case, 18)[:5] for case in [
    ([N("Flatten", ["x"], ["y"], axis=2 ** 27)], X3, [], "Invalid value"),
    ([N("Flatten", ["x"], ["y"], axis=2 ** 27)], {"x": None}, [], "axis 134217728 is outside"),
    ([N("Slice", ["x", "s", "e", "a"], ["y"])], X3,
     [_ints("s", [0]), _ints("e", [1]), _ints("a", [2 ** 40])], "Unexpected axis value"),
    ([N("Slice", ["x", "s", "e", "a"], ["y"])], {"x": None},
     [_ints("s", [0]), _ints("e", [1]), _ints("a", [2 ** 27])], "axis 134217728 is outside"),
    ([N("Relu", ["x", "x"], ["y"])], X3, [], "input size 2 not in range"),
    ([N("Relu", ["x"], ["y"], foo=3)], X3, [], "Unrecognized attribute: foo"),
    ([N("Flatten", ["x"], ["y"], axis=1.5)], X3, [], "Mismatched attribute type"),
    ([N("Concat", ["x", "x"], ["y"], axis=7)], X3, [], "axis must be in"),
    ([N("Range", ["a", "b", "c"], ["y"])], {},
     [numpy_helper.from_array(np.array(v, "f4"), k) for k, v in
      (("a", 0.0), ("b", 1e12), ("c", 1.0))], f"at most {MAX_COMPUTED_BYTES} bytes"),
    ([N("EyeLike", ["x"], ["y"])], {"x": [2 ** 20, 2 ** 20]}, [], "identity would take"),
    ([N("Resize", ["x", "", "s"], ["y"])], {"x": [1, 1, 2, 2]},
     [numpy_helper.from_array(np.array([1, 1, 1e9, 1], "f4"), "s")], "resized from 2 to"),
    ([N("GatherND", ["x", "i"], ["y"], batch_dims=-2)], {"x": [4, 1, 1]},
     [_ints("i", [[0], [0], [0]])], "batch_dims -2 must be >= 0"),
    ([N("LayerNormalization", ["x", "s"], ["y"], axis=7)], {"x": [2, 3], "s": [3]}, [],
     "axis 7 is outside"),
    ([N("Split", ["x"], ["y"], num_outputs=5)], {"x": [6, 3]}, [], "num_outputs 5"),
    ([N("Conv", ["x", "w"], ["y"])], {"x": [1, 1, 5, 5], "w": [1, 1, 2, 2, 2, 2]}, [],
     "differ in rank"),
    ([N("Conv", ["x", "w"], ["y"], strides=[0, 0])], {"x": [1, 1, 4, 4], "w": [1, 1, 2, 2]},
     [], "strides must only contain positive"),
    ([N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="XYZ")], {"x": [1, 4, 2, 2]}, [],
     "mode=b'XYZ' is not one of"),
    ([N("Transpose", ["x"], ["y"], perm=[3])], {"x": None}, [], "not a permutation"),
    ([N("Clip", ["x"], ["y"], max=float("nan"))], X3, [], "min must not exceed max", 9),
    ([N("Cast", ["x"], ["y"], to=1, saturate=0)], X3, [], "saturate=0", 19),
    ([N("Mod", ["x", "x"], ["y"], fmod=5)], X3, [], "fmod=5"),
    ([N("Relu", ["t"], ["y"]), N("Relu", ["y"], ["t"])], X3, [], "on a cycle"),
    ([N("Relu", ["nowhere"], ["y"])], X3, [], "'nowhere', which no node"),
]])
def test_attributes_are_checked_before_use(nodes, inputs, inits, match, opset):
    with bounded(), pytest.raises(OnnxImportError, match=match):
        import_model(_model(nodes, inputs, inits, opset=opset))


@pytest.mark.parametrize("opset, ir, match", [(1_000_000, 8, "opset 1000000"),
                                               (0, 8, "opset 0"), (17, 99, "IR version 99"),
                                               (17, 0, "IR version 0")])
def test_versions_out_of_range(opset, ir, match):
    model = _model([N("Relu", ["x"], ["y"])], X3, opset=opset)
    model.ir_version = ir
    with pytest.raises(OnnxImportError, match=match):
        import_model(model)


def test_nodes_out_of_order_import_as_onnx_runtime_sorts_them():
    model = _model([N("Relu", ["t"], ["y"]), N("Neg", ["x"], ["t"])], X3)
    sym, _, _ = import_model(model)
    x = np.linspace(-1, 1, 24, dtype="f4").reshape(2, 3, 4)
    out = sym.bind(gx.cpu(), {"x": x}, grad_req="null").forward()[0]
    np.testing.assert_array_equal(out, np.maximum(-x, 0))


def test_initializers_that_lie_about_their_size():
    w = numpy_helper.from_array(np.ones(4, "f4"), "w")
    w.dims[0] = 2 ** 40
    with pytest.raises(OnnxImportError, match="initializer 'w'"):
        import_model(_model([N("Add", ["x", "w"], ["y"])], {"x": [4]}, [w]))


def test_a_large_constant_of_shape_is_built_at_bind_not_at_import():
    model = _model([N("ConstantOfShape", ["s"], ["y"])], {}, [_ints("s", [2 ** 16, 2 ** 14])])
    tracemalloc.start()
    sym, _, _ = import_model(model)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2 ** 26 and sym.infer_shape()[1] == [(2 ** 16, 2 ** 14)]


@pytest.mark.parametrize("content, match", [(b"", "is empty"), (b"\x08\xff" * 40, "protobuf"),
                                             (None, "is not a regular file")])
def test_files_that_are_not_models(tmp_path, content, match):
    import os
    path = tmp_path / "m.onnx"
    if content is None:
        os.mkfifo(path)
    else:
        path.write_bytes(content)
    with pytest.raises(OnnxImportError, match=match):
        import_model(str(path))


def _external_model(location: str, length: int | None = None) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones(4, "f4"), "w")
    w.ClearField("raw_data")
    w.data_location = T.EXTERNAL
    info = {"location": location, **({} if length is None else {"length": str(length)})}
    for key, value in info.items():
        w.external_data.add(key=key, value=value)
    return _model([N("Add", ["x", "w"], ["y"])], {"x": [4]}, [w])


@pytest.mark.parametrize("location, length, match", [
    ("../outside.bin", None, "not a file inside the model's folder"),
    ("/etc/passwd", None, "not a file inside the model's folder"),
    ("data.bin", 64, "offers 64 bytes"),
    ("missing.bin", None, "not a regular file"),
])
def test_external_data_stays_in_the_model_folder(tmp_path, location, length, match):
    (tmp_path / "data.bin").write_bytes(np.arange(16, dtype="f4").tobytes())
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "data.bin").write_bytes(np.arange(16, dtype="f4").tobytes())
    onnx.save(_external_model(location, length), str(folder / "m.onnx"))
    with pytest.raises(OnnxImportError, match=match):
        import_model(str(folder / "m.onnx"))


def test_external_data_of_the_declared_size_loads(tmp_path):
    (tmp_path / "data.bin").write_bytes(np.arange(4, dtype="f4").tobytes())
    onnx.save(_external_model("data.bin"), str(tmp_path / "m.onnx"))
    _, args, _ = import_model(str(tmp_path / "m.onnx"))
    np.testing.assert_array_equal(args["w"], np.arange(4, dtype="f4"))
    with pytest.raises(OnnxImportError, match="give import_model the model's path"):
        import_model(_external_model("data.bin"))


# -- fuzzing ------------------------------------------------------------------------------------
def _ort_refuses(model) -> str | None:
    """ONNX Runtime's reason to refuse ``model`` (None when it loads it); a missing kernel
    for a dtype is ONNX Runtime's gap, not the model's fault."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT's own exception types
        return None if "NOT_IMPLEMENTED" in str(exc) else str(exc)
    return None


@settings(max_examples=1000, deadline=None, derandomize=True, database=None)
@given(st.randoms(use_true_random=False))
def test_fuzzed_models_import_or_fail_clearly(r):
    model = CaseMaker(r, sorted(IMPORTERS)).model()
    tracemalloc.start()
    try:
        with bounded():
            sym, args, aux = import_model(model)
    except gx.GraphexecError as exc:
        assert str(exc).startswith("import_model: ")
        return
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 8 * model.ByteSize() + MAX_COMPUTED_BYTES + 2 ** 24
    refused = _ort_refuses(model)
    assert refused is None, f"imported a model ONNX Runtime refuses: {refused}"
    assert isinstance(sym, gx.sym.Symbol)


def test_a_long_vector_does_not_exhaust_memory_in_onnx_inference(tmp_path):
    """ONNX's data propagation takes ~150 bytes per element of a 1-D value Squeeze reads:
    2**31 elements would take 300 GB. Run under a 3 GB address-space limit."""
    model = _model([N("Squeeze", ["x"], ["y"])], {"x": [2 ** 31]}, opset=13)
    onnx.save(model, str(tmp_path / "m.onnx"))
    script = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
              "import graphexec as gx\n"
              f"sym, _, _ = gx.onnx.import_model({str(tmp_path / 'm.onnx')!r})\n"
              "print(sym.infer_shape(x=(2 ** 31,))[1])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[(2147483648,)]"


@pytest.mark.parametrize("model, match", [(None, "expected an onnx.ModelProto or a path"),
                                          ("missing.onnx", "cannot read 'missing.onnx'"),
                                          ("a\x00b.onnx", "embedded null byte")])
def test_prepare_takes_models_and_paths_only(model, match):
    with pytest.raises(OnnxImportError, match=match):
        gx.onnx.prepare(model)


@pytest.mark.parametrize("inputs, match", [(None, "dtype object"), ({"x": "a"}, "dtype <U1"),
                                           ([np.zeros((2, 3), "c8")], "dtype complex64"),
                                           ({"nope": np.zeros(3)}, "not graph inputs")])
def test_backend_run_inputs(inputs, match):
    rep = gx.onnx.prepare(_model([N("Relu", ["x"], ["y"])], {"x": [2, 3]}))
    with pytest.raises(OnnxImportError, match=match):
        rep.run(inputs)
    assert rep.run([np.full((2, 3), -1, "f4")])[0].tolist() == [[0.0] * 3] * 2
