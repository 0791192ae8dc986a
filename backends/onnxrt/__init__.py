"""onnxrt backend: regions exported to ONNX Runtime (the ``onnxrt`` subgraph property), plus
whole-model ONNX export and import (``gx.onnx``). Registered as a plugin in plugins.toml, as
a third-party backend would be; ``onnx`` and ``onnxruntime`` are imported on first use."""
from __future__ import annotations

from graphexec.core.hookspecs import hookimpl

from .subgraph import make_backend

__all__ = ["graphexec_register_subgraph_backends"]


@hookimpl
def graphexec_register_subgraph_backends(register) -> None:
    """The ``onnxrt`` subgraph backend."""
    register("onnxrt", make_backend)
