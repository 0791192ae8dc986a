"""Kernels of dot and batch_dot (core/ops/matrix.py): both reduce to one ``matmul`` into a
2-D (or batched 3-D) view of the output; so do the two products of dot's gradient
(batch_dot's gradient is two batch_dot nodes)."""
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


@kernel("_backward_dot")
def dot_backward(call):
    """With the 2-D views A' (m, k) and B' (k, n) of the forward kernel and G (m, n):
    dA' = G B'^T and dB' = A'^T G, each written straight into its (possibly transposed) view."""
    xp, (og, lhs, rhs), (dl, dr), p = call.xp, call.inputs, call.outputs, call.params
    la, _ = dot_axes(p, lhs.shape, rhs.shape)
    k = lhs.shape[la]
    m, n = lhs.size // k, rhs.size // k
    lshape = (k, m) if p.transpose_a else (m, k)
    rshape = (n, k) if p.transpose_b else (k, n)
    g = og.reshape(m, n)
    dl2, dr2 = out_view(dl, lshape), out_view(dr, rshape)
    want_l, want_r = (r != "null" for r in call.req)

    def run():
        a = lhs.reshape(lshape)
        b = rhs.reshape(rshape)
        a_, b_ = (a.T if p.transpose_a else a), (b.T if p.transpose_b else b)
        if want_l:
            if p.transpose_a:
                xp.matmul(b_, g.T, out=dl2)
            else:
                xp.matmul(g, b_.T, out=dl2)
        if want_r:
            if p.transpose_b:
                xp.matmul(g.T, a_, out=dr2)
            else:
                xp.matmul(a_.T, g, out=dr2)
    return run
