"""ONNX importers of shape-driven ops: Shape, Size, ConstantOfShape and Range (constants in
a graph of static shapes), Slice, Split, Pad (see :mod:`.importer`).

graphexec binds static shapes, as MXNet does, so ``Shape`` and ``Size`` of a tensor whose
shape inference gives fixed dims are constants, and ``ConstantOfShape`` / ``Range`` over
constant inputs are constants too (MXNet's ``arange`` takes its bounds as attributes).
"""
from __future__ import annotations

import math

import numpy as np
from onnx import helper

from ..checks import MAX_RANK, tensor_value
from ..errors import StaticShapeRequired
from ..importing import importer, node_attrs, node_error, op
from .common import ints, normalize

#: ConstantOfShape results above this size become graph nodes instead of constants
_LAZY_BYTES = 1 << 20


def _known(ctx, node, name: str, lo: int = 0, hi: int | None = None) -> tuple:
    """The dims ``lo:hi`` of value ``name``, which must be static."""
    shape = ctx.shape(name)
    part = None if shape is None else tuple(shape[lo:hi])
    if part is None or not all(isinstance(d, int) for d in part):
        raise StaticShapeRequired(str(node_error(
            node, f"the shape of {name!r} is {shape}; a static one is needed to make "
            f"{node.op_type} a constant (give the graph inputs fixed shapes)")))
    return part


@importer("Shape")
def _shape(ctx, node):
    attrs = node_attrs(node)
    dims = _known(ctx, node, node.input[0], attrs.get("start", 0), attrs.get("end"))
    ctx.consts[node.output[0]] = np.array(dims, dtype=np.int64)
    return []


@importer("Size")
def _size(ctx, node):
    ctx.consts[node.output[0]] = np.array(int(np.prod(_known(ctx, node, node.input[0]))),
                                          dtype=np.int64)
    return []


@importer("ConstantOfShape")
def _constant_of_shape(ctx, node):
    """A constant when small; a large one (and none of its dims 0) becomes a ``_full`` node,
    allocated when the graph is bound, never at import."""
    shape = tuple(ints(node, ctx.const(node, 0, "shape"), "shape"))
    if min(shape, default=0) < 0:
        raise node_error(node, f"shape {list(shape)} has a negative dimension")
    value = node_attrs(node).get("value")
    fill = np.zeros(1, np.float32) if value is None else tensor_value(value, "value of node")
    if fill.size != 1:
        raise node_error(node, f"value must hold one element, it holds {fill.size}")
    nbytes = math.prod(shape) * fill.dtype.itemsize
    if nbytes > _LAZY_BYTES and 0 not in shape and fill.dtype.kind in "biuf":
        return [op(ctx, node, "_full", [], shape=shape, value=float(fill.reshape(())),
                   dtype=fill.dtype.name)]
    ctx.spend(node, nbytes, f"a constant of shape {list(shape)}")
    ctx.consts[node.output[0]] = np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)
    return []


@importer("Range")
def _range(ctx, node):
    start, limit, delta = (_scalar_const(ctx, node, i, what) for i, what in
                           enumerate(("start", "limit", "delta")))
    bounds = [float(v) for v in (start, limit, delta)]
    if not all(map(math.isfinite, bounds)) or bounds[2] == 0:
        raise node_error(node, f"start, limit, delta {bounds}: finite values and a non-zero "
                          "delta are needed")
    count = max(math.ceil((bounds[1] - bounds[0]) / bounds[2]), 0)
    ctx.spend(node, count * start.dtype.itemsize, f"a range of {count} values")
    ctx.consts[node.output[0]] = np.arange(start, limit, delta, dtype=start.dtype)
    return []


def _scalar_const(ctx, node, index: int, what: str) -> np.ndarray:
    value = ctx.const(node, index, what)
    if value is None or value.size != 1:
        raise node_error(node, f"{what} must be a constant holding one value")
    return value.reshape(())


@importer("EyeLike")
def _eye_like(ctx, node):
    attrs = node_attrs(node)
    rows, cols = _known(ctx, node, node.input[0])
    to = attrs.get("dtype")
    dtype = np.dtype(ctx.dtype(node.input[0]) if to is None else
                     helper.tensor_dtype_to_np_dtype(to))
    ctx.spend(node, rows * cols * dtype.itemsize, f"a {rows}x{cols} identity")
    ctx.consts[node.output[0]] = np.eye(rows, cols, attrs.get("k", 0), dtype=dtype)
    return []


def _slice_params(ctx, node) -> tuple[list, list, list, list]:
    """(starts, ends, axes, steps) from the attributes (opset < 10) or the inputs."""
    attrs = node_attrs(node)
    if "starts" in attrs:
        starts, ends = ints(node, attrs["starts"], "starts"), ints(node, attrs["ends"], "ends")
        axes = ints(node, attrs["axes"], "axes") if "axes" in attrs else \
            list(range(len(starts)))
        steps = [1] * len(starts)
    else:
        starts = ints(node, ctx.const(node, 1, "starts"), "starts")
        ends = ints(node, ctx.const(node, 2, "ends"), "ends")
        axes, steps = ctx.const(node, 3, "axes"), ctx.const(node, 4, "steps")
        axes = list(range(len(starts))) if axes is None else ints(node, axes, "axes")
        steps = [1] * len(starts) if steps is None else ints(node, steps, "steps")
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node_error(node, f"starts {starts}, ends {ends}, axes {axes} and steps {steps} "
                          "must have one value per sliced axis")
    return starts, ends, axes, steps


