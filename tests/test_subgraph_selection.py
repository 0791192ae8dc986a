"""Backend selection (argument > MXNET_SUBGRAPH_BACKEND > plugins.toml, NONE, "a,b"), unknown
backends, verbose logging, inference_only and backend attributes, the PartitionPlan (JSON,
table, every reason), runtime fallback, and region nodes through JSON."""
from __future__ import annotations

import functools
import json
import logging
import warnings

import numpy as np
import pytest

import graphexec as gx
from graphexec.core import plugins
from graphexec.core.subgraph import (OpNameSelector, SubgraphBackend, SubgraphProperty, api,
                                     native_runner, register_backend, select)

S = gx.sym
pytestmark = pytest.mark.usefixtures("subgraph_clean")
LOG = "graphexec.subgraph"


# -- throwaway backends ------------------------------------------------------------------------
class NativeProperty(SubgraphProperty):
    """Regions run as nested native plans."""

    name = "native"

    def create_runner(self, region):
        return native_runner(region)


class InferenceOnly(NativeProperty):
    name = "inference"
    default_attrs = {"inference_only": True}


class FirstOnlySelector(OpNameSelector):
    """Keeps only the first candidate of every grown region."""

    def filter(self, candidates):
        return candidates[:1]


class Filtering(NativeProperty):
    name = "filtering"

    def create_selector(self):
        return FirstOnlySelector(self.attrs["op_names"])


class BrokenFactory(NativeProperty):
    name = "broken_factory"

    def create_runner(self, region):
        raise RuntimeError("no device for this region")


class BrokenRun(NativeProperty):
    """Writes garbage into the first output, then fails; counts its calls."""

    name = "broken_run"
    calls = 0

    def create_runner(self, region):
        def run():
            BrokenRun.calls += 1
            region.outputs[0][...] = 1e6
            raise ValueError("kernel launch failed")
        return run


@pytest.fixture
def backends():
    """``add(name, prop_cls, op_names, attrs)`` registers a throwaway backend (removed after)."""
    added = []

    def add(name, prop_cls=NativeProperty, op_names=(), attrs=None):
        def factory():
            prop = prop_cls(op_names=set(op_names))
            return SubgraphBackend(name, [prop], attrs=attrs, options=("op_names", "min_size"))
        register_backend(name, factory)
        added.append(name)
        return name
    yield add
    for name in added:
        api._BACKENDS.pop(name, None)


def _net():
    """exp -> {sin, cos} -> add, tanh on the side (operators: exp sin cos tanh elemwise_add)."""
    x = S.Variable("x")
    e = S.exp(x, name="e")
    add = S.elemwise_add(S.sin(e, name="s"), S.cos(e, name="c"), name="add")
    return S.Group([add, S.tanh(x, name="t")])


X = np.linspace(-1, 1, 6, dtype="f4").reshape(2, 3)


def _forward(sym, grad_req="null", **kw):
    exe = sym.bind(gx.cpu(), args={"x": X.copy()}, grad_req=grad_req,
                   args_grad={"x": np.zeros_like(X)} if grad_req != "null" else None, **kw)
    return exe, [np.array(o) for o in exe.forward(is_train=grad_req != "null")]


@functools.cache
def _reference():
    return _forward(_net(), backend="NONE")[1]


def _assert_reference(outs):
    for a, b in zip(outs, _reference()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


# -- selection precedence ----------------------------------------------------------------------
def _toml_default(monkeypatch, value):
    config = plugins.plugin_config()
    config["subgraph"] = {"default_backend": value}
    monkeypatch.setattr(select, "plugin_config", lambda: config)


def test_plugins_toml_default_applies_without_argument_or_env(monkeypatch):
    gx.subgraph.set_op_names("default", {"sin", "cos"})
    assert _forward(_net())[0].partition_plan is None       # shipped plugins.toml: NONE
    _toml_default(monkeypatch, "default")
    exe, outs = _forward(_net())
    assert exe.partition_plan.backends == ["default"] and exe.partition_plan.num_claimed == 2
    _assert_reference(outs)


def test_env_overrides_plugins_toml_and_argument_overrides_env(monkeypatch, backends):
    backends("other", op_names={"tanh"})
    gx.subgraph.set_op_names("default", {"sin", "cos"})
    _toml_default(monkeypatch, "default")
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "other")
    exe, outs = _forward(_net())
    assert [r.backend for r in exe.partition_plan.regions] == ["other"]
    exe, outs2 = _forward(_net(), backend="default")
    assert [r.backend for r in exe.partition_plan.regions] == ["default", "default"]
    for o in (outs, outs2):
        _assert_reference(o)
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "NONE")
    assert _forward(_net())[0].partition_plan is None
    assert _forward(_net(), backend="NONE")[0].partition_plan is None
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
    assert _forward(_net(), backend="NONE")[0].partition_plan is None


