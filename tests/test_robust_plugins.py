"""Fault isolation of plugins (issue #15, items 3 and 4): a plugin that raises anything at
import or in a hook, ``SystemExit`` included, is reported by name and the others keep
working (only ``KeyboardInterrupt`` goes through); many threads making a process's first
graphexec call at once all see the loaded registries."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import graphexec as gx
from graphexec.core import plugins
from graphexec.core.hookspecs import hookimpl
from graphexec.core.runtime.kernels import KernelRegistry
from graphexec.core.subgraph import SubgraphBackend, SubgraphProperty, register_backend
from graphexec.core.subgraph.api import _BACKENDS, OpNameSelector


def _module(name, **hooks):
    mod = types.ModuleType(name)
    for key, fn in hooks.items():
        setattr(mod, key, hookimpl(fn))
    return mod


def _manager(monkeypatch, modules: dict) -> plugins.Plugins:
    for name, mod in modules.items():
        if mod is not None:
            monkeypatch.setitem(sys.modules, name, mod)
    return plugins.Plugins({"plugins": {"builtin": list(modules),
                                        "entry_point_group": "graphexec.test-none"}})


def _exits(code):
    def hook(registry):
        raise SystemExit(code)
    return hook


def _good(registry):
    registry.register("exp", lambda call: (lambda: None), device="tpu")


@pytest.mark.parametrize("exc", [SystemExit(2), SystemExit("usage: prog [-h]"),
                                 GeneratorExit(), RecursionError("deep")])
def test_any_exception_in_a_hook_is_reported_by_plugin(monkeypatch, exc):
    def broken(registry):
        raise exc
    pm = _manager(monkeypatch, {"gx_t_broken": _module("gx_t_broken",
                                                       graphexec_register_kernels=broken),
                                "gx_t_good": _module("gx_t_good",
                                                     graphexec_register_kernels=_good)})
    pm.load()
    registry = KernelRegistry()
    with pytest.warns(RuntimeWarning, match=f"plugin 'gx_t_broken' failed in "
                                            f"graphexec_register_kernels: {type(exc).__name__}"):
        pm.register_kernels(registry)
    assert registry.has("exp", "tpu")
    assert [type(e) for e in pm.errors] == [gx.PluginError]


def test_system_exit_at_import_is_reported_and_others_load(monkeypatch):
    class ExitingFinder:
        """A module whose import calls sys.exit(2), as argparse does on bad argv."""
        def find_spec(self, name, path=None, target=None):
            if name != "gx_t_exits":
                return None
            from importlib.machinery import ModuleSpec
            return ModuleSpec(name, self)

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            import argparse
            argparse.ArgumentParser(prog="gx_t_exits").parse_args(["--no-such-flag"])
    monkeypatch.setattr(sys, "meta_path", [ExitingFinder(), *sys.meta_path])
    monkeypatch.setattr(sys, "stderr", open(os.devnull, "w"))  # argparse prints its usage
    good = _module("gx_t_good", graphexec_register_kernels=_good)
    pm = _manager(monkeypatch, {"gx_t_exits": None, "gx_t_good": good})
    with pytest.warns(RuntimeWarning, match="plugin 'gx_t_exits' failed in import/register: "
                                            "SystemExit: 2"):
        pm.load()
    registry = KernelRegistry()
    pm.register_kernels(registry)
    assert registry.has("exp", "tpu") and pm.pm.has_plugin("gx_t_good")


def test_keyboard_interrupt_goes_through(monkeypatch):
    def interrupted(registry):
        raise KeyboardInterrupt
    pm = _manager(monkeypatch, {"gx_t_ctrl_c": _module(
        "gx_t_ctrl_c", graphexec_register_kernels=interrupted)})
    pm.load()
    with pytest.raises(KeyboardInterrupt):
        pm.register_kernels(KernelRegistry())


def test_system_exit_in_an_observer_does_not_stop_forward():
    class Quitter:
        @hookimpl
        def graphexec_executor_run(self, executor, segment, is_train, seconds):
            sys.exit(3)
    pm = plugins.plugin_manager()
    quitter = Quitter()
    pm.pm.register(quitter, name="quitter")
    before = len(pm.errors)
    try:
        x = gx.sym.Variable("x")
        exe = gx.sym.exp(x).simple_bind(gx.cpu(), x=(2,))
        with pytest.warns(RuntimeWarning, match="plugin 'quitter' failed in "
                                                "graphexec_executor_run: SystemExit: 3"):
            out = exe.forward()[0]
    finally:
        pm.pm.unregister(quitter)
        del pm.errors[before:]
    assert out.tolist() == [1.0, 1.0]


# -- a fresh process: broken entry points and threads racing to the first call ---------------
_BROKEN = {
    "gx_exit_at_import": "import sys\nsys.exit(2)\n",
    "gx_argparse_at_import": "import argparse\nargparse.ArgumentParser().parse_args(['-x'])\n",
    "gx_exit_in_hook": textwrap.dedent("""\
        from graphexec.core.hookspecs import hookimpl

        @hookimpl
        def graphexec_register_ops(register):
            raise SystemExit("hook says bye")
        """),
}

_RACE = textwrap.dedent("""\
    import json, sys, threading, warnings
    warnings.simplefilter("ignore")
    N = 16
    barrier = threading.Barrier(N)
    results, failures = [], []

    def first_call(k):
        barrier.wait()
        try:
            import numpy as np
            import graphexec as gx
            x = gx.sym.Variable("x")
            y = gx.sym.FullyConnected(gx.sym.exp(x), num_hidden=2, no_bias=True, name="fc")
            exe = y.simple_bind(gx.cpu(), x=(1, 3), grad_req="null")
            exe.arg_dict["fc_weight"][:] = 1
            results.append(float(exe.forward(x=np.zeros((1, 3), "f4"))[0][0, 0]))
        except BaseException as exc:
            failures.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=first_call, args=(k,)) for k in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    from graphexec.core.plugins import plugin_manager
    print(json.dumps({"results": results, "failures": failures,
                      "errors": [str(e) for e in plugin_manager().errors]}))
    """)


def test_first_calls_from_many_threads_with_broken_plugins_installed(tmp_path):
    """16 threads make the process's first graphexec call at once, with three broken
    entry-point plugins installed: every call succeeds, the process does not exit, and each
    broken plugin is named."""
    dist = tmp_path / "gx_broken_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gx-broken-plugins\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[graphexec.plugins]\n" + "".join(f"{m} = {m}\n" for m in _BROKEN))
    for mod, source in _BROKEN.items():
        (tmp_path / f"{mod}.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("GRAPHEXEC_DISABLE_PLUGIN_AUTOLOAD", None)
    proc = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failures"] == [] and report["results"] == [3.0] * 16
    errors = "\n".join(report["errors"])
    assert "plugin 'gx_exit_at_import' failed in import/register: SystemExit: 2" in errors
    assert "plugin 'gx_argparse_at_import' failed in import/register: SystemExit: 2" in errors
    assert ("plugin 'gx_exit_in_hook' failed in graphexec_register_ops: SystemExit: "
            "hook says bye") in errors


# -- a plugin backend's own code at bind and run time ---------------------------------------------
class _ExitingRunner(SubgraphProperty):
    name = "exiting_runner"
    default_attrs = {"op_names": frozenset({"exp"})}

    def create_runner(self, region):
        def run():
            sys.exit(4)
        return run


class _ExitingSelector(SubgraphProperty):
    name = "exiting_selector"

    def create_selector(self):
        class Selector(OpNameSelector):
            def select(self, node):
                raise SystemExit("selector gave up")
        return Selector({"exp"})


@pytest.fixture
def plugin_backend(subgraph_clean):
    made = []

    def register(prop):
        register_backend(prop.name, lambda: SubgraphBackend(prop.name, [prop]))
        made.append(prop.name)
    yield register
    for name in made:
        _BACKENDS.pop(name, None)


def test_a_runner_raising_system_exit_falls_back(plugin_backend):
    plugin_backend(_ExitingRunner())
    x = gx.sym.Variable("x")
    exe = (gx.sym.exp(x) + 1).bind(gx.cpu(), {"x": np.zeros(3, "f4")}, grad_req="null",
                                  backend="exiting_runner")
    with pytest.warns(RuntimeWarning, match="running it failed: SystemExit: 4"):
        out = exe.forward()[0]
    assert out.tolist() == [2.0, 2.0, 2.0]


def test_a_selector_raising_system_exit_skips_its_backend(plugin_backend):
    plugin_backend(_ExitingSelector())
    x = gx.sym.Variable("x")
    with pytest.warns(RuntimeWarning, match="exiting_selector/exiting_selector: partitioning "
                                            "failed: SystemExit: selector gave up"):
        exe = (gx.sym.exp(x) + 1).bind(gx.cpu(), {"x": np.zeros(3, "f4")}, grad_req="null",
                                      backend="exiting_selector")
    assert exe.forward()[0].tolist() == [2.0, 2.0, 2.0]
    assert any("partitioning failed" in s for s in exe.partition_plan.skipped)
