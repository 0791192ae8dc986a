"""gx.init against MXNet 1.9.1: the name rules and deterministic initializers exactly, the
random ones by their distribution (recorded statistics and bounds)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

DATA = Path(__file__).parent / "data" / "harness"
REF = json.loads((DATA / "reference.json").read_text())
ARRAYS = np.load(DATA / "optimizers.npz")


@pytest.mark.parametrize("name", sorted(REF["init_rules"]))
def test_name_rules_and_init_attributes_match_mxnet(name):
    rule = REF["init_rules"][name]
    arr = gx.nd.full(tuple(rule["shape"]), 7.0)
    gx.init.Constant(0.25)(gx.init.InitDesc(name, rule["attrs"]), arr)
    np.testing.assert_array_equal(arr.asnumpy(), ARRAYS[f"init/{name}"])


@pytest.mark.parametrize("case", REF["init_stats"], ids=lambda c: c["name"])
def test_random_initializers_follow_mxnets_distributions(case):
    gx.random.seed(0)
    arr = gx.nd.zeros(tuple(case["shape"]))
    gx.init.create(case["name"], **case["kwargs"])(gx.init.InitDesc("x_weight"), arr)
    v = arr.asnumpy()
    assert v.std() == pytest.approx(case["std"], rel=0.03)
    assert abs(v.mean()) < 0.05 * case["std"] + 1e-3
    bounded = case["name"] == "uniform" or (
        case["name"] == "xavier" and case["kwargs"].get("rnd_type", "uniform") == "uniform")
    if bounded:
        assert np.abs(v).max() == pytest.approx(case["max"], rel=0.01)  # the bound


def test_orthogonal_rows_are_orthogonal_with_the_scale():
    arr = gx.nd.zeros((6, 10))
    gx.init.Orthogonal(scale=1.5)(gx.init.InitDesc("o_weight"), arr)
    v = arr.asnumpy()
    np.testing.assert_allclose(v @ v.T, REF["orthogonal_gram"], atol=1e-5)


def test_dumps_and_create_round_trip_as_mxnet_writes_them():
    assert gx.init.Xavier(factor_type="in", magnitude=2).dumps() == REF["init_dumps"]["xavier"]
    assert gx.init.Constant(0.5).dumps() == REF["init_dumps"]["constant"]
    assert gx.init.MSRAPrelu().dumps() == REF["init_dumps"]["msraprelu"]
    assert gx.init.create(REF["init_dumps"]["xavier"]) == gx.init.Xavier(factor_type="in",
                                                                          magnitude=2)


def test_variable_init_attribute_and_mixed_and_load(tmp_path):
    v = gx.sym.Variable("w", init=gx.init.Constant(3.0))
    arr = gx.nd.zeros((2, 2))
    gx.init.Uniform()(gx.init.InitDesc("w", v.list_attr()), arr)
    assert (arr.asnumpy() == 3).all()
    mixed = gx.init.Mixed(["bias$", ".*"], [gx.init.Zero(), gx.init.One()])
    a, b = gx.nd.full((2,), 5.0), gx.nd.full((2,), 5.0)
    with pytest.warns(DeprecationWarning, match="init\\(str, NDArray\\) has been deprecated"):
        mixed("fc_bias", a)
        mixed("fc_weight", b)
    assert (a.asnumpy() == 0).all() and (b.asnumpy() == 1).all()
    gx.nd.save(str(tmp_path / "p.params"), {"arg:fc_weight": gx.nd.ones((2,)) * 4})
    loader = gx.init.Load(str(tmp_path / "p.params"), default_init=gx.init.Zero())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loader("fc_weight", b)
        loader("fc_bias", a)
    assert (b.asnumpy() == 4).all() and (a.asnumpy() == 0).all()


def test_bad_patterns_and_shapes_are_clear_errors():
    with pytest.raises(gx.init.InitError, match="Unknown initialization pattern for fc_scale"):
        gx.init.Xavier()(gx.init.InitDesc("fc_scale"), gx.nd.zeros((2, 2)))
    with pytest.raises(gx.init.InitError, match="cannot be applied to vector fc_weight"):
        gx.init.Xavier()(gx.init.InitDesc("fc_weight"), gx.nd.zeros((3,)))
    with pytest.raises(gx.init.InitError, match="did not match any pattern"):
        gx.init.Mixed(["^a"], [gx.init.Zero()])("b", gx.nd.zeros(1))
    with pytest.raises(ValueError, match="unknown initializer 'xaiver'"):
        gx.init.create("xaiver")
