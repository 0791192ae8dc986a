"""Native kernels of the backward operators of Convolution, Deconvolution and Pooling.

Convolution: the input's windows are copied once into a channel-major column matrix
(C * kernel rows, batch * positions columns) so the weight gradient is one matmul per group
over the whole batch; the same buffer then receives W^T @ dY, which col2im adds back into the
(padded) input gradient, one strided add per kernel offset. Deconvolution is the transpose:
the windows of the (uncropped) output gradient give both gradients by one matmul each.
Pooling routes every window's gradient back with one ufunc per kernel offset: max to the
window's first maximum (the argmax the training forward stored in its workspace), avg/sum
spread (divided by the counted positions), lp by (x / y) ** (p - 1).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from graphexec.core.ops.common import lowest
from graphexec.core.ops.conv import conv_geometry, deconv_adjustments, deconv_pads, pool_geometry

from .base import OPENMP, kernel, kernel_variant, sequence
from .conv import (Scratch, as_planes, avg_divisor, channel_first_view, first_maximum,
                   max_rows_views, offset_slices, over_planes, pad_into, padded_shape,
                   plane_geometry, window_counts, workspace_planes)
from .conv_fast import is_depthwise, rows_depthwise_backward_runner
from .nn import matmul_into, reshaper, work_dtype
from .nn_grad import nothing, sum_into, target

__all__ = ["batch_last", "window_view", "col2im", "wanted_grads", "bias_grad"]


def batch_last(arr):
    """(N, C, *spatial) seen as (C, *spatial, N): with the batch innermost, the windows of
    stride-1 layers are long contiguous runs (im2col copies and col2im adds stay fast)."""
    return arr.transpose(1, *range(2, arr.ndim), 0)


def channel_first(arr):
    """(C, *spatial, N) seen as (N, C, *spatial)."""
    return arr.transpose(arr.ndim - 1, *range(arr.ndim - 1))


def window_view(xp, buf, kernel: tuple, stride: tuple, dilate: tuple, out_sp: tuple):
    """A read-only strided view (C, *kernel, *out_sp, N) of every window of ``buf`` (C,
    *spatial, N): the im2col matrix with (channel, offset) rows and (position, sample)
    columns once copied."""
    st, nd = buf.strides, len(kernel)
    shape = (buf.shape[0], *kernel, *out_sp, buf.shape[-1])
    strides = (st[0], *(st[1 + i] * dilate[i] for i in range(nd)),
               *(st[1 + i] * stride[i] for i in range(nd)), st[-1])
    return xp.lib.stride_tricks.as_strided(buf, shape=shape, strides=strides)


def col2im(xp, cols, dst, kernel: tuple, stride: tuple, dilate: tuple, out_sp: tuple) -> None:
    """Zero ``dst`` (C, *spatial, N) and add the columns (C, *kernel, *out_sp, N) back into
    the windows they came from, one strided add per kernel offset."""
    dst.fill(0)
    for off in itertools.product(*(range(k) for k in kernel)):
        t = dst[(slice(None), *(slice(o * d, o * d + s * (n - 1) + 1, s)
                                for o, d, s, n in zip(off, dilate, stride, out_sp)))]
        xp.add(t, cols[(slice(None), *off)], out=t, casting="unsafe")


def _inner(buf, pads: tuple):
    """``buf`` (C, *padded spatial, N) without its border."""
    return buf[(slice(None), *(slice(l, buf.shape[1 + i] - r) for i, (l, r) in enumerate(pads)))]


def _views(call, last: bool):
    """(dY, data, weight) and (dX, dW) seen channel-first."""
    return ([channel_first_view(a, last) for a in call.inputs[:3]],
            [channel_first_view(a, last) for a in call.outputs[:2]])


def bias_grad(xp, call, og) -> None:
    """db = dY summed over the batch and positions (channel-first ``og``)."""
    if not call.params.no_bias and call.req[2] != "null":
        sum_into(xp, og, (0, *range(2, og.ndim)), call.outputs[2])


def _weight_grad(xp, dw, shape):
    """A callable ``f(a3, cols3)`` writing dW = a @ cols^T per group (through a buffer for a
    channel-last weight)."""
    dw3, commit = target(xp, dw, shape)

    def run(a3, cols3):
        matmul_into(xp, a3, cols3.transpose(0, 2, 1), dw3)
        commit()
    return run


def wanted_grads(call) -> tuple[bool, bool, bool]:
    """Whether dX, dW and db are requested."""
    bias = not call.params.no_bias and call.req[2] != "null"
    return call.req[0] != "null", call.req[1] != "null", bias


# -- Convolution ----------------------------------------------------------------------------
@kernel_variant("_backward_Convolution", OPENMP)
@kernel("_backward_Convolution")
def convolution_backward(call):
    """Inputs (dY, data, weight[, bias]); outputs (dX, dW[, db]). The data's windows are
    copied into columns (C * kernel, positions * batch): dW = dY @ cols^T; the same buffer
    then takes W^T @ dY, which col2im adds back into the padded input gradient. Scratch
    buffers live in the executor's workspace. Depthwise layers over channels-last data:
    compiled loops on numba's threads, no columns (also the ``openmp`` variant)."""
    xp, p = call.xp, call.params
    geo = conv_geometry(p)
    (og, x, w), (dx, dw) = _views(call, geo.last)
    n, c = x.shape[:2]
    g, f = p.num_group, p.num_filter
    out_sp = og.shape[2:]
    rows, cols_n = c // g * math.prod(geo.kernel), n * math.prod(out_sp)
    pads = tuple((q, q) for q in geo.pad)
    want_x, want_w, want_b = wanted_grads(call)
    if not (want_x or want_w):
        return (lambda: bias_grad(xp, call, og)) if want_b else nothing
    if is_depthwise(p, geo, c, x.dtype):
        direct = rows_depthwise_backward_runner(og, x, w, dx if want_x else None,
                                                dw if want_w else None, geo)
        if direct is not None:
            return sequence([direct, lambda: bias_grad(xp, call, og)])
    padded = padded_shape((c, *x.shape[2:], n), pads, 1)
    specs = {"og_t": ((f, *out_sp, n), og.dtype),
             "cols": ((c, *geo.kernel, *out_sp, n), x.dtype),
             "x_t": (padded, x.dtype) if want_w else None,
             "dst": (padded, work_dtype(dx.dtype)) if want_x else None}
    scratch = Scratch(call, **{k: v for k, v in specs.items() if v is not None})
    weight_grad = _weight_grad(xp, dw, (g, f // g, rows)) if want_w else None
    weight = reshaper(w, (g, f // g, rows))

    def run():
        bufs = scratch.take()
        og_t, cols = bufs["og_t"], bufs["cols"]
        xp.copyto(og_t, batch_last(og))
        og3, cols3 = og_t.reshape(g, f // g, cols_n), cols.reshape(g, rows, cols_n)
        if want_w:
            x_t = pad_into(xp, batch_last(x), bufs["x_t"], pads, 0, 1)
            xp.copyto(cols, window_view(xp, x_t, geo.kernel, geo.stride, geo.dilate, out_sp))
            weight_grad(og3, cols3)
        if want_x:
            matmul_into(xp, weight().transpose(0, 2, 1), og3, cols3)  # the columns' gradient
            col2im(xp, cols, bufs["dst"], geo.kernel, geo.stride, geo.dilate, out_sp)
            xp.copyto(dx, channel_first(_inner(bufs["dst"], pads)), casting="unsafe")
        bias_grad(xp, call, og)
    return run


# -- Deconvolution --------------------------------------------------------------------------
@kernel("_backward_Deconvolution")
def deconvolution_backward(call):
    """The output gradient, placed back into the uncropped output extent, is cut into the
    windows each input position fed (columns F * kernel, positions * batch): dX = W @ cols,
    dW = X @ cols^T (per group)."""
    xp, p = call.xp, call.params
    geo = conv_geometry(p, "deconvolution")
    adj, target_shape = deconv_adjustments(p, len(geo.kernel))
    (og, x, w), (dx, dw) = _views(call, geo.last)
    n, c, *sp_in = x.shape
    g, f = p.num_group, p.num_filter
    pads = [deconv_pads(v, i, geo, adj, target_shape)[0] for i, v in enumerate(sp_in)]
    extent = [max(s * (v - 1) + d * (k - 1) + 1, pd + o) for v, k, s, d, pd, o in
              zip(sp_in, geo.kernel, geo.stride, geo.dilate, pads, og.shape[2:])]
    og_pads = tuple((pd, e - pd - o) for pd, e, o in zip(pads, extent, og.shape[2:]))
    rows, cols_n = f // g * math.prod(geo.kernel), n * math.prod(sp_in)
    want_x, want_w, want_b = wanted_grads(call)
    if not (want_x or want_w):
        return (lambda: bias_grad(xp, call, og)) if want_b else nothing
    specs = {"og_t": ((f, *extent, n), og.dtype),
             "cols": ((f, *geo.kernel, *sp_in, n), og.dtype),
             "x_t": ((c, *sp_in, n), x.dtype) if want_w else None,
             "dx_t": ((c, *sp_in, n), dx.dtype) if want_x else None}
    scratch = Scratch(call, **{k: v for k, v in specs.items() if v is not None})
    weight_grad = _weight_grad(xp, dw, (g, c // g, rows)) if want_w else None
    weight = reshaper(w, (g, c // g, rows))

    def run():
        bufs = scratch.take()
        og_t = pad_into(xp, batch_last(og), bufs["og_t"], og_pads, 0, 1)
        cols = bufs["cols"]
        xp.copyto(cols, window_view(xp, og_t, geo.kernel, geo.stride, geo.dilate, tuple(sp_in)))
        cols3 = cols.reshape(g, rows, cols_n)
        if want_w:
            xp.copyto(bufs["x_t"], batch_last(x))
            weight_grad(bufs["x_t"].reshape(g, c // g, cols_n), cols3)
        if want_x:
            matmul_into(xp, weight(), cols3, bufs["dx_t"].reshape(g, c // g, cols_n))
            xp.copyto(dx, channel_first(bufs["dx_t"]))
        bias_grad(xp, call, og)
    return run


# -- Pooling --------------------------------------------------------------------------------
def _lp_factor(xp, og, y, pv: int, wdt):
    """dY * y ** (1 - p), 0 where y is 0 (MXNet gives 0 there, not nan)."""
    yw = y.astype(wdt, copy=False)
    if pv == 1:
        return og.astype(wdt, copy=False)
    zero = yw == 0
    return og * xp.where(zero, 1, yw) ** (1 - pv) * ~zero


@kernel("_backward_Pooling")
def pooling_backward(call):
    """Inputs (dY, dY_workspace, data, out, workspace) for channel-first max pooling, else
    (dY, data, out); one output, the data's gradient, accumulated in a padded scratch
    buffer (float32 for float16) when there is padding."""
    xp, p = call.xp, call.params
    if call.req[0] == "null":
        return nothing
    ins = call.inputs
    og, x, y = (ins[0], ins[2], ins[3]) if len(ins) == 5 else ins
    ws = ins[4] if len(ins) == 5 else None
    geo, out_sp = pool_geometry(p, x.shape)
    og, x, y, dx = (channel_first_view(a, geo.last) for a in (og, x, y, call.outputs[0]))
    compiled = _compiled_pooling_backward(p, og, ws, dx, geo)
    if compiled is not None:
        return compiled
    if p.global_pool:
        return _global_backward(call, og, x, y, ws, dx)
    slices = offset_slices(geo.kernel, geo.stride, geo.dilate, out_sp)
    overlap = any(s < k for s, k in zip(geo.stride, geo.kernel))
    scratch = Scratch(call, **_pool_scratch(p, geo, og, x, dx, ws, overlap))
    fill = lowest(x.dtype) if p.pool_type == "max" else 0
    route = _ROUTES.get(p.pool_type, _spread_avg)(xp, p, geo, slices, og, y, ws, out_sp, x)
    inner = (slice(None), slice(None), *(slice(l, l + n) for n, (l, _) in
                                         zip(dx.shape[2:], geo.pad)))

    def run():
        bufs = scratch.take()
        dst = bufs.get("dst", dx)
        src = pad_into(xp, x, bufs["src"], geo.pad, fill) if "src" in bufs else x
        dst.fill(0)
        route(bufs, src, _Spread(xp, dst, slices, bufs.get("tmp")))
        if dst is not dx:
            xp.copyto(dx, dst[inner], casting="unsafe")
    return run


def _compiled_pooling_backward(p, og, ws, dx, geo):
    """The run function of a 1-D or 2-D channel-first pooling's gradient through the
    compiled plane loops (:mod:`.pool_loops`, MXNet's order: max adds each dY at its
    window's first maximum, read from the int32 workspace ``ws``; avg and sum add dY /
    count over each window), or None where they do not apply (:func:`.conv.as_planes`, lp
    and channels-last pooling, global max, avg of the 'full' convention, whose MXNet
    gradient divides by other counts than its forward)."""
    found = None if geo.last or p.pool_type == "lp" else as_planes(og, dx)
    if found is None:
        return _compiled_max_rows_backward(p, og, ws, dx, geo)
    og_planes, dx_planes = found
    if p.pool_type == "max":
        where = None if p.global_pool else workspace_planes(ws, og_planes)
        return None if where is None else over_planes(
            "max_planes_backward", og_planes, where, dx_planes, *plane_geometry(geo))
    average = p.pool_type == "avg"
    if average and p.pooling_convention == "full":
        return None
    counts = window_counts(p, geo, dx_planes, og_planes, dx.shape, og.shape)
    return over_planes("sum_planes_backward", og_planes, dx_planes, counts,
                       *plane_geometry(geo), average)


def _compiled_max_rows_backward(p, og, ws, dx, geo):
    """The run function of a 2-D max pooling's gradient over channels-last data through the
    compiled rows loop (:func:`.pool_loops._max_rows_backward`), or None where it does not
    apply (:func:`.conv.max_rows_views`)."""
    found = None if ws is None else max_rows_views(p, geo, dx, og, ws)
    if found is None:
        return None
    dx_rows, og_rows, where = found
    return over_planes("max_rows_backward", og_rows, where, dx_rows, *plane_geometry(geo))


def _pool_scratch(p, geo, og, x, dx, ws, overlap: bool) -> dict:
    """The scratch arrays pooling_backward needs (shapes and dtypes by name)."""
    wdt = work_dtype(dx.dtype)
    padded = any(l or r for l, r in geo.pad)
    specs = {}
    if padded or wdt != dx.dtype:
        specs["dst"] = (padded_shape(dx.shape, geo.pad), wdt)
    if overlap:
        specs["tmp"] = (og.shape, wdt)
    if p.pool_type == "max":
        specs["hit"] = (og.shape, bool)
    if p.pool_type == "max" and ws is None:
        specs["ws"] = (og.shape, np.int32)
    if padded and (p.pool_type == "lp" or (p.pool_type == "max" and ws is None)):
        specs["src"] = (padded_shape(x.shape, geo.pad), x.dtype)
    if p.pool_type in ("avg", "sum"):
        specs["share"] = (og.shape, wdt)
    return specs


class _Spread:
    """Writes one value per window to the window's position at each kernel offset of
    ``dst``: a copy when windows do not overlap, an add (through ``tmp``) when they do."""

    def __init__(self, xp, dst, slices: list, tmp):
        self.xp, self.dst, self.slices, self.tmp = xp, dst, slices, tmp

    def put(self, k: int, value_fn) -> None:
        """The value ``value_fn(out)`` writes into ``out``, at offset ``k``."""
        t = self.dst[self.slices[k]]
        if self.tmp is None:
            value_fn(t)
        else:
            value_fn(self.tmp)
            self.xp.add(t, self.tmp, out=t)

    def add(self, k: int, value) -> None:
        """``value`` (an array of the output's shape) at offset ``k``."""
        t = self.dst[self.slices[k]]
        if self.tmp is None:
            self.xp.copyto(t, value, casting="unsafe")
        else:
            self.xp.add(t, value, out=t, casting="unsafe")


def _spread_max(xp, p, geo, slices, og, y, ws, out_sp, x):
    """dY to each window's first maximum: the workspace holds its kernel offset (from the
    training forward), or, without one (channel-last), it is found again by comparing the
    window with the output, last offset first so the first maximum wins."""
    def route(bufs, src, spread):
        hit = bufs["hit"]
        where = ws
        if where is None:
            where = bufs["ws"]
            where.fill(0)
            for k in reversed(range(len(slices))):
                xp.equal(src[slices[k]], y, out=hit)
                xp.copyto(where, k, where=hit)
        for k in range(len(slices)):
            xp.equal(where, k, out=hit)
            spread.put(k, lambda out: xp.multiply(og, hit, out=out, casting="unsafe"))
    return route


def _spread_lp(xp, p, geo, slices, og, y, ws, out_sp, x):
    """d y / d x_i = (x_i / y) ** (p - 1) for y = (sum x ** p) ** (1 / p)."""
    pv, wdt = p.p_value, work_dtype(og.dtype)

    def route(bufs, src, spread):
        factor = _lp_factor(xp, og, y, pv, wdt)
        for k, sl in enumerate(slices):
            spread.put(k, lambda out, sl=sl: xp.multiply(factor, src[sl] ** (pv - 1), out=out,
                                                         casting="unsafe"))
    return route


def _spread_avg(xp, p, geo, slices, og, y, ws, out_sp, x):
    """dY / (counted positions) to every position of the window (sum: dY)."""
    divisor = avg_divisor(xp, p, x.shape[2:], geo, out_sp) if p.pool_type == "avg" else 1

    def route(bufs, src, spread):
        share = bufs["share"]
        xp.divide(og, divisor, out=share, casting="unsafe")
        for k in range(len(slices)):
            spread.add(k, share)
    return route


_ROUTES = {"max": _spread_max, "lp": _spread_lp}


def _global_backward(call, og, x, y, ws, dx):
    xp, p = call.xp, call.params
    n, c = x.shape[:2]
    size = math.prod(x.shape[2:])
    if p.pool_type == "max":
        flat, commit = target(xp, dx, (n * c, size))
        rows = xp.arange(n * c)

        def route():
            idx = (ws.reshape(-1) if ws is not None
                   else first_maximum(x.reshape(n * c, size), y.reshape(n * c, 1)))
            flat.fill(0)
            flat[rows, idx] = og.reshape(-1)
            commit()
        return route
    if p.pool_type in ("avg", "sum"):
        scale = 1.0 / size if p.pool_type == "avg" else 1.0
        return lambda: xp.copyto(dx, og * scale, casting="unsafe")
    pv = p.p_value
    wdt = work_dtype(og.dtype)
    return lambda: xp.copyto(dx, _lp_factor(xp, og, y, pv, wdt) * x.astype(wdt) ** (pv - 1),
                             casting="unsafe")
