"""``Symbol.infer_shape`` / ``infer_type`` (and their ``_partial`` forms) with MXNet's return
conventions and warnings, and the helpers that run the inference passes on a symbol.
The four methods are installed on :class:`~graphexec.core.symbol.symbol.Symbol` here."""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ..ir.arguments import as_dtype, as_shape
from ..ir.attrs import Shape
from ..ir.errors import (AttributeParseError, BindError, ShapeInferenceError, TypeInferenceError,
                         UnknownArgumentError)
from ..ir.graph import Graph, IndexedGraph
from ..ops.common import known
from ..symbol.symbol import DTYPE_FLAGS, Symbol, symbol_method
from .manager import apply_passes

__all__ = ["infer_shape", "infer_shape_partial", "infer_type", "infer_type_partial",
           "shape_seeds", "dtype_seeds", "run_inference"]


def _named(ig: IndexedGraph, args: tuple, kwargs: dict, what: str,
           convert: Callable[[Any, str], Any]) -> dict[int, Any]:
    """Node id -> given value, from positional values (list_arguments order) or names, each
    checked by ``convert(value, description)``."""
    if args and kwargs:
        raise BindError(f"{what}: give values either positionally or by name, not both")
    arg_ids = ig.arg_nodes
    if args:
        if len(args) > len(arg_ids):
            raise BindError(f"{what}: {len(args)} positional values for {len(arg_ids)} arguments")
        pairs = list(zip(arg_ids, args))
    else:
        by_name = {ig.nodes[i].name: i for i in ig.input_nodes}
        unknown = [name for name in kwargs if name not in by_name]
        if unknown:
            raise UnknownArgumentError(f"{what}: {unknown[0]!r} is not an input of the symbol; "
                                       f"inputs are {[ig.nodes[i].name for i in ig.input_nodes]}")
        pairs = [(by_name[name], v) for name, v in kwargs.items()]
    return {nid: convert(v, f"{what}: {ig.nodes[nid].name!r}") for nid, v in pairs
            if v is not None}


def shape_seeds(ig: IndexedGraph, given: dict[int, Any], unknown_zero: bool) -> dict[int, tuple]:
    """Shapes of variables: given ones (0 = unknown dim when ``unknown_zero``, as MXNet's
    legacy shapes), else ``__shape__`` hints (where 0 always means unknown)."""
    seeds = {}
    for nid in ig.input_nodes:
        if nid in given:
            s = tuple(int(d) for d in given[nid])
            seeds[nid] = tuple(-1 if d == 0 else d for d in s) if unknown_zero else s
            continue
        hint = ig.nodes[nid].attrs.get("__shape__")
        if hint:
            s = _shape_hint(ig.nodes[nid].name, hint)
            if s:
                seeds[nid] = tuple(-1 if (d is None or d <= 0) else d for d in s)
    return seeds


def _shape_hint(name: str, hint: str) -> tuple:
    try:
        return Shape().parse(hint)
    except ValueError as exc:
        raise AttributeParseError(f"variable {name!r}: attribute __shape__={hint!r} is not a "
                                  f"shape such as (2, 3): {exc}") from None


def dtype_seeds(ig: IndexedGraph, given: dict[int, Any]) -> dict[int, np.dtype]:
    seeds = {}
    for nid in ig.input_nodes:
        if nid in given:
            seeds[nid] = np.dtype(given[nid])
            continue
        hint = ig.nodes[nid].attrs.get("__dtype__")
        if hint is not None and hint.lstrip("-").isdigit() and int(hint) in DTYPE_FLAGS:
            seeds[nid] = np.dtype(DTYPE_FLAGS[int(hint)])
    return seeds


def run_inference(sym: Symbol, shapes: dict[int, tuple], dtypes: dict[int, Any],
                  out_shapes: list | None = None) -> Graph:
    """``sym``'s graph with shapes and dtypes inferred from seeds (node id -> value) and,
    optionally, the shapes of its outputs (one tuple or None per output)."""
    g = Graph(sym.outputs, {"shape_inputs": shapes, "dtype_inputs": dtypes,
                            "shape_outputs": out_shapes}, sym._indexed())
    return apply_passes(g, ["infer_shape", "infer_type"])


