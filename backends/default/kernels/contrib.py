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
