"""Native kernels of ``_contrib_DeformablePSROIPooling`` (core/ops/deformable.py) and its
backward op, MXNet 1.9.1's CPU arithmetic vectorised over every (ROI, output channel, bin,
sample): positions in the data's dtype, reads more than half a pixel outside skipped, the
others clamped, bilinear between floor and ceil; the data gradient is one ``bincount`` per
corner, the trans gradient one ``bincount`` per direction."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ops.deformable import psroi_part_size

from .base import kernel

__all__ = ["Samples", "samples"]


class Samples(NamedTuple):
    """Every read: 4 flat data indices (corners ll, hl (y + 1), lh (x + 1), hh), the fractional
    parts, whether it counts, the flat trans index of its bin, ROI sizes and the count."""

    index: list
    dx: object
    dy: object
    ok: object
    trans_at: object
    roi_w: object
    roi_h: object
    count: object


def _rois(xp, p, rois, batch: int, dt):
    idx = rois[:, 0].astype(np.int64)
    if rois.shape[0] and (int(idx.min()) < 0 or int(idx.max()) >= batch):
        raise GraphexecError(f"DeformablePSROIPooling: ROI batch indices must lie in [0, "
                             f"{batch}), got {sorted(set(int(i) for i in idx.tolist()))}")
    scale, half = dt.type(p.spatial_scale), dt.type(0.5)
    # C's round: halves away from zero (numpy's round goes to even)
    x1, y1, x2, y2 = (xp.sign(rois[:, k]) * xp.floor(xp.abs(rois[:, k]) + 0.5)
                      for k in range(1, 5))
    start_w, start_h = x1 * scale - half, y1 * scale - half
    width = xp.maximum((x2 + 1) * scale - half - start_w, dt.type(0.1))
    height = xp.maximum((y2 + 1) * scale - half - start_h, dt.type(0.1))
    return idx, start_w, start_h, width, height


def samples(xp, p, data_shape: tuple, rois, trans) -> Samples:
    dt = np.dtype(rois.dtype)
    n, c, h, w = data_shape
    r, d, ps, s = rois.shape[0], p.output_dim, p.pooled_size, p.sample_per_part
    part, gs = psroi_part_size(p), p.group_size
    batch, start_w, start_h, roi_w, roi_h = _rois(xp, p, rois, n, dt)
    bin_w, bin_h = roi_w / dt.type(ps), roi_h / dt.type(ps)
    pb = np.arange(ps)
    part_of = np.floor(pb.astype(dt) / ps * part).astype(np.int64)
    group_of = np.clip(np.floor(pb.astype(dt) * gs / ps).astype(np.int64), 0, gs - 1)
    classes = 1 if p.no_trans else trans.shape[1] // 2
    cls = np.arange(d) // (d // classes)
    # trans index of (roi, ctop, ph, pw) in the x direction (+ part^2 for y)
    t_at = ((np.arange(r)[:, None, None, None] * classes + cls[None, :, None, None]) * 2
            * part + part_of[None, None, :, None]) * part + part_of[None, None, None, :]
    t_at = xp.asarray(t_at)
    if p.no_trans:
        tx = ty = xp.zeros((r, d, ps, ps), dt)
    else:
        flat = trans.reshape(-1)
        std = dt.type(p.trans_std)
        tx, ty = flat[t_at] * std, flat[t_at + part * part] * std
    e = (slice(None), None, None, None)
    wstart = xp.asarray(pb.astype(dt))[None, None, None, :] * bin_w[e] + start_w[e] + tx * roi_w[e]
    hstart = xp.asarray(pb.astype(dt))[None, None, :, None] * bin_h[e] + start_h[e] + ty * roi_h[e]
    sub = xp.asarray(np.arange(s).astype(dt))
    ws = wstart[..., None, None] + sub[None, :] * (bin_w / dt.type(s))[:, None, None, None, None,
                                                                         None]
    hs = hstart[..., None, None] + sub[:, None] * (bin_h / dt.type(s))[:, None, None, None, None,
                                                                         None]
    ok = (ws >= -0.5) & (ws <= w - 0.5) & (hs >= -0.5) & (hs <= h - 0.5)
    ws, hs = xp.clip(ws, 0, w - 1), xp.clip(hs, 0, h - 1)
    x0, y0 = xp.floor(ws).astype(np.int64), xp.floor(hs).astype(np.int64)
    x1, y1 = xp.ceil(ws).astype(np.int64), xp.ceil(hs).astype(np.int64)
    chan = (np.arange(d)[:, None, None] * gs + group_of[None, :, None]) * gs \
        + group_of[None, None, :]
    plane = (xp.asarray(batch)[:, None, None, None] * c + xp.asarray(chan)[None]) * (h * w)
    plane = plane[..., None, None]
    index = [plane + yy * w + xx for yy, xx in ((y0, x0), (y1, x0), (y0, x1), (y1, x1))]
    count = ok.sum(axis=(4, 5))
    return Samples(index, ws - x0, hs - y0, ok, t_at, roi_w, roi_h, count)


def _weights(sm: Samples):
    dx, dy = sm.dx, sm.dy
    return ((1 - dx) * (1 - dy), (1 - dx) * dy, dx * (1 - dy), dx * dy)


@kernel("_contrib_DeformablePSROIPooling")
def deformable_psroi_pooling(call):
    xp, p = call.xp, call.params
    data, rois = call.inputs[0], call.inputs[1]
    trans = None if p.no_trans else call.inputs[2]
    out, top_count = call.outputs

    def run():
        sm = samples(xp, p, data.shape, rois, trans)
        flat = data.reshape(-1)
        vals = sum(flat[i] * wt for i, wt in zip(sm.index, _weights(sm)))
        total = (vals * sm.ok).sum(axis=(4, 5))
        xp.copyto(out, xp.where(sm.count > 0, total / xp.maximum(sm.count, 1), 0),
                  casting="unsafe")
        xp.copyto(top_count, sm.count, casting="unsafe")
    return run


@kernel("_backward_DeformablePSROIPooling")
def deformable_psroi_pooling_backward(call):
    xp, p = call.xp, call.params
    og, data, rois = call.inputs[:3]
    trans = None if p.no_trans else call.inputs[3]
    ddata, drois = call.outputs[0], call.outputs[1]
    dtrans = None if p.no_trans else call.outputs[2]

    def run():
        sm = samples(xp, p, data.shape, rois, trans)
        diff = xp.where(sm.count > 0, og / xp.maximum(sm.count, 1), 0)[..., None, None] * sm.ok
        total = xp.zeros(data.size, data.dtype)
        for idx, wt in zip(sm.index, _weights(sm)):
            total += xp.bincount(idx.reshape(-1), (wt * diff).reshape(-1),
                                 minlength=data.size).astype(data.dtype)
        xp.copyto(ddata, total.reshape(data.shape))
        drois.fill(0)
        if dtrans is not None:
            _trans_grad(xp, p, data, sm, diff, dtrans)
    return run


def _trans_grad(xp, p, data, sm: Samples, diff, dtrans) -> None:
    """MXNet's rule: the bilinear read's derivative at the clamped position, times trans_std,
    the bin's share of the output gradient and the ROI's width (x) or height (y)."""
    flat = data.reshape(-1)
    u00, u01, u10, u11 = (flat[i] for i in sm.index)
    dx, dy = sm.dx, sm.dy
    gx = (u11 * dy + u10 * (1 - dy) - u01 * dy - u00 * (1 - dy)) * diff
    gy = (u11 * dx + u01 * (1 - dx) - u10 * dx - u00 * (1 - dx)) * diff
    e = (slice(None), None, None, None)
    std = p.trans_std
    gx = gx.sum(axis=(4, 5)) * std * sm.roi_w[e]
    gy = gy.sum(axis=(4, 5)) * std * sm.roi_h[e]
    part = psroi_part_size(p)
    size = dtrans.size
    total = xp.bincount(sm.trans_at.reshape(-1), gx.reshape(-1), minlength=size) \
        + xp.bincount((sm.trans_at + part * part).reshape(-1), gy.reshape(-1), minlength=size)
    xp.copyto(dtrans, total.reshape(dtrans.shape), casting="unsafe")
