"""Operator attribute schemas: parse MXNet's string forms ("(3, 3)", "True", "1e-05") into
Python values with MXNet's defaults, and format Python values back into those strings."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from .errors import AttributeParseError

__all__ = ["Field", "Int", "Float", "Bool", "Str", "Enum", "Shape", "OptInt", "OptFloat",
           "OptShape", "DType", "FloatTuple", "Schema", "Params", "to_attr_string",
           "HIDDEN_KEYS", "HIDDEN_STORED", "hidden_key"]

_REQUIRED = object()


class Params(SimpleNamespace):
    """Parsed attributes of one node; fields are read as ``p.num_hidden``."""


def to_attr_string(value: Any) -> str:
    """MXNet's string form of a Python attribute value (what ``tojson`` writes): ``str`` as
    MXNet's Python layer applies it, with numpy scalars written as plain numbers also inside
    tuples and lists (``(np.int64(1), 2)`` is ``'(1, 2)'``, as under numpy 1.x)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (np.dtype, type)):
        return np.dtype(value).name
    if isinstance(value, (tuple, list)):
        items = ", ".join(_elem_repr(v) for v in value)
        if isinstance(value, list):
            return f"[{items}]"
        return f"({items},)" if len(value) == 1 else f"({items})"
    return str(value)


def _elem_repr(value: Any) -> str:
    if isinstance(value, np.generic):
        return str(value.item()) if isinstance(value, np.integer) else str(value)
    if isinstance(value, (tuple, list)):
        return to_attr_string(value)
    return repr(value)


#: MXNet's hidden attribute keys: given as ``lr_mult`` they are stored as ``__lr_mult__``.
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")
HIDDEN_STORED = tuple(f"__{k}__" for k in HIDDEN_KEYS)


def hidden_key(key: str, value: Any, where: str, creating_op: bool = False) -> str:
    """The key MXNet 1.9.1 stores an attribute under: a hidden key (``lr_mult``, ...) gets
    double underscores; a key ending with one (``weight_lr_mult``) is MXNet's deprecated
    form and an error. An operator's creation also hides keys that merely start with one."""
    for k in HIDDEN_KEYS:
        pos = key.rfind(k)
        if pos == 0 and (creating_op or len(key) == len(k)):
            return f"__{key}__"
        if pos > 0 and pos + len(k) == len(key) and not key.endswith("__"):
            raise AttributeParseError(
                f"{where}: setting variable attributes with {key}={value} is deprecated (as in "
                f"MXNet); instead use w = Variable(..., {k}={value}) and pass w as the "
                f"{key[:pos - 1]!r} input")
    return key


