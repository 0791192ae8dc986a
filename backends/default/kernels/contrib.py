"""Kernels of core/ops/contrib.py: allclose, quadratic, gradientmultiplier, the
straight-through estimators, index_copy, fft / ifft (unnormalised, complex values as
interleaved (real, imaginary) pairs on the last axis), count_sketch, _histogram and
IdentityAttachKLSparseReg, with their backward operators."""
from __future__ import annotations

import numpy as np

from .base import kernel


def _store(xp, out, value) -> None:
    xp.copyto(out, value, casting="unsafe")


@kernel("_contrib_allclose")
def allclose(call):
    """|a - b| <= atol + rtol |b| everywhere (NaNs equal with equal_nan), as a uint8 flag."""
    xp, (a, b), out, p = call.xp, call.inputs, call.outputs[0], call.params

    def run():
        close = (a == b) | (xp.abs(a - b) <= p.atol + p.rtol * xp.abs(b))
        nan_a, nan_b = xp.isnan(a), xp.isnan(b)
        either = nan_a | nan_b
        close = xp.where(either, (nan_a == nan_b) & p.equal_nan, close)
        out.fill(1 if bool(close.all()) else 0)
    return run


@kernel("_contrib_quadratic", inplace=True)
def quadratic(call):
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    return lambda: _store(xp, out, (p.a * x + p.b) * x + p.c)


@kernel("_contrib_backward_quadratic", inplace=True)
def quadratic_backward(call):
    xp, (og, x), dx, p = call.xp, call.inputs, call.outputs[0], call.params
    return lambda: _store(xp, dx, og * (2 * p.a * x + p.b))


@kernel("_contrib_gradientmultiplier", "_contrib_round_ste", "_contrib_sign_ste", inplace=True)
def ste_forward(call):
    """gradientmultiplier: the identity; the estimators: round / sign."""
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    fn = {"_contrib_round_ste": xp.round, "_contrib_sign_ste": xp.sign}.get(call.op_name)
    if fn is None:
        return (lambda: None) if out is x else (lambda: xp.copyto(out, x))
    if call.op_name == "_contrib_round_ste":
        # MXNet rounds halves away from zero (C round), numpy to even
        return lambda: _store(xp, out, xp.sign(x) * xp.floor(xp.abs(x) + 0.5))
    return lambda: fn(x, out=out)


@kernel("_contrib_backward_gradientmultiplier", inplace=True)
def gradientmultiplier_backward(call):
    xp, og, dx = call.xp, call.inputs[0], call.outputs[0]
    return lambda: _store(xp, dx, og * call.params.scalar)


@kernel("_contrib_index_copy")
def index_copy(call):
    xp, (old, index, new), out = call.xp, call.inputs, call.outputs[0]

    def run():
        xp.copyto(out, old)
        out[index.astype(np.int64)] = new
    return run


@kernel("_contrib_backward_index_copy")
def index_copy_backward(call):
    """old: the output gradient with the copied rows zeroed; new: the copied rows."""
    xp, (og, _old, index, _new) = call.xp, call.inputs
    d_old, d_index, d_new = call.outputs

    def run():
        rows = index.astype(np.int64)
        if call.req[0] != "null":
            xp.copyto(d_old, og)
            d_old[rows] = 0
        if call.req[1] != "null":
            d_index.fill(0)
        if call.req[2] != "null":
            _store(xp, d_new, og[rows])
    return run


@kernel("_contrib_fft")
def fft(call):
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]

    def run():
        y = xp.fft.fft(x.astype(np.float64), axis=-1)
        pairs = out.reshape(out.shape[:-1] + (-1, 2))
        _store(xp, pairs[..., 0], y.real)
        _store(xp, pairs[..., 1], y.imag)
    return run


@kernel("_contrib_ifft")
def ifft(call):
    """The real part of the unnormalised inverse transform (cuFFT's, as MXNet)."""
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]

    def run():
        pairs = x.astype(np.float64).reshape(x.shape[:-1] + (-1, 2))
        z = pairs[..., 0] + 1j * pairs[..., 1]
        _store(xp, out, xp.fft.ifft(z, axis=-1).real * z.shape[-1])
    return run


@kernel("_contrib_count_sketch")
def count_sketch(call):
    """out[n, h[i]] += s[i] * data[n, i]."""
    (x, h, s), out = call.inputs, call.outputs[0]

    def run():
        out.fill(0)
        cols = h.reshape(-1).astype(np.int64)
        contrib = x * s.reshape(1, -1)
        for i in range(x.shape[1]):
            out[:, cols[i]] += contrib[:, i]
    return run


@kernel("_backward_contrib_count_sketch")
def count_sketch_backward(call):
    xp, (og, h, s) = call.xp, call.inputs
    dx = call.outputs[0]

    def run():
        _store(xp, dx, og[:, h.reshape(-1).astype(np.int64)] * s.reshape(1, -1))
        for k in (1, 2):
            if call.req[k] != "null":
                call.outputs[k].fill(0)
    return run


def _bin_bounds(p, dtype) -> np.ndarray:
    lo, hi, n = p.range[0], p.range[1], p.bin_cnt
    i = np.arange(n + 1, dtype=np.float64)
    return ((hi * i + (n - i) * lo) / n).astype(dtype)


