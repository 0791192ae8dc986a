"""Untrusted symbol JSON, .params files and model paths (issue #15, items 9, 11, 12): every
malformed input is a GraphexecError naming what is wrong."""
from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.symbol import ndarray_io
from graphexec.tools.compare.models import ModelLoadError, load_model


def _doc() -> dict:
    x = gx.sym.Variable("x")
    return json.loads(gx.sym.FullyConnected(x, num_hidden=3, name="fc").tojson())


def _load(mutate) -> None:
    doc = _doc()
    mutate(doc)
    gx.sym.load_json(json.dumps(doc))


# -- symbol JSON ----------------------------------------------------------------------------
@pytest.mark.parametrize("text, match", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
    ('{"nodes": [], "heads": [[' + "9" * 5000 + ", 0, 0]]}", "not valid JSON"),
    ("", "not valid JSON"),
    (b"\xff\xfe\x00", "not valid JSON"),
])
def test_malformed_text(text, match):
    with pytest.raises(gx.JSONFormatError, match=match):
        gx.sym.load_json(text)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d["nodes"][3].__setitem__("subgraphs", 5), "'subgraphs' must be a list"),
    (lambda d: d["nodes"][3].__setitem__("control_deps", 5), "'control_deps' must be a list"),
    (lambda d: d["nodes"][3].__setitem__("control_deps", [3]), "reference 3 is not an earlier"),
    (lambda d: d["nodes"][3]["attrs"].__setitem__("num_hidden", "1e400"),
     "num_hidden='1e400' is not a valid int"),
    (lambda d: d["nodes"][3]["attrs"].__setitem__("num_hidden", "9" * 30),
     "outside the int64 range"),
    (lambda d: d["nodes"][3]["attrs"].__setitem__("num_hidden", "nan"), "cannot convert"),
    (lambda d: d["heads"].__setitem__(0, [3, 0, 1.5]), "the version must be an integer"),
    (lambda d: d["heads"].__setitem__(0, [3, 0, "x"]), "the version must be an integer"),
    (lambda d: d["heads"].__setitem__(0, [True, 0, 0]), "reference True is not an earlier"),
    (lambda d: d["heads"].__setitem__(0, [3, False, 0]), "entry asks for output False"),
    (lambda d: d["nodes"][3].__setitem__("inputs", [[3, 0, 0], [1, 0, 0], [2, 0, 0]]),
     "reference 3 is not an earlier node"),  # a cycle through node indices
    (lambda d: d["nodes"][1].__setitem__("inputs", [[0, 0, 0]]), "takes no inputs"),
    (lambda d: d["nodes"][3].__setitem__("op", 7), "string 'op' and 'name'"),
    (lambda d: d["nodes"][3].__setitem__("attrs", [1]), "'attrs' must be an object"),
    (lambda d: d["nodes"][3].__setitem__("subgraphs", [{"nodes": True, "heads": []}]),
     "needs 'nodes' \\(a list\\)"),  # the unknown-operator scan skips what it cannot read
])
def test_wrong_types_in_fields(mutate, match):
    with pytest.raises(gx.JSONFormatError, match=match):
        _load(mutate)


def test_a_float_version_loads_and_writes_back():
    def floats(d):
        d["attrs"]["mxnet_version"] = ["int", 10901.5]
    doc = _doc()
    floats(doc)
    sym = gx.sym.load_json(json.dumps(doc))
    assert gx.sym.load_json(sym.tojson()).tojson() == sym.tojson()


def test_subgraphs_nest_to_a_bounded_depth():
    inner = json.loads(gx.sym.exp(gx.sym.Variable("a")).tojson())
    doc = inner
    for _ in range(40):  # a node whose subgraph holds a node whose subgraph ...
        doc = {"nodes": [{"op": "null", "name": "a"},
                         {"op": "exp", "name": "e", "inputs": [[0, 0, 0]], "subgraphs": [doc]}],
               "arg_nodes": [0], "heads": [[1, 0, 0]]}
    with pytest.raises(gx.JSONFormatError, match="subgraphs nested 33 deep; at most 32"):
        gx.sym.load_json(json.dumps(doc))


@pytest.mark.parametrize("value, error", [(None, gx.JSONFormatError), (5, gx.JSONFormatError)])
def test_load_json_takes_text_only(value, error):
    with pytest.raises(error, match="must be text"):
        gx.sym.load_json(value)