class Field:
    """One attribute: a parser from string, a default (or required), optional choices."""

    kind = "value"

    def __init__(self, default: Any = _REQUIRED):
        self.default = default

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def parse(self, text: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        """Parse a value given as a string (JSON) or a Python object (Symbol API)."""
        if isinstance(value, str):
            return self.parse(value.strip())
        return self.from_python(value)

    def from_python(self, value: Any) -> Any:
        return self.parse(to_attr_string(value))


_INT64 = 1 << 63


def _in_int64(value: int, text: str) -> int:
    """``value`` when it fits in an int64 (MXNet's widest attribute integer)."""
    if not -_INT64 <= value < _INT64:
        raise ValueError(f"{text!r} is outside the int64 range")
    return value


class Int(Field):
    kind = "int"

    def parse(self, text):
        try:
            return _in_int64(int(text), text)
        except ValueError as exc:
            if "int64" in str(exc):
                raise
            value = float(text)
            if value != int(value):
                raise ValueError(f"{text!r} is not an integer") from None
            return _in_int64(int(value), text)


class Float(Field):
    kind = "float"

    def parse(self, text):
        return float(text)

    def from_python(self, value):
        return float(value)


class Bool(Field):
    kind = "bool"
    _TRUE = {"true", "1"}
    _FALSE = {"false", "0"}

    def parse(self, text):
        low = text.lower()
        if low in self._TRUE:
            return True
        if low in self._FALSE:
            return False
        raise ValueError(f"{text!r} is not a boolean (True/False/1/0)")

    def from_python(self, value):
        return bool(value)


class Str(Field):
    kind = "str"

    def parse(self, text):
        return text


class Enum(Field):
    kind = "enum"

    def __init__(self, choices, default: Any = _REQUIRED):
        super().__init__(default)
        self.choices = tuple(choices)

    def parse(self, text):
        if text not in self.choices:
            raise ValueError(f"{text!r} is not one of {', '.join(map(repr, self.choices))}")
        return text


def _parse_tuple(text: str, elem: Callable[[str], Any]) -> tuple:
    inner = text.strip()
    if inner[:1] in "([" and inner[-1:] in ")]":
        inner = inner[1:-1]
    parts = [p.strip() for p in inner.split(",") if p.strip()]
    return tuple(None if p == "None" else elem(p) for p in parts)


def _int_like(text: str) -> int:
    if text.endswith("L"):
        text = text[:-1]
    return _in_int64(int(text), text)


class Shape(Field):
    """A tuple of ints written as "(3, 3)", "[3,3]" or "3"."""

    kind = "shape"

    def parse(self, text):
        return _parse_tuple(text, _int_like)


class FloatTuple(Field):
    kind = "floats"

    def parse(self, text):
        return _parse_tuple(text, float)


class _Optional(Field):
    inner: Field

    def parse(self, text):
        if text in ("None", ""):
            return None
        return self.inner.parse(text)

    def from_python(self, value):
        return None if value is None else self.inner.convert(value)


class OptInt(_Optional):
    kind = "int or None"
    inner = Int()


class OptFloat(_Optional):
    kind = "float or None"
    inner = Float()


class OptShape(_Optional):
    kind = "shape or None"
    inner = Shape()


class DType(Field):
    """A numpy dtype name ('float32', 'int32', ...) stored as ``np.dtype``."""

    kind = "dtype"

    def parse(self, text):
        if text == "None":
            return None
        try:
            return np.dtype(text)
        except TypeError:
            raise ValueError(f"{text!r} is not a dtype name") from None

    def from_python(self, value):
        return None if value is None else np.dtype(value)


class Schema:
    """The attribute schema of one operator: field name -> Field."""

    __slots__ = ("fields", "_cache")

    def __init__(self, fields: dict[str, Field] | None = None):
        self.fields = dict(fields or {})
        self._cache: dict[tuple, Params] = {}

    def parse(self, attrs: dict[str, Any], op_name: str, node_name: str | None) -> Params:
        """Parse raw attributes; names starting with '__' (``__ctx_group__``...) are kept aside."""
        key = tuple(sorted((k, v) for k, v in attrs.items() if isinstance(v, str)))
        if len(key) == len(attrs):
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        values = {}
        for name, raw in attrs.items():
            if name.startswith("__") and name.endswith("__"):
                continue
            field = self.fields.get(name)
            if field is None and not self.fields:
                continue  # MXNet parses no attributes for an op without parameters
            if field is None:
                raise AttributeParseError(
                    f"{_where(op_name, node_name)}: unknown attribute {name!r}; "
                    f"expected one of: {', '.join(sorted(self.fields)) or '(none)'}")
            try:
                values[name] = field.convert(raw)
            except (ValueError, TypeError, SyntaxError, OverflowError) as exc:
                raise AttributeParseError(
                    f"{_where(op_name, node_name)}: attribute {name}={raw!r} is not a valid "
                    f"{field.kind}: {exc}") from None
        for name, field in self.fields.items():
            if name not in values:
                if field.required:
                    raise AttributeParseError(
                        f"{_where(op_name, node_name)}: required attribute {name!r} is missing")
                values[name] = field.default
        params = Params(**values)
        if len(key) == len(attrs) and len(self._cache) < 4096:
            self._cache[key] = params
        return params


def _where(op_name: str, node_name: str | None) -> str:
    return f"{op_name} {node_name!r}" if node_name else op_name
