"""Every registered operator with its documentation: MXNet 1.9.1's
``mx.operator.get_all_registered_operators()`` / ``get_operator_arguments(name)``, and
:func:`describe` (what ``graphexec ops NAME`` prints)."""
from __future__ import annotations

from collections import namedtuple

from graphexec.core.ir import attrs as A
from graphexec.core.ops.registry import all_names, get_op

__all__ = ["OperatorArguments", "get_all_registered_operators", "get_operator_arguments",
           "describe", "summary"]

#: MXNet's record: argument names (inputs first), their type descriptions, their count.
OperatorArguments = namedtuple("OperatorArguments", ["names", "types", "narg"])

_KINDS = [(A.Bool, "boolean"), (A.Int, "int"), (A.Float, "float"), (A.Shape, "Shape(tuple)"),
          (A.FloatTuple, "tuple of <float>"), (A.OptInt, "int or None"),
          (A.OptFloat, "float or None"), (A.OptShape, "Shape or None"), (A.Str, "string")]


def get_all_registered_operators() -> list[str]:
    """Every registered operator name, aliases included (plugins' operators too)."""
    return sorted(all_names())


def _type_text(field: A.Field) -> str:
    if isinstance(field, A.Enum):
        kind = "{" + ", ".join(repr(c) for c in sorted(field.choices, key=str)) + "}"
    else:
        kind = next((text for cls, text in _KINDS if isinstance(field, cls)), field.kind)
    if field.required:
        return f"{kind}, required"
    default = field.default
    if isinstance(default, bool):
        shown = str(int(default))
    elif isinstance(default, str) or default is None:
        shown = repr(str(default))
    else:
        shown = A.to_attr_string(default).replace("(", "[").replace(")", "]") \
            if isinstance(default, tuple) else str(default)
    return f"{kind}, optional, default={shown}"


_SAMPLE = [(A.Enum, None), (A.Bool, "False"), (A.Int, "1"), (A.Float, "1.0"),
           (A.Shape, "(1, 1)"), (A.Str, "x")]


def _inputs(op) -> list[str]:
    """Input names with every optional input present (default attributes; a required
    attribute gets a sample value, its first choice for an enumeration)."""
    if op.variadic:
        return ["data"]   # MXNet lists a variadic operator's inputs as one 'data' argument
    attrs = {}
    for name, field in op.schema.fields.items():
        if field.required:
            sample = next((v for cls, v in _SAMPLE if isinstance(field, cls)), "1")
            attrs[name] = field.choices[0] if isinstance(field, A.Enum) else sample
    try:
        return op.input_names(op.parse(attrs))
    except Exception:  # noqa: BLE001 - a user (Custom) operator needs its op_type
        return ["*data"]


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """Names and type descriptions of ``op_name``'s inputs (``NDArray-or-Symbol``) and
    attributes, as MXNet's ``get_operator_arguments``."""
    op = get_op(op_name)
    inputs = _inputs(op)
    fields = op.schema.fields
    names = inputs + list(fields)
    types = ["NDArray-or-Symbol"] * len(inputs) + [_type_text(f) for f in fields.values()]
    return OperatorArguments(names, types, len(names))


def summary(op_name: str) -> str:
    """The first line of ``op_name``'s documentation."""
    doc = (get_op(op_name).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def describe(op_name: str) -> str:
    """``op_name``'s documentation: canonical name, aliases, docstring, arguments."""
    op = get_op(op_name)
    args = get_operator_arguments(op_name)
    lines = [op.name + (f" (aliases: {', '.join(op.aliases)})" if op.aliases else ""), "",
             (op.__doc__ or "").strip(), "", "Arguments:"]
    lines += [f"  {n} : {t}" for n, t in zip(args.names, args.types)]
    return "\n".join(lines)
