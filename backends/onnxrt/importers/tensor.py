"""ONNX tensor-manipulation importers: Reshape, Flatten, Concat, Transpose, Softmax family,
Gather / GatherND, Unsqueeze / Squeeze, Tile, Expand, DepthToSpace / SpaceToDepth (see
:mod:`.importer`)."""
from __future__ import annotations

import math

import numpy as np

from ..checks import MAX_RANK
from ..importing import importer, node_attrs, node_error, op
from .common import (axes_of, checked_axes, ints, merge_trailing, normalize, split_trailing,
                     trailing_dims)


@importer("Reshape")
def _reshape(ctx, node):
    shape = ints(node, ctx.const(node, 1, "shape"), "shape")
    if node_attrs(node).get("allowzero", 0) and 0 in shape:
        raise node_error(node, f"allowzero=1 with a 0 in shape {shape} asks for an empty "
                          "dimension; graphexec's Reshape reads 0 as 'copy this dimension'")
    return [op(ctx, node, "Reshape", [ctx.sym(node.input[0])], shape=tuple(shape))]


@importer("Flatten")
def _flatten(ctx, node):
    """Two reshapes: the axes from ``axis`` on merged, then the ones before it (read from
    the right, so that no size has to be static)."""
    x, rank = ctx.sym(node.input[0]), ctx.rank(node.input[0])
    axis = node_attrs(node).get("axis", 1)
    top = MAX_RANK if rank is None else rank  # axis == rank: everything in the first axis
    if not -top <= axis <= top:
        raise node_error(node, f"axis {axis} is outside [-{top}, {top}] for an input of rank "
                          f"{'unknown' if rank is None else rank}")
    if axis < 0:
        axis = normalize(node, [axis], rank)[0]
    if axis == 1:
        return [op(ctx, node, "Flatten", [x])]
    tail = merge_trailing(ctx, node, x, axis, "tail")
    return [op(ctx, node, "Reshape", [tail], shape=(-1, 0), reverse=True)]


@importer("Concat")
def _concat(ctx, node):
    axis = normalize(node, [node_attrs(node)["axis"]], ctx.rank(node.input[0]))[0]
    return [op(ctx, node, "Concat", [ctx.sym(n) for n in node.input], dim=axis)]


@importer("Transpose")
def _transpose(ctx, node):
    perm, rank = node_attrs(node).get("perm"), ctx.rank(node.input[0])
    if perm is not None and sorted(perm) != list(range(len(perm) if rank is None else rank)):
        raise node_error(node, f"perm {list(perm)} is not a permutation of the input's "
                          f"{len(perm) if rank is None else rank} axes")
    extra = {} if perm is None else {"axes": tuple(ints(node, perm, "perm"))}
    return [op(ctx, node, "transpose", [ctx.sym(node.input[0])], **extra)]


def _coerced_axis(ctx, node) -> tuple[int, int]:
    """(axis, rank) of a Softmax-family node; before opset 13 the op works on the input
    coerced to 2-D at ``axis``, i.e. over all the axes from ``axis`` on."""
    rank = ctx.rank(node.input[0])
    if rank is None:
        raise node_error(node, f"the rank of input {node.input[0]!r} is unknown")
    axis = node_attrs(node).get("axis", -1 if ctx.opset >= 13 else 1)
    return normalize(node, [axis], rank)[0], rank


def _over_axis(ctx, node, build):
    """``build(x, axis)`` applied over the node's axis: the trailing axes merged first for
    opsets before 13 (and split back after)."""
    axis, rank = _coerced_axis(ctx, node)
    x = ctx.sym(node.input[0])
    if ctx.opset >= 13 or axis == rank - 1:
        return build(x, axis, "")
    dims = trailing_dims(ctx, node, node.input[0], axis, f"opset {ctx.opset} {node.op_type}")
    out = build(merge_trailing(ctx, node, x, axis, "merged"), axis, "flat")
    return split_trailing(ctx, node, out, axis, dims)


