"""Native kernels of Convolution, Deconvolution and Pooling.

Convolution is im2col through a strided window view (one copy into a column buffer made at
bind time) and one batched matmul over groups that writes the output directly. Deconvolution
is the transpose: one matmul into columns, then a strided scatter-add per kernel offset
(col2im). Pooling runs one ufunc per kernel offset over strided slices of a padded buffer.
Channel-last layouts run on transposed views. Everything is written against ``call.xp``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from graphexec.core.ops.conv import (conv_geometry, deconv_adjustments, deconv_pads,
                                     pool_count_region, pool_geometry)

from .base import kernel
from .nn import matmul_into, reshaper, work_dtype

__all__ = ["channel_first_view", "windows"]


def channel_first_view(arr, last: bool):
    """(N, *spatial, C) viewed as (N, C, *spatial) when ``last``; ``arr`` otherwise."""
    if not last:
        return arr
    return arr.transpose(0, arr.ndim - 1, *range(1, arr.ndim - 1))


def windows(xp, a, kernel: tuple, stride: tuple, dilate: tuple, out_sp: tuple):
    """A read-only strided view (N, C, *kernel, *out_sp) of every window of ``a``."""
    st = a.strides
    nd = len(kernel)
    shape = (*a.shape[:2], *kernel, *out_sp)
    strides = (*st[:2], *(st[2 + i] * dilate[i] for i in range(nd)),
               *(st[2 + i] * stride[i] for i in range(nd)))
    return xp.lib.stride_tricks.as_strided(a, shape=shape, strides=strides)


def _padder(xp, x, pads: tuple, fill):
    """(refresh, source): ``source`` is ``x`` or a buffer holding ``x`` inside a border of
    ``fill`` (``pads`` = (left, right) per spatial axis); ``refresh()`` copies ``x`` in."""
    if not any(l or r for l, r in pads):
        return (lambda: None), x
    shape = (*x.shape[:2], *(n + l + r for n, (l, r) in zip(x.shape[2:], pads)))
    buf = xp.full(shape, fill, dtype=x.dtype)
    inner = buf[(slice(None), slice(None),
                 *(slice(l, l + n) for n, (l, _) in zip(x.shape[2:], pads)))]
    return (lambda: xp.copyto(inner, x)), buf


def _offset_slices(kernel: tuple, stride: tuple, dilate: tuple, count: tuple) -> list[tuple]:
    """For every kernel offset, the strided slices picking its element of each window."""
    out = []
    for off in itertools.product(*(range(k) for k in kernel)):
        out.append((slice(None), slice(None), *(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(off, dilate, stride, count))))
    return out


def _bias_adder(xp, call, out, last: bool):
    if call.params.no_bias:
        return lambda: None
    bias = call.inputs[2]
    b = bias if last else bias.reshape(-1, *([1] * (out.ndim - 2)))
    return lambda: xp.add(out, b, out=out)


# -- Convolution --------------------------------------------------------------------------
def _im2col(xp, x, geo, out_sp: tuple, groups: int):
    """A zero-argument callable returning the columns (N, groups, C/groups*K, L)."""
    n, c = x.shape[:2]
    shape = (n, groups, c // groups * math.prod(geo.kernel), math.prod(out_sp))
    if all(k == 1 for k in geo.kernel) and all(s == 1 for s in geo.stride) and not any(geo.pad):
        return reshaper(x, shape)
    refresh, src = _padder(xp, x, tuple((p, p) for p in geo.pad), 0)
    win = windows(xp, src, geo.kernel, geo.stride, geo.dilate, out_sp)
    cols = xp.empty(win.shape, dtype=x.dtype)
    flat = cols.reshape(shape)

    def run():
        refresh()
        xp.copyto(cols, win)
        return flat
    return run


@kernel("Convolution")
def convolution(call):
    """out[n, f] = sum over c, window of weight[f, c] * data[n, c, window] (+ bias)."""
    xp, p = call.xp, call.params
    geo = conv_geometry(p)
    x = channel_first_view(call.inputs[0], geo.last)
    out = channel_first_view(call.outputs[0], geo.last)
    n, c = x.shape[:2]
    g, f = p.num_group, p.num_filter
    cols = _im2col(xp, x, geo, out.shape[2:], g)
    weight = reshaper(channel_first_view(call.inputs[1], geo.last),
                      (g, f // g, c // g * math.prod(geo.kernel)))
    result_shape = (n, g, f // g, math.prod(out.shape[2:]))
    result = xp.empty(result_shape, out.dtype) if geo.last else out.reshape(result_shape)
    add_bias = _bias_adder(xp, call, call.outputs[0], geo.last)

    def run():
        matmul_into(xp, weight(), cols(), result)
        if geo.last:
            xp.copyto(out, result.reshape(out.shape))
        add_bias()
    return run


# -- Deconvolution ------------------------------------------------------------------------
@kernel("Deconvolution")
def deconvolution(call):
    """The transpose of Convolution: columns = weight^T @ data, scattered back (col2im) into
    an uncropped output, then cropped by the padding (or to target_shape)."""
    xp, p = call.xp, call.params
    geo = conv_geometry(p, "deconvolution")
    adj, target = deconv_adjustments(p, len(geo.kernel))
    x = channel_first_view(call.inputs[0], geo.last)
    out = channel_first_view(call.outputs[0], geo.last)
    n, c, *sp_in = x.shape
    g, f = p.num_group, p.num_filter
    kprod = math.prod(geo.kernel)
    weight = reshaper(channel_first_view(call.inputs[1], geo.last), (g, c // g, f // g * kprod))
    data = reshaper(x, (n, g, c // g, math.prod(sp_in)))
    cols = xp.empty((n, g, f // g * kprod, math.prod(sp_in)), dtype=x.dtype)
    pads = [deconv_pads(v, i, geo, adj, target)[0] for i, v in enumerate(sp_in)]
    extent = [max(s * (v - 1) + d * (k - 1) + 1, pd + o) for v, k, s, d, pd, o in
              zip(sp_in, geo.kernel, geo.stride, geo.dilate, pads, out.shape[2:])]
    full = xp.zeros((n, f, *extent), dtype=work_dtype(x.dtype))
    per_offset = cols.reshape(n, f, kprod, *sp_in)
    targets = [full[sl] for sl in _offset_slices(geo.kernel, geo.stride, geo.dilate, sp_in)]
    crop = full[(slice(None), slice(None), *(slice(pd, pd + o) for pd, o in
                                               zip(pads, out.shape[2:])))]
    add_bias = _bias_adder(xp, call, call.outputs[0], geo.last)

    def run():
        matmul_into(xp, weight().transpose(0, 2, 1), data(), cols)
        full.fill(0)
        for k, t in enumerate(targets):
            xp.add(t, per_offset[:, :, k], out=t)
        xp.copyto(out, crop, casting="unsafe")
        add_bias()
    return run


# -- Pooling ------------------------------------------------------------------------------
def _lowest(dtype):
    dtype = np.dtype(dtype)
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _avg_divisor(xp, p, sp_in: tuple, geo, out_sp: tuple):
    """The number of counted positions in every window: a scalar when all windows count
    prod(kernel), else an array of out_sp's shape (never 0: empty windows give 0 / 1)."""
    per_axis = []
    for x, k, s, pads, o in zip(sp_in, geo.kernel, geo.stride, geo.pad, out_sp):
        lo, hi = pool_count_region(p, x, pads)
        start = np.arange(o) * s - pads[0]
        per_axis.append(np.clip(np.minimum(start + k, hi) - np.maximum(start, lo), 0, None))
    counts = np.ones((), dtype=np.int64)
    for a in per_axis:
        counts = np.multiply.outer(counts, a)
    if (counts == math.prod(geo.kernel)).all():
        return math.prod(geo.kernel)
    return xp.asarray(np.maximum(counts, 1))


