"""ONNX tensor-manipulation importers: Reshape, Flatten, Concat, Transpose, Softmax family,
Gather, Unsqueeze / Squeeze, reductions (see :mod:`.importer`)."""
from __future__ import annotations

from .importer import _attrs, _node_error, importer, op

_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min"}


def _axes(ctx, node, index: int = 1) -> list[int] | None:
    """Axes from the attribute (older opsets) or the constant input ``index``."""
    attrs = _attrs(node)
    if "axes" in attrs:
        return list(attrs["axes"])
    value = ctx.const(node, index, "axes")
    return None if value is None else [int(a) for a in value.reshape(-1)]


def _normalize(ctx, node, axes: list[int], rank: int | None) -> list[int]:
    if any(a < 0 for a in axes):
        if rank is None:
            raise _node_error(node, f"negative axes {axes} need the input's rank, which shape "
                              "inference did not give")
        axes = [a % rank for a in axes]
    return axes


@importer("Reshape")
def _reshape(ctx, node):
    shape = [int(d) for d in ctx.const(node, 1, "shape")]
    if _attrs(node).get("allowzero", 0) and 0 in shape:
        raise _node_error(node, "allowzero=1 with a 0 in the shape is not imported")
    return [op(ctx, node, "Reshape", [ctx.sym(node.input[0])], shape=tuple(shape))]


@importer("Flatten")
def _flatten(ctx, node):
    axis, x = _attrs(node).get("axis", 1), ctx.sym(node.input[0])
    rank = ctx.rank(node.input[0])
    if axis < 0 and rank is not None:
        axis += rank
    if axis == 1:
        return [op(ctx, node, "Flatten", [x])]
    if axis == 0:
        return [op(ctx, node, "Reshape", [x], shape=(1, -1))]
    if rank is not None and axis == rank:
        return [op(ctx, node, "Reshape", [x], shape=(-1, 1))]
    raise _node_error(node, f"Flatten over axis {axis} is not imported (axis 0, 1 or the rank)")


@importer("Concat")
def _concat(ctx, node):
    axis = _normalize(ctx, node, [_attrs(node)["axis"]], ctx.rank(node.input[0]))[0]
    return [op(ctx, node, "Concat", [ctx.sym(n) for n in node.input], dim=axis)]


@importer("Transpose")
def _transpose(ctx, node):
    perm = _attrs(node).get("perm")
    extra = {} if perm is None else {"axes": tuple(perm)}
    return [op(ctx, node, "transpose", [ctx.sym(node.input[0])], **extra)]


@importer("Softmax", "LogSoftmax")
def _softmax(ctx, node):
    rank = ctx.rank(node.input[0])
    axis = _attrs(node).get("axis", -1 if ctx.opset >= 13 else 1)
    if ctx.opset < 13 and (rank is None or axis % rank != rank - 1):
        raise _node_error(node, f"opset {ctx.opset} {node.op_type} over axis {axis} flattens "
                          "to 2-D first; only the last axis is imported")
    mx = "softmax" if node.op_type == "Softmax" else "log_softmax"
    return [op(ctx, node, mx, [ctx.sym(node.input[0])], axis=axis)]


@importer("Gather")
def _gather(ctx, node):
    axis = _attrs(node).get("axis", 0)
    data, idx = node.input
    table = ctx.consts.get(data)
    if axis == 0 and table is not None and table.ndim == 2:
        return [op(ctx, node, "Embedding", [ctx.sym(idx), ctx.sym(data)],
                   input_dim=table.shape[0], output_dim=table.shape[1])]
    return [op(ctx, node, "take", [ctx.sym(data), ctx.sym(idx)], axis=axis, mode="wrap")]


@importer("Unsqueeze")
def _unsqueeze(ctx, node):
    axes = _axes(ctx, node)
    rank = ctx.rank(node.input[0])
    out_rank = None if rank is None else rank + len(axes)
    x = ctx.sym(node.input[0])
    for k, axis in enumerate(sorted(_normalize(ctx, node, axes, out_rank))):
        last = k == len(axes) - 1
        x = op(ctx, node, "expand_dims", [x], axis=axis, suffix="" if last else f"part{k}")
    return [x]


@importer("Squeeze")
def _squeeze(ctx, node):
    axes = _axes(ctx, node)
    extra = {} if not axes else {"axis": tuple(axes)}
    return [op(ctx, node, "squeeze", [ctx.sym(node.input[0])], **extra)]


@importer(*_REDUCE)
def _reduce(ctx, node):
    attrs = _attrs(node)
    axes = _axes(ctx, node)
    keep = bool(attrs.get("keepdims", 1))
    x = ctx.sym(node.input[0])
    if not axes and attrs.get("noop_with_empty_axes", 0):
        return [x]
    extra = {} if not axes else {"axis": tuple(axes)}
    return [op(ctx, node, _REDUCE[node.op_type], [x], keepdims=keep, **extra)]