@pytest.mark.parametrize("value", ["NONE", "none", "", " NONE "])
def test_none_disables_partitioning(monkeypatch, value):
    gx.subgraph.set_op_names("default", {"sin", "cos", "exp"})
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", value)
    exe, outs = _forward(_net())
    assert exe.partition_plan is None
    assert "_subgraph_op" not in exe.debug_str()
    _assert_reference(outs)
    assert gx.partition(_net(), value).symbol.tojson() == _net().tojson()


def test_two_backends_apply_in_the_given_order(backends):
    backends("second", op_names={"cos", "tanh"})
    gx.subgraph.set_op_names("default", {"sin", "cos"})
    plan = gx.partition(_net(), "default,second")
    assert plan.backends == ["default", "second"]
    assert [(r.backend, r.members) for r in plan.regions] == [
        ("default", ["s"]), ("default", ["c"]), ("second", ["t"])]
    plan = gx.partition(_net(), "second,default")
    assert [(r.backend, r.members) for r in plan.regions] == [
        ("second", ["c"]), ("second", ["t"]), ("default", ["s"])]
    assert "second" in gx.list_backends()
    for spec in ("default,second", "second, default", ["second", "default"]):
        exe, outs = _forward(_net(), backend=spec)
        assert exe.partition_plan.num_claimed == 3
        _assert_reference(outs)
    gx.validate_partition(_net(), plan.symbol)


def test_throwaway_backend_is_gone_after_its_test():
    assert "second" not in gx.list_backends()


@pytest.mark.parametrize("how", ["bind", "simple_bind", "env", "optimize_for", "partition",
                                 "second_of_two"])
def test_unknown_backend_fails_fast_listing_registered_names(monkeypatch, how):
    net = _net()
    with pytest.raises(gx.UnknownBackendError) as err:
        if how == "bind":
            net.bind(gx.cpu(), args={"x": X}, backend="nope")
        elif how == "simple_bind":
            net.simple_bind(gx.cpu(), x=(2, 3), backend="nope")
        elif how == "env":
            monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "nope")
            net.bind(gx.cpu(), args={"x": X})
        elif how == "optimize_for":
            net.optimize_for("nope")
        elif how == "partition":
            gx.partition(net, "nope")
        else:
            net.bind(gx.cpu(), args={"x": X}, backend="default,nope")
    message = str(err.value)
    assert "'nope'" in message and "default" in message and "NONE" in message
    for name in gx.list_backends():
        assert name in message
    assert isinstance(err.value, gx.GraphexecError)


# -- verbose logging -----------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["0", "1", "2", None])
def test_verbose_levels(monkeypatch, caplog, backends, level):
    backends("disabled_one", op_names={"tanh"}, attrs={"enable": False})
    if level is not None:
        monkeypatch.setenv("MXNET_SUBGRAPH_VERBOSE", level)
    gx.subgraph.set_op_names("default", {"sin", "cos"})
    caplog.set_level(logging.DEBUG, logger=LOG)
    _forward(_net(), backend="default,disabled_one")
    lines = [r.getMessage() for r in caplog.records if r.name == LOG]
    if level == "0":
        assert lines == []
        return
    assert "Subgraph backend default is activated." in lines
    detail = [ln for ln in lines if "region" in ln or "isn't activated" in ln]
    if level == "2":
        assert "Subgraph backend disabled_one isn't activated." in lines
        assert any("default region 0" in ln and "['s']" in ln for ln in lines), lines
        assert any("default region 1" in ln and "['c']" in ln for ln in lines), lines
    else:  # 1 is the default
        assert detail == [] and len(lines) == 1


