"""Native kernels of the geometry family (core/ops/geometry.py): Crop, GridGenerator,
BilinearSampler, SpatialTransformer, Correlation, im2col and col2im, and their backward ops.

The sampler reads the four neighbours of every grid point at once, as rows of channels of the
data moved channel-last (zero outside the data), with MXNet's weights; its data gradient is
one ``bincount`` per corner.
Correlation loops over displacements and kernel offsets only, each step a product of two
strided views over the whole batch."""
from __future__ import annotations

import itertools
import math

import numpy as np

from graphexec.core.ops.geometry import correlation_geometry, crop_box, patch_geometry

from .base import kernel
from .conv import offset_slices, windows

__all__ = ["affine_grid", "sample", "sample_backward"]


# -- Crop -------------------------------------------------------------------------------------
def _box(call, data_shape, like_shape):
    top, left, h, w = crop_box(call.params, data_shape, like_shape)
    return (slice(None), slice(None), slice(top, top + h), slice(left, left + w))


@kernel("Crop")
def crop(call):
    xs = call.inputs
    box = _box(call, xs[0].shape, xs[1].shape if len(xs) > 1 else None)
    return lambda: call.xp.copyto(call.outputs[0], xs[0][box])


@kernel("_backward_Crop")
def crop_backward(call):
    og, outs = call.inputs[0], call.outputs
    box = _box(call, outs[0].shape, outs[1].shape if len(outs) > 1 else None)

    def run():
        for o in outs:
            o.fill(0)
        call.xp.copyto(outs[0][box], og)
    return run


# -- GridGenerator ----------------------------------------------------------------------------
def affine_grid(xp, h: int, w: int, dtype):
    """(3, h * w): x, y in [-1, 1] (x = -1 + j * (2 / (w - 1)) in ``dtype``, as MXNet) and 1."""
    dtype = np.dtype(dtype)
    j = np.arange(h * w) % w
    i = np.arange(h * w) // w
    x = dtype.type(-1) + j.astype(dtype) * dtype.type(2.0 / (w - 1))
    y = dtype.type(-1) + i.astype(dtype) * dtype.type(2.0 / (h - 1))
    return xp.asarray(np.stack([x, y, np.ones(h * w, dtype)]))


def _pixel_grid(xp, h: int, w: int, dtype):
    """(1, 2, h, w): the pixel coordinates x, y and the (1, 2, 1, 1) half extents."""
    dtype = np.dtype(dtype)
    grid = np.stack(np.meshgrid(np.arange(w), np.arange(h))).astype(dtype)[None]
    half = np.array([(w - 1.0) / 2.0, (h - 1.0) / 2.0], dtype).reshape(1, 2, 1, 1)
    return xp.asarray(grid), xp.asarray(half)


@kernel("GridGenerator")
def grid_generator(call):
    xp, p, x, out = call.xp, call.params, call.inputs[0], call.outputs[0]
    n, _, h, w = out.shape
    if p.transform_type == "affine":
        grid = affine_grid(xp, h, w, x.dtype)
        flat = out.reshape(n, 2, h * w)
        return lambda: xp.matmul(x.reshape(n, 2, 3), grid, out=flat)
    pixels, half = _pixel_grid(xp, h, w, x.dtype)
    return lambda: xp.subtract((x + pixels) / half, 1, out=out)


@kernel("_backward_GridGenerator")
def grid_generator_backward(call):
    xp, p, og, dx = call.xp, call.params, call.inputs[0], call.outputs[0]
    n, _, h, w = og.shape
    if p.transform_type == "affine":
        grid = affine_grid(xp, h, w, og.dtype)
        return lambda: xp.matmul(og.reshape(n, 2, h * w), grid.T, out=dx.reshape(n, 2, 3))
    _, half = _pixel_grid(xp, h, w, og.dtype)
    return lambda: xp.divide(og, half, out=dx)


# -- bilinear sampling ------------------------------------------------------------------------
def _corners(xp, grid, h: int, w: int):
    """Per grid point (flattened): the top-left corner, its weights and the four corners'
    (flat index, inside) pairs in MXNet's order tl, tr, bl, br."""
    n = grid.shape[0]
    gx, gy = grid[:, 0].reshape(n, -1), grid[:, 1].reshape(n, -1)
    x = (gx + 1) * (w - 1) / 2
    y = (gy + 1) * (h - 1) / 2
    x0, y0 = xp.floor(x), xp.floor(y)
    wx, wy = 1 - (x - x0), 1 - (y - y0)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    corners = []
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        cy, cx = y0 + dy, x0 + dx
        inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
        corners.append((xp.where(inside, cy * w + cx, 0), inside))
    return wx, wy, corners


