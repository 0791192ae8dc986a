"""The public ONNX API (``graphexec.onnx``): export of symbols to ONNX models, import of ONNX
models as symbols, and an ONNX backend that runs models on graphexec. The ``onnx`` package is
imported on first use, so ``import graphexec`` stays fast."""
from __future__ import annotations

from typing import Any

from .errors import ConstantInputRequired, OnnxExportError, OnnxImportError, StaticShapeRequired

__all__ = ["export_model", "import_model", "prepare", "OnnxExportError", "OnnxImportError",
           "ConstantInputRequired", "StaticShapeRequired"]


def export_model(*args: Any, **kwargs: Any):
    """``export_model(sym, arg_params, aux_params, input_shapes, path=None, input_dtypes=None,
    opset=17) -> onnx.ModelProto``: see :func:`graphexec.backends.onnxrt.export.export_model`."""
    from .export import export_model as export
    return export(*args, **kwargs)


def import_model(*args: Any, **kwargs: Any):
    """``import_model(path_or_model, constants=None, input_shapes=None) -> (sym, arg_params,
    aux_params)``: see :func:`graphexec.backends.onnxrt.importer.import_model`."""
    from .importer import import_model as load
    return load(*args, **kwargs)


def prepare(model: Any, device: str = "CPU", **kwargs: Any):
    """An ONNX backend representation running ``model`` (a ModelProto or a path) on
    graphexec's native executor: ``prepare(model).run([x])`` returns the graph outputs. See
    :mod:`graphexec.backends.onnxrt.backend`."""
    from .backend import GraphexecBackend
    return GraphexecBackend.prepare(model, device, **kwargs)
