"""Errors of the onnxrt backend."""
from __future__ import annotations

from graphexec.core.ir.errors import GraphexecError

__all__ = ["OnnxExportError", "OnnxImportError", "ConstantInputRequired", "StaticShapeRequired"]


class OnnxExportError(GraphexecError, ValueError):
    """A symbol (or one of its nodes) cannot be written as an ONNX graph."""


class OnnxImportError(GraphexecError, ValueError):
    """An ONNX model (or one of its nodes) has no graphexec equivalent."""


class ConstantInputRequired(OnnxImportError):
    """A node reads a value computed from graph inputs ``input_names`` as an attribute (a
    shape, axes, a pad width): the model imports only once those inputs' values are known
    (``import_model(model, constants={name: value})``). The ONNX backend does this with the
    values it runs on."""

    def __init__(self, message: str, input_names: list[str]):
        super().__init__(message)
        self.input_names = list(input_names)


class StaticShapeRequired(OnnxImportError):
    """A node's import needs a static shape that shape inference did not give (a dynamic
    dimension upstream): give ``import_model`` the graph inputs' shapes (``input_shapes``)."""
