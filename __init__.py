"""graphexec: MXNet's symbolic graph executor as a plugin framework with swappable subgraph
backends.

>>> import graphexec as gx, numpy as np
>>> a, b = gx.sym.Variable('a'), gx.sym.Variable('b')
>>> exe = (2 * a + b).bind(gx.cpu(), {'a': np.array([1, 2], 'f4'), 'b': np.array([2, 3], 'f4')})
>>> exe.forward()[0]
array([4., 7.], dtype=float32)
"""
from .backends.onnxrt import api as onnx
from .core import model, name, random, subgraph, sym
from .core.bucketing import BucketingExecutor
from .core.compare import compare
from .core.context import Context, cpu, current_context, gpu
from .core.errors import *  # noqa: F401,F403 - the exception hierarchy is public
from .core.errors import GraphexecError, MXNetError
from .core.executor import Executor
from .core.hookspecs import hookimpl
from .core.naming import AttrScope
from .core.subgraph import list_backends
from .core.subgraph.frontend import partition, validate_partition

symbol = sym
attribute = name

__version__ = "0.1.0"

__all__ = ["sym", "symbol", "model", "name", "random", "Context", "cpu", "gpu",
           "current_context", "Executor", "BucketingExecutor", "GraphexecError", "MXNetError", "AttrScope",
           "hookimpl", "attribute", "subgraph", "list_backends", "partition",
           "validate_partition", "onnx", "compare"]