def _rows(xp, data, corners):
    """The four corner values as (N, L, C) arrays (zero outside): the data moved channel-last
    once, so each grid point reads one contiguous row of channels per corner (2-2.4x faster
    than gathering along the flattened planes)."""
    n, c = data.shape[:2]
    last = xp.ascontiguousarray(data.reshape(n, c, -1).transpose(0, 2, 1))
    batch = xp.arange(n)[:, None]
    return [last[batch, idx] * inside[:, :, None] for idx, inside in corners]


def _corner_weights(wx, wy):
    return wy * wx, wy * (1 - wx), (1 - wy) * wx, (1 - wy) * (1 - wx)


def sample(xp, data, grid, out) -> None:
    """out = data bilinearly sampled at ``grid`` (zero outside), MXNet's weights."""
    n, c, h, w = data.shape
    wx, wy, corners = _corners(xp, grid, h, w)
    res = None
    for v, wt in zip(_rows(xp, data, corners), _corner_weights(wx, wy)):
        v *= wt[:, :, None]
        res = v if res is None else xp.add(res, v, out=res)
    xp.copyto(out.reshape(n, c, -1), res.transpose(0, 2, 1), casting="unsafe")


def sample_backward(xp, og, data, grid, ddata, dgrid) -> None:
    """Gradients of ``sample`` for the data (scattered into ``ddata``) and the grid."""
    n, c, h, w = data.shape
    wx, wy, corners = _corners(xp, grid, h, w)
    g = og.reshape(n, c, -1)
    if ddata is not None:
        base = (xp.arange(n * c) * (h * w)).reshape(n, c, 1)
        total = xp.zeros(n * c * h * w, dtype=np.float64 if data.dtype == np.float64 else
                         np.float32)
        for (idx, inside), wt in zip(corners, _corner_weights(wx, wy)):
            flat = (base + idx[:, None, :]).ravel()
            total += xp.bincount(flat, (g * (wt * inside)[:, None, :]).ravel(),
                                 minlength=total.size).astype(total.dtype)
        xp.copyto(ddata, total.reshape(ddata.shape), casting="unsafe")
    if dgrid is not None:
        tl, tr, bl, br = _rows(xp, data, corners)
        gl = g.transpose(0, 2, 1)
        mix = tl - tr - bl + br
        gy = -(gl * (tr - br + mix * wx[:, :, None])).sum(axis=2)
        gx = -(gl * (bl - br + mix * wy[:, :, None])).sum(axis=2)
        out = dgrid.reshape(n, 2, -1)
        xp.multiply(gx, (w - 1) / 2, out=out[:, 0], casting="unsafe")
        xp.multiply(gy, (h - 1) / 2, out=out[:, 1], casting="unsafe")


@kernel("BilinearSampler")
def bilinear_sampler(call):
    data, grid = call.inputs
    return lambda: sample(call.xp, data, grid, call.outputs[0])


def _wanted(call, k):
    return call.outputs[k] if call.req[k] != "null" else None


@kernel("_backward_BilinearSampler")
def bilinear_sampler_backward(call):
    og, data, grid = call.inputs
    return lambda: sample_backward(call.xp, og, data, grid, _wanted(call, 0), _wanted(call, 1))


@kernel("SpatialTransformer")
def spatial_transformer(call):
    xp, (data, loc), out = call.xp, call.inputs, call.outputs[0]
    n, _, h, w = out.shape
    base = affine_grid(xp, h, w, data.dtype)

    def run():
        grid = xp.matmul(loc.reshape(n, 2, 3), base).reshape(n, 2, h, w)
        sample(xp, data, grid, out)
    return run


@kernel("_backward_SpatialTransformer")
def spatial_transformer_backward(call):
    xp, (og, data, loc) = call.xp, call.inputs
    n, _, h, w = og.shape
    base = affine_grid(xp, h, w, data.dtype)
    dloc = _wanted(call, 1)

    def run():
        grid = xp.matmul(loc.reshape(n, 2, 3), base).reshape(n, 2, h, w)
        dgrid = xp.empty_like(grid) if dloc is not None else None
        sample_backward(xp, og, data, grid, _wanted(call, 0), dgrid)
        if dloc is not None:
            xp.matmul(dgrid.reshape(n, 2, h * w), base.T, out=dloc.reshape(n, 2, 3))
    return run


