"""Symbol JSON fidelity: files written by MXNet 1.9.1 (reference cases, Gluon exports of
model-zoo networks, symbols built with its Python API) load and re-serialise byte for byte,
report the same arguments / auxiliary states / outputs as MXNet, pre-1.0 files are upgraded as
MXNet upgrades them, and malformed documents get errors that name what is wrong.

The corpus and ``lists.json.gz`` (what MXNet reported) come from
``tests/data/json/make_json_cases.py``, run once with a real MXNet."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError, JSONFormatError

DATA = Path(__file__).parent / "data" / "json"
LISTS = json.loads(gzip.decompress((DATA / "lists.json.gz").read_bytes()))
ROUNDTRIP = sorted(k for k, v in LISTS.items() if v["kind"] == "roundtrip")
LEGACY = sorted(k for k, v in LISTS.items() if v["kind"] == "legacy")


def read_text(name: str) -> str:
    raw = (DATA / name).read_bytes()
    return (gzip.decompress(raw) if name.endswith(".gz") else raw).decode("utf-8")


def load(name: str) -> gx.sym.Symbol:
    if name.endswith(".gz"):
        return gx.sym.load_json(read_text(name), source=name)
    return gx.sym.load(str(DATA / name))


def lists_of(sym: gx.sym.Symbol) -> dict:
    return {"list_arguments": sym.list_arguments(),
            "list_auxiliary_states": sym.list_auxiliary_states(),
            "list_outputs": sym.list_outputs()}


def expected_lists(name: str) -> dict:
    return {k: LISTS[name][k] for k in ("list_arguments", "list_auxiliary_states",
                                        "list_outputs")}


def test_corpus_covers_every_source():
    kinds = {name.split("_")[0] for name in ROUNDTRIP}
    assert kinds == {"api", "case", "checkpoint", "shape", "zoo"}
    assert {"zoo_resnet18_v1-symbol.json.gz", "zoo_mobilenet0.25-symbol.json.gz"} <= set(LISTS)


# -- byte-identical round trips -----------------------------------------------------------------
@pytest.mark.parametrize("name", ROUNDTRIP)
def test_tojson_is_byte_identical(name):
    assert load(name).tojson() == read_text(name)


@pytest.mark.parametrize("name", ROUNDTRIP)
def test_lists_match_mxnet(name):
    assert lists_of(load(name)) == expected_lists(name)


def test_save_writes_the_same_bytes(tmp_path):
    sym = load("case_batchnorm.json")
    sym.save(str(tmp_path / "bn-symbol.json"))
    assert (tmp_path / "bn-symbol.json").read_bytes() == (DATA / "case_batchnorm.json").read_bytes()


def test_gluon_export_attributes_survive():
    sym = load("zoo_resnet18_v1-symbol.json.gz")
    attrs = sym.attr_dict()["resnetv10_conv0_weight"]
    assert attrs["__shape__"] == "(64, 0, 7, 7)"
    assert {"__dtype__", "__lr_mult__", "__wd_mult__", "__storage_type__"} <= set(attrs)


def test_control_characters_and_unicode_in_names():
    sym = load("api_attrs.json")
    assert 'a"b\\c\n\té€/' in sym.list_arguments()
    assert gx.sym.load_json(sym.tojson()).tojson() == sym.tojson()


# -- legacy (pre-1.0) documents ----------------------------------------------------------------
@pytest.mark.parametrize("name", LEGACY)
def test_legacy_file_upgrades_like_mxnet(name):
    sym = load(name)
    assert sym.tojson() == read_text(LISTS[name]["upgraded"])
    assert lists_of(sym) == expected_lists(name)


def doc(nodes, heads=((1, 0, 0),), version=None):
    d = {"nodes": nodes, "arg_nodes": [0], "heads": [list(h) for h in heads]}
    if version is not None:
        d["attrs"] = {"mxnet_version": ["int", version]}
    return json.dumps(d)


X = {"op": "null", "name": "x", "inputs": []}


def op(op_name, name, inputs=((0, 0, 0),), **attrs):
    node = {"op": op_name, "name": name, "inputs": [list(e) for e in inputs]}
    if attrs:
        node["attrs"] = attrs
    return node


def test_legacy_param_attr_keys_and_two_element_entries():
    node = {"op": "_mul_scalar", "name": "m", "param": {"scalar": "3"},
            "attr": {"lr_mult": "0.5"}, "inputs": [[0, 0]], "backward_source_id": -1}
    sym = gx.sym.load_json(doc([X, node], heads=[(1, 0)]))
    assert sym.attr_dict()["m"] == {"scalar": "3", "__lr_mult__": "0.5", "lr_mult": "0.5"}
    assert sym.list_outputs() == ["m_output"]


def test_hidden_keys_are_renamed_only_in_older_files():
    node = op("_mul_scalar", "m", scalar="2", ctx_group="g")
    assert gx.sym.load_json(doc([X, node], version=10900)).attr_dict()["m"]["__ctx_group__"] == "g"
    with pytest.raises(JSONFormatError, match=r"'m'.*unknown attribute 'ctx_group'"):
        gx.sym.load_json(doc([X, node], version=10901))


# -- malformed documents -----------------------------------------------------------------------
def raises(text, *fragments):
    with pytest.raises(JSONFormatError) as info:
        gx.sym.load_json(text, source="bad.json")
    for fragment in fragments:
        assert fragment in str(info.value)
    assert isinstance(info.value, GraphexecError) and isinstance(info.value, ValueError)


def test_not_json():
    raises('{"nodes": [', "bad.json", "not valid JSON")


@pytest.mark.parametrize("text", ["[1, 2]", json.dumps({"nodes": [X]}),
                                  json.dumps({"heads": []}),
                                  json.dumps({"nodes": {}, "heads": []}),
                                  json.dumps({"nodes": [X], "heads": 0})])
def test_missing_nodes_or_heads(text):
    raises(text, "'nodes'", "'heads'")


def test_unknown_op_names_node_and_op():
    raises(doc([X, op("Convolutoin", "conv9")]), "node 1 ('conv9')", "'Convolutoin'",
           "not registered")


def test_unknown_op_suggests_close_names():
    raises(doc([X, op("Relu", "r")]), "did you mean", "relu")


@pytest.mark.parametrize("entry, fragment", [
    ((5, 0, 0), "reference 5 is not an earlier node id"),
    ((1, 0, 0), "reference 1 is not an earlier node id"),
    ((0, 1, 0), "node 'x' has 1 outputs, entry asks for output 1"),
    ((0,), "must be [node_id, index, version]"),
])
def test_bad_input_reference(entry, fragment):
    raises(doc([X, op("relu", "r", inputs=[entry])]), "node 1 ('r') inputs", fragment)


def test_bad_head_reference():
    raises(doc([X], heads=[(3, 0, 0)]), "heads", "reference 3")


def test_wrong_input_count():
    raises(doc([X, op("elemwise_add", "add")]), "node 1 ('add')",
           "elemwise_add takes 2 inputs (lhs, rhs), the file gives 1")


def test_bad_attribute_value_names_node_and_attribute():
    raises(doc([X, op("_mul_scalar", "m", scalar="abc")]), "node 1 ('m')", "scalar='abc'",
           "not a valid float")


def test_unknown_and_missing_attributes():
    # an operator with parameters rejects unknown ones (MXNet's param parser); one without
    # parameters (relu) parses none and keeps them, as MXNet does
    raises(doc([X, op("Activation", "r", act_type="relu", foo="1")]), "'r'",
           "unknown attribute 'foo'")
    assert gx.sym.load_json(doc([X, op("relu", "r", foo="1")])).attr("foo") == "1"
    raises(doc([X, op("clip", "c", a_max="1")]), "'c'", "required attribute 'a_min'")


@pytest.mark.parametrize("node, fragment", [
    ({"op": "relu", "inputs": []}, "string 'op' and 'name'"),
    ([1, 2], "string 'op' and 'name'"),
    ({"op": "relu", "name": "r", "attrs": [1], "inputs": [[0, 0, 0]]}, "'attrs' must be an object"),
    ({"op": "relu", "name": "r", "inputs": 5}, "'inputs' must be a list"),
])
def test_malformed_node(node, fragment):
    raises(doc([X, node]), "node 1", fragment)


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(JSONFormatError, match="cannot read symbol file"):
        gx.sym.load(str(tmp_path / "nope-symbol.json"))
