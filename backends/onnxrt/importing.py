"""The registry of ONNX op importers: ``IMPORTERS`` maps an ONNX op type to its function
``(ctx, node) -> outputs``, filled by the handler modules in ``importers/`` (one per op
family) through :func:`importer`; :mod:`.importer` loads them all and runs an import. The
handlers build graphexec nodes with :func:`op` and report problems with :func:`node_error`."""
from __future__ import annotations

from typing import Any, Callable

from onnx import helper

from graphexec.core.symbol.symbol import Symbol, create_op_symbol

from .errors import OnnxImportError

__all__ = ["IMPORTERS", "importer", "op", "node_attrs", "node_error"]

IMPORTERS: dict[str, Callable] = {}


def importer(*op_types: str):
    """Register the decorated function as the importer of ``op_types``."""
    def wrap(fn):
        for t in op_types:
            IMPORTERS[t] = fn
        return fn
    return wrap


def node_error(node, reason: str) -> OnnxImportError:
    """An import error naming the node and its op type."""
    return OnnxImportError(f"import_model: node {node.name or node.output[0]!r} "
                           f"({node.op_type}): {reason}")


def node_attrs(node) -> dict:
    """The node's attributes as Python values."""
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def op(ctx: Any, node, op_name: str, inputs: list, **attrs: Any) -> Symbol:
    """``create_op_symbol`` under the node's unique name (``suffix`` appended when given);
    ``ctx`` is the import's value tables (``_Ctx`` of :mod:`.importer`)."""
    suffix = attrs.pop("suffix", "")
    name = ctx.name(node) if not suffix else f"{ctx.name(node)}_{suffix}"
    return create_op_symbol(op_name, inputs, {"name": name, **attrs})
