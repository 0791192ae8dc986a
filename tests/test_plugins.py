"""The plugin manager: built-ins load as ordinary plugins, a broken plugin is reported by name
and the others keep working, autoload can be disabled."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import graphexec as gx
from graphexec.core import plugins
from graphexec.core.hookspecs import hookimpl
from graphexec.core.runtime.kernels import KernelRegistry, kernel_registry


def test_builtin_plugins_registered():
    pm = plugins.plugin_manager()
    names = {name for name, _ in pm.pm.list_name_plugin()}
    assert {"graphexec.core.ops", "graphexec.backends.default"} <= names
    assert pm.errors == []
    assert kernel_registry().has("elemwise_add", "cpu")


def _fake_module(name, **hooks):
    mod = types.ModuleType(name)
    for key, fn in hooks.items():
        setattr(mod, key, hookimpl(fn))
    return mod


def test_failing_plugins_are_reported_and_others_keep_working(monkeypatch):
    def broken_kernels(registry):
        raise RuntimeError("no GPU driver")

    def good_kernels(registry):
        registry.register("exp", lambda call: (lambda: None), device="tpu")
    monkeypatch.setitem(sys.modules, "gx_test_broken", _fake_module(
        "gx_test_broken", graphexec_register_kernels=broken_kernels))
    monkeypatch.setitem(sys.modules, "gx_test_good", _fake_module(
        "gx_test_good", graphexec_register_kernels=good_kernels))
    config = {"plugins": {"builtin": ["gx_test_broken", "gx_test_good", "gx_test_missing"],
                          "entry_point_group": "graphexec.test-none"}}
    pm = plugins.Plugins(config)
    with pytest.warns(RuntimeWarning) as caught:
        pm.load()
        registry = KernelRegistry()
        pm.register_kernels(registry)
    messages = [str(w.message) for w in caught]
    assert any("plugin 'gx_test_missing' failed in import/register" in m for m in messages)
    assert any("plugin 'gx_test_broken' failed in graphexec_register_kernels: RuntimeError: "
               "no GPU driver" in m for m in messages)
    assert registry.has("exp", "tpu")
    assert len(pm.errors) == 2 and all(isinstance(e, gx.PluginError) for e in pm.errors)


def test_autoload_can_be_disabled(monkeypatch):
    seen = []

    class FakeEntryPoint:
        name = "third_party"

        def load(self):
            seen.append("loaded")
            return _fake_module("third_party")
    monkeypatch.setattr(plugins.metadata, "entry_points", lambda group: [FakeEntryPoint()])
    config = {"plugins": {"builtin": [], "entry_point_group": "graphexec.plugins",
                          "disable_autoload_env": "GRAPHEXEC_DISABLE_PLUGIN_AUTOLOAD"}}
    monkeypatch.setenv("GRAPHEXEC_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.Plugins(config).load()
    assert seen == []
    monkeypatch.delenv("GRAPHEXEC_DISABLE_PLUGIN_AUTOLOAD")
    pm = plugins.Plugins(config)
    pm.load()
    assert seen == ["loaded"] and pm.pm.has_plugin("third_party")


def test_unknown_kernel_is_a_clear_error():
    with pytest.raises(gx.KernelNotFoundError, match="no kernel is registered for operator 'exp' on tpu"):
        KernelRegistry().lookup("exp", "tpu")


def test_executor_bound_hook_observes_binds():
    seen = []

    class Observer:
        @hookimpl
        def graphexec_executor_bound(self, executor):
            seen.append(executor)
    pm = plugins.plugin_manager()
    obs = Observer()
    pm.pm.register(obs, name="observer")
    try:
        x = gx.sym.Variable("x")
        exe = gx.sym.exp(x).simple_bind(gx.cpu(), x=(2,))
    finally:
        pm.pm.unregister(obs)
    assert seen == [exe]


def test_executor_run_hook_observes_forward_and_backward():
    seen = []

    class Profiler:
        @hookimpl
        def graphexec_executor_run(self, executor, segment, is_train, seconds):
            seen.append((segment, is_train, seconds >= 0))
    pm = plugins.plugin_manager()
    prof = Profiler()
    pm.pm.register(prof, name="profiler")
    try:
        x = gx.sym.Variable("x")
        exe = gx.sym.exp(x).simple_bind(gx.cpu(), x=(2,))
        exe.forward(is_train=True)
        exe.backward(np.ones(2, "f4"))
    finally:
        pm.pm.unregister(prof)
    assert seen == [("forward", True, True), ("backward", True, True)]
    exe.forward()  # the profiler is gone: nothing more is recorded
    assert len(seen) == 2
