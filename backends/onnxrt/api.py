"""The public ONNX API (``graphexec.onnx``): export of symbols to ONNX models. The ``onnx``
package is imported on first use, so ``import graphexec`` stays fast."""
from __future__ import annotations

from typing import Any

from .errors import OnnxExportError, OnnxImportError

__all__ = ["export_model", "import_model", "OnnxExportError", "OnnxImportError"]


def export_model(*args: Any, **kwargs: Any):
    """``export_model(sym, arg_params, aux_params, input_shapes, path=None, input_dtypes=None,
    opset=17) -> onnx.ModelProto``: see :func:`graphexec.backends.onnxrt.export.export_model`."""
    from .export import export_model as export
    return export(*args, **kwargs)


def import_model(*args: Any, **kwargs: Any):
    """``import_model(path_or_model) -> (sym, arg_params, aux_params)``: see
    :func:`graphexec.backends.onnxrt.importer.import_model`."""
    from .importer import import_model as load
    return load(*args, **kwargs)
