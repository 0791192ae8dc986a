"""Running unchanged MXNet 1.x scripts: ``import mxnet`` (and ``mxnet.<module>``) resolved
to graphexec, then the script run as ``__main__`` (``graphexec run train.py [args]``).

``mxnet.<name>`` maps to the facade attribute of that name (``mxnet.nd``,
``mxnet.ndarray``, ``mxnet.io``, ``mxnet.module``, ``mxnet.optimizer``, ...); a part of
MXNet graphexec does not provide (``mxnet.gluon``, ``mxnet.autograd``, ...) fails at its
import with an ImportError saying so.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types
from typing import Sequence

__all__ = ["install_mxnet_alias", "run_script"]


class _MXNetFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``mxnet`` and ``mxnet.<name>`` among graphexec's modules."""

    def __init__(self, package: types.ModuleType):
        self.package = package

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "mxnet" and not fullname.startswith("mxnet."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name == "mxnet":
            return self.package
        target = self.package
        for part in spec.name.split(".")[1:]:
            target = getattr(target, part, None)
            if not isinstance(target, types.ModuleType):
                raise ImportError(f"{spec.name}: graphexec provides MXNet 1.9.1's symbolic API "
                                  f"and training harness (nd, sym, io, mod, optimizer, metric, "
                                  f"init, callback, kv, recordio, ...), not {spec.name}",
                                  name=spec.name)
        return target

    def exec_module(self, module: types.ModuleType) -> None:
        """The graphexec module is already executed."""


def install_mxnet_alias(package: types.ModuleType) -> bool:
    """Make ``import mxnet`` give ``package`` (the ``graphexec`` facade); returns False when
    it already does."""
    if any(isinstance(f, _MXNetFinder) and f.package is package for f in sys.meta_path):
        return False
    sys.modules.pop("mxnet", None)
    sys.meta_path.insert(0, _MXNetFinder(package))
    return True


def run_script(path: str, args: Sequence[str], package: types.ModuleType) -> None:
    """Run the script at ``path`` as ``__main__`` with ``args`` as its arguments and
    ``import mxnet`` resolved to ``package`` (said once on standard error)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no script at {path!r}")
    if install_mxnet_alias(package):
        print(f"graphexec run: 'import mxnet' resolves to graphexec "
              f"{getattr(package, '__version__', '')} (MXNet 1.9.1's API)", file=sys.stderr)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")
