"""Indexing converters: Embedding, one_hot, take, pick and gather_nd. MXNet's indices are
floats: they are cast to int64 (truncating toward zero, as the kernels) and then clipped,
wrapped or checked as each op's ``mode`` says."""
from __future__ import annotations

import numpy as np

from ..convert import ConvertCall, converter, onnx_dtype


def _int64(c: ConvertCall, name: str) -> str:
    return c.b.one("Cast", [name], hint=c.hint("idx"), to=onnx_dtype(np.int64))


def _fixed(c: ConvertCall, idx: str, n: int, mode: str) -> str:
    """int64 indices brought into [0, n): clipped, or wrapped (Mod with the divisor's sign)."""
    if mode == "wrap":
        n = c.b.const(n, np.int64, c.hint("n"))
        return c.b.one("Mod", [idx, n], hint=c.hint("wrapped"), fmod=0)
    lo, hi = c.b.const(0, np.int64, c.hint("lo")), c.b.const(n - 1, np.int64, c.hint("hi"))
    return c.b.one("Clip", [idx, lo, hi], hint=c.hint("clipped"))


def _checked(c: ConvertCall, idx: str, low, high, outside) -> str:
    """``idx`` where the raw index (input 1, before truncation) lies in [low, high], else
    ``outside``: an index ONNX Runtime rejects, so the run fails where graphexec raises."""
    b, raw, dt = c.b, c.inputs[1], c.in_dtypes[1]
    below = b.one("Less", [raw, b.const(low, dt, c.hint("low"))], hint=c.hint("below"))
    above = b.one("Greater", [raw, b.const(high, dt, c.hint("high"))], hint=c.hint("above"))
    bad = b.one("Or", [below, above], hint=c.hint("bad"))
    outside = b.const(outside, np.int64, c.hint("outside"))
    return b.one("Where", [bad, outside, idx], hint=c.hint("checked"))


@converter("Embedding")
def _embedding(c: ConvertCall) -> None:
    idx = _fixed(c, _int64(c, c.x), c.in_shapes[1][0], "clip")
    c.b.one("Gather", [c.inputs[1], idx], c.out, axis=0)


@converter("one_hot")
def _one_hot(c: ConvertCall) -> None:
    """on_value where the index equals the position along the new last axis, off_value
    elsewhere (so indices outside [0, depth) give a row of off_value, not a wrapped one)."""
    b, dt, p = c.b, c.out_dtypes[0], c.p
    idx = b.one("Unsqueeze", [_int64(c, c.x), b.ints([-1], c.hint("last"))], hint=c.hint("col"))
    hit = b.one("Equal", [idx, b.ints(np.arange(p.depth), c.hint("depth"))], hint=c.hint("hit"))
    b.one("Where", [hit, b.const(p.on_value, dt, c.hint("on")),
                    b.const(p.off_value, dt, c.hint("off"))], c.out)


@converter("take")
def _take(c: ConvertCall) -> None:
    axis = c.p.axis % len(c.in_shapes[0])
    n = c.in_shapes[0][axis]
    idx = _int64(c, c.inputs[1])
    if c.p.mode == "raise":
        idx = _checked(c, idx, 0, n - 1, n)
    else:
        idx = _fixed(c, idx, n, c.p.mode)
    c.b.one("Gather", [c.x, idx], c.out, axis=axis)


def _pick_supports(node, shapes) -> "bool | str":
    return True if node.params.axis is not None else "pick with axis=None is not converted"


@converter("pick", supports=_pick_supports)
def _pick(c: ConvertCall) -> None:
    """GatherElements with the index shaped like the data with the axis of size 1."""
    shape = tuple(c.in_shapes[0])
    axis = c.p.axis % len(shape)
    kept = c.b.ints(shape[:axis] + (1,) + shape[axis + 1:], c.hint("kept"))
    idx = c.b.one("Reshape", [_int64(c, c.inputs[1]), kept], hint=c.hint("kept_idx"))
    picked = c.b.one("GatherElements", [c.x, _fixed(c, idx, shape[axis], c.p.mode)],
                     hint=c.hint("picked"), axis=axis)
    c.b.one("Reshape", [picked, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


@converter("gather_nd")
def _gather_nd(c: ConvertCall) -> None:
    """MXNet's indices (M, ...) address along their first axis, ONNX's along their last:
    transposed. Indices outside [-size, size - 1] are made ones ONNX Runtime rejects."""
    shape, ind_shape = c.in_shapes
    m = ind_shape[0]
    sizes = np.array(shape[:m], np.int64).reshape((m,) + (1,) * (len(ind_shape) - 1))
    idx = _checked(c, _int64(c, c.inputs[1]), -sizes, sizes - 1, sizes)
    perm = list(range(1, len(ind_shape))) + [0]
    last = c.b.one("Transpose", [idx], hint=c.hint("last"), perm=perm)
    c.b.one("GatherND", [c.x, last], c.out)
