"""ONNX reduction importers: Reduce* (sum, mean, max, min, prod, L1, L2, sum of squares,
log-sum, log-sum-exp), ArgMax / ArgMin, OneHot (see :mod:`.importer`)."""
from __future__ import annotations

from ..importing import importer, node_attrs, node_error, op
from .common import axes_of, checked_axes, normalize

_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod", "ReduceSumSquare": "sum", "ReduceLogSum": "sum",
           "ReduceLogSumExp": "sum"}
_NORM = {"ReduceL1": 1, "ReduceL2": 2}
# elementwise op applied before the reduction, and after it
_BEFORE = {"ReduceSumSquare": "square", "ReduceLogSumExp": "exp"}
_AFTER = {"ReduceLogSum": "log", "ReduceLogSumExp": "log"}


@importer(*_REDUCE, *_NORM)
def _reduce(ctx, node):
    attrs = node_attrs(node)
    axes = axes_of(ctx, node)
    x = ctx.sym(node.input[0])
    if not axes and attrs.get("noop_with_empty_axes", 0):
        return [x]
    if axes:
        axes = checked_axes(node, axes, ctx.rank(node.input[0]))
    extra = {"keepdims": bool(attrs.get("keepdims", 1))}
    if axes:
        extra["axis"] = tuple(axes)
    kind = node.op_type
    if kind in _BEFORE:
        x = op(ctx, node, _BEFORE[kind], [x], suffix="pre")
    after = kind in _AFTER
    if kind in _NORM:
        out = op(ctx, node, "norm", [x], ord=_NORM[kind], suffix="red" if after else "",
                 **extra)
    else:
        out = op(ctx, node, _REDUCE[kind], [x], suffix="red" if after else "", **extra)
    return [op(ctx, node, _AFTER[kind], [out]) if after else out]


@importer("ArgMax", "ArgMin")
def _arg_reduce(ctx, node):
    """graphexec's argmax gives the first extreme as a float; select_last_index reverses the
    axis first and maps the position back (n - 1 - i). The result is cast to int64."""
    attrs, name = node_attrs(node), node.input[0]
    mx = "argmax" if node.op_type == "ArgMax" else "argmin"
    axis = normalize(node, [attrs.get("axis", 0)], ctx.rank(name))[0]
    keep = bool(attrs.get("keepdims", 1))
    x = ctx.sym(name)
    if not attrs.get("select_last_index", 0):
        idx = op(ctx, node, mx, [x], axis=axis, keepdims=keep, suffix="float")
        return [op(ctx, node, "Cast", [idx], dtype="int64")]
    n = ctx.static_shape(node, name, "select_last_index")[axis]
    flipped = op(ctx, node, "reverse", [x], axis=(axis,), suffix="reversed")
    idx = op(ctx, node, mx, [flipped], axis=axis, keepdims=keep, suffix="float")
    back = op(ctx, node, "_rminus_scalar", [idx], scalar=float(n - 1), suffix="last")
    return [op(ctx, node, "Cast", [back], dtype="int64")]


@importer("OneHot")
def _one_hot(ctx, node):
    """graphexec's one_hot appends the new axis and gives off_value for negative indices:
    those are moved into range first (i + depth) and the axis moved to ``axis``."""
    depth, values = ctx.const(node, 1, "depth"), ctx.const(node, 2, "values").reshape(-1)
    if depth is None or depth.size != 1 or values.size != 2:
        raise node_error(node, "depth must be one value and values two (off, on)")
    depth = int(depth.reshape(()))
    if depth < 1:
        raise node_error(node, f"depth {depth} must be at least 1")
    rank = ctx.rank(node.input[0])
    if rank is None:
        raise node_error(node, f"the rank of indices {node.input[0]!r} is unknown")
    axis = normalize(node, [node_attrs(node).get("axis", -1)], rank + 1)[0]
    idx = ctx.sym(node.input[0])
    neg = op(ctx, node, "_lesser_scalar", [idx], scalar=0.0, suffix="neg")
    shift = op(ctx, node, "_mul_scalar", [neg], scalar=float(depth), suffix="shift")
    idx = op(ctx, node, "elemwise_add", [idx, shift], suffix="wrapped")
    hot = op(ctx, node, "one_hot", [idx], depth=depth, on_value=float(values[1]),
             off_value=float(values[0]), dtype=values.dtype.name,
             suffix="" if axis == rank else "last")
    if axis == rank:
        return [hot]
    perm = tuple(range(axis)) + (rank,) + tuple(range(axis, rank))
    return [op(ctx, node, "transpose", [hot], axes=perm)]