@importer("Softmax", "LogSoftmax")
def _softmax(ctx, node):
    mx = "softmax" if node.op_type == "Softmax" else "log_softmax"
    return [_over_axis(ctx, node, lambda x, axis, sfx: op(ctx, node, mx, [x], axis=axis,
                                                            suffix=sfx))]


@importer("Hardmax")
def _hardmax(ctx, node):
    """one_hot(argmax) over the last axis: the coerced trailing axes merged into it before
    opset 13, the node's axis moved there (and back) from opset 13."""
    axis, rank = _coerced_axis(ctx, node)
    dims = trailing_dims(ctx, node, node.input[0], axis, "Hardmax's depth")
    x, dtype = ctx.sym(node.input[0]), str(ctx.dtype(node.input[0]) or "float32")
    if axis == rank - 1:
        return [_one_hot_max(ctx, node, x, dims[0], dtype, "")]
    if ctx.opset < 13:
        flat = merge_trailing(ctx, node, x, axis, "merged")
        hot = _one_hot_max(ctx, node, flat, math.prod(dims), dtype, "flat")
        return [split_trailing(ctx, node, hot, axis, dims)]
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = op(ctx, node, "transpose", [x], axes=tuple(perm), suffix="moved")
    hot = _one_hot_max(ctx, node, moved, dims[0], dtype, "hot")
    return [op(ctx, node, "transpose", [hot], axes=tuple(perm))]


def _one_hot_max(ctx, node, x, depth: int, dtype: str, suffix: str):
    idx = op(ctx, node, "argmax", [x], axis=-1, suffix=f"{suffix}argmax")
    return op(ctx, node, "one_hot", [idx], depth=depth, dtype=dtype, suffix=suffix)


@importer("Gather")
def _gather(ctx, node):
    data, idx = node.input
    axis = normalize(node, [node_attrs(node).get("axis", 0)], ctx.rank(data))[0]
    table = ctx.consts.get(data)
    if axis == 0 and table is not None and table.ndim == 2 and idx not in ctx.consts:
        return [op(ctx, node, "Embedding", [ctx.sym(idx), ctx.sym(data)],
                   input_dim=table.shape[0], output_dim=table.shape[1])]
    return [op(ctx, node, "take", [ctx.sym(data), ctx.sym(idx)], axis=axis, mode="wrap")]


@importer("GatherND")
def _gather_nd(ctx, node):
    """graphexec's gather_nd takes the index tuples along the first axis, ONNX along the
    last: the indices are transposed."""
    if node_attrs(node).get("batch_dims", 0):
        raise node_error(node, "batch_dims != 0 is not imported")
    rank = ctx.rank(node.input[1])
    if rank is None:
        raise node_error(node, f"the rank of indices {node.input[1]!r} is unknown")
    idx = op(ctx, node, "transpose", [ctx.sym(node.input[1])],
             axes=(rank - 1,) + tuple(range(rank - 1)), suffix="indices")
    return [op(ctx, node, "gather_nd", [ctx.sym(node.input[0]), idx])]


@importer("Unsqueeze")
def _unsqueeze(ctx, node):
    axes = axes_of(ctx, node)
    rank = ctx.rank(node.input[0])
    out_rank = None if rank is None else rank + len(axes)
    x = ctx.sym(node.input[0])
    for k, axis in enumerate(sorted(normalize(node, axes, out_rank))):
        last = k == len(axes) - 1
        x = op(ctx, node, "expand_dims", [x], axis=axis, suffix="" if last else f"part{k}")
    return [x]


@importer("Squeeze")
def _squeeze(ctx, node):
    axes = axes_of(ctx, node)
    if axes:
        axes = checked_axes(node, axes, ctx.rank(node.input[0]))
    extra = {} if not axes else {"axis": tuple(axes)}
    return [op(ctx, node, "squeeze", [ctx.sym(node.input[0])], **extra)]