def _global_pool(call, x, out, ws):
    xp, p = call.xp, call.params
    axes = tuple(range(2, x.ndim))
    if p.pool_type == "max":
        def run():
            xp.max(x, axis=axes, keepdims=True, out=out)
            if ws is not None and call.is_train:
                flat = x.reshape(*x.shape[:2], -1).argmax(axis=-1)
                xp.copyto(ws.reshape(flat.shape), flat, casting="unsafe")
        return run
    if p.pool_type in ("avg", "sum"):
        fn = xp.mean if p.pool_type == "avg" else xp.sum
        return lambda: fn(x, axis=axes, keepdims=True, out=out,
                          dtype=work_dtype(x.dtype))
    pv = p.p_value
    return lambda: xp.copyto(out, (x.astype(work_dtype(x.dtype)) ** pv).sum(
        axis=axes, keepdims=True) ** (1.0 / pv), casting="unsafe")


def _max_pool(call, src, refresh, slices, out, ws):
    xp = call.xp
    first, rest = slices[0], slices[1:]
    if ws is None or not call.is_train:
        def run():
            refresh()
            xp.copyto(out, src[first])
            for sl in rest:
                xp.maximum(out, src[sl], out=out)
        return run
    better = xp.empty(out.shape, dtype=bool)
    step = xp.empty(out.shape, dtype=ws.dtype)

    def tracked():
        refresh()
        xp.copyto(out, src[first])
        ws.fill(0)
        for k, sl in enumerate(rest, 1):
            # offsets come in increasing order, so max(ws, k * better) records the latest
            # strictly greater element: arithmetic instead of a (much slower) masked copy
            xp.greater(src[sl], out, out=better)
            xp.multiply(better, k, out=step)
            xp.maximum(ws, step, out=ws)
            xp.maximum(out, src[sl], out=out)
    return tracked


