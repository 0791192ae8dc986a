"""MXNet 1.9.1's ``mx.onnx.export_model`` signature on top of graphexec's exporter, and a
dynamic batch dimension.

``export_model(sym, params, in_shapes=None, in_types=np.float32, onnx_file_path='model.onnx',
verbose=False, dynamic=False, dynamic_input_shapes=None, ...)``: ``sym`` a Symbol or a JSON
path, ``params`` one dict (``arg:``/``aux:`` prefixes allowed, as ``nd.load`` gives them) or a
``.params`` path, ``in_shapes`` / ``in_types`` in the order of the data inputs (the inputs
not in ``params``); returns ``onnx_file_path``.

**Dynamic dimensions.** With ``dynamic=True`` the dimensions that are None in
``dynamic_input_shapes`` (the batch, dimension 0, where not given) become symbolic. The model
is exported at two sizes of those dimensions; the integer constants that differ between the
two (the shapes of Reshape and the like, which converters write statically) are rewritten:
a Reshape target keeps one -1 for the varying dimension. Any other size-dependent constant
cannot be made dynamic and raises :class:`OnnxExportError` naming it.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import onnx
from graphexec.core.symbol import ndarray_io
from graphexec.core.symbol.json_io import load as load_symbol
from onnx import numpy_helper

from .errors import OnnxExportError
from .export import export_model as export_static

__all__ = ["export_model_mxnet"]


def _split_params(params: Any) -> tuple[dict, dict]:
    if isinstance(params, (str, os.PathLike)):
        params = ndarray_io.load(params)
    if not isinstance(params, dict):
        raise OnnxExportError(f"export_model: params must be a dict or a .params path, got "
                              f"{type(params).__name__}")
    args, aux = {}, {}
    for key, value in params.items():
        kind, _, name = key.partition(":") if key[:4] in ("arg:", "aux:") else ("arg", "", key)
        (aux if kind == "aux" else args)[name] = np.asarray(value)
    return args, aux


def export_model_mxnet(sym: Any, params: Any, in_shapes: Any = None, in_types: Any = np.float32,
                       onnx_file_path: str = "model.onnx", verbose: bool = False,
                       dynamic: bool = False, dynamic_input_shapes: Any = None,
                       run_shape_inference: bool = False, input_type: Any = None,
                       input_shape: Any = None, large_model: bool = False,
                       opset_version: int | None = None) -> str:
    """MXNet 1.9.1's ``mx.onnx.export_model``; writes ``onnx_file_path`` and returns it."""
    if isinstance(sym, (str, os.PathLike)):
        sym = load_symbol(sym)
    in_shapes = input_shape if in_shapes is None else in_shapes
    in_types = input_type if input_type is not None else in_types
    if large_model:
        raise OnnxExportError("export_model: large_model=True (external data) is not "
                              "supported; models are written as one file")
    args, aux = _split_params(params)
    data = [n for n in sym.list_inputs() if n not in args and n not in aux]
    shapes = [tuple(s) for s in (in_shapes or [])]
    if len(shapes) != len(data):
        raise OnnxExportError(f"export_model: in_shapes gives {len(shapes)} shapes for the "
                              f"{len(data)} data inputs {data}")
    types = in_types if isinstance(in_types, (list, tuple)) else [in_types] * len(data)
    dtypes = {n: np.dtype(t) for n, t in zip(data, types)}
    opset = {} if opset_version is None else {"opset": opset_version}
    static = dict(zip(data, shapes))
    if not dynamic:
        model = export_static(sym, args, aux, static, None, dtypes, **opset)
    else:
        dyn = dynamic_input_shapes or [(None, *s[1:]) for s in shapes]
        if len(dyn) != len(data):
            raise OnnxExportError(f"export_model: dynamic_input_shapes gives {len(dyn)} shapes "
                                  f"for the {len(data)} data inputs {data}")
        model = _dynamic(sym, args, aux, static, dtypes, dict(zip(data, dyn)), opset)
    onnx.save(model, str(onnx_file_path))
    return str(onnx_file_path)


def _dynamic(sym, args, aux, static: dict, dtypes: dict, dyn: dict, opset: dict):
    """Export at two sizes of the dynamic dimensions and generalise what differs."""
    def sized(extra: int) -> dict:
        return {n: tuple(d + extra if dyn[n][i] is None else d for i, d in enumerate(s))
                for n, s in static.items()}
    one = export_static(sym, args, aux, sized(0), None, dtypes, **opset)
    two = export_static(sym, args, aux, sized(1), None, dtypes, **opset)
    _generalise_constants(one, two)
    for value in list(one.graph.input) + list(one.graph.output):
        _symbolic_dims(value, two)
    onnx.checker.check_model(one)
    return one


def _symbolic_dims(value, other) -> None:
    dims = value.type.tensor_type.shape.dim
    twin = next((v for v in list(other.graph.input) + list(other.graph.output)
                 if v.name == value.name), None)
    if twin is None:
        return
    for i, (d, t) in enumerate(zip(dims, twin.type.tensor_type.shape.dim)):
        if d.dim_value != t.dim_value:   # a dimension that follows the dynamic ones
            d.dim_param = "batch" if i == 0 else f"{value.name}_dim{i}"


def _generalise_constants(one, two) -> None:
    consumers: dict[str, list] = {}
    for node in one.graph.node:
        for k, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, k))
    others = {t.name: t for t in two.graph.initializer}
    for init in one.graph.initializer:
        other = others.get(init.name)
        if other is None:
            continue
        a, b = numpy_helper.to_array(init), numpy_helper.to_array(other)
        if a.shape == b.shape and np.array_equal(a, b):
            continue
        uses = consumers.get(init.name, [])
        if a.shape != b.shape or a.dtype != np.int64 or not uses or \
                any(n.op_type != "Reshape" or k != 1 for n, k in uses):
            raise OnnxExportError(
                f"export_model(dynamic=True): the constant {init.name!r} (read by "
                f"{', '.join(sorted({n.op_type + ' ' + n.name for n, _ in uses})) or 'nothing'}) "
                f"depends on the dynamic dimensions and cannot be made dynamic")
        changed = np.flatnonzero(a != b)
        if len(changed) != 1 or (a == -1).any():
            raise OnnxExportError(f"export_model(dynamic=True): the Reshape target "
                                  f"{init.name!r} has several size-dependent dimensions")
        a = a.copy()
        a[changed[0]] = -1
        init.CopyFrom(numpy_helper.from_array(a, init.name))
