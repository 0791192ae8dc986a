"""Import of an ONNX model as a graphexec symbol: ``import_model(path_or_model) -> (sym,
arg_params, aux_params)``.

Initializers (and ``Constant`` nodes) feeding a node as a tensor become variables with their
values in ``arg_params``; those read as attributes (shapes, axes, scalars) are folded in.
BatchNormalization statistics become ``aux_params`` under the ``<node>_moving_mean`` /
``<node>_moving_var`` names graphexec creates. Graph inputs that are not initializers become
data variables. ``IMPORTERS`` maps an ONNX op type to its function ``(ctx, node) -> outputs``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ...core.symbol import Group, Symbol, Variable, create_op_symbol
from .errors import OnnxImportError

__all__ = ["import_model", "IMPORTERS"]

IMPORTERS: dict[str, Callable] = {}


def importer(*op_types: str):
    """Register the decorated function as the importer of ``op_types``."""
    def wrap(fn):
        for t in op_types:
            IMPORTERS[t] = fn
        return fn
    return wrap


class _Ctx:
    """Value tables of one import: symbols, constants, params, ranks, node names."""

    def __init__(self, model):
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                          1)
        self.consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.values: dict[str, Symbol] = {}
        self.arg_params: dict[str, np.ndarray] = {}
        self.aux_params: dict[str, np.ndarray] = {}
        self.used: set = set()
        self._names: dict = {}
        self.ranks = _ranks(model)
        for vi in graph.input:
            if vi.name not in self.consts:
                self.values[vi.name] = self.variable(vi.name)

    def variable(self, name: str) -> Symbol:
        self.used.add(name)
        return Variable(name)

    def sym(self, name: str) -> Symbol:
        """The symbol of value ``name``; a constant becomes a parameter variable."""
        if name not in self.values:
            if name not in self.consts:
                raise OnnxImportError(f"import_model: value {name!r} is used before it is "
                                      "produced (the graph is not topologically sorted)")
            self.values[name] = self.variable(name)
            self.arg_params[name] = self.consts[name]
        return self.values[name]

    def const(self, node, index: int, what: str) -> np.ndarray | None:
        """The constant value of input ``index`` (None when absent); error when computed."""
        if index >= len(node.input) or not node.input[index]:
            return None
        name = node.input[index]
        if name not in self.consts:
            raise _node_error(node, f"its {what} input {name!r} must be a constant "
                              "(an initializer or a Constant node)")
        return self.consts[name]

    def rank(self, name: str) -> int | None:
        if name in self.consts:
            return self.consts[name].ndim
        return self.ranks.get(name)

    def name(self, node) -> str:
        """A unique graphexec node name: the first output without ``_output``, else the
        node's own name. The same name on every call for one node."""
        if node.output[0] in self._names:
            return self._names[node.output[0]]
        base = node.output[0][:-len("_output")] if node.output[0].endswith("_output") else \
            (node.name or node.output[0])
        base = re.sub(r"[^\w.\-]", "_", base) or node.op_type.lower()
        name, k = base, 0
        while name in self.used or name in self.consts:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self._names[node.output[0]] = name
        return name


def _ranks(model) -> dict:
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - ranks are only a hint; importers say when they need one
        inferred = model
    g = inferred.graph
    ranks = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            ranks[vi.name] = len(t.shape.dim)
    return ranks


def _node_error(node, reason: str) -> OnnxImportError:
    return OnnxImportError(f"import_model: node {node.name or node.output[0]!r} "
                           f"({node.op_type}): {reason}")


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def op(ctx: _Ctx, node, op_name: str, inputs: list, **attrs) -> Symbol:
    """``create_op_symbol`` under the node's unique name (``suffix`` appended when given)."""
    suffix = attrs.pop("suffix", "")
    name = ctx.name(node) if not suffix else f"{ctx.name(node)}_{suffix}"
    return create_op_symbol(op_name, inputs, {"name": name, **attrs})


def _load(path_or_model):
    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model
    if isinstance(path_or_model, (str, Path)):
        return onnx.load(str(path_or_model))
    raise TypeError("import_model: expected an onnx.ModelProto or a path, got "
                    f"{type(path_or_model).__name__}")


def _check_supported(graph) -> None:
    bad = [f"{n.name or n.output[0]} ({n.op_type})" for n in graph.node
           if n.domain not in ("", "ai.onnx") or n.op_type not in IMPORTERS]
    if bad:
        raise OnnxImportError("import_model: these ONNX nodes have no graphexec equivalent:\n  "
                              + "\n  ".join(bad))


def import_model(path_or_model) -> tuple:
    """Read an ONNX model (a ``ModelProto`` or a file path) as ``(sym, arg_params,
    aux_params)``: a graphexec Symbol whose outputs are the graph outputs, and name -> numpy
    array dicts of its parameters. Raises :class:`OnnxImportError` listing every unsupported
    node, or naming the node whose attributes have no graphexec equivalent."""
    model = _load(path_or_model)
    _check_supported(model.graph)
    ctx = _Ctx(model)
    for node in model.graph.node:
        outs = IMPORTERS[node.op_type](ctx, node)
        for name, s in zip(node.output, outs):
            if name:
                ctx.values[name] = s
    heads = [ctx.sym(o.name) for o in model.graph.output]
    sym = heads[0] if len(heads) == 1 else Group(heads)
    return sym, ctx.arg_params, ctx.aux_params


from . import importer_ops  # noqa: E402,F401  (op importers register on import)
