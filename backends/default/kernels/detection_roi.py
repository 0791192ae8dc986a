"""Kernels of ROIAlign, ROIPooling and their backward operators (core/ops/detection_roi.py).

ROIAlign's bilinear sampling is separable: the average over a bin's samples of the four
weighted corners equals ``Ay @ window @ Ax.T``, where ``Ay`` (bins x rows) sums the row
weights of a bin's samples and ``Ax`` likewise for columns, and ``window`` is the part of
the feature map the ROI reaches. So every ROI is two small matrix products over its window
(windows padded to one size, ROIs in chunks), and the gradient the transposed products.
ROIPooling gathers each bin's cells (padded to the largest bin) channels-last and takes the
max and its first position, as MXNet's row-major scan."""
from __future__ import annotations

from functools import partial

import numpy as np

from .base import kernel

#: elements of gathered windows per chunk of ROIs
CHUNK = 1 << 22


def _chunks(count: int, per_roi: int):
    step = max(1, CHUNK // max(per_roi, 1))
    for start in range(0, count, step):
        yield slice(start, min(count, start + step))


# -- ROIAlign -------------------------------------------------------------------------------
class _Axis:
    """One axis of ROIAlign's sampling for every ROI: ``weights`` (rois, bins, window) and
    the window's first row/column ``start`` per ROI (the window lies inside the map)."""

    def __init__(self, xp, lo, bin_size, grid, bins: int, size: int, dtype):
        t = dtype.type
        cells = int(grid.max(initial=1))
        k = xp.arange(cells)
        steps = xp.arange(bins).astype(dtype)[None, :, None]
        pos = (lo[:, None, None] + steps * bin_size[:, None, None]) \
            + (k.astype(dtype) + t(0.5))[None, None, :] * bin_size[:, None, None] \
            / grid.astype(dtype)[:, None, None]
        used = (k[None, None, :] < grid[:, None, None]) & (pos >= -1) & (pos <= size)
        pos = xp.where(pos <= 0, t(0), pos)
        low = pos.astype(np.int64)
        edge = low >= size - 1
        low = xp.where(edge, size - 1, low)
        high = xp.where(edge, size - 1, low + 1)
        frac = xp.where(edge, t(0), pos - low.astype(dtype))
        w_low, w_high = (t(1) - frac) * used, frac * used
        first = xp.where(used, low, size).min(axis=(1, 2))
        last = xp.where(used, high, -1).max(axis=(1, 2))
        span = int(max(1, (last - first + 1).max(initial=1)))
        self.window = min(span, size)
        self.start = xp.clip(xp.minimum(first, size - self.window), 0, None)
        grid_k = xp.arange(self.window)
        rel_low = (low - self.start[:, None, None])[..., None] == grid_k
        rel_high = (high - self.start[:, None, None])[..., None] == grid_k
        self.weights = ((rel_low * w_low[..., None]).sum(axis=2)
                        + (rel_high * w_high[..., None]).sum(axis=2)).astype(dtype)


def _align_setup(xp, p, rois, shape, dtype):
    """(batch index per ROI, y axis, x axis, samples per bin) of ROIAlign."""
    t = dtype.type
    r = rois.astype(dtype)
    batch = r[:, 0].astype(np.int64)  # MXNet's int(): towards zero
    scale, off = t(np.float32(p.spatial_scale)), t(0.5 if p.aligned else 0)
    x1, y1 = r[:, 1] * scale - off, r[:, 2] * scale - off
    w, h = (r[:, 3] * scale - off) - x1, (r[:, 4] * scale - off) - y1
    if p.aligned:
        bad = (batch >= 0) & ((w <= 0) | (h <= 0))
        if bool(bad.any()):
            k = int(xp.flatnonzero(bad)[0])
            raise ValueError(f"with aligned=True every ROI must have a positive size; roi {k} "
                             f"{rois[k].tolist()} is {float(w[k])} x {float(h[k])} on the "
                             f"feature map")
    else:
        w, h = xp.maximum(w, t(1)), xp.maximum(h, t(1))
    ph, pw = p.pooled_size
    bin_h, bin_w = h / t(ph), w / t(pw)
    if p.sample_ratio > 0:
        gy = gx = xp.full(r.shape[0], p.sample_ratio, dtype=np.int64)
    else:
        gy, gx = xp.ceil(h / t(ph)).astype(np.int64), xp.ceil(w / t(pw)).astype(np.int64)
    ay = _Axis(xp, y1, bin_h, gy, ph, shape[2], dtype)
    ax = _Axis(xp, x1, bin_w, gx, pw, shape[3], dtype)
    return batch, ay, ax, (gy * gx).astype(dtype)


def _windows(xp, data, batch, ay, ax, sel):
    """(rois, channels, wy, wx) windows of the feature map of the ROIs ``sel``."""
    view = xp.lib.stride_tricks.sliding_window_view(data, (ay.window, ax.window), axis=(2, 3))
    b = xp.clip(batch[sel], 0, data.shape[0] - 1)
    return view[b, :, ay.start[sel], ax.start[sel]]


def _diagonal(xp, full, ph: int, pw: int):
    """Position-sensitive bins: output (c, i, j) is input channel c * ph * pw + i * pw + j
    at bin (i, j); returns (full seen as (rois, c, ph, pw, ph, pw), index of the picks)."""
    grid = full.reshape(full.shape[0], full.shape[1] // (ph * pw), ph, pw, ph, pw)
    i, j = xp.arange(ph)[:, None], xp.arange(pw)[None, :]
    return grid, (slice(None), slice(None), i, j, i, j)


def _align_forward(xp, p, data, rois, out) -> None:
    batch, ay, ax, count = _align_setup(xp, p, rois, data.shape, data.dtype)
    ph, pw = p.pooled_size
    per_roi = data.shape[1] * ay.window * ax.window
    for sel in _chunks(rois.shape[0], per_roi):
        win = _windows(xp, data, batch, ay, ax, sel)
        res = ay.weights[sel][:, None] @ win @ xp.swapaxes(ax.weights[sel], 1, 2)[:, None]
        res /= count[sel][:, None, None, None]
        if p.position_sensitive:
            grid, pick = _diagonal(xp, res, ph, pw)
            res = grid[pick]
        res[batch[sel] < 0] = 0
        out[sel] = res


@kernel("_contrib_ROIAlign")
def roi_align(call):
    return partial(_align_forward, call.xp, call.params, *call.inputs, call.outputs[0])


def _align_backward(xp, p, og, rois, dx, drois) -> None:
    batch, ay, ax, count = _align_setup(xp, p, rois, dx.shape, dx.dtype)
    ph, pw = p.pooled_size
    dx.fill(0)
    if drois is not None:
        drois.fill(0)
    per_roi = dx.shape[1] * ay.window * ax.window
    for sel in _chunks(rois.shape[0], per_roi):
        g = og[sel] / count[sel][:, None, None, None]
        if p.position_sensitive:
            full = xp.zeros((g.shape[0], dx.shape[1], ph, pw), dtype=g.dtype)
            grid, pick = _diagonal(xp, full, ph, pw)
            grid[pick] = g  # grid is a view of full
            g = full
        win = xp.swapaxes(ay.weights[sel], 1, 2)[:, None] @ g @ ax.weights[sel][:, None]
        for k, roi in enumerate(range(sel.start, sel.stop)):  # windows may overlap
            b = int(batch[roi])
            if b < 0:
                continue
            y0, x0 = int(ay.start[roi]), int(ax.start[roi])
            dx[b, :, y0:y0 + ay.window, x0:x0 + ax.window] += win[k]


@kernel("_backward_ROIAlign")
def roi_align_backward(call):
    og, rois = call.inputs
    return partial(_align_backward, call.xp, call.params, og, rois, *call.outputs)


# -- ROIPooling -----------------------------------------------------------------------------
def _round(xp, v):
    """C's round(): halves away from zero."""
    return (xp.sign(v) * xp.floor(xp.abs(v) + v.dtype.type(0.5))).astype(np.int64)


def _bin_edges(xp, start, length, bins: int, size: int, dtype):
    """(first, end) cells of each bin (rois, bins): floor/ceil of the bin fractions."""
    t = dtype.type
    step = length.astype(dtype) / t(bins)
    k = xp.arange(bins).astype(dtype)
    lo = xp.floor(k[None] * step[:, None]).astype(np.int64) + start[:, None]
    hi = xp.ceil((k[None] + t(1)) * step[:, None]).astype(np.int64) + start[:, None]
    return xp.clip(lo, 0, size), xp.clip(hi, 0, size)


def _pool_forward(xp, p, data, rois, out, argmax) -> None:
    nb, c, hgt, wid = data.shape
    r = rois
    scale = np.float32(p.spatial_scale)
    x1, y1 = _round(xp, r[:, 1] * scale), _round(xp, r[:, 2] * scale)
    x2, y2 = _round(xp, r[:, 3] * scale), _round(xp, r[:, 4] * scale)
    batch = r[:, 0].astype(np.int64)
    ph, pw = p.pooled_size
    hs, he = _bin_edges(xp, y1, xp.maximum(y2 - y1 + 1, 1), ph, hgt, data.dtype)
    ws, we = _bin_edges(xp, x1, xp.maximum(x2 - x1 + 1, 1), pw, wid, data.dtype)
    bh, bw = int(max(1, (he - hs).max(initial=1))), int(max(1, (we - ws).max(initial=1)))
    last = data.transpose(0, 2, 3, 1)  # channels last: a gathered cell is a contiguous row
    lowest = np.finfo(np.float32).min
    for sel in _chunks(r.shape[0], ph * pw * bh * bw * c):
        rows = hs[sel][:, :, None, None, None] + xp.arange(bh)[:, None]   # (r, ph, 1, bh, 1)
        cols = ws[sel][:, None, :, None, None] + xp.arange(bw)            # (r, 1, pw, 1, bw)
        inside = (rows < he[sel][:, :, None, None, None]) \
            & (cols < we[sel][:, None, :, None, None])
        b = xp.clip(batch[sel], 0, nb - 1)[:, None, None, None, None]
        cells = last[b, xp.minimum(rows, hgt - 1), xp.minimum(cols, wid - 1)]
        # NaN never wins, as in MXNet's scan from -FLT_MAX taking larger values only
        cells = xp.where(inside[..., None] & (cells == cells), cells, data.dtype.type(-np.inf))
        cells = cells.reshape(cells.shape[0], ph, pw, bh * bw, c)
        best = xp.argmax(cells, axis=3)                                     # (r, ph, pw, c)
        value = xp.take_along_axis(cells, best[:, :, :, None], axis=3)[:, :, :, 0]
        dy, dxx = best // bw, best % bw
        y = hs[sel][:, :, None, None] + dy
        x = ws[sel][:, None, :, None] + dxx
        flat = ((batch[sel][:, None, None, None] * c + xp.arange(c)) * hgt + y) * wid + x
        empty = ((he[sel] <= hs[sel])[:, :, None] | (we[sel] <= ws[sel])[:, None, :])
        bad = ((batch[sel] < 0) | (batch[sel] >= nb))[:, None, None] | empty
        none = value <= lowest  # MXNet starts from -FLT_MAX and takes only larger values
        value = xp.where(none, data.dtype.type(lowest), value)
        flat = xp.where(none, -1, flat)
        value = xp.where(bad[..., None], data.dtype.type(0), value)
        flat = xp.where(bad[..., None], -1, flat)
        out[sel] = value.transpose(0, 3, 1, 2)
        argmax[sel] = flat.transpose(0, 3, 1, 2)


@kernel("ROIPooling")
def roi_pooling(call):
    return partial(_pool_forward, call.xp, call.params, *call.inputs, *call.outputs)


def _pool_backward(xp, og, argmax, dx, drois) -> None:
    idx = argmax.reshape(-1)
    hit = idx >= 0
    total = xp.bincount(idx[hit], weights=og.reshape(-1)[hit], minlength=dx.size)
    dx[...] = total.reshape(dx.shape)
    if drois is not None:
        drois.fill(0)


@kernel("_backward_ROIPooling")
def roi_pooling_backward(call):
    og, _, argmax = call.inputs
    return partial(_pool_backward, call.xp, og, argmax, *call.outputs)


# -- RROIAlign ------------------------------------------------------------------------------
def _batch_index(xp, rois, images: int, op: str):
    """The ROIs' batch indices (int() of column 0), which must name an image: MXNet reads
    outside the data otherwise."""
    batch = rois[:, 0].astype(np.int64)
    bad = (batch < 0) | (batch >= images)
    if bool(bad.any()):
        k = int(xp.flatnonzero(bad)[0])
        raise ValueError(f"{op}: roi {k} has batch index {float(rois[k, 0])}, not an image "
                         f"index in [0, {images})")
    return batch


def _corners(xp, pos, size: int, used):
    """Bilinear corners along one axis: (low, high, weight of low, weight of high)."""
    t = pos.dtype.type
    pos = xp.where(pos <= 0, t(0), pos)
    low = pos.astype(np.int64)
    edge = low >= size - 1
    low = xp.where(edge, size - 1, low)
    frac = xp.where(edge, t(0), pos - low.astype(pos.dtype))
    return low, xp.where(edge, low, low + 1), (t(1) - frac) * used, frac * used


def _rotated_samples(xp, p, rois, shape, dtype):
    """Sample positions (rois, ph, pw, gy, gx) of RROIAlign, whether each counts, and the
    samples per bin."""
    t = dtype.type
    scale = np.float32(p.spatial_scale)
    cx, cy = rois[:, 1] * scale, rois[:, 2] * scale
    w = xp.maximum(rois[:, 3] * scale, t(1))
    h = xp.maximum(rois[:, 4] * scale, t(1))
    theta = (rois[:, 5].astype(np.float64) * np.pi / 180.0).astype(dtype)
    ph, pw = p.pooled_size
    bin_h, bin_w = h / t(ph), w / t(pw)
    if p.sampling_ratio > 0:
        gy = gx = xp.full(rois.shape[0], p.sampling_ratio, dtype=np.int64)
    else:
        gy, gx = xp.ceil(h / t(ph)).astype(np.int64), xp.ceil(w / t(pw)).astype(np.int64)
    ky, kx = xp.arange(int(gy.max(initial=1))), xp.arange(int(gx.max(initial=1)))
    start_h = (-h.astype(np.float64) / 2.0).astype(dtype)
    start_w = (-w.astype(np.float64) / 2.0).astype(dtype)
    yy = (start_h[:, None, None] + xp.arange(ph).astype(dtype)[None, :, None]
          * bin_h[:, None, None]) + (ky.astype(dtype) + t(0.5))[None, None, :] \
        * bin_h[:, None, None] / gy.astype(dtype)[:, None, None]
    xx = (start_w[:, None, None] + xp.arange(pw).astype(dtype)[None, :, None]
          * bin_w[:, None, None]) + (kx.astype(dtype) + t(0.5))[None, None, :] \
        * bin_w[:, None, None] / gx.astype(dtype)[:, None, None]
    yy, xx = yy[:, :, None, :, None], xx[:, None, :, None, :]
    cos, sin = (f(theta)[:, None, None, None, None] for f in (xp.cos, xp.sin))
    x = xx * cos + yy * sin + cx[:, None, None, None, None]
    y = yy * cos - xx * sin + cy[:, None, None, None, None]
    used = (ky[None, None, None, :, None] < gy[:, None, None, None, None]) \
        & (kx[None, None, None, None, :] < gx[:, None, None, None, None]) \
        & (y >= -1) & (y <= shape[2]) & (x >= -1) & (x <= shape[3])
    return y, x, used, (gy * gx).astype(dtype)


def _rroi_align(xp, p, data, rois, out) -> None:
    batch = _batch_index(xp, rois, data.shape[0], "RROIAlign")
    y, x, used, count = _rotated_samples(xp, p, rois, data.shape, data.dtype)
    y0, y1, wy0, wy1 = _corners(xp, y, data.shape[2], used)
    x0, x1, wx0, wx1 = _corners(xp, x, data.shape[3], True)
    last = data.transpose(0, 2, 3, 1)
    per_roi = int(np.prod(y.shape[1:])) * data.shape[1] * 4
    for sel in _chunks(rois.shape[0], per_roi):
        b = batch[sel][:, None, None, None, None]
        acc = 0
        for ya, wya in ((y0, wy0), (y1, wy1)):
            for xa, wxa in ((x0, wx0), (x1, wx1)):
                weight = (wya[sel] * wxa[sel])[..., None]
                acc = acc + (weight * last[b, ya[sel], xa[sel]]).sum(axis=(3, 4))
        out[sel] = (acc / count[sel][:, None, None, None]).transpose(0, 3, 1, 2)


@kernel("_contrib_RROIAlign")
def rroi_align(call):
    return partial(_rroi_align, call.xp, call.params, *call.inputs, call.outputs[0])
