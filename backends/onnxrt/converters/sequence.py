"""Sequence converters: SequenceMask (a Where over step < length), SequenceLast (GatherND
with one batch dimension), SequenceReverse (ReverseSequence); and the attention helpers,
whose interleaved projections become Reshape / Slice / Transpose around MatMul."""
from __future__ import annotations

import math

import numpy as np

from ..convert import ConvertCall, converter, onnx_dtype


def _lengths(c: ConvertCall) -> str:
    """The lengths as int64, truncated (as MXNet reads them); T without a length input."""
    seq, batch = c.in_shapes[0][c.p.axis], c.in_shapes[0][1 - c.p.axis]
    if not c.p.use_sequence_length:
        return c.b.ints([seq] * batch, c.hint("len"))
    return c.b.one("Cast", [c.inputs[1]], hint=c.hint("len"), to=onnx_dtype(np.int64))


@converter("SequenceMask")
def _mask(c: ConvertCall) -> None:
    shape, axis = c.in_shapes[0], c.p.axis
    steps = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    lens_shape = [-1 if i == 1 - axis else 1 for i in range(len(shape))]
    lens = c.b.one("Reshape", [_lengths(c), c.b.ints(lens_shape, c.hint("lshape"))],
                   hint=c.hint("len"))
    keep = c.b.one("Less", [c.b.const(steps, np.int64, c.hint("steps")), lens],
                   hint=c.hint("keep"))
    c.b.one("Where", [keep, c.x, c.b.const(c.p.value, c.out_dtypes[0], c.hint("value"))],
            c.out)


@converter("SequenceLast")
def _last(c: ConvertCall) -> None:
    """(N, T, ...) data, index length - 1 per batch row."""
    x = c.x
    if c.p.axis == 0:
        ndim = len(c.in_shapes[0])
        x = c.b.one("Transpose", [x], hint=c.hint("nt"), perm=[1, 0] + list(range(2, ndim)))
    one = c.b.ints([1], c.hint("one"))
    last = c.b.one("Sub", [_lengths(c), one], hint=c.hint("last"))
    idx = c.b.one("Unsqueeze", [last, c.b.ints([1], c.hint("col"))], hint=c.hint("idx"))
    c.b.one("GatherND", [x, idx], c.out, batch_dims=1)


@converter("SequenceReverse")
def _reverse(c: ConvertCall) -> None:
    c.b.one("ReverseSequence", [c.x, _lengths(c)], c.out, batch_axis=1, time_axis=0)


# -- attention --------------------------------------------------------------------------------
def _heads(c: ConvertCall, k: int, parts: int, part: int) -> str:
    """Part ``part`` of input ``k`` (T, N, parts*E) as (N*heads, T, E/heads)."""
    seq, batch, width = c.in_shapes[k]
    hd = width // parts // c.p.heads
    b = c.b
    split = b.one("Reshape", [c.inputs[k], b.ints([seq, batch * c.p.heads, parts, hd],
                                                  c.hint("split"))], hint=c.hint("split"))
    taken = b.one("Slice", [split, b.ints([part], c.hint("p0")), b.ints([part + 1], c.hint("p1")),
                            b.ints([2], c.hint("axis"))], hint=c.hint("part"))
    flat = b.one("Reshape", [taken, b.ints([seq, batch * c.p.heads, hd], c.hint("tbh"))],
                 hint=c.hint("tbh"))
    return b.one("Transpose", [flat], hint=c.hint("bth"), perm=[1, 0, 2])


def _merge_heads(c: ConvertCall, y: str) -> None:
    """(N*heads, T, hd) -> the output (T, N, heads*hd)."""
    t = c.b.one("Transpose", [y], hint=c.hint("tbh"), perm=[1, 0, 2])
    c.b.one("Reshape", [t, c.b.ints(c.out_shapes[0], c.hint("out"))], c.out)


def _qk(c: ConvertCall, q: str, k: str, head_dim: int) -> None:
    kt = c.b.one("Transpose", [k], hint=c.hint("kt"), perm=[0, 2, 1])
    qk = c.b.one("MatMul", [q, kt], hint=c.hint("qk"))
    scale = c.b.const(1.0 / math.sqrt(head_dim), c.out_dtypes[0], c.hint("scale"))
    c.b.one("Mul", [qk, scale], c.out)


@converter("_contrib_interleaved_matmul_selfatt_qk")
def _selfatt_qk(c: ConvertCall) -> None:
    _qk(c, _heads(c, 0, 3, 0), _heads(c, 0, 3, 1), c.in_shapes[0][2] // 3 // c.p.heads)


@converter("_contrib_interleaved_matmul_encdec_qk")
def _encdec_qk(c: ConvertCall) -> None:
    _qk(c, _heads(c, 0, 1, 0), _heads(c, 1, 2, 0), c.in_shapes[0][2] // c.p.heads)


@converter("_contrib_interleaved_matmul_selfatt_valatt")
def _selfatt_valatt(c: ConvertCall) -> None:
    _merge_heads(c, c.b.one("MatMul", [c.inputs[1], _heads(c, 0, 3, 2)], hint=c.hint("av")))


@converter("_contrib_interleaved_matmul_encdec_valatt")
def _encdec_valatt(c: ConvertCall) -> None:
    _merge_heads(c, c.b.one("MatMul", [c.inputs[1], _heads(c, 0, 2, 1)], hint=c.hint("av")))


def _div_sqrt_dim_supports(node, shapes) -> "bool | str":
    return True if shapes and shapes[0] is not None else "the data shape is needed"


@converter("_contrib_div_sqrt_dim", supports=_div_sqrt_dim_supports)
def _div_sqrt_dim(c: ConvertCall) -> None:
    scale = 1.0 / math.sqrt(c.in_shapes[0][-1])
    c.b.one("Mul", [c.x, c.b.const(scale, c.out_dtypes[0], c.hint("scale"))], c.out)