def _clamp(start: int, end: int, step: int, dim: int) -> tuple[int, int | None]:
    """ONNX's clamping of one axis' bounds; None for 'through the first element'."""
    start, end = (v + dim if v < 0 else v for v in (start, end))
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, None if end < 0 else end


@importer("Slice")
def _slice(ctx, node):
    starts, ends, axes, steps = _slice_params(ctx, node)
    if 0 in steps:
        raise node_error(node, "a step of 0 is invalid")
    axes = normalize(node, axes, ctx.rank(node.input[0]))
    begin, end, step = ([None] * (max(axes) + 1) for _ in range(3))
    for s, e, a, st in zip(starts, ends, axes, steps):
        dim = _known(ctx, node, node.input[0], a, a + 1)[0]
        begin[a], end[a] = _clamp(s, e, st, dim)
        step[a] = st
    step = [1 if s is None else s for s in step]
    return [op(ctx, node, "slice", [ctx.sym(node.input[0])], begin=tuple(begin),
               end=tuple(end), step=tuple(step))]


def _split_sizes(ctx, node, axis: int, count: int) -> list[int] | None:
    """Output sizes along ``axis``; None for an equal split into ``count``."""
    attrs = node_attrs(node)
    sizes = ctx.const(node, 1, "split")
    if sizes is None and "split" in attrs:
        sizes = attrs["split"]
    if sizes is not None:
        sizes = ints(node, sizes, "split", limit=len(node.output))
        if len(sizes) != count or min(sizes) < 0:
            raise node_error(node, f"split {sizes} must give {count} sizes >= 0, one per "
                              "output")
        return sizes
    dim = ctx.shape(node.input[0])[axis] if ctx.shape(node.input[0]) else None
    if isinstance(dim, int) and dim % count:
        chunk = -(-dim // count)
        return [chunk] * (count - 1) + [dim - chunk * (count - 1)]
    return None


@importer("Split")
def _split(ctx, node):
    axis = normalize(node, [node_attrs(node).get("axis", 0)], ctx.rank(node.input[0]))[0]
    count = len(node.output)
    sizes = _split_sizes(ctx, node, axis, count)
    x = ctx.sym(node.input[0])
    if sizes is None or len(set(sizes)) == 1:
        parts = op(ctx, node, "SliceChannel", [x], num_outputs=count, axis=axis)
        return [parts] if count == 1 else [parts[i] for i in range(count)]
    bounds = [int(b) for b in np.cumsum([0] + sizes)]
    lead = (None,) * axis  # slice, unlike slice_axis, allows empty parts
    return [op(ctx, node, "slice", [x], begin=lead + (b,), end=lead + (e,), suffix=f"part{i}")
            for i, (b, e) in enumerate(zip(bounds[:-1], bounds[1:]))]


def _pad_params(ctx, node) -> tuple[list, float, str]:
    """(pads in ONNX order, constant value, mode) from the attributes or the inputs."""
    attrs = node_attrs(node)
    mode = attrs.get("mode", b"constant").decode()
    if "pads" in attrs or "paddings" in attrs:
        pads = ints(node, attrs.get("pads", attrs.get("paddings")), "pads", 2 * MAX_RANK)
        return pads, attrs.get("value", 0.0), mode
    pads = ints(node, ctx.const(node, 1, "pads"), "pads", 2 * MAX_RANK)
    value = ctx.const(node, 2, "constant_value")
    value = 0.0 if value is None else float(value.reshape(-1)[0])
    axes = ctx.const(node, 3, "axes")
    rank = ctx.rank(node.input[0])
    if axes is not None:
        axes = normalize(node, ints(node, axes, "axes"), rank)
        if rank is None or len(pads) != 2 * len(axes):
            raise node_error(node, f"pads {pads} must hold two values per axis of {axes}, for "
                              "an input of known rank")
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[rank + a] = pads[k], pads[len(axes) + k]
        pads = full
    return pads, value, mode


@importer("Pad")
def _pad(ctx, node):
    """graphexec's Pad (as MXNet's) pads the last two or three axes of 4-D / 5-D data (by
    constant, edge or reflect): other inputs get unit axes in front first, squeezed after."""
    pads, value, mode = _pad_params(ctx, node)
    if len(pads) % 2:
        raise node_error(node, f"pads {pads} must hold a begin and an end per axis")
    rank, x = len(pads) // 2, ctx.sym(node.input[0])
    if mode not in ("constant", "edge", "reflect"):
        raise node_error(node, f"mode {mode!r} is not imported (constant, edge, reflect)")
    if min(pads, default=0) < 0:
        raise node_error(node, f"negative pads {pads} (cropping) are not imported")
    padded = [a for a in range(rank) if pads[a] or pads[rank + a]]
    if not padded:
        return [x]
    lead = max(2 - padded[0], 4 - rank, 0)
    if rank + lead > 5:
        raise node_error(node, f"pads {pads} pad axis {padded[0]} of a {rank}-D input; "
                          "graphexec's Pad pads at most the last three axes of 5-D data")
    for k in range(lead):
        x = op(ctx, node, "expand_dims", [x], axis=0, suffix=f"unit{k}")
    width = (0, 0) * lead + tuple(v for a in range(rank) for v in (pads[a], pads[rank + a]))
    out = op(ctx, node, "Pad", [x], mode=mode, pad_width=width, constant_value=value,
             suffix="lifted" if lead else "")
    return [op(ctx, node, "squeeze", [out], axis=tuple(range(lead)))] if lead else [out]
