"""Kernels of dot and batch_dot (core/ops/matrix.py): both reduce to one ``matmul`` into a
2-D (or batched 3-D) view of the output."""
from __future__ import annotations

from graphexec.core.ops.matrix import dot_axes

from .base import kernel
from .tensor import out_view


@kernel("dot")
def dot(call):
    """lhs becomes (m, k) and rhs (k, n), transposing the flattened 2-D views as asked."""
    xp, (lhs, rhs), p = call.xp, call.inputs, call.params
    la, _ = dot_axes(p, lhs.shape, rhs.shape)
    k = lhs.shape[la]
    m, n = lhs.size // k, rhs.size // k
    lshape = (k, m) if p.transpose_a else (m, k)
    rshape = (n, k) if p.transpose_b else (k, n)
    out2 = out_view(call.outputs[0], (m, n))

    def run():
        a = lhs.reshape(lshape)
        b = rhs.reshape(rshape)
        xp.matmul(a.T if p.transpose_a else a, b.T if p.transpose_b else b, out=out2)
    return run


@kernel("batch_dot")
def batch_dot(call):
    xp, (lhs, rhs), p = call.xp, call.inputs, call.params
    out = call.outputs[0]
    batch = out.size // (out.shape[-2] * out.shape[-1])
    out3 = out_view(out, (batch,) + out.shape[-2:])
    lshape, rshape = (batch,) + lhs.shape[-2:], (batch,) + rhs.shape[-2:]

    def run():
        a = lhs.reshape(lshape)
        b = rhs.reshape(rshape)
        xp.matmul(a.swapaxes(1, 2) if p.transpose_a else a,
                  b.swapaxes(1, 2) if p.transpose_b else b, out=out3)
    return run
