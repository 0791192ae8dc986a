"""Kernels of the linalg products and diagonal/triangle copies (core/ops/linalg.py) and of
their backward operators. Batched through the array module's stacked matmul; triangular
operands keep only the triangle ``lower`` names (MXNet's BLAS reads nothing else)."""
from __future__ import annotations

from graphexec.core.ops.linalg import diag_index, gemm_axis, trian_index

from .base import kernel


def tri(xp, a, lower: bool, k: int = 0):
    """The lower (upper) triangle of the stacked matrices ``a``, the rest zero."""
    return xp.tril(a, k) if lower else xp.triu(a, k)


def tr(a):
    """The stacked matrices ``a`` transposed."""
    return a.swapaxes(-1, -2)


def put(xp, out, value) -> None:
    xp.copyto(out, value, casting="unsafe")


# -- gemm / gemm2 ------------------------------------------------------------------------------
def _gemm_views(call):
    """The row axis moved next to the last one, for every input and output."""
    ndim = call.inputs[0].ndim
    ax = gemm_axis(call.params, ndim)
    move = (lambda a: a) if ax == ndim - 2 else (lambda a: call.xp.moveaxis(a, ax, -2))
    return move


@kernel("_linalg_gemm", "_linalg_gemm2")
def gemm(call):
    xp, p = call.xp, call.params
    move = _gemm_views(call)
    a, b = (move(x) for x in call.inputs[:2])
    c = move(call.inputs[2]) if len(call.inputs) > 2 else None
    out = move(call.outputs[0])

    def run():
        res = xp.matmul(tr(a) if p.transpose_a else a, tr(b) if p.transpose_b else b)
        res *= p.alpha
        if c is not None:
            res += p.beta * c
        put(xp, out, res)
    return run


@kernel("_backward_linalg_gemm", "_backward_linalg_gemm2")
def gemm_backward(call):
    """With opA, opB the (transposed) operands and G the output gradient:
    d opA = alpha G opB^T, d opB = alpha opA^T G, dC = beta G."""
    xp, p = call.xp, call.params
    move = _gemm_views(call)
    g, a, b = (move(x) for x in call.inputs[:3])
    da, db = move(call.outputs[0]), move(call.outputs[1])
    dc = call.outputs[2] if len(call.outputs) > 2 else None

    def run():
        op_a = tr(a) if p.transpose_a else a
        op_b = tr(b) if p.transpose_b else b
        d_opa = p.alpha * xp.matmul(g, tr(op_b))
        d_opb = p.alpha * xp.matmul(tr(op_a), g)
        put(xp, da, tr(d_opa) if p.transpose_a else d_opa)
        put(xp, db, tr(d_opb) if p.transpose_b else d_opb)
        if dc is not None:
            put(xp, dc, p.beta * call.inputs[0])
    return run


# -- trmm / trsm -------------------------------------------------------------------------------
def _op_tri(xp, a, lower: bool, transpose: bool):
    """The ``lower`` (upper) triangle of the stacked ``a``, transposed with ``transpose``."""
    t = tri(xp, a, lower)
    return tr(t) if transpose else t


@kernel("_linalg_trmm")
def trmm(call):
    xp, p, (a, b), out = call.xp, call.params, call.inputs, call.outputs[0]

    def run():
        m = _op_tri(xp, a, p.lower, p.transpose)
        put(xp, out, p.alpha * (xp.matmul(b, m) if p.rightside else xp.matmul(m, b)))
    return run


@kernel("_backward_linalg_trmm")
def trmm_backward(call):
    xp, p, (g, a, b), (da, db) = call.xp, call.params, call.inputs, call.outputs

    def run():
        m = _op_tri(xp, a, p.lower, p.transpose)
        d_m = xp.matmul(tr(b), g) if p.rightside else xp.matmul(g, tr(b))
        put(xp, da, tri(xp, p.alpha * (tr(d_m) if p.transpose else d_m), p.lower))
        put(xp, db, p.alpha * (xp.matmul(g, tr(m)) if p.rightside else xp.matmul(tr(m), g)))
    return run


