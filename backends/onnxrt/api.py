"""The public ONNX API (``graphexec.onnx``): export of symbols to ONNX models, import of ONNX
models as symbols, and an ONNX backend that runs models on graphexec. The ``onnx`` package is
imported on first use, so ``import graphexec`` stays fast."""
from __future__ import annotations

from typing import Any

from .errors import ConstantInputRequired, OnnxExportError, OnnxImportError, StaticShapeRequired

__all__ = ["export_model", "import_model", "prepare", "get_model_metadata", "OnnxExportError", "OnnxImportError",
           "ConstantInputRequired", "StaticShapeRequired"]


#: keywords only MXNet 1.9.1's ``mx.onnx.export_model`` has (their presence selects it)
MXNET_KEYWORDS = frozenset({"in_shapes", "in_types", "onnx_file_path", "verbose", "dynamic",
                            "dynamic_input_shapes", "run_shape_inference", "input_type",
                            "input_shape", "large_model"})


def export_model(*args: Any, **kwargs: Any):
    """``export_model(sym, arg_params, aux_params, input_shapes, path=None, input_dtypes=None,
    opset=17) -> onnx.ModelProto``: see :func:`graphexec.backends.onnxrt.export.export_model`.

    MXNet 1.9.1's ``mx.onnx`` signature works too: ``export_model(sym, params, in_shapes,
    in_types, onnx_file_path, dynamic=..., dynamic_input_shapes=...) -> onnx_file_path``
    (one params dict, shapes as a list; selected by its keywords, or by a list of shapes as
    third argument): see :mod:`graphexec.backends.onnxrt.mxnet_export`."""
    if MXNET_KEYWORDS.intersection(kwargs) or (len(args) >= 3 and isinstance(args[2], list)) \
            or (len(args) == 2 and "aux_params" not in kwargs):
        from .mxnet_export import export_model_mxnet
        return export_model_mxnet(*args, **kwargs)
    from .export import export_model as export
    return export(*args, **kwargs)


def get_model_metadata(model_file: Any) -> dict:
    """MXNet 1.9.1's ``mx.onnx.get_model_metadata``: ``{'input_tensor_data': [(name,
    shape)], 'output_tensor_data': [(name, shape)]}`` (symbolic dimensions as their names)."""
    import onnx
    model = onnx.load(str(model_file)) if not hasattr(model_file, "graph") else model_file
    inits = {t.name for t in model.graph.initializer}

    def shape(v) -> tuple:
        return tuple(d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim)
    return {"input_tensor_data": [(v.name, shape(v)) for v in model.graph.input
                                  if v.name not in inits],
            "output_tensor_data": [(v.name, shape(v)) for v in model.graph.output]}


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
