"""Kernels of the linalg factorizations and reductions (core/ops/linalg_factor.py) and of their
backward operators, following the formulas of MXNet 1.9.1's ``la_op-inl.h``.

det and slogdet: MXNet keeps A's LU factors and pivots in two hidden outputs for its backward;
graphexec's backward inverts A itself, so the kernels keep a copy of A in ``LU`` and zeros in
``pivot`` (hidden outputs: no user and no other node reads them)."""
from __future__ import annotations

import numpy as np

from .base import kernel
from .linalg import put, tr, tri


def _sym_from(xp, a, lower: bool):
    """The symmetric matrices whose ``lower`` (upper) triangle is that of ``a``."""
    t = tri(xp, a, lower)
    return t + tr(tri(xp, a, lower, -1 if lower else 1))


def _linalg_failure(xp, mats, fn, what: str):
    """Run ``fn(mats)``; on a LinAlgError name the first matrix of the batch that fails."""
    try:
        return fn(mats)
    except np.linalg.LinAlgError:
        flat = mats.reshape((-1,) + mats.shape[-2:])
        for k in range(flat.shape[0]):
            try:
                fn(flat[k])
            except np.linalg.LinAlgError:
                raise ValueError(f"matrix {k} of the batch (shape {tuple(mats.shape)}) is "
                                 f"{what}") from None
        raise


@kernel("_linalg_potrf")
def potrf(call):
    """A = L L^T (lower) or U^T U (upper), reading only that triangle of A."""
    xp, p, a, out = call.xp, call.params, call.inputs[0], call.outputs[0]

    def run():
        low = _linalg_failure(xp, _sym_from(xp, a, p.lower), xp.linalg.cholesky,
                              "not symmetric positive definite: its Cholesky factorization "
                              "(potrf) does not exist")
        put(xp, out, low if p.lower else tr(low))
    return run


@kernel("_backward_linalg_potrf")
def potrf_backward(call):
    """dA = 0.5 L^-T copyLTU(L^T dL) L^-1 (L = U^T for the upper factor)."""
    xp, p, (g, b), da = call.xp, call.params, call.inputs, call.outputs[0]

    def run():
        low, dlow = (b, g) if p.lower else (tr(b), tr(g))
        m = xp.matmul(tr(low), dlow)
        inv = xp.linalg.inv(low)
        put(xp, da, 0.5 * xp.matmul(tr(inv), xp.matmul(_sym_from(xp, m, True), inv)))
    return run


def _tri_inverse(xp, b, lower: bool):
    return _linalg_failure(xp, tri(xp, b, lower), xp.linalg.inv,
                           "singular: a Cholesky factor needs a non-zero diagonal")


@kernel("_linalg_potri")
def potri(call):
    """(L L^T)^-1 from the lower factor L (U^T U from the upper one)."""
    xp, p, b, out = call.xp, call.params, call.inputs[0], call.outputs[0]

    def run():
        inv = _tri_inverse(xp, b, p.lower)
        put(xp, out, xp.matmul(tr(inv), inv) if p.lower else xp.matmul(inv, tr(inv)))
    return run


@kernel("_backward_linalg_potri")
def potri_backward(call):
    """dL = -tril(A (G + G^T) L^-T) (the upper factor mirrored)."""
    xp, p, (g, b, a), db = call.xp, call.params, call.inputs, call.outputs[0]

    def run():
        inv = _tri_inverse(xp, b, p.lower)
        sym = g + tr(g)
        if p.lower:
            res = xp.matmul(xp.matmul(a, sym), tr(inv))
        else:
            res = xp.matmul(tr(inv), xp.matmul(sym, a))
        put(xp, db, -tri(xp, res, p.lower))
    return run


@kernel("_linalg_inverse")
def inverse(call):
    xp, a, out = call.xp, call.inputs[0], call.outputs[0]

    def run():
        put(xp, out, _linalg_failure(xp, a, xp.linalg.inv, "singular: it has no inverse"))
    return run


@kernel("_backward_linalg_inverse")
def inverse_backward(call):
    """dA = -B^T G B^T for B = A^-1."""
    xp, (g, b), da = call.xp, call.inputs, call.outputs[0]
    return lambda: put(xp, da, -xp.matmul(tr(b), xp.matmul(g, tr(b))))


@kernel("_linalg_sumlogdiag")
def sumlogdiag(call):
    xp, a, out = call.xp, call.inputs[0], call.outputs[0]

    def run():
        d = xp.diagonal(a, 0, -2, -1)
        put(xp, out, xp.log(d).sum(-1).reshape(out.shape))
    return run


@kernel("_backward_linalg_sumlogdiag")
def sumlogdiag_backward(call):
    xp, (g, a), da = call.xp, call.inputs, call.outputs[0]
    n = a.shape[-1]
    eye = xp.eye(n, dtype=a.dtype)

    def run():
        d = xp.diagonal(a, 0, -2, -1)
        put(xp, da, eye * (g.reshape(a.shape[:-2] + (1,)) / d)[..., None, :])
    return run


