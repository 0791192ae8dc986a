"""Native kernels of the normalisation family (core/ops/norm.py): InstanceNorm, GroupNorm,
L2Normalization and LRN, and their backward ops. Statistics and float16 data are computed in
float32 (``work_dtype``), as MXNet accumulates them.

InstanceNorm and GroupNorm share one routine: the data seen as (N, groups, rest) with one
scale and shift per group row (InstanceNorm: groups = channels)."""
from __future__ import annotations

from graphexec.core.ops.norm import l2_reduce_axes

from .base import kernel
from .nn import work_dtype

__all__ = ["window_sum"]


def _grouped(x, groups: int):
    return x.reshape(x.shape[0], groups, -1)


def _write(xp, out, value) -> None:
    xp.copyto(out, value.reshape(out.shape), casting="unsafe")


def _norm_forward(xp, x, gamma, beta, out, mean, spread, eps, groups: int, std: bool):
    """out = (x - mean) / sqrt(var + eps) * gamma + beta per (sample, group); ``spread``
    receives the variance (``std=False``) or sqrt(var + eps)."""
    wdt = work_dtype(x.dtype)
    xg = _grouped(x, groups).astype(wdt, copy=False)
    mu = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    sd = xp.sqrt(var + eps)
    y = (xg - mu) / sd
    scale, shift = (a.astype(wdt, copy=False) for a in (gamma, beta))
    y = _scaled(y, x, groups, scale, shift)
    _write(xp, out, y)
    _write(xp, mean, mu)
    _write(xp, spread, sd if std else var)


def _per_row(values, groups: int, rows: int):
    """Per-row (sample, group) parameters: gamma has one value per group row."""
    return values.reshape(1, groups, 1) if values.shape[0] == groups else values


def _scaled(y, x, groups: int, scale, shift):
    return y * _per_row(scale, groups, 0) + _per_row(shift, groups, 0)


def _norm_backward(xp, call, groups: int, std: bool):
    og, x, gamma, mean, spread = call.inputs
    dx, dgamma, dbeta = call.outputs
    wdt = work_dtype(x.dtype)
    eps = call.params.eps

    def run():
        xg = _grouped(x, groups).astype(wdt, copy=False)
        g = _grouped(og, groups).astype(wdt, copy=False)
        mu = mean.reshape(x.shape[0], groups, 1).astype(wdt, copy=False)
        sp = spread.reshape(x.shape[0], groups, 1).astype(wdt, copy=False)
        sd = sp if std else xp.sqrt(sp + eps)
        xhat = (xg - mu) / sd
        if call.req[2] != "null":
            _write(xp, dbeta, g.sum(axis=(0, 2)))
        if call.req[1] != "null":
            _write(xp, dgamma, (g * xhat).sum(axis=(0, 2)))
        if call.req[0] != "null":
            gs = g * _per_row(gamma.astype(wdt, copy=False), groups, 0)
            d = (gs - gs.mean(axis=2, keepdims=True)
                 - xhat * (gs * xhat).mean(axis=2, keepdims=True)) / sd
            _write(xp, dx, d)
    return run


@kernel("InstanceNorm")
def instance_norm(call):
    x, gamma, beta = call.inputs
    out, mean, var = call.outputs
    return lambda: _norm_forward(call.xp, x, gamma, beta, out, mean, var, call.params.eps,
                                 x.shape[1], std=False)


@kernel("_backward_InstanceNorm")
def instance_norm_backward(call):
    return _norm_backward(call.xp, call, call.inputs[1].shape[1], std=False)


@kernel("GroupNorm")
def group_norm(call):
    x, gamma, beta = call.inputs
    out, mean, std = call.outputs
    return lambda: _norm_forward(call.xp, x, gamma, beta, out, mean, std, call.params.eps,
                                 call.params.num_groups, std=True)


@kernel("_backward_GroupNorm")
def group_norm_backward(call):
    return _norm_backward(call.xp, call, call.params.num_groups, std=True)


