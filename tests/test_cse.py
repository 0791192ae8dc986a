"""Common-subexpression elimination: merges identical nodes, second run is a no-op."""
from __future__ import annotations

import json

import numpy as np
import pytest
from refcase_replay import DATA, case_names, load_case

import graphexec as gx
from graphexec.core.ir.graph import Graph
from graphexec.core.passes.manager import apply_passes


def _ops(sym):
    return [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]


def test_identical_nodes_merge_and_second_run_is_no_op():
    x = gx.sym.Variable("x")
    y = gx.sym.abs(x) + gx.sym.abs(x) * gx.sym.sin(gx.sym.abs(x))
    g = Graph(y.outputs)
    once = apply_passes(g, ["eliminate_common_expr"])
    assert len(once.indexed.nodes) == len(g.indexed.nodes) - 2
    twice = apply_passes(once, ["eliminate_common_expr"])
    assert twice is once
    assert len(g.indexed.nodes) == 7  # the input graph is untouched


def test_executor_applies_cse_and_keeps_results(monkeypatch):
    x = gx.sym.Variable("x")
    y = gx.sym.exp(x) * gx.sym.exp(x)
    exe = y.simple_bind(gx.cpu(), grad_req="write", x=(3,))
    assert _ops(exe.get_optimized_symbol()).count("exp") == 1
    exe.arg_dict["x"][...] = [0.1, 0.2, 0.3]
    exe.forward(is_train=True)
    exe.backward(np.ones(3, "f4"))
    np.testing.assert_allclose(exe.grad_dict["x"], 2 * np.exp(2 * np.array([0.1, 0.2, 0.3])), rtol=1e-6)
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    exe2 = y.simple_bind(gx.cpu(), x=(3,))
    assert _ops(exe2.get_optimized_symbol()).count("exp") == 2


@pytest.mark.parametrize("name", case_names())
def test_refcase_optimized_ops_match_mxnet(name):
    meta, _ = load_case(name)
    sym = gx.sym.load(str(DATA / name / "symbol.json"))
    shapes = {k: tuple(v) for k, v in meta["shapes"]["args"].items()}
    types = dict(meta["dtypes"]["args"])
    exe = sym.simple_bind(gx.cpu(), grad_req="null", type_dict=types, **shapes)
    ops = _ops(exe.get_optimized_symbol())
    assert {op: ops.count(op) for op in set(ops)} == meta["optimized_ops_NONE"]


def test_random_and_stateful_nodes_are_not_merged():
    x = gx.sym.Variable("x")
    y = gx.sym.Dropout(x, p=0.5) + gx.sym.Dropout(x, p=0.5)
    out = apply_passes(Graph(y.outputs), ["eliminate_common_expr"])
    assert _ops(gx.sym.Symbol(out.outputs)).count("Dropout") == 2


def test_rrelu_nodes_are_not_merged_but_other_leaky_relus_are():
    # MXNet 1.9.1 merges two rrelu nodes (they would then share one random draw): we do not
    x = gx.sym.Variable("x")
    rrelu = gx.sym.LeakyReLU(x, act_type="rrelu")[0] + gx.sym.LeakyReLU(x, act_type="rrelu")[0]
    out = apply_passes(Graph(rrelu.outputs), ["eliminate_common_expr"])
    assert _ops(gx.sym.Symbol(out.outputs)).count("LeakyReLU") == 2
    leaky = gx.sym.LeakyReLU(x, act_type="leaky") + gx.sym.LeakyReLU(x, act_type="leaky")
    out = apply_passes(Graph(leaky.outputs), ["eliminate_common_expr"])
    assert _ops(gx.sym.Symbol(out.outputs)).count("LeakyReLU") == 1


def test_two_rrelu_nodes_draw_independently_in_training():
    x = gx.sym.Variable("x")
    y = gx.sym.LeakyReLU(x, act_type="rrelu")[0] - gx.sym.LeakyReLU(x, act_type="rrelu")[0]
    exe = y.simple_bind(gx.cpu(), x=(1000,))
    exe.arg_dict["x"][...] = -1
    gx.random.seed(3)
    assert np.abs(exe.forward(is_train=True)[0]).max() > 0