# -- gelqf / syevd -----------------------------------------------------------------------------
@kernel("_linalg_gelqf")
def gelqf(call):
    """A = L Q from the Householder QR of A^T (LAPACK's signs, as MXNet's gelqf gets)."""
    xp, a, (q, low) = call.xp, call.inputs[0], call.outputs

    def run():
        qt, r = xp.linalg.qr(tr(a))
        put(xp, q, tr(qt))
        put(xp, low, tr(r))
    return run


@kernel("_backward_linalg_gelqf")
def gelqf_backward(call):
    """dA = L^-T (dQ + copyLTU(M) Q), M = L^T dL - dQ Q^T."""
    xp, (dq, dl, q, low), da = call.xp, call.inputs, call.outputs[0]

    def run():
        m = xp.matmul(tr(low), dl) - xp.matmul(dq, tr(q))
        rhs = dq + xp.matmul(_sym_from(xp, m, True), q)
        put(xp, da, xp.linalg.solve(tr(low), rhs))
    return run


@kernel("_linalg_syevd")
def syevd(call):
    """Eigenvalues ascending; eigenvectors as the rows of U, each signed so that its entry of
    largest magnitude (the first such) is positive, as MXNet's SyevdEigenVecSigns."""
    xp, a, (u, lam) = call.xp, call.inputs[0], call.outputs

    def run():
        w, v = xp.linalg.eigh(a, UPLO="L")
        rows = tr(v)
        k = xp.abs(rows).argmax(-1)[..., None]
        sign = xp.where(xp.take_along_axis(rows, k, -1) < 0, -1.0, 1.0).astype(rows.dtype)
        put(xp, u, rows * sign)
        put(xp, lam, w)
    return run


_EPS = {np.dtype("float32"): 1e-30, np.dtype("float64"): 1e-100}


@kernel("_backward_linalg_syevd")
def syevd_backward(call):
    """dA = U^T Y U with Y_ii = dL_i and Y_ij = (X_ij - X_ji) / (2 max(L_i - L_j, eps)) for
    X = dU U^T (i > j, mirrored)."""
    xp, (du, dl, u, lam), da = call.xp, call.inputs, call.outputs[0]
    eps = _EPS[np.dtype(u.dtype)]

    def run():
        x = xp.matmul(du, tr(u))
        gap = lam[..., :, None] - lam[..., None, :]
        low = (x - tr(x)) / (2 * xp.maximum(gap, eps))
        y = xp.tril(low, -1)
        y = y + tr(y) + dl[..., None] * xp.eye(lam.shape[-1], dtype=lam.dtype)
        put(xp, da, xp.matmul(tr(u), xp.matmul(y, u)))
    return run


# -- det / slogdet -----------------------------------------------------------------------------
@kernel("_linalg_det", "_linalg_slogdet")
def det(call):
    """MXNet's sign * exp(sum log |diag U|) of the LU factorization."""
    xp, a, outs = call.xp, call.inputs[0], call.outputs
    is_det = call.op_name == "_linalg_det"

    def run():
        sign, logdet = xp.linalg.slogdet(a)
        if is_det:
            put(xp, outs[0], (sign * xp.exp(logdet)).reshape(outs[0].shape))
        else:
            put(xp, outs[0], sign.reshape(outs[0].shape))
            put(xp, outs[1], logdet.reshape(outs[1].shape))
        put(xp, outs[-2], a)
        outs[-1].fill(0)
    return run


def _inverse_t_where(xp, a, ok):
    """inv(A)^T for the matrices where ``ok``, zeros elsewhere (their gradient is stopped)."""
    eye = xp.eye(a.shape[-1], dtype=a.dtype)
    mask = ok.reshape(a.shape[:-2] + (1, 1))
    safe = xp.where(mask, a, eye)
    return xp.where(mask, tr(xp.linalg.inv(safe)), 0)


@kernel("_backward_linalg_det")
def det_backward(call):
    """Jacobi's formula: dA = ddet det A^-T; zero where det is 0 (MXNet stops it there)."""
    xp, (g, d, a, _), da = call.xp, call.inputs, call.outputs[0]
    shape = a.shape[:-2] + (1, 1)

    def run():
        inv_t = _inverse_t_where(xp, a, d != 0)
        put(xp, da, (g * d).reshape(shape) * inv_t)
    return run


@kernel("_backward_linalg_slogdet")
def slogdet_backward(call):
    """dA = dlogabsdet A^-T; zero where logabsdet is -inf; the sign has no gradient."""
    xp, (g, _, logdet, a, _p), da = call.xp, call.inputs, call.outputs[0]
    shape = a.shape[:-2] + (1, 1)

    def run():
        inv_t = _inverse_t_where(xp, a, logdet != -np.inf)
        put(xp, da, g.reshape(shape) * inv_t)
    return run
