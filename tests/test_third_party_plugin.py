"""A real third-party plugin, installed from tests/plugin_pkg (``graphexec-countingbackend``,
entry point ``counting`` in ``graphexec.plugins``): found through its entry point, selected with
MXNET_SUBGRAPH_BACKEND, hidden by GRAPHEXEC_DISABLE_PLUGIN_AUTOLOAD, and isolated when another
entry point is broken. CI installs it (``.ci/run``); a bare clone skips these tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from importlib import metadata

import numpy as np
import pytest

import graphexec as gx
from graphexec.core import plugins
from graphexec.core.hookspecs import hookimpl

GROUP = "graphexec.plugins"
_EPS = [ep for ep in metadata.entry_points(group=GROUP) if ep.name == "counting"]
pytestmark = pytest.mark.skipif(
    not _EPS, reason="graphexec-countingbackend is not installed "
                     "(pip install --no-deps -e tests/plugin_pkg)")
SHAPE = (3, 4)


def _net():
    """Two counting regions, {exp, _mul_scalar, tanh} and {cos, sin, elemwise_add}, split by a
    relu that the backend does not claim (fresh automatic names: exp0, _mulscalar0...)."""
    with gx.name.NameManager():
        x, y = gx.sym.Variable("x"), gx.sym.Variable("y")
        h = gx.sym.tanh(gx.sym.exp(x) * 2)
        return gx.sym.cos(gx.sym.relu(h)) + gx.sym.sin(y)


def _args():
    rng = np.random.default_rng(0)
    return {n: rng.standard_normal(SHAPE).astype("f4") for n in ("x", "y")}


def _bind(backend=None, **kwargs):
    return _net().bind(gx.cpu(), _args(), grad_req="null", backend=backend, **kwargs)


@pytest.fixture
def counting():
    import gx_counting
    gx_counting.reset()
    yield gx_counting
    gx_counting.reset()


def test_backend_is_listed_and_loaded_from_its_entry_point():
    assert {"counting", "default"} <= set(gx.list_backends())
    pm = plugins.plugin_manager()
    assert pm.pm.has_plugin("counting")
    assert not [e for e in pm.errors if "'counting'" in str(e)]
    assert gx.subgraph.get_backend("counting").properties[0].attrs["op_names"] == {
        "exp", "sin", "cos", "tanh", "elemwise_add", "_mul_scalar"}


def test_env_var_partitions_at_bind_and_matches_none(monkeypatch, counting):
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "counting")
    exe = _bind()
    plan = exe.partition_plan
    assert [(r.backend, r.node, r.members) for r in plan.regions] == [
        ("counting", "counting_subgraph0", ["exp0", "_mulscalar0", "tanh0"]),
        ("counting", "counting_subgraph1", ["cos0", "sin0", "_plus0"])]
    assert plan.nodes["relu0"].reason == "unsupported"
    assert counting.LAST_PLAN is plan  # the plugin's graphexec_partition_done observer
    ref = _bind(backend="NONE")
    assert ref.partition_plan is None
    np.testing.assert_array_equal(exe.forward()[0], ref.forward()[0])


def test_runs_are_counted_once_per_region_per_forward(monkeypatch, counting):
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "counting")
    exe = _bind()
    assert sum(counting.RUNS.values()) == 0  # binding builds runners, it runs nothing
    for k in range(1, 4):
        exe.forward()
        assert counting.RUNS == {"counting_subgraph0": k, "counting_subgraph1": k}


def test_op_names_option_overrides_the_default_set(counting):
    exe = _bind(backend="counting", backend_options={"counting": {"op_names": {"exp", "sin"}}})
    assert [r.members for r in exe.partition_plan.regions] == [["exp0"], ["sin0"]]
    np.testing.assert_array_equal(exe.forward()[0], _bind(backend="NONE").forward()[0])
    assert counting.RUNS == {"counting_subgraph0": 1, "counting_subgraph1": 1}


def test_training_through_the_backend_matches_none(counting):
    def grads(backend):
        args = _args()
        grad = {n: np.zeros_like(a) for n, a in args.items()}
        exe = _net().bind(gx.cpu(), args, args_grad=grad, backend=backend)
        out = exe.forward(is_train=True)[0].copy()
        exe.backward(np.ones(SHAPE, "f4"))
        return out, grad
    (out, grad), (ref, ref_grad) = grads("counting"), grads("NONE")
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    for name in ref_grad:
        np.testing.assert_allclose(grad[name], ref_grad[name], rtol=1e-5, atol=1e-6)
    assert counting.RUNS["counting_subgraph0"] == 1


_AUTOLOAD_OFF = textwrap.dedent("""
    import json, numpy as np, graphexec as gx
    x = gx.sym.Variable("x")
    try:
        gx.sym.exp(x).bind(gx.cpu(), {"x": np.ones(2, "f4")})
        error = None
    except gx.UnknownBackendError as exc:
        error = str(exc)
    print(json.dumps({"backends": gx.list_backends(), "error": error}))
""")


def test_disable_autoload_hides_the_backend():
    env = dict(os.environ, GRAPHEXEC_DISABLE_PLUGIN_AUTOLOAD="1",
               MXNET_SUBGRAPH_BACKEND="counting")
    proc = subprocess.run([sys.executable, "-c", _AUTOLOAD_OFF], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "counting" not in seen["backends"] and "default" in seen["backends"]
    error = seen["error"]
    assert error is not None and "subgraph backend 'counting' is not registered" in error
    listed = error.split("registered backends:")[1]
    assert "default" in listed and "counting" not in listed


def _module_with_broken_hook():
    def graphexec_register_subgraph_backends(register):
        raise RuntimeError("accelerator library not found")
    mod = types.ModuleType("gx_test_broken_hook")
    mod.graphexec_register_subgraph_backends = hookimpl(graphexec_register_subgraph_backends)
    return mod


class _EntryPoint:
    """An entry point whose module loads but whose hook raises."""

    name = "broken_hook"

    def load(self):
        return _module_with_broken_hook()


def test_broken_entry_points_are_reported_by_name_and_counting_still_works(monkeypatch):
    missing = metadata.EntryPoint(name="broken_import", value="gx_counting_missing.plugin",
                                  group=GROUP)
    monkeypatch.setattr(plugins.metadata, "entry_points",
                        lambda group: [missing, _EntryPoint(), _EPS[0]])
    pm = plugins.Plugins({"plugins": {"builtin": [], "entry_point_group": GROUP}})
    registered = {}
    with pytest.warns(RuntimeWarning) as caught:
        pm.load()
        pm.call_each("graphexec_register_subgraph_backends",
                     register=lambda name, factory: registered.setdefault(name, factory))
    messages = [str(w.message) for w in caught]
    assert any("plugin 'broken_import' failed in import/register: ModuleNotFoundError" in m
               for m in messages)
    assert any("plugin 'broken_hook' failed in graphexec_register_subgraph_backends: "
               "RuntimeError: accelerator library not found" in m for m in messages)
    assert len(pm.errors) == 2 and all(isinstance(e, gx.PluginError) for e in pm.errors)
    assert pm.pm.has_plugin("counting") and list(registered) == ["counting"]
    backend = registered["counting"]()
    assert backend.name == "counting" and backend.properties[0].name == "counting"
