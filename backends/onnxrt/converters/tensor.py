"""Tensor-manipulation converters: shape changes (from the inferred output shape), transpose,
SwapAxis, broadcasting, tile, repeat, reverse, Concat, stack, SliceChannel, slice, slice_axis,
slice_like, Pad, dot / batch_dot."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.matrix import dot_axes
from graphexec.core.ops.slicing import slice_bounds
from graphexec.core.ops.tensor import swap_dims, tile_reps

from ..convert import ConvertCall, converter
from .legacy import bilinear_upsampling

#: a Slice end before index 0 for a negative step (-1 would mean the last element)
_INT64_MIN = int(np.iinfo(np.int64).min)


def _reshape_to_output(c: ConvertCall) -> None:
    """MXNet's special codes (0, -1, -2, -3, -4) resolved: the known output shape."""
    c.b.one("Reshape", [c.x, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


converter("Reshape", "Flatten", "expand_dims", "squeeze")(_reshape_to_output)


@converter("transpose")
def _transpose(c: ConvertCall) -> None:
    perm = list(c.p.axes) or list(reversed(range(len(c.in_shapes[0]))))
    c.b.one("Transpose", [c.x], c.out, perm=[a % len(perm) for a in perm])


@converter("Concat")
def _concat(c: ConvertCall) -> None:
    c.b.one("Concat", list(c.inputs), c.out, axis=c.p.dim)


@converter("SliceChannel")
def _slice_channel(c: ConvertCall) -> None:
    p, shape = c.p, c.in_shapes[0]
    axis = p.axis % len(shape)
    n = p.num_outputs
    sizes = c.b.ints([shape[axis] // n] * n, c.hint("split"))
    if not p.squeeze_axis:
        c.b.add("Split", [c.x, sizes], list(c.outputs), axis=axis)
        return
    parts = c.b.add("Split", [c.x, sizes], [c.b.fresh(c.hint("part")) for _ in range(n)],
                    axis=axis)
    axes = c.b.ints([axis], c.hint("axis"))
    for part, out in zip(parts, c.outputs):
        c.b.one("Squeeze", [part, axes], out)


def _transposed(c: ConvertCall, name: str, flag: bool, perm: list[int]) -> str:
    return c.b.one("Transpose", [name], hint=c.hint("T"), perm=perm) if flag else name


@converter("dot")
def _dot(c: ConvertCall) -> None:
    """MXNet's dot contracts lhs's last axis (first with transpose_a) with rhs's first (last
    with transpose_b): lhs seen as (m, k) ((k, m) transposed), rhs as (k, n) ((n, k)
    transposed), one MatMul, reshaped to the output."""
    (lhs, rhs), p = c.in_shapes, c.p
    la, _ = dot_axes(p, lhs, rhs)
    k = lhs[la]
    m, n = _size(lhs) // k, _size(rhs) // k
    a = _transposed(c, _reshaped(c, c.inputs[0], lhs, (k, m) if p.transpose_a else (m, k)),
                    p.transpose_a, [1, 0])
    b = _transposed(c, _reshaped(c, c.inputs[1], rhs, (n, k) if p.transpose_b else (k, n)),
                    p.transpose_b, [1, 0])
    if tuple(c.out_shapes[0]) == (m, n):
        c.b.one("MatMul", [a, b], c.out)
        return
    mm = c.b.one("MatMul", [a, b], hint=c.hint("mm"))
    c.b.one("Reshape", [mm, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _reshaped(c: ConvertCall, name: str, shape, target) -> str:
    if tuple(shape) == tuple(target):
        return name
    return c.b.one("Reshape", [name, c.b.ints(target, c.hint("2d"))], hint=c.hint("2d"))


@converter("batch_dot")
def _batch_dot(c: ConvertCall) -> None:
    """Leading axes are batch axes; transposes swap the last two."""
    ndim = len(c.in_shapes[0])
    perm = list(range(ndim - 2)) + [ndim - 1, ndim - 2]
    a = _transposed(c, c.inputs[0], c.p.transpose_a, perm)
    b = _transposed(c, c.inputs[1], c.p.transpose_b, perm)
    c.b.one("MatMul", [a, b], c.out)


@converter("slice_axis")
def _slice_axis(c: ConvertCall) -> None:
    p, shape = c.p, c.in_shapes[0]
    axis = p.axis % len(shape)
    end = shape[axis] if p.end is None else p.end
    c.b.one("Slice", [c.x, c.b.ints([p.begin], c.hint("begin")), c.b.ints([end], c.hint("end")),
                      c.b.ints([axis], c.hint("axis"))], c.out)


@converter("SwapAxis")
def _swap_axis(c: ConvertCall) -> None:
    ndim = len(c.in_shapes[0])
    a, b = swap_dims(c.p, ndim)
    perm = list(range(ndim))
    perm[a], perm[b] = b, a
    c.b.one("Transpose", [c.x], c.out, perm=perm)


@converter("broadcast_to", "broadcast_axis", "broadcast_like")
def _broadcast(c: ConvertCall) -> None:
    """Expand to the inferred output shape (rhs of broadcast_like only gives the shape)."""
    c.b.one("Expand", [c.x, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


@converter("tile")
def _tile(c: ConvertCall) -> None:
    """Short inputs get leading 1s first, as numpy's tile."""
    reps, lead = tile_reps(c.p, len(c.in_shapes[0]))
    x = c.x
    if lead:
        full = c.b.ints((1,) * lead + tuple(c.in_shapes[0]), c.hint("lead"))
        x = c.b.one("Reshape", [x, full], hint=c.hint("lead"))
    c.b.one("Tile", [x, c.b.ints(reps, c.hint("reps"))], c.out)


@converter("repeat")
def _repeat(c: ConvertCall) -> None:
    """Each element repeated in place: a new size-1 axis after the repeated one (after the
    flattened input when axis is None), expanded to ``repeats``, merged back; repeats 0 gives
    an empty 1-D array."""
    shape, r = tuple(c.in_shapes[0]), c.p.repeats
    if r == 0:  # an empty 1-D array, as MXNet's (ONNX's Reshape reads a 0 as "keep")
        c.b.one("Identity", [c.b.const(np.zeros(0), c.in_dtypes[0], c.hint("empty"))], c.out)
        return
    if c.p.axis is None:
        shape, a = (_size(shape),), 0
    else:
        a = c.p.axis % len(shape)
    b = c.b
    split = b.one("Reshape", [c.x, b.ints(shape[:a + 1] + (1,) + shape[a + 1:], c.hint("one"))],
                  hint=c.hint("one"))
    big = b.one("Expand", [split, b.ints(shape[:a + 1] + (r,) + shape[a + 1:], c.hint("reps"))],
                hint=c.hint("reps"))
    b.one("Reshape", [big, b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


@converter("reverse")
def _reverse(c: ConvertCall) -> None:
    """A Slice with step -1 over each axis (ONNX has no reverse of whole axes)."""
    axes = sorted({a % len(c.in_shapes[0]) for a in c.p.axis})
    n = len(axes)
    _slice(c, [-1] * n, [_INT64_MIN] * n, axes, [-1] * n)


def _slice(c: ConvertCall, starts, ends, axes, steps) -> None:
    b = c.b
    b.one("Slice", [c.x, b.ints(starts, c.hint("starts")), b.ints(ends, c.hint("ends")),
                    b.ints(axes, c.hint("axes")), b.ints(steps, c.hint("steps"))], c.out)


@converter("slice")
def _slice_op(c: ConvertCall) -> None:
    """Python's slice rules resolved against the shape into (first, past-the-last, step);
    an empty range becomes 0:0, and a negative step running past index 0 ends at
    INT64_MIN (an end of -1 means the last element to ONNX)."""
    shape = tuple(c.in_shapes[0])
    ranges = [range(*sl.indices(d)) for sl, d in zip(slice_bounds(c.p, shape), shape)]
    bounds = [(r[0], r[-1] + r.step, r.step) if len(r) else (0, 0, 1) for r in ranges]
    _slice(c, [s for s, _, _ in bounds], [_INT64_MIN if e < 0 else e for _, e, _ in bounds],
           list(range(len(bounds))), [st for _, _, st in bounds])


@converter("slice_like")
def _slice_like(c: ConvertCall) -> None:
    """The leading part of every axis, as long as the output's."""
    out = c.out_shapes[0]
    _slice(c, [0] * len(out), list(out), list(range(len(out))), [1] * len(out))


@converter("stack")
def _stack(c: ConvertCall) -> None:
    axis = c.p.axis % (len(c.in_shapes[0]) + 1)
    at = c.b.ints([axis], c.hint("axis"))
    parts = [c.b.one("Unsqueeze", [x, at], hint=c.hint("part")) for x in c.inputs]
    c.b.one("Concat", parts, c.out, axis=axis)


@converter("Pad")
def _pad(c: ConvertCall) -> None:
    """pad_width (before0, after0, before1, ...) becomes ONNX's (begins..., ends...)."""
    pw = list(c.p.pad_width)
    ins = [c.x, c.b.ints(pw[0::2] + pw[1::2], c.hint("pads"))]
    if c.p.mode == "constant":
        ins.append(c.b.const(c.p.constant_value, c.in_dtypes[0], c.hint("value")))
    c.b.one("Pad", ins, c.out, mode=c.p.mode)


@converter("UpSampling")
def _upsampling(c: ConvertCall) -> None:
    """Each input repeated to the output's size, then concatenated along the channels or
    summed (multi_input_mode). Bilinear: a grouped ConvTranspose (converters/legacy.py)."""
    if c.p.sample_type == "bilinear":
        bilinear_upsampling(c)
        return
    height = c.out_shapes[0][2]
    parts = [_nearest(c, x, shape, height // shape[2]) for x, shape in zip(c.inputs, c.in_shapes)]
    if c.p.multi_input_mode == "sum":
        c.b.one("Sum", parts, c.out)
    else:
        c.b.one("Concat", parts, c.out, axis=1)


def _nearest(c: ConvertCall, x: str, shape: tuple, s: int) -> str:
    """(n, c, h, w) -> (n, c, h*s, w*s): seen as (n, c, h, 1, w, 1), expanded to s on the
    size-1 axes, reshaped back."""
    n, ch, h, w = shape
    b = c.b
    split = b.one("Reshape", [x, b.ints((n, ch, h, 1, w, 1), c.hint("split"))],
                  hint=c.hint("split"))
    big = b.one("Expand", [split, b.ints((n, ch, h, s, w, s), c.hint("blocks"))],
                hint=c.hint("blocks"))
    return b.one("Reshape", [big, b.ints((n, ch, h * s, w * s), c.hint("up"))],
                 hint=c.hint("up"))