# -- inference_only, enable, context -----------------------------------------------------------
def test_inference_only_property_is_skipped_when_gradients_are_requested(backends, caplog,
                                                                         monkeypatch):
    name = backends("infer", InferenceOnly, op_names={"sin", "cos", "elemwise_add"})
    monkeypatch.setenv("MXNET_SUBGRAPH_VERBOSE", "2")
    caplog.set_level(logging.INFO, logger=LOG)
    exe, outs = _forward(_net(), grad_req="write", backend=name)
    plan = exe.partition_plan
    assert plan.regions == [] and plan.skipped == ["infer/inference: inference_only, "
                                                   "gradients requested"]
    assert {d.node: d.reason for d in plan.nodes.values()} == {
        "e": None, "s": "inference_only", "c": "inference_only", "add": "inference_only",
        "t": None}
    table = plan.table()
    assert table.count("property skipped as inference_only (gradients requested)") == 3
    assert any("requires `grad_req=null`" in r.getMessage() for r in caplog.records)
    _assert_reference(outs)
    exe.backward([np.ones_like(o) for o in outs])
    exe, outs = _forward(_net(), grad_req="null", backend=name)
    assert exe.partition_plan.skipped == [] and exe.partition_plan.num_claimed == 3
    _assert_reference(outs)
    assert gx.partition(_net(), name, need_grad=True).regions == []
    assert len(gx.partition(_net(), name).regions) == 1


@pytest.mark.parametrize("attrs,active", [({"enable": False}, False), ({"enable": True}, True),
                                          ({"context": gx.gpu(0)}, False),
                                          ({"context": gx.cpu()}, True)])
def test_backend_attrs_enable_and_context(backends, attrs, active):
    name = backends("attrs", op_names={"sin", "cos", "exp"}, attrs=attrs)
    exe, outs = _forward(_net(), backend=name)
    plan = exe.partition_plan
    assert (plan.num_claimed > 0) == active
    assert plan.skipped == ([] if active else ["backend attrs: not active for cpu(0)"])
    _assert_reference(outs)


def test_disabled_property_is_skipped(monkeypatch):
    gx.subgraph.set_op_names("default", {"sin"})
    plan = gx.partition(_net(), "default", disable=True)
    assert plan.regions == [] and plan.skipped == ["default/default: disabled"]


# -- the plan: JSON, table, every reason -------------------------------------------------------
def _order_net():
    """Claiming sin and fc2 together would put fc2's weight before fc1's in list_arguments."""
    x = S.Variable("x")
    s = S.sin(x, name="s")
    fc1 = S.FullyConnected(S.elemwise_add(x, s, name="a"), num_hidden=2, name="fc1")
    return S.Group([fc1, S.FullyConnected(s, num_hidden=2, name="fc2")])


REASON_CASES = {
    "unsupported": (_net, {"op_names": {"sin"}}, "t"),
    # alone, "add" would seed a region of its own (see the test below): min_size stops it
    "cycle": (_net, {"op_names": {"exp", "sin", "elemwise_add"}, "min_size": 2}, "add"),
    "min_size": (_net, {"op_names": {"sin", "tanh"}, "min_size": 2}, "s"),
    "order": (_order_net, {"op_names": {"sin", "FullyConnected"}}, "fc2"),
}


@pytest.mark.parametrize("reason", sorted(REASON_CASES))
def test_plan_reasons(reason):
    make, options, node = REASON_CASES[reason]
    net = make()
    plan = gx.partition(net, "default", **options)
    assert plan.nodes[node].reason == reason and plan.nodes[node].region is None
    row = next(ln for ln in plan.table().splitlines() if ln.split()[0] == node)
    assert row.endswith(gx.core.subgraph.plan.REASONS[reason])
    assert json.loads(plan.to_json())["nodes"][list(plan.nodes).index(node)]["reason"] == reason
    gx.validate_partition(net, plan.symbol)
    assert plan.symbol.list_arguments() == net.list_arguments()