# -- Correlation ------------------------------------------------------------------------------
def _correlation_plan(p, shape):
    """Per (output channel, kernel offset): the slices of the padded data1 and data2."""
    radius, oh, ow = correlation_geometry(p, shape)
    md, s1 = p.max_displacement, p.stride1
    plan = []
    for tc in range((2 * radius + 1) ** 2):
        dy = (tc // (2 * radius + 1) - radius) * p.stride2
        dx = (tc % (2 * radius + 1) - radius) * p.stride2
        for h, w in itertools.product(range(p.kernel_size), repeat=2):
            y1, x1 = md + h, md + w
            a = (slice(None), slice(None), slice(y1, y1 + s1 * (oh - 1) + 1, s1),
                 slice(x1, x1 + s1 * (ow - 1) + 1, s1))
            b = (slice(None), slice(None), slice(y1 + dy, y1 + dy + s1 * (oh - 1) + 1, s1),
                 slice(x1 + dx, x1 + dx + s1 * (ow - 1) + 1, s1))
            plan.append((tc, a, b))
    return plan


def _padded(xp, x, pad: int):
    return xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))


@kernel("Correlation")
def correlation(call):
    xp, p, (d1, d2), out = call.xp, call.params, call.inputs, call.outputs[0]
    plan = _correlation_plan(p, d1.shape)
    scale = 1.0 / (p.kernel_size ** 2 * d1.shape[1])

    def run():
        a, b = _padded(xp, d1, p.pad_size), _padded(xp, d2, p.pad_size)
        out.fill(0)
        for tc, sa, sb in plan:
            term = a[sa] * b[sb] if p.is_multiply else xp.abs(a[sa] - b[sb])
            out[:, tc] += term.sum(axis=1)
        xp.multiply(out, out.dtype.type(scale), out=out)
    return run


@kernel("_backward_Correlation")
def correlation_backward(call):
    xp, p, (og, d1, d2) = call.xp, call.params, call.inputs
    plan = _correlation_plan(p, d1.shape)
    scale = 1.0 / (p.kernel_size ** 2 * d1.shape[1])
    pad = p.pad_size
    inner = (slice(None), slice(None), slice(pad, pad + d1.shape[2]),
             slice(pad, pad + d1.shape[3]))

    def run():
        a, b = _padded(xp, d1, pad), _padded(xp, d2, pad)
        ga, gb = xp.zeros_like(a), xp.zeros_like(b)
        g = og * og.dtype.type(scale)
        for tc, sa, sb in plan:
            gt = g[:, tc:tc + 1]
            if p.is_multiply:
                ga[sa] += gt * b[sb]
                gb[sb] += gt * a[sa]
            else:
                sign = xp.where(a[sa] - b[sb] > 0, 1, -1).astype(g.dtype)
                ga[sa] += gt * sign
                gb[sb] -= gt * sign
        for k, grad in enumerate((ga, gb)):
            if call.req[k] != "null":
                xp.copyto(call.outputs[k], grad[inner])
    return run


# -- im2col / col2im ---------------------------------------------------------------------------
def _patches(p, image_shape):
    geo = patch_geometry(p)
    sp = image_shape[2:]
    count = tuple((x + 2 * q - d * (k - 1) - 1) // s + 1 for x, q, d, k, s in
                  zip(sp, geo.pad, geo.dilate, geo.kernel, geo.stride))
    pads = ((0, 0), (0, 0), *((q, q) for q in geo.pad))
    inner = (slice(None), slice(None), *(slice(q, q + x) for q, x in zip(geo.pad, sp)))
    return geo, count, pads, inner


def _im2col(xp, p, image, cols) -> None:
    geo, count, pads, _ = _patches(p, image.shape)
    view = windows(xp, xp.pad(image, pads), geo.kernel, geo.stride, geo.dilate, count)
    xp.copyto(cols.reshape(view.shape), view)


def _col2im(xp, p, cols, image) -> None:
    geo, count, pads, inner = _patches(p, image.shape)
    n, c = image.shape[:2]
    full = xp.zeros(tuple(x + a + b for x, (a, b) in zip(image.shape, pads)), image.dtype)
    per = cols.reshape(n, c, math.prod(geo.kernel), *count)
    for k, sl in enumerate(offset_slices(geo.kernel, geo.stride, geo.dilate, count)):
        t = full[sl]
        xp.add(t, per[:, :, k], out=t)
    xp.copyto(image, full[inner])


@kernel("im2col")
def im2col(call):
    return lambda: _im2col(call.xp, call.params, call.inputs[0], call.outputs[0])


@kernel("_backward_im2col")
def im2col_backward(call):
    return lambda: _col2im(call.xp, call.params, call.inputs[0], call.outputs[0])


@kernel("col2im")
def col2im(call):
    return lambda: _col2im(call.xp, call.params, call.inputs[0], call.outputs[0])


@kernel("_backward_col2im")
def col2im_backward(call):
    return lambda: _im2col(call.xp, call.params, call.inputs[0], call.outputs[0])
