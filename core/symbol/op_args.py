"""How an operator call's arguments map onto inputs and attributes, as MXNet 1.9.1's
generated ``mx.sym.<op>(...)`` functions map them: inputs come first positionally, then the
attributes in the operator's declaration order (``gx.sym.repeat(x, 2)`` is ``repeats=2``);
``None`` for an input means "not given" (a variable is created, as for a missing one);
MXNet's hidden keys (``lr_mult``, ``ctx_group``, ...) become ``__key__``."""
from __future__ import annotations

from typing import Callable

from ..ir.attrs import hidden_key
from ..ir.errors import ArgumentTypeError, AttributeParseError
from ..ops.registry import OpDef

__all__ = ["split_call"]


def split_call(op: OpDef, called: str, args: list, kwargs: dict, is_symbol: Callable
               ) -> tuple[list, dict, dict]:
    """(positional input symbols, input symbols by name, raw attributes) of one call."""
    sym_kwargs = {k: v for k, v in kwargs.items() if is_symbol(v)}
    raw = {k: v for k, v in kwargs.items() if k not in sym_kwargs and v is not None}
    # None for an input means "not given"; for a declared attribute it is the value None
    raw.update((k, v) for k, v in kwargs.items() if v is None and k in op.schema.fields)
    n_inputs = len(args) if op.variadic else _max_inputs(op, raw, args, is_symbol)
    positional = []
    for i, a in enumerate(args):
        if i < n_inputs:
            if a is not None and not is_symbol(a):
                raise ArgumentTypeError(f"{called}: positional argument {i} is an input and "
                                        f"must be a Symbol, got {type(a).__name__}")
            positional.append(a)
            continue
        fields = list(op.schema.fields)
        k = i - n_inputs
        if k >= len(fields):
            raise ArgumentTypeError(f"{called}: {len(args)} positional arguments, but the "
                                    f"operator takes {n_inputs} inputs and {len(fields)} "
                                    f"attributes ({', '.join(fields) or 'none'})")
        if fields[k] in raw:
            raise ArgumentTypeError(f"{called}: attribute {fields[k]!r} given positionally "
                                    f"and by keyword")
        if a is not None:
            raw[fields[k]] = a
    while positional and positional[-1] is None:
        positional.pop()
    return positional, sym_kwargs, raw


def _max_inputs(op: OpDef, raw: dict, args: list, is_symbol: Callable) -> int:
    """How many leading positional arguments are inputs: the operator's input list under the
    attributes given by keyword (every optional input counted, as MXNet's signature)."""
    leading = next((i for i, a in enumerate(args) if a is not None and not is_symbol(a)),
                   len(args))
    try:
        params = op.parse({k: v for k, v in raw.items()}, None)
        return max(len(op.input_names(params)), min(leading, len(args)))
    except (AttributeParseError, TypeError, ValueError):
        return leading


def hide_keys(attrs: dict, where: str) -> dict:
    """``attrs`` with MXNet's hidden keys stored as ``__key__`` (operator creation rule)."""
    return {hidden_key(k, v, where, creating_op=True): v for k, v in attrs.items()}
