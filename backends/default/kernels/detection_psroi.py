"""Kernels of PSROIPooling and its backward operator (core/ops/detection_roi.py): the mean of
each bin of its position's channel group, read from an integral image (sums in float64),
and the gradient spread back over the bins through a difference image."""
from __future__ import annotations

from functools import partial

import numpy as np

from graphexec.core.ops.detection_roi import psroi_group

from .base import kernel
from .detection_roi import _batch_index


def _c_round(xp, v):
    """C's round() (halves away from zero), in float64."""
    v = v.astype(np.float64)
    return xp.sign(v) * xp.floor(xp.abs(v) + 0.5)


def _geometry(xp, p, rois, shape, dtype):
    """(batch, channel per (out channel, ph, pw), bin starts/ends along y and x per ROI)."""
    t = dtype.type
    batch = _batch_index(xp, rois, shape[0], "PSROIPooling")
    scale = t(np.float32(p.spatial_scale))
    x1 = _c_round(xp, rois[:, 1]).astype(dtype) * scale
    y1 = _c_round(xp, rois[:, 2]).astype(dtype) * scale
    x2 = (_c_round(xp, rois[:, 3]) + 1.0).astype(dtype) * scale
    y2 = (_c_round(xp, rois[:, 4]) + 1.0).astype(dtype) * scale
    size, group = p.pooled_size, psroi_group(p)
    k = xp.arange(size).astype(dtype)

    def edges(lo, hi, limit):
        step = xp.maximum(hi - lo, t(0.1)) / t(size)
        start = xp.floor(k[None] * step[:, None] + lo[:, None]).astype(np.int64)
        end = xp.ceil((k[None] + t(1)) * step[:, None] + lo[:, None]).astype(np.int64)
        return xp.clip(start, 0, limit), xp.clip(end, 0, limit)
    hs, he = edges(y1, y2, shape[2])
    ws, we = edges(x1, x2, shape[3])
    cell = xp.clip(xp.floor(k * t(group) / t(size)).astype(np.int64), 0, group - 1)
    chan = (xp.arange(p.output_dim)[:, None, None] * group + cell[None, :, None]) * group \
        + cell[None, None, :]                                             # (out, ph, pw)
    return batch, chan, hs, he, ws, we


def _corners(batch, chan, hs, he, ws, we):
    b = batch[:, None, None, None]
    c = chan[None]
    return [(b, c, ys[:, None, :, None], xs[:, None, None, :], sign)
            for ys, xs, sign in ((he, we, 1), (hs, we, -1), (he, ws, -1), (hs, ws, 1))]


def _psroi_forward(xp, p, data, rois, out) -> None:
    batch, chan, hs, he, ws, we = _geometry(xp, p, rois, data.shape, data.dtype)
    table = xp.zeros(data.shape[:2] + (data.shape[2] + 1, data.shape[3] + 1))
    table[:, :, 1:, 1:] = data.astype(np.float64).cumsum(axis=2).cumsum(axis=3)
    total = 0
    for b, c, ys, xs, sign in _corners(batch, chan, hs, he, ws, we):
        total = total + sign * table[b, c, ys, xs]
    area = ((he - hs)[:, None, :, None] * (we - ws)[:, None, None, :]).astype(data.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total.astype(data.dtype) / area
    out[...] = xp.where(area > 0, mean, data.dtype.type(0))


@kernel("_contrib_PSROIPooling")
def psroi_pooling(call):
    return partial(_psroi_forward, call.xp, call.params, *call.inputs, call.outputs[0])


def _psroi_backward(xp, p, og, rois, dx, drois) -> None:
    batch, chan, hs, he, ws, we = _geometry(xp, p, rois, dx.shape, dx.dtype)
    area = ((he - hs)[:, None, :, None] * (we - ws)[:, None, None, :]).astype(dx.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = xp.where(area > 0, og / area, dx.dtype.type(0)).astype(np.float64)
    hgt, wid = dx.shape[2] + 1, dx.shape[3] + 1
    diff = xp.zeros(dx.shape[0] * dx.shape[1] * hgt * wid)
    for b, c, ys, xs, sign in _corners(batch, chan, hs, he, ws, we):
        flat = ((b * dx.shape[1] + c) * hgt + ys) * wid + xs
        diff += xp.bincount(flat.reshape(-1), weights=(sign * share).reshape(-1),
                            minlength=diff.size)
    grid = diff.reshape(dx.shape[:2] + (hgt, wid)).cumsum(axis=2).cumsum(axis=3)
    dx[...] = grid[:, :, :-1, :-1]
    if drois is not None:
        drois.fill(0)


@kernel("_backward_PSROIPooling")
def psroi_pooling_backward(call):
    og, rois = call.inputs
    return partial(_psroi_backward, call.xp, call.params, og, rois, *call.outputs)
