"""Kernels of box_iou, box_encode, box_decode and bipartite_matching
(core/ops/detection.py), operation by operation in the data's dtype as MXNet 1.9.1's; where
MXNet writes a double constant (``x + w * 0.5``) the statement runs in float64 and is
rounded once."""
from __future__ import annotations

from functools import partial

import numpy as np

from .base import kernel
from .detection import areas, intersections


def _box_iou(xp, center, lhs, rhs, out) -> None:
    a, b = lhs.reshape(-1, 4), rhs.reshape(-1, 4)
    inter = intersections(xp, a, b, center)
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = inter / ((areas(xp, a, center)[:, None] + areas(xp, b, center)[None, :]) - inter)
    out.reshape(a.shape[0], b.shape[0])[...] = xp.where(inter <= 0, inter.dtype.type(0), iou)


@kernel("_contrib_box_iou")
def box_iou(call):
    return partial(_box_iou, call.xp, call.params.format == "center", *call.inputs,
                   call.outputs[0])


def _mid(lo, size):
    """lo + size * 0.5 as MXNet computes it: in double, rounded once to the dtype."""
    return (lo.astype(np.float64) + size.astype(np.float64) * 0.5).astype(lo.dtype)


def _box_decode(xp, p, x, anchors, out) -> None:
    a = anchors.reshape(-1, 4)
    ax, ay, aw, ah = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    if p.format == "corner":
        aw, ah = aw - ax, ah - ay
        ax, ay = _mid(ax, aw), _mid(ay, ah)
    t = x.dtype.type
    ox = x[..., 0] * t(p.std0) * aw + ax
    oy = x[..., 1] * t(p.std1) * ah + ay
    dw, dh = x[..., 2] * t(p.std2), x[..., 3] * t(p.std3)
    if p.clip > 0:
        dw, dh = xp.minimum(dw, t(p.clip)), xp.minimum(dh, t(p.clip))
    with np.errstate(over="ignore"):
        ow, oh = xp.exp(dw) * aw * t(0.5), xp.exp(dh) * ah * t(0.5)
    out[..., 0], out[..., 1] = ox - ow, oy - oh
    out[..., 2], out[..., 3] = ox + ow, oy + oh


@kernel("_contrib_box_decode")
def box_decode(call):
    return partial(_box_decode, call.xp, call.params, *call.inputs, call.outputs[0])


def _centers(box):
    w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    return _mid(box[..., 0], w), _mid(box[..., 1], h), w, h


def _box_encode(xp, samples, matches, anchors, refs, means, stds, targets, masks) -> None:
    m = refs.shape[1]
    match = xp.clip(matches.astype(np.int64), 0, m - 1)  # MXNet reads out of bounds
    ref = xp.take_along_axis(refs, match[..., None], axis=1)
    rx, ry, rw, rh = _centers(ref)
    ax, ay, aw, ah = _centers(anchors)
    with np.errstate(all="ignore"):
        enc = ((rx - ax) / aw, (ry - ay) / ah, xp.log(rw / aw), xp.log(rh / ah))
    valid = samples > samples.dtype.type(0.5)
    masks[...] = valid[..., None].astype(masks.dtype)
    zero = targets.dtype.type(0)
    for k in range(4):
        with np.errstate(all="ignore"):
            targets[..., k] = xp.where(valid, (enc[k] - means[k]) / stds[k], zero)


@kernel("_contrib_box_encode")
def box_encode(call):
    return partial(_box_encode, call.xp, *call.inputs, *call.outputs)


def _matching(xp, p, scores, rows_out, cols_out) -> None:
    nrow, ncol = scores.shape[-2], scores.shape[-1]
    flat = scores.reshape(-1, nrow * ncol)
    key = flat if p.is_ascend else -flat
    order = xp.argsort(key, axis=1, kind="stable")
    r_out, c_out = rows_out.reshape(-1, nrow), cols_out.reshape(-1, ncol)
    r_out.fill(-1)
    c_out.fill(-1)
    thresh = np.float32(p.threshold)
    for b in range(flat.shape[0]):
        ranked = flat[b][order[b]]
        good = ranked < thresh if p.is_ascend else ranked > thresh
        _match_batch(xp, order[b] // ncol, order[b] % ncol, good, p.topk, r_out[b], c_out[b])


def _match_batch(xp, rows, cols, good, topk, r_out, c_out) -> None:
    """MXNet's greedy walk over the ranked pairs: the first pair whose row and column are
    both free is matched if its score passes the threshold, and the walk stops at the first
    free pair that does not, or once more than ``topk`` pairs are matched (topk + 1 then)."""
    free_r = xp.ones(r_out.shape[0], dtype=bool)
    free_c = xp.ones(c_out.shape[0], dtype=bool)
    pos, count = 0, 0
    while pos < rows.size:
        free = free_r[rows[pos:]] & free_c[cols[pos:]]
        if not bool(free.any()):
            return
        pos += int(xp.argmax(free))
        if not bool(good[pos]):
            return
        r, c = int(rows[pos]), int(cols[pos])
        r_out[r], c_out[c] = c, r
        free_r[r], free_c[c] = False, False
        count += 1
        if 0 < topk < count:
            return


@kernel("_contrib_bipartite_matching")
def bipartite_matching(call):
    return partial(_matching, call.xp, call.params, call.inputs[0], *call.outputs)
