"""graphexec: MXNet's symbolic graph executor as a plugin framework with swappable subgraph
backends.

>>> import graphexec as gx, numpy as np
>>> a, b = gx.sym.Variable('a'), gx.sym.Variable('b')
>>> exe = (2 * a + b).bind(gx.cpu(), {'a': np.array([1, 2], 'f4'), 'b': np.array([2, 3], 'f4')})
>>> exe.forward()[0]
array([4., 7.], dtype=float32)

This module is the public facade: it imports the whole stack (the core's layers, the
backends' public APIs, the tools) and, last, loads the plugins that fill the registries
(``core/startup.py``). Its imports are absolute, so that the repository root imported under
another name (pytest does, the checkout being the package) yields the same modules.
"""
from graphexec.backends.onnxrt import api as onnx
from graphexec.core import subgraph
from graphexec.core.hookspecs import hookimpl
from graphexec.core.ir.context import Context, cpu, current_context, gpu
from graphexec.core.ir.errors import *  # noqa: F401,F403 - the exception hierarchy is public
from graphexec.core.ir.errors import GraphexecError, MXNetError
from graphexec.core.runtime.bucketing import BucketingExecutor
from graphexec.core.runtime.executor import Executor
from graphexec.core.startup import load_plugins
from graphexec.core.subgraph import list_backends
from graphexec.core.subgraph.frontend import partition, validate_partition
from graphexec.core.symbol import model
from graphexec.core.symbol import naming as name
from graphexec.core.symbol import sym
from graphexec.core.symbol.naming import AttrScope
from graphexec.harness import (callback, initializer, io, kvstore, lr_scheduler, metric, module,
                               optimizer, recordio, rnn)
from graphexec.harness import ndarray as nd
from graphexec.harness import operator
from graphexec.harness.ndarray import random
from graphexec.tools.compare import compare

symbol = sym
attribute = name
ndarray = nd
init = initializer
mod = module
kv = kvstore

__version__ = "0.1.0"

__all__ = ["sym", "symbol", "model", "name", "random", "Context", "cpu", "gpu",
           "current_context", "Executor", "BucketingExecutor", "GraphexecError", "MXNetError",
           "AttrScope", "hookimpl", "attribute", "subgraph", "list_backends", "partition",
           "validate_partition", "onnx", "compare", "nd", "ndarray", "io", "recordio", "init",
           "initializer", "optimizer", "lr_scheduler", "metric", "callback", "mod", "module",
           "kv", "kvstore", "rnn", "operator"]

load_plugins()