@importer("Tile")
def _tile(ctx, node):
    reps = tuple(ints(node, ctx.const(node, 1, "repeats"), "repeats"))
    return [op(ctx, node, "tile", [ctx.sym(node.input[0])], reps=reps)]


@importer("Expand")
def _expand(ctx, node):
    """Bidirectional broadcast to ``shape``: broadcast_to keeps an input dimension where the
    target says 1 (code 0), after leading axes are added to match ranks."""
    shape = ints(node, ctx.const(node, 1, "shape"), "shape")
    rank = ctx.rank(node.input[0])
    if rank is None:
        raise node_error(node, f"the rank of input {node.input[0]!r} is unknown")
    x = ctx.sym(node.input[0])
    for k in range(len(shape) - rank):
        x = op(ctx, node, "expand_dims", [x], axis=0, suffix=f"rank{k}")
    target = [1] * (rank - len(shape)) + shape
    return [op(ctx, node, "broadcast_to", [x], shape=tuple(0 if d == 1 else d for d in target))]


@importer("Trilu")
def _trilu(ctx, node):
    """where(mask, x, 0) with the constant triangle mask of the last two (static) dims,
    broadcast like x."""
    x, rank = node.input[0], ctx.rank(node.input[0])
    if rank is None or rank < 2:
        raise node_error(node, f"input {x!r} must have a known rank of 2 or more")
    rows, cols = trailing_dims(ctx, node, x, rank - 2, "Trilu's mask")
    ctx.spend(node, rows * cols * 8, "Trilu's mask")
    k = ctx.const(node, 1, "k")
    k = 0 if k is None else int(k.reshape(-1)[0])
    tri = np.triu if node_attrs(node).get("upper", 1) else np.tril
    mask = tri(np.ones((rows, cols), dtype=ctx.dtype(x) or "f4"), k)
    name = f"{ctx.name(node)}_mask"
    ctx.consts[name] = mask.reshape((1,) * (rank - 2) + mask.shape)
    data = ctx.sym(x)
    full = op(ctx, node, "broadcast_like", [ctx.sym(name), data], suffix="mask_full")
    return [op(ctx, node, "where", [full, data, op(ctx, node, "zeros_like", [data],
                                                    suffix="zero")])]


@importer("DepthToSpace", "SpaceToDepth")
def _depth_space(ctx, node):
    """The reshape / transpose / reshape the ONNX definition spells out (static shape)."""
    attrs = node_attrs(node)
    b = attrs["blocksize"]
    if b < 1:
        raise node_error(node, f"blocksize {b} must be at least 1")
    n, c, h, w = ctx.static_shape(node, node.input[0], node.op_type)
    if attrs.get("mode", b"DCR") not in (b"DCR", b"CRD"):
        raise node_error(node, f"mode {attrs['mode']!r} is not DCR or CRD")
    dcr = attrs.get("mode", b"DCR") == b"DCR"
    if node.op_type == "SpaceToDepth":
        split, perm, out = (n, c, h // b, b, w // b, b), \
            (0, 3, 5, 1, 2, 4) if dcr else (0, 1, 3, 5, 2, 4), (n, c * b * b, h // b, w // b)
    elif dcr:
        split, perm, out = (n, b, b, c // (b * b), h, w), (0, 3, 4, 1, 5, 2), \
            (n, c // (b * b), h * b, w * b)
    else:
        split, perm, out = (n, c // (b * b), b, b, h, w), (0, 1, 4, 2, 5, 3), \
            (n, c // (b * b), h * b, w * b)
    x = op(ctx, node, "Reshape", [ctx.sym(node.input[0])], shape=split, suffix="split")
    x = op(ctx, node, "transpose", [x], axes=perm, suffix="moved")
    return [op(ctx, node, "Reshape", [x], shape=out)]
