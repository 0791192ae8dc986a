"""MXNet 1.9.1's shape-error cases (refcases/shape_errors): same outcome, same exception family,
messages naming the node / arguments at fault."""
from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from refcase_replay import DATA

import graphexec as gx

FOLDER = DATA / "shape_errors"
META = json.loads((FOLDER / "meta.json").read_text())
CASES = {c["name"]: c for c in META["cases"]}
# MXNet silently accepts a Reshape whose element count does not match; we raise (documented).
WE_RAISE = {"reshape_size_mismatch", "reshape_size_mismatch_simple_bind",
            "reshape_minus1_not_divisible"}
EXC = {"MXNetError": gx.GraphexecError, "RuntimeError": RuntimeError, "ValueError": ValueError}


def _call(case):
    sym = gx.sym.load(str(FOLDER / case["symbol"]))
    api = case["api"]
    shapes = {k: tuple(v) for k, v in case.get("shapes", {}).items()}
    arrays = {k: np.ones(v, "f4") for k, v in case.get("array_shapes", {}).items()}
    if api == "infer_shape":
        return sym.infer_shape(**shapes)
    if api == "infer_shape_partial":
        return sym.infer_shape_partial(**shapes)
    if api == "simple_bind":
        return sym.simple_bind(gx.cpu(), **shapes)
    if api == "bind":
        return sym.bind(gx.cpu(), args=arrays)
    if api == "bind_list":
        return sym.bind(gx.cpu(), args=list(arrays.values()))
    if api == "backward":
        exe = sym.bind(gx.cpu(), args=arrays, args_grad={k: np.zeros_like(v) for k, v in arrays.items()})
        exe.forward(is_train=True)
        return exe.backward()
    raise AssertionError(api)


def _as_lists(ret):
    return [[list(s) for s in part] for part in ret]


@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_error_case(name):
    case = CASES[name]
    if case["api"] == "backward" and not hasattr(gx.Executor, "backward"):
        pytest.skip("Executor.backward arrives with the training issue (#3)")
    if name in WE_RAISE:
        with pytest.raises(gx.ShapeInferenceError, match="Reshape"):
            _call(case)
        return
    if not case["raised"]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ret = _call(case)
        if case["return"] == [None, None, None]:
            assert ret == (None, None, None)
        else:
            assert _as_lists(ret) == case["return"]
        assert [str(w.message) for w in caught] == case["warnings"]
        return
    with pytest.raises(EXC[case["exception_type"]]) as info:
        _call(case)
    msg = str(info.value)
    assert isinstance(info.value, gx.GraphexecError)
    node = re.search(r"Error in operator (\S+):", case["message"])
    if node:
        assert f"Error in operator {node.group(1)}:" in msg
    if "cannot decide shapes" in case["message"]:
        assert msg.strip().endswith(case["message_last_line"].strip())
    if case["exception_type"] == "ValueError":
        assert case["message_last_line"].split(":")[0] in msg