def _split(ig: IndexedGraph, g: Graph, key: str, present) -> tuple[list, list, list]:
    vals = g.attrs[key]
    rp = ig.row_ptr
    arg = [present(vals[rp[i]]) for i in ig.arg_nodes]
    aux = [present(vals[rp[i]]) for i in ig.input_nodes if i in ig.mutable_input_nodes]
    out = [present(vals[e]) for e in ig.outputs]
    return arg, out, aux


def _undecided(ig: IndexedGraph, vals: list, is_known, show) -> list[str]:
    rp = ig.row_ptr
    return [f"{ig.nodes[i].name}: {show(vals[rp[i]])}" for i in ig.arg_nodes
            if not is_known(vals[rp[i]])]


def _infer_shape(sym: Symbol, args: tuple, kwargs: dict, partial: bool):
    ig = sym._indexed()
    given = _named(ig, args, kwargs, "infer_shape", as_shape)
    g = Graph(sym.outputs, {"shape_inputs": shape_seeds(ig, given, unknown_zero=True)}, ig)
    try:
        g = apply_passes(g, ["infer_shape"])
    except ShapeInferenceError as exc:
        listing = "".join(f"\n  {ig.nodes[nid].name}: {tuple(v)}" for nid, v in given.items())
        raise type(exc)(f"{exc}\ninfer_shape error. Arguments:{listing}") from None

    def legacy(s):
        return () if s is None else tuple(0 if d < 0 else d for d in s)
    if partial:
        return _split(ig, g, "shape", legacy)
    if g.attrs["shape_num_unknown"]:
        missing = _undecided(ig, g.attrs["shape"], known, legacy)
        if missing:
            warnings.warn("Cannot decide shape for the following arguments (0s in shape means "
                          "unknown dimensions). Consider providing them as input:\n\t"
                          + "\n\t".join(missing), stacklevel=3)
            return None, None, None
    return _split(ig, g, "shape", lambda s: None if not known(s) else tuple(s))


def _infer_type(sym: Symbol, args: tuple, kwargs: dict, partial: bool):
    ig = sym._indexed()
    given = _named(ig, args, kwargs, "infer_type", as_dtype)
    g = Graph(sym.outputs, {"dtype_inputs": dtype_seeds(ig, given)}, ig)
    try:
        g = apply_passes(g, ["infer_type"])
    except TypeInferenceError as exc:
        raise type(exc)(f"{exc}\ninfer_type error. Arguments: "
                        + ", ".join(f"{ig.nodes[n].name}: {v}" for n, v in given.items())) from None

    def as_type(t):
        return None if t is None else np.dtype(t).type
    if not partial and g.attrs["dtype_num_unknown"]:
        missing = _undecided(ig, g.attrs["dtype"], lambda t: t is not None, lambda t: "None")
        if missing:
            warnings.warn("Cannot decide type for the following arguments. Consider providing "
                          "them as input:\n\t" + "\n\t".join(missing), stacklevel=3)
            return None, None, None
    return _split(ig, g, "dtype", as_type)


@symbol_method
def infer_shape(self: Symbol, *args: Any, **kwargs: Any):
    """(arg_shapes, out_shapes, aux_shapes); (None, None, None) with a warning when some
    argument shapes cannot be decided. Shapes by name, or positionally in
    ``list_arguments()`` order; 0 in a shape means an unknown dimension."""
    return _infer_shape(self, args, kwargs, partial=False)


@symbol_method
def infer_shape_partial(self: Symbol, *args: Any, **kwargs: Any):
    """Like infer_shape, but unknown shapes come back as ``()`` and unknown dims as 0."""
    return _infer_shape(self, args, kwargs, partial=True)


@symbol_method
def infer_type(self: Symbol, *args: Any, **kwargs: Any):
    """(arg_types, out_types, aux_types) as numpy scalar types."""
    return _infer_type(self, args, kwargs, partial=False)


@symbol_method
def infer_type_partial(self: Symbol, *args: Any, **kwargs: Any):
    """Like infer_type, with None for the types that stay unknown (no warning)."""
    return _infer_type(self, args, kwargs, partial=True)