def test_node_cut_for_a_cycle_seeds_a_later_region_as_in_mxnet():
    # MXNet 1.9.1, op names {exp, sin, elemwise_add} on _net: subgraphs [e, s] and [add]
    plan = gx.partition(_net(), "default", op_names={"exp", "sin", "elemwise_add"})
    assert [r.members for r in plan.regions] == [["e", "s"], ["add"]]
    gx.validate_partition(_net(), plan.symbol)


def test_plan_filter_and_inference_only_reasons(backends):
    name = backends("filt", Filtering, op_names={"exp", "sin", "cos", "elemwise_add"})
    plan = gx.partition(_net(), name)
    assert [r.members for r in plan.regions] == [["e"]]
    assert {n: d.reason for n, d in plan.nodes.items() if n != "e"} == {
        "s": "filter", "c": "filter", "add": "filter", "t": "unsupported"}
    assert plan.table().count("rejected by the selector's filter") == 3
    inf = backends("inf", InferenceOnly, op_names={"tanh"})
    plan = gx.partition(_net(), inf, need_grad=True)
    assert plan.nodes["t"].reason == "inference_only"


def test_plan_json_and_table_contents():
    gx.subgraph.set_op_names("default", {"exp", "sin", "elemwise_add"})
    exe, outs = _forward(_net(), backend="default")
    plan = exe.partition_plan
    data = json.loads(plan.to_json())
    assert data == plan.to_dict()
    assert data["backends"] == ["default"] and data["skipped"] == [] and data["fallbacks"] == 0
    assert data["regions"] == [{"id": 0, "backend": "default", "property": "default",
                                "node": "default_subgraph0", "members": ["e", "s"],
                                "inputs": ["x"], "outputs": ["e_output", "s_output"],
                                "status": "claimed", "cause": None},
                               {"id": 1, "backend": "default", "property": "default",
                                "node": "default_subgraph1", "members": ["add"],
                                "inputs": ["s_output", "c_output"], "outputs": ["add_output"],
                                "status": "claimed", "cause": None}]
    assert [(d["node"], d["op"], d["backend"], d["region"], d["reason"]) for d in data["nodes"]] \
        == [("e", "exp", "default", 0, None), ("s", "sin", "default", 0, None),
            ("c", "cos", None, None, "unsupported"),
            ("add", "elemwise_add", "default", 1, None),
            ("t", "tanh", None, None, "unsupported")]
    rows = [ln.split(None, 2) for ln in plan.table().splitlines()]
    assert rows[0] == ["node", "op", "claimed by        reason"]
    assert [r[:2] for r in rows[1:]] == [["e", "exp"], ["s", "sin"], ["c", "cos"],
                                         ["add", "elemwise_add"], ["t", "tanh"]]
    assert rows[1][2] == "default region 0" and rows[3][2] == "-                 " \
        "no backend supports the op"
    assert rows[4][2].rstrip() == "default region 1"
    assert str(plan) == plan.table()
    _assert_reference(outs)


# -- runtime fallback ----------------------------------------------------------------------------
@pytest.mark.parametrize("prop,cause", [(BrokenFactory, "creating its runner failed: "
                                                       "RuntimeError: no device for this region"),
                                        (BrokenRun, "running it failed: ValueError: kernel "
                                                    "launch failed")])
def test_failing_backend_falls_back_to_native_kernels(backends, prop, cause):
    name = backends("flaky", prop, op_names={"exp", "sin", "cos", "elemwise_add"})
    BrokenRun.calls = 0
    with pytest.warns(RuntimeWarning) as record:
        exe, outs = _forward(_net(), grad_req="write", backend=name)
    _assert_reference(outs)
    messages = [str(w.message) for w in record]
    assert messages == [f"subgraph region 'flaky_subgraph0' of backend 'flaky' runs with the "
                        f"native kernels instead: {cause}"]
    assert exe.partition_plan.fallbacks == 1
    with pytest.warns(RuntimeWarning, match="flaky_subgraph0_backward"):
        exe.backward([np.ones_like(o) for o in outs])
    assert exe.partition_plan.fallbacks == 2
    want = _forward_backward(_net(), "NONE")
    np.testing.assert_allclose(exe.grad_dict["x"], want, rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):   # the native runner stays: no new warning, same numbers
            _assert_reference([np.array(o) for o in exe.forward(is_train=True)])
    assert exe.partition_plan.fallbacks == 2
    assert BrokenRun.calls == (2 if prop is BrokenRun else 0)