@kernel("_histogram")
def histogram(call):
    """Counts per bin (the last bin closed); values outside the bounds are not counted."""
    xp, p = call.xp, call.params
    x = call.inputs[0]
    hist, edges = call.outputs

    def run():
        bounds = xp.asarray(_bin_bounds(p, x.dtype)) if p.bin_cnt is not None \
            else call.inputs[1]
        n = bounds.shape[0] - 1
        flat = x.reshape(-1)
        inside = (flat >= bounds[0]) & (flat <= bounds[-1])
        idx = xp.minimum(xp.searchsorted(bounds, flat[inside], side="right") - 1, n - 1)
        _store(xp, hist, xp.bincount(idx, minlength=n)[:n])
        _store(xp, edges, bounds)
    return run


@kernel("IdentityAttachKLSparseReg", inplace=True)
def kl_sparse_reg(call):
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    return (lambda: None) if out is x else (lambda: xp.copyto(out, x))


@kernel("_backward_IdentityAttachKLSparseReg")
def kl_sparse_reg_backward(call):
    """Moves the running average of each feature's mean activation, then adds the KL
    sparseness penalty's gradient to the output gradient."""
    xp, p = call.xp, call.params
    og, x, moving = call.inputs
    dx = call.outputs[0]
    rho, mom = p.sparseness_target, p.momentum

    def run():
        _store(xp, moving, mom * moving + (1 - mom) * x.mean(axis=0))
        m = moving.reshape(1, -1)
        _store(xp, dx, og + p.penalty * (-rho / m + (1 - rho) / (1 - m)))
        if len(call.outputs) > 1 and call.req[1] != "null":
            call.outputs[1].fill(0)
    return run


# -- hawkesll -------------------------------------------------------------------------------------
def _hawkes(lda, alpha, beta, state, lags, marks, valid, max_time, grads: bool):
    """Log-likelihood per sample and the final states (float64, on the host); with
    ``grads`` also d ll / d (lda, alpha, beta) per sample, the derivative of each state with
    respect to its beta carried along (the states depend on beta only)."""
    n, k = lda.shape
    ll, s, ds = np.zeros(n), state.astype(np.float64).copy(), np.zeros((n, k))
    last, g_mu, g_a, g_b = (np.zeros((n, k)) for _ in range(4))
    rows, t = np.arange(n), np.zeros(n)
    for j in range(lags.shape[1]):
        on = j < valid
        c = marks[:, j].astype(np.int64)
        t = t + np.where(on, lags[:, j], 0.0)
        d = t - last[rows, c]
        b, a, mu, sc, dsc = beta[c], alpha[c], lda[rows, c], s[rows, c], ds[rows, c]
        ed = np.exp(-b * d)
        lam = mu + a * b * sc * ed
        ll += np.where(on, np.log(lam) - mu * d - a * sc * (1 - ed), 0.0)
        if grads:
            d_ed = -d * ed
            d_lam = a * (sc * ed + b * dsc * ed + b * sc * d_ed)
            np.add.at(g_mu, (rows[on], c[on]), (1 / lam - d)[on])
            np.add.at(g_a, (rows[on], c[on]), (b * sc * ed / lam - sc * (1 - ed))[on])
            np.add.at(g_b, (rows[on], c[on]),
                      (d_lam / lam - a * (dsc * (1 - ed) - sc * d_ed))[on])
            ds[rows[on], c[on]] = (dsc * ed + sc * d_ed)[on]
        s[rows[on], c[on]] = (1 + sc * ed)[on]
        last[rows[on], c[on]] = t[on]
    d = max_time[:, None] - last
    ed = np.exp(-beta[None, :] * d)
    ll -= (lda * d + alpha[None, :] * s * (1 - ed)).sum(axis=1)
    if grads:
        g_mu -= d
        g_a -= s * (1 - ed)
        g_b -= alpha[None, :] * (ds * (1 - ed) + s * d * ed)
    return ll, s * ed, (g_mu, g_a, g_b)


def _host(xp, arrays):
    return [np.asarray(a if xp is np else a.get(), np.float64) for a in arrays]


@kernel("_contrib_hawkesll")
def hawkesll(call):
    xp = call.xp
    out_ll, out_state = call.outputs

    def run():
        ll, state, _ = _hawkes(*_host(xp, call.inputs), grads=False)
        _store(xp, out_ll, xp.asarray(ll))
        _store(xp, out_state, xp.asarray(state))
    return run


@kernel("_contrib_backward_hawkesll")
def hawkesll_backward(call):
    """The log-likelihood's head gradient times d ll / d (lda, alpha, beta); alpha and beta
    sum over the batch."""
    xp = call.xp

    def run():
        host = _host(xp, call.inputs)
        og = host[0]
        _, _, (g_mu, g_a, g_b) = _hawkes(*host[2:], grads=True)
        values = [g_mu * og[:, None], (g_a * og[:, None]).sum(0), (g_b * og[:, None]).sum(0)]
        for k, out in enumerate(call.outputs):
            if call.req[k] != "null":
                _store(xp, out, xp.asarray(values[k]) if k < 3 else 0)
    return run