def _sum_pool(call, src, refresh, slices, out, divisor):
    """sum / avg / lp: accumulate (powers of) the window elements, float32 for float16."""
    xp, p = call.xp, call.params
    wdt = work_dtype(out.dtype)
    acc = out if out.dtype == wdt else xp.empty(out.shape, wdt)
    pv = p.p_value if p.pool_type == "lp" else 1
    powered = src if pv == 1 else xp.empty(src.shape, wdt)

    def run():
        refresh()
        if pv != 1:
            xp.power(src, pv, out=powered)
        xp.copyto(acc, powered[slices[0]], casting="unsafe")
        for sl in slices[1:]:
            xp.add(acc, powered[sl], out=acc)
        if divisor is not None:
            xp.divide(acc, divisor, out=acc)
        if pv != 1:
            xp.power(acc, 1.0 / pv, out=acc)
        if acc is not out:
            xp.copyto(out, acc, casting="unsafe")
    return run


@kernel("Pooling")
def pooling(call):
    """max / avg / sum / lp pooling. Max pads with the dtype's lowest value (a window over
    padding only gives it, as MXNet). In training the hidden ``workspace`` output receives,
    for each window, the kernel offset of its first maximum (row-major within the window;
    the global-pooling argmax over the plane), from which the gradient routes back."""
    xp, p = call.xp, call.params
    geo, out_sp = pool_geometry(p, call.inputs[0].shape)
    x = channel_first_view(call.inputs[0], geo.last)
    out = channel_first_view(call.outputs[0], geo.last)
    ws = call.outputs[1] if len(call.outputs) > 1 else None
    if p.global_pool:
        return _global_pool(call, x, out, ws)
    is_max = p.pool_type == "max"
    refresh, src = _padder(xp, x, geo.pad, _lowest(x.dtype) if is_max else 0)
    slices = _offset_slices(geo.kernel, geo.stride, geo.dilate, out_sp)
    sp_in = x.shape[2:]
    if is_max:
        return _max_pool(call, src, refresh, slices, out, ws)
    divisor = _avg_divisor(xp, p, sp_in, geo, out_sp) if p.pool_type == "avg" else None
    return _sum_pool(call, src, refresh, slices, out, divisor)