def _forward_backward(sym, backend):
    exe, outs = _forward(sym, grad_req="write", backend=backend)
    exe.backward([np.ones_like(o) for o in outs])
    return np.array(exe.grad_dict["x"])


# -- JSON ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("ops", [{"exp", "sin", "cos", "elemwise_add"}, {"sin", "tanh"},
                                 {"exp", "sin", "elemwise_add"}])
def test_region_nodes_round_trip_through_json(ops):
    net = _net()
    part = gx.partition(net, "default", op_names=ops).symbol
    text = part.tojson()
    loaded = gx.sym.load_json(text)
    assert loaded.tojson() == text
    for what in ("list_arguments", "list_auxiliary_states", "list_outputs"):
        assert getattr(loaded, what)() == getattr(net, what)()
    gx.validate_partition(net, loaded)
    _assert_reference(_forward(loaded, backend="NONE")[1])
    np.testing.assert_allclose(_forward_backward(loaded, "NONE"),
                               _forward_backward(net, "NONE"), rtol=1e-5, atol=1e-6)
    assert loaded.infer_shape(x=(2, 3)) == net.infer_shape(x=(2, 3))


def test_loaded_region_of_an_unregistered_backend_falls_back(backends):
    name = backends("ephemeral", op_names={"sin", "cos"})
    text = gx.partition(_net(), name).symbol.tojson()
    api._BACKENDS.pop(name)
    loaded = gx.sym.load_json(text)
    with pytest.warns(RuntimeWarning, match="'ephemeral'.*not registered"):
        exe, outs = _forward(loaded, backend="NONE")
    _assert_reference(outs)



# -- options in the backend text -----------------------------------------------------------------
def test_backend_text_carries_options():
    from graphexec.core.subgraph.select import parse_backend_spec
    names, opts = parse_backend_spec("onnxrt:threads=2,spinning=true,exclude_ops=relu|exp, "
                                     "default:min_size=2.5,save_models=none,NONE")
    assert names == ["onnxrt", "default"]
    assert opts == {"onnxrt": {"threads": 2, "spinning": True, "exclude_ops": ["relu", "exp"]},
                    "default": {"min_size": 2.5, "save_models": None}}
    assert parse_backend_spec("a,b") == (["a", "b"], {})


@pytest.mark.parametrize("text, match", [
    ("threads=2", "comes before any backend name"),
    ("default:=3", "expected key=value"),
])
def test_bad_backend_text_is_named(text, match):
    from graphexec.core.subgraph.select import parse_backend_spec
    with pytest.raises(gx.GraphexecError, match=match):
        parse_backend_spec(text)


def test_options_through_the_environment_and_their_precedence(monkeypatch):
    x = S.Variable("x")
    y = S.sin(S.exp(x))
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default:op_names=exp|sin,exclude_ops=sin")
    exe = y.simple_bind(gx.cpu(), x=(2,))
    plan = exe.partition_plan
    assert plan.nodes[y.name].region is None and plan.nodes[y.get_children().name].region == 0
    exe = y.simple_bind(gx.cpu(), x=(2,), backend_options={"default": {"exclude_ops": []}})
    assert exe.partition_plan.nodes[y.name].region == 0  # the argument's options win
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default:colour=red")
    with pytest.raises(gx.GraphexecError, match=r"unknown option\(s\) \['colour'\]"):
        y.simple_bind(gx.cpu(), x=(2,))


def test_exclude_ops_is_applied_by_the_partitioner_for_every_property():
    # the default backend's selector knows nothing of exclude_ops; aliases name their op
    plan = gx.partition(_net(), "default", op_names={"exp", "sin", "cos", "elemwise_add"},
                        exclude_ops=["_plus"])
    assert plan.nodes["add"].reason == "excluded by the exclude_ops option"
    assert plan.nodes["add"].region is None
    assert {m for r in plan.regions for m in r.members} == {"e", "s", "c"}
