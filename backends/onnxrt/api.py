"""The public ONNX API (``graphexec.onnx``): export of symbols to ONNX models. The ``onnx``
package is imported on first use, so ``import graphexec`` stays fast."""
from __future__ import annotations

from typing import Any

from .errors import OnnxExportError

__all__ = ["export_model", "OnnxExportError"]


def export_model(*args: Any, **kwargs: Any):
    """``export_model(sym, arg_params, aux_params, input_shapes, path=None, input_dtypes=None,
    opset=17) -> onnx.ModelProto``: see :func:`graphexec.backends.onnxrt.export.export_model`."""
    from .export import export_model as export
    return export(*args, **kwargs)