def test_symbol_files_that_are_not_text(tmp_path):
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(gx.JSONFormatError, match="not UTF-8 text"):
        gx.sym.load(str(tmp_path / "bin.json"))
    with pytest.raises(gx.JSONFormatError, match="Is a directory"):
        gx.sym.load(str(tmp_path))
    with pytest.raises(gx.ArgumentTypeError, match="expected a file name"):
        gx.sym.load(None)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # reading would block forever
    with pytest.raises(gx.JSONFormatError, match="not a regular file"):
        gx.sym.load(str(fifo))


def test_a_long_chain_loads_without_recursion():
    y = x = gx.sym.Variable("x")
    for _ in range(20_000):
        y = gx.sym.relu(y)
    sym = gx.sym.load_json(y.tojson())
    assert sym.infer_shape(x=(2,))[1] == [(2,)]


# -- .params --------------------------------------------------------------------------------
def _header(count: int) -> bytes:
    return struct.pack("<QQQ", ndarray_io.LIST_MAGIC, 0, count)


def _array(shape, flag=0, data=b"") -> bytes:
    return struct.pack(f"<Iii{len(shape)}q", ndarray_io.V2_MAGIC, 0, len(shape), *shape) + \
        struct.pack("<iii", 1, 0, flag) + data


@pytest.mark.parametrize("content, match", ids=lambda v: v if isinstance(v, str) else None,
                         argvalues=[
    (_header(1) + _array((0, 2 ** 62, 2 ** 62)) + struct.pack("<Q", 0), "too large to represent"),
    (_header(1) + _array((2 ** 40, 2 ** 40, 0)) + struct.pack("<Q", 0), "too large to represent"),
    (_header(1) + _array((2 ** 62, 4), flag=1), "too large to represent"),
    (_header(1) + _array((2 ** 31, 4), flag=1), "needs 68719476736 bytes of data"),
    (_header(2 ** 63), "announces 9223372036854775808 arrays"),
    (_header(1) + _array((2,), data=b"\0" * 8) + struct.pack("<QQ", 1, 2 ** 63), "key length"),
    (b"", "truncated file"),
])
def test_lying_params_files(tmp_path, content, match):
    path = tmp_path / "x.params"
    path.write_bytes(content)
    with pytest.raises(gx.ParamsFormatError, match=match):
        ndarray_io.load(str(path))


def test_params_names_must_be_paths_of_regular_files(tmp_path):
    with pytest.raises(gx.ArgumentTypeError, match="expected a file name"):
        ndarray_io.load(None)
    fifo = tmp_path / "fifo.params"
    os.mkfifo(fifo)
    with pytest.raises(gx.ParamsFormatError, match="not a regular file"):
        ndarray_io.load(str(fifo))
    with pytest.raises(gx.ArgumentTypeError, match="epoch must be an integer"):
        gx.model.load_params(str(tmp_path / "m"), "1")


# -- model paths (graphexec info / compare) ----------------------------------------------------
def _file(name: str, content: bytes):
    def make(folder):
        (folder / name).write_bytes(content)
        return folder / name
    return make


def _folder(name: str):
    def make(folder):
        (folder / name).mkdir()
        return folder / name
    return make


@pytest.mark.parametrize("make, match", [
    (lambda p: p / "missing.onnx", "does not exist"),
    (_file("empty.onnx", b""), "is empty"),
    (_file("junk.onnx", b"\x08\xff" * 9), "not an ONNX model"),
    (_folder("d.onnx"), "is a folder"),
    (_folder("d.json"), "is a folder"),
    (_file("e.json", b""), "not valid JSON"),
    (_file("bin.json", b"\xff"), "not UTF-8"),
    (lambda p: p / "caf\udce9.onnx", "does not exist"),  # a non-UTF-8 name from argv
    (lambda p: "", "no model ''"),
])
def test_model_paths(tmp_path, make, match):
    with pytest.raises(ModelLoadError, match=match):
        load_model(str(make(tmp_path)))


def test_graphexec_info_on_an_empty_onnx_file(tmp_path, capsys):
    from graphexec.tools.cli import main
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert main(["info", str(tmp_path / "empty.onnx")]) == 1
    err = capsys.readouterr().err
    assert "is empty, not an ONNX model" in err and "Traceback" not in err


def test_checkpoint_arrays_are_numpy(tmp_path):
    """A round trip keeps working with the checks in place."""
    prefix = str(tmp_path / "m")
    sym = gx.sym.FullyConnected(gx.sym.Variable("x"), num_hidden=2, name="fc")
    w = np.arange(6, dtype="f4").reshape(2, 3)
    gx.model.save_checkpoint(prefix, 1, sym, {"fc_weight": w, "fc_bias": np.zeros(2, "f4")}, {})
    _, args, _ = gx.model.load_checkpoint(prefix, 1)
    np.testing.assert_array_equal(args["fc_weight"], w)