def solve_tri(xp, a, b, lower: bool, transpose: bool, rightside: bool, alpha: float):
    """alpha op(A)^-1 B (alpha B op(A)^-1 with ``rightside``) for the stacked triangles of
    ``a`` (op: transposed or not). On the host, float32 and float64 go through BLAS's trsm,
    as MXNet's (substitution; a zero on the diagonal gives inf / NaN, as there, not an
    error); other dtypes and the GPU solve the triangle as a general system."""
    if xp.__name__ == "numpy" and a.dtype == b.dtype and a.dtype.char in "fd":
        from scipy.linalg import blas
        trsm = blas.get_blas_funcs("trsm", (a,))
        a3 = a.reshape(-1, *a.shape[-2:])
        b3 = b.reshape(-1, *b.shape[-2:])
        out = xp.empty(b3.shape, b.dtype)
        for i in range(a3.shape[0]):
            out[i] = trsm(alpha, a3[i], b3[i], side=int(rightside), lower=int(lower),
                          trans_a=int(transpose))
        return out.reshape(b.shape)
    m = _op_tri(xp, a, lower, transpose)
    if rightside:
        return alpha * tr(xp.linalg.solve(tr(m), tr(b)))
    return alpha * xp.linalg.solve(m, b)


@kernel("_linalg_trsm")
def trsm(call):
    xp, p, (a, b), out = call.xp, call.params, call.inputs, call.outputs[0]

    def run():
        put(xp, out, solve_tri(xp, a, b, p.lower, p.transpose, p.rightside, p.alpha))
    return run


@kernel("_backward_linalg_trsm")
def trsm_backward(call):
    """C = alpha M^-1 B: dB = alpha M^-T G, dM = -(1/alpha) dB C^T (mirrored on the right)."""
    xp, p, (g, a, _b, c), (da, db) = call.xp, call.params, call.inputs, call.outputs

    def run():
        d_b = solve_tri(xp, a, g, p.lower, not p.transpose, p.rightside, p.alpha)
        d_m = xp.matmul(tr(c), d_b) if p.rightside else xp.matmul(d_b, tr(c))
        d_m *= -1.0 / p.alpha
        put(xp, da, tri(xp, tr(d_m) if p.transpose else d_m, p.lower))
        put(xp, db, d_b)
    return run


# -- syrk --------------------------------------------------------------------------------------
@kernel("_linalg_syrk")
def syrk(call):
    xp, p, a, out = call.xp, call.params, call.inputs[0], call.outputs[0]

    def run():
        put(xp, out, p.alpha * (xp.matmul(tr(a), a) if p.transpose else xp.matmul(a, tr(a))))
    return run


@kernel("_backward_linalg_syrk")
def syrk_backward(call):
    xp, p, (g, a), da = call.xp, call.params, call.inputs, call.outputs[0]

    def run():
        sym = g + tr(g)
        put(xp, da, p.alpha * (xp.matmul(a, sym) if p.transpose else xp.matmul(sym, a)))
    return run


# -- diagonals and triangles -------------------------------------------------------------------
def _index_of(call, n: int):
    p = call.params
    if "diag" in call.op_name:
        return diag_index(n, p.offset)
    return trian_index(n, p.offset, p.lower)


@kernel("_linalg_extractdiag", "_linalg_extracttrian", "_backward_linalg_makediag",
        "_backward_linalg_maketrian")
def extract(call):
    """Gather the entries (the gradient of make* is the same gather)."""
    xp, a, out = call.xp, call.inputs[-1], call.outputs[0]
    rows, cols = (xp.asarray(i) for i in _index_of(call, a.shape[-1]))

    def run():
        put(xp, out, a[..., rows, cols])
    return run


@kernel("_linalg_makediag", "_linalg_maketrian", "_backward_linalg_extractdiag",
        "_backward_linalg_extracttrian")
def make(call):
    """Scatter the entries into zeros (the gradient of extract* is the same scatter)."""
    xp, a, out = call.xp, call.inputs[0], call.outputs[0]
    rows, cols = (xp.asarray(i) for i in _index_of(call, out.shape[-1]))

    def run():
        out.fill(0)
        out[..., rows, cols] = a
    return run
