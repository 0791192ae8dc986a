"""The registry of op converters: one graphexec node -> ONNX (opset 17) nodes.

``CONVERTERS`` maps an op name (MXNet's canonical name) to a :class:`Converter`: ``convert(call)``
appends ONNX nodes through ``call.b`` (a :class:`Builder`) and returns nothing; ``supports(node,
shapes)`` says whether the node's attribute values (and input shapes) are covered: ``True`` or a
sentence giving the reason, so a selector can claim exactly what converts. The family
modules of ``converters/`` fill the table through :func:`converter`; importing the
``converters`` package loads them all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from onnx import TensorProto, helper, numpy_helper

__all__ = ["CONVERTERS", "NOT_EXPRESSED", "Converter", "ConvertCall", "Builder", "converter",
           "not_expressed", "onnx_dtype", "supported_dtype"]


class Builder:
    """Collects ONNX nodes and initializers; hands out fresh value names."""

    def __init__(self):
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}__{self._count}"

    def add(self, op_type: str, inputs: list[str], outputs: list[str] | None = None,
            hint: str = "", **attrs: Any) -> list[str]:
        """Append one ONNX node; fresh output names when ``outputs`` is None; returns them."""
        outputs = outputs if outputs is not None else [self.fresh(hint or op_type.lower())]
        name = self.fresh(f"{hint or op_type}")
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs

    def one(self, op_type: str, inputs: list[str], out: str | None = None, hint: str = "",
            **attrs: Any) -> str:
        """:meth:`add` for a single-output node; returns the output name."""
        return self.add(op_type, inputs, None if out is None else [out], hint, **attrs)[0]

    def const(self, value: Any, dtype: Any, hint: str = "const") -> str:
        """An initializer holding ``value`` as ``dtype``; returns its name."""
        name = self.fresh(hint)
        self.initializer(name, np.asarray(value, dtype=dtype))
        return name

    def ints(self, values, hint: str = "ints") -> str:
        return self.const(list(values), np.int64, hint)

    def initializer(self, name: str, array: np.ndarray) -> None:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))


@dataclass
class ConvertCall:
    """What one converter gets: the node, its value names, inferred shapes/dtypes, a builder."""

    node: Any
    inputs: list[str]
    outputs: list[str]
    in_shapes: list[tuple]
    in_dtypes: list[np.dtype]
    out_shapes: list[tuple]
    out_dtypes: list[np.dtype]
    b: Builder

    @property
    def p(self):
        return self.node.params

    @property
    def out(self) -> str:
        return self.outputs[0]

    @property
    def x(self) -> str:
        return self.inputs[0]

    def hint(self, what: str) -> str:
        return f"{self.node.name}_{what}"


@dataclass(frozen=True)
class Converter:
    """A conversion function and the declaration of what it supports."""

    convert: Callable[[ConvertCall], None]
    supports: Callable[[Any, list], "bool | str"]


CONVERTERS: dict[str, Converter] = {}
#: ops ONNX does not express exactly: op name -> why (the partition plan gives the reason)
NOT_EXPRESSED: dict[str, str] = {}


def _always(node, shapes) -> bool:
    return True


def converter(*names: str, supports: Callable | None = None):
    """Register the decorated function as the converter of ``names``."""
    def wrap(fn):
        for name in names:
            CONVERTERS[name] = Converter(fn, supports or _always)
        return fn
    return wrap


def not_expressed(reason: str, *names: str) -> None:
    """Record that ``names`` have no converter, and why (shown where a region stops)."""
    for name in names:
        NOT_EXPRESSED[name] = reason


_DTYPES = {np.dtype(k): v for k, v in {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "int32": TensorProto.INT32,
    "int64": TensorProto.INT64, "bool": TensorProto.BOOL}.items()}


def onnx_dtype(dtype: Any) -> int:
    """ONNX element type of a numpy dtype."""
    return _DTYPES[np.dtype(dtype)]


def supported_dtype(dtype: Any) -> bool:
    return np.dtype(dtype) in _DTYPES

