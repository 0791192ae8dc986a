"""Errors of the onnxrt backend."""
from __future__ import annotations

from ...core.errors import GraphexecError

__all__ = ["OnnxExportError", "OnnxImportError"]


class OnnxExportError(GraphexecError, ValueError):
    """A symbol (or one of its nodes) cannot be written as an ONNX graph."""


class OnnxImportError(GraphexecError, ValueError):
    """An ONNX model (or one of its nodes) has no graphexec equivalent."""
