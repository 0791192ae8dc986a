"""Helpers the ONNX op importers share: axis normalisation, numpy-style broadcasting onto
graphexec's explicit ops, and merging / splitting trailing axes (see :mod:`.importer`)."""
from __future__ import annotations

import numpy as np

from ..checks import MAX_RANK
from ..importing import node_attrs, node_error, op


def axes_of(ctx, node, index: int = 1) -> list[int] | None:
    """Axes from the attribute (older opsets) or the constant input ``index``."""
    attrs = node_attrs(node)
    if "axes" in attrs:
        return ints(node, attrs["axes"], "axes")
    value = ctx.const(node, index, "axes")
    return None if value is None else ints(node, value, "axes")


def ints(node, values, what: str, limit: int = MAX_RANK) -> list[int]:
    """``values`` (an attribute list or a constant) as at most ``limit`` Python ints, for
    attributes that are shapes, axes or per-axis values."""
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind not in "biu" and flat.size:
        raise node_error(node, f"{what} must be integers, got {flat.dtype} values")
    if flat.size > limit:
        raise node_error(node, f"{what} has {flat.size} values; at most {limit} (one per "
                          f"axis) are imported")
    return [int(v) for v in flat]


def normalize(node, axes: list[int], rank: int | None, what: str = "axis") -> list[int]:
    """``axes`` made non-negative for an input of ``rank``; an axis outside ``[-rank,
    rank)`` (``[-MAX_RANK, MAX_RANK)`` when the rank is unknown) is an error."""
    bound = MAX_RANK if rank is None else rank
    bad = [a for a in axes if not -bound <= a < bound]
    if bad:
        raise node_error(node, f"{what} {bad[0]} is outside [-{bound}, {bound}) for an input "
                          f"of rank {'unknown' if rank is None else rank}")
    if any(a < 0 for a in axes):
        if rank is None:
            raise node_error(node, f"negative axes {axes} need the input's rank, which shape "
                              "inference did not give")
        axes = [a % rank for a in axes]
    if len(set(axes)) != len(axes):
        raise node_error(node, f"{what} {axes} name an axis more than once")
    return axes


def checked_axes(node, axes: list[int], rank: int | None) -> list[int]:
    """``axes`` made non-negative when the rank is known, else as they are (negative ones
    then count from the end at bind); in range and distinct either way."""
    if rank is not None:
        return normalize(node, axes, rank, "axes")
    normalize(node, [a for a in axes if a >= 0], None, "axes")
    if len(set(axes)) != len(axes) or not all(-MAX_RANK <= a for a in axes):
        raise node_error(node, f"axes {axes} must be distinct axes of the input")
    return axes


def broadcast_shape(node, shapes: list[tuple]) -> tuple:
    """The numpy broadcast of ``shapes`` (dims are ints or symbolic names)."""
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes]):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise node_error(node, f"input shapes {shapes} do not broadcast")
        out.append(big.pop() if big else 1)
    return tuple(out)


def expand_to(ctx, node, name: str, target: tuple, suffix: str):
    """The symbol of value ``name`` broadcast to the static ``target`` shape (numpy rules)."""
    shape = ctx.shape(name)
    if shape is None or tuple(shape) == tuple(target):
        return ctx.sym(name)
    x = ctx.sym(name)
    for k in range(len(target) - len(shape)):
        x = op(ctx, node, "expand_dims", [x], axis=0, suffix=f"{suffix}_rank{k}")
    return op(ctx, node, "broadcast_to", [x], shape=tuple(target), suffix=suffix)


def same_shapes(ctx, names: list[str]) -> bool:
    """True when shape inference shows the values all have one (possibly symbolic) shape."""
    shapes = [ctx.shape(n) for n in names]
    return shapes[0] is not None and None not in shapes[0] and \
        all(s == shapes[0] for s in shapes)


def broadcast_inputs(ctx, node, names: list[str], why: str) -> list:
    """Symbols of ``names`` broadcast to one shape, for ops that need equal shapes."""
    if same_shapes(ctx, names):
        return [ctx.sym(n) for n in names]
    shapes = [ctx.static_shape(node, n, why) for n in names]
    target = broadcast_shape(node, shapes)
    return [expand_to(ctx, node, n, target, f"bcast{i}") for i, n in enumerate(names)]


def merge_trailing(ctx, node, x, axis: int, suffix: str):
    """``x`` with the axes from ``axis`` on merged into one (the leading axes kept)."""
    return op(ctx, node, "Reshape", [x], shape=(0,) * axis + (-1,), suffix=suffix)


def split_trailing(ctx, node, x, axis: int, trailing: tuple, suffix: str = ""):
    """Undo :func:`merge_trailing`: the last axis of ``x`` split back into ``trailing``."""
    return op(ctx, node, "Reshape", [x], shape=(0,) * axis + tuple(trailing), suffix=suffix)


def trailing_dims(ctx, node, name: str, axis: int, why: str) -> tuple:
    """The static dims of value ``name`` from ``axis`` on (the leading ones may be dynamic)."""
    shape = ctx.shape(name)
    tail = None if shape is None else tuple(shape[axis:])
    if tail is None or not all(isinstance(d, int) for d in tail):
        return ctx.static_shape(node, name, why)[axis:]
    return tail