# -- L2Normalization ---------------------------------------------------------------------------
@kernel("L2Normalization")
def l2_normalization(call):
    xp, p, x = call.xp, call.params, call.inputs[0]
    out, norm = call.outputs
    axes = l2_reduce_axes(p.mode, x.ndim)
    wdt = work_dtype(x.dtype)

    def run():
        xw = x.astype(wdt, copy=False)
        n = xp.sqrt((xw * xw).sum(axis=axes, keepdims=True) + p.eps)
        xp.copyto(out, xw / n, casting="unsafe")
        _write(xp, norm, n)
    return run


@kernel("_backward_L2Normalization")
def l2_normalization_backward(call):
    """d x = (g - y * sum(g y)) / norm over the normalised axes."""
    xp, p = call.xp, call.params
    og, y, norm = call.inputs
    dx = call.outputs[0]
    axes = l2_reduce_axes(p.mode, y.ndim)
    keep = tuple(1 if i in axes else d for i, d in enumerate(y.shape))
    wdt = work_dtype(y.dtype)

    def run():
        g, yw = og.astype(wdt, copy=False), y.astype(wdt, copy=False)
        n = norm.reshape(keep).astype(wdt, copy=False)
        xp.copyto(dx, (g - yw * (g * yw).sum(axis=axes, keepdims=True)) / n, casting="unsafe")
    return run


# -- LRN -----------------------------------------------------------------------------------------
def window_sum(xp, a, nsize: int, out=None):
    """Per channel c, the sum of ``a`` over channels c - h .. c + h, h = (nsize - 1) // 2
    (what MXNet 1.9.1 sums: an even nsize covers nsize - 1 channels); channels outside
    count 0. Written into ``out`` (not ``a``) when given."""
    c, half = a.shape[1], (nsize - 1) // 2
    if out is None:
        out = a.copy()
    else:
        xp.copyto(out, a)
    for shift in range(1, half + 1):
        if shift < c:
            xp.add(out[:, shift:], a[:, :c - shift], out=out[:, shift:])
            xp.add(out[:, :c - shift], a[:, shift:], out=out[:, :c - shift])
    return out


@kernel("LRN")
def lrn(call):
    """In place through the outputs: tmp_norm = knorm + alpha / nsize * window(x^2), then
    out = x * tmp_norm^-beta (one scratch array of squares; float16 through float32)."""
    xp, p, x = call.xp, call.params, call.inputs[0]
    out, tmp = call.outputs
    wdt = work_dtype(x.dtype)
    squares = xp.empty(x.shape, wdt)
    norm = tmp if tmp.dtype == wdt else xp.empty(x.shape, wdt)
    scale, knorm = wdt.type(p.alpha / p.nsize), wdt.type(p.knorm)

    def run():
        xw = x.astype(wdt, copy=False)
        xp.multiply(xw, xw, out=squares)
        window_sum(xp, squares, p.nsize, out=norm)
        xp.multiply(norm, scale, out=norm)
        xp.add(norm, knorm, out=norm)
        xp.power(norm, wdt.type(-p.beta), out=squares)
        xp.multiply(squares, xw, out=squares)
        xp.copyto(out, squares, casting="unsafe")
        if norm is not tmp:
            xp.copyto(tmp, norm, casting="unsafe")
    return run


@kernel("_backward_LRN")
def lrn_backward(call):
    """g t^-beta - 2 beta alpha / nsize * x * window(g x t^(-beta-1)) (the window is
    symmetric, so this is the exact gradient)."""
    xp, p = call.xp, call.params
    og, x, tmp = call.inputs
    dx = call.outputs[0]
    wdt = work_dtype(x.dtype)

    def run():
        g, xw, t = (a.astype(wdt, copy=False) for a in (og, x, tmp))
        inner = window_sum(xp, g * xw * t ** (-p.beta - 1), p.nsize)
        d = g * t ** -p.beta - (2 * p.beta * p.alpha / p.nsize) * xw * inner
        xp.copyto(dx, d, casting="unsafe")
    return run
