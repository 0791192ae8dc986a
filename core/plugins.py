"""The plugin manager: loads built-in plugins from plugins.toml and third-party ones from the
``graphexec.plugins`` entry-point group, and calls their hooks one plugin at a time so that a
failing plugin is reported by name without taking the others down.

This module sits at the bottom of the core: it knows the hook specifications and nothing
else. ``core/startup.py`` (the top of the core, run by ``import graphexec``) loads the
plugins and hands each registry to its hook; the layers in between only :func:`notify`
observers (``graphexec_executor_bound``, ``graphexec_partition_done``, ...).
"""
from __future__ import annotations

import importlib
import os
import sys
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import pluggy

from . import hookspecs
from .ir.errors import PluginError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Plugins", "plugin_manager", "plugin_config", "install", "notify", "PLUGINS_TOML"]

PLUGINS_TOML = Path(__file__).resolve().parent.parent / "plugins.toml"


def plugin_config() -> dict[str, Any]:
    """The parsed plugins.toml shipped with the package."""
    with open(PLUGINS_TOML, "rb") as f:
        return tomllib.load(f)


class Plugins:
    """pluggy manager plus the record of plugins that failed (``errors``)."""

    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.pm = pluggy.PluginManager("graphexec")
        self.pm.add_hookspecs(hookspecs)
        self.errors: list[PluginError] = []

    # -- loading -----------------------------------------------------------------------
    def load(self) -> None:
        section = self.config.get("plugins", {})
        for modname in section.get("builtin", []):
            self._load_one(modname, lambda m=modname: importlib.import_module(m))
        env = section.get("disable_autoload_env", "GRAPHEXEC_DISABLE_PLUGIN_AUTOLOAD")
        if os.environ.get(env, "") not in ("", "0"):
            return
        group = section.get("entry_point_group", "graphexec.plugins")
        for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
            self._load_one(ep.name, ep.load)

    def _load_one(self, name: str, loader: Callable[[], Any]) -> None:
        if self.pm.has_plugin(name):
            return
        try:
            self.pm.register(loader(), name=name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit too (argparse at import)
            self._fail(name, "import/register", exc)

    def _fail(self, name: str, hook: str, exc: BaseException) -> None:
        err = PluginError(f"plugin {name!r} failed in {hook}: {type(exc).__name__}: {exc}")
        self.errors.append(err)
        warnings.warn(str(err), RuntimeWarning, stacklevel=3)

    # -- calling hooks -------------------------------------------------------------------
    def call_each(self, hook_name: str, **kwargs: Any) -> None:
        """Call ``hook_name`` on every plugin separately, reporting failures by plugin: any
        exception, ``SystemExit`` included (only ``KeyboardInterrupt`` goes through)."""
        hook = getattr(self.pm.hook, hook_name)
        for impl in reversed(hook.get_hookimpls()):
            try:
                impl.function(**{k: kwargs[k] for k in impl.argnames})
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - a plugin never ends the host program
                self._fail(impl.plugin_name, hook_name, exc)

    def register_kernels(self, registry: Any) -> None:
        self.call_each("graphexec_register_kernels", registry=registry)

    def has_observers(self, hook_name: str) -> bool:
        return bool(getattr(self.pm.hook, hook_name).get_hookimpls())

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call an observer hook; observers never break execution."""
        if getattr(self.pm.hook, hook_name).get_hookimpls():
            self.call_each(hook_name, **kwargs)


_ACTIVE: Plugins | None = None


def install(plugins: Plugins) -> None:
    """Make ``plugins`` the process-wide manager (``core/startup.py`` does, once loaded)."""
    global _ACTIVE
    _ACTIVE = plugins


def plugin_manager() -> Plugins:
    """The process-wide plugin manager, loaded when ``graphexec`` was imported."""
    if _ACTIVE is None:
        raise PluginError("graphexec's plugins are not loaded: import graphexec first (its "
                          "import loads them; see core/startup.py)")
    return _ACTIVE


def notify(hook_name: str, **kwargs: Any) -> None:
    """Call the observer hook ``hook_name`` of every plugin (nothing before loading)."""
    if _ACTIVE is not None:
        _ACTIVE.notify(hook_name, **kwargs)
