"""Kernels of the interleaved attention matmuls, their backward operators and
``_contrib_div_sqrt_dim`` (core/ops/attention.py). Every projection is seen as (batch *
heads, T, head size) through strided views set up at bind; one batched matmul per product."""
from __future__ import annotations

import math
from functools import partial

from graphexec.core.runtime.blas_threads import run_parts, split

from .base import cast_scalar, kernel
from .nn import matmul_into

#: the fewest products worth a thread of their own
MIN_BATCH = 8


def heads(arr, num_heads: int, parts: int, part: int):
    """Part ``part`` of the interleaved projection ``arr`` (T, N, parts * E) as a
    (N * heads, T, E / heads) view."""
    seq, batch, width = arr.shape
    hd = width // parts // num_heads
    view = arr.reshape(seq, batch * num_heads, parts, hd)[:, :, part, :]
    return view.transpose(1, 0, 2)


def _scale(arr, num_heads: int, parts: int) -> float:
    return 1.0 / math.sqrt(arr.shape[2] // parts // num_heads)


def _bmm(xp, a, b, out) -> None:
    """out = a @ b over the batch axis, which is split across threads (each product is
    small: OpenBLAS's own threads cost more than they bring, see
    :mod:`graphexec.core.runtime.blas_threads`); ``out`` may be a strided view."""
    def part(j, b0, b1, sync):
        dst = out[b0:b1]
        if dst.flags.c_contiguous:
            matmul_into(xp, a[b0:b1], b[b0:b1], dst)
        else:
            xp.copyto(dst, xp.matmul(a[b0:b1], b[b0:b1]))
    run_parts(xp, split(xp, out.shape[0], MIN_BATCH), part)


def _qk(xp, q, k, out, scale) -> None:
    _bmm(xp, q, k.transpose(0, 2, 1), out)
    xp.multiply(out, scale, out=out)


@kernel("_contrib_interleaved_matmul_selfatt_qk")
def selfatt_qk(call):
    (qkv,), out, h = call.inputs, call.outputs[0], call.params.heads
    return partial(_qk, call.xp, heads(qkv, h, 3, 0), heads(qkv, h, 3, 1), out,
                   cast_scalar(_scale(qkv, h, 3), out))


@kernel("_contrib_interleaved_matmul_encdec_qk")
def encdec_qk(call):
    (q, kv), out, h = call.inputs, call.outputs[0], call.params.heads
    return partial(_qk, call.xp, heads(q, h, 1, 0), heads(kv, h, 2, 0), out,
                   cast_scalar(_scale(q, h, 1), out))


@kernel("_contrib_interleaved_matmul_selfatt_valatt")
def selfatt_valatt(call):
    (qkv, att), out, h = call.inputs, call.outputs[0], call.params.heads
    return partial(_bmm, call.xp, att, heads(qkv, h, 3, 2), heads(out, h, 1, 0))


@kernel("_contrib_interleaved_matmul_encdec_valatt")
def encdec_valatt(call):
    (kv, att), out, h = call.inputs, call.outputs[0], call.params.heads
    return partial(_bmm, call.xp, att, heads(kv, h, 2, 1), heads(out, h, 1, 0))


def _qk_backward(xp, og, q, k, dq, dk, zero, scale) -> None:
    """d(Q K^T * s): dQ = s og K, dK = s og^T Q; ``zero``: the unused part of the input."""
    if zero is not None:
        zero.fill(0)
    _bmm(xp, og, k, dq)
    xp.multiply(dq, scale, out=dq)
    _bmm(xp, og.transpose(0, 2, 1), q, dk)
    xp.multiply(dk, scale, out=dk)


@kernel("_backward_interleaved_matmul_selfatt_qk")
def selfatt_qk_backward(call):
    (og, qkv), dqkv, h = call.inputs, call.outputs[0], call.params.heads
    return partial(_qk_backward, call.xp, og, heads(qkv, h, 3, 0), heads(qkv, h, 3, 1),
                   heads(dqkv, h, 3, 0), heads(dqkv, h, 3, 1), heads(dqkv, h, 3, 2),
                   cast_scalar(_scale(qkv, h, 3), dqkv))


@kernel("_backward_interleaved_matmul_encdec_qk")
def encdec_qk_backward(call):
    (og, q, kv), (dq, dkv), h = call.inputs, call.outputs, call.params.heads
    return partial(_qk_backward, call.xp, og, heads(q, h, 1, 0), heads(kv, h, 2, 0),
                   heads(dq, h, 1, 0), heads(dkv, h, 2, 0), heads(dkv, h, 2, 1),
                   cast_scalar(_scale(q, h, 1), dq))


def _valatt_backward(xp, og, att, v, datt, dv, zero) -> None:
    """d(att V): d att = og V^T, dV = att^T og; ``zero``: the unused parts of the input."""
    for z in zero:
        z.fill(0)
    _bmm(xp, og, v.transpose(0, 2, 1), datt)
    _bmm(xp, att.transpose(0, 2, 1), og, dv)


@kernel("_backward_interleaved_matmul_selfatt_valatt")
def selfatt_valatt_backward(call):
    (og, qkv, att), (dqkv, datt), h = call.inputs, call.outputs, call.params.heads
    return partial(_valatt_backward, call.xp, heads(og, h, 1, 0), att, heads(qkv, h, 3, 2),
                   datt, heads(dqkv, h, 3, 2), [heads(dqkv, h, 3, 0), heads(dqkv, h, 3, 1)])


@kernel("_backward_interleaved_matmul_encdec_valatt")
def encdec_valatt_backward(call):
    (og, kv, att), (dkv, datt), h = call.inputs, call.outputs, call.params.heads
    return partial(_valatt_backward, call.xp, heads(og, h, 1, 0), att, heads(kv, h, 2, 1),
                   datt, heads(dkv, h, 2, 1), [heads(dkv, h, 2, 0)])


@kernel("_contrib_div_sqrt_dim", inplace=True)
def div_sqrt_dim(call):
    x, out = call.inputs[0], call.outputs[0]
    return partial(call.xp.multiply, x, cast_scalar(1.0 / math.sqrt(x.shape[-1]), out), out=out)
