"""Kernels of Proposal and MultiProposal (core/ops/detection_roi.py), in float32 as MXNet
1.9.1's CPU code: statements that MXNet writes with double constants (``0.5 * (w - 1.0)``)
are computed in float64 and rounded once, the others in float32."""
from __future__ import annotations

from functools import partial

import numpy as np

from .base import kernel
from .detection import greedy_keep

F32, F64 = np.float32, np.float64


def anchors(p) -> np.ndarray:
    """(ratios * scales, 4) base anchors around cell (0, 0): MXNet's GenerateAnchors."""
    top = F32(p.feature_stride - 1.0)
    w = h = top - F32(0) + F32(1)
    ctr = F32(F64(0) + 0.5 * (F64(w) - 1.0))
    size = w * h
    out = []
    for ratio in p.ratios:
        for scale in p.scales:
            ratio32, scale32 = F32(ratio), F32(scale)
            per_ratio = np.floor(size / ratio32)
            new_w = np.floor(np.sqrt(per_ratio) + F32(0.5)) * scale32
            new_h = np.floor(new_w / scale32 * ratio32 + F32(0.5)) * scale32
            half_w, half_h = F32(0.5) * (new_w - F32(1)), F32(0.5) * (new_h - F32(1))
            out.append([ctr - half_w, ctr - half_h, ctr + half_w, ctr + half_h])
    return np.asarray(out, dtype=F32)


def _half_span(center, size):
    """(center - 0.5 * (size - 1.0), center + ...) in double, rounded to float32."""
    half = 0.5 * (size.astype(F64) - 1.0)
    return (center.astype(F64) - half).astype(F32), (center.astype(F64) + half).astype(F32)


def _decode(xp, p, boxes, deltas, im_h, im_w):
    """Boxes moved by the deltas (MXNet's BBoxTransformInv / IoUTransformInv), clipped."""
    x1, y1, x2, y2 = (boxes[..., k] for k in range(4))
    d = [deltas[..., k] for k in range(4)]
    if p.iou_loss:
        px1, py1, px2, py2 = x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]
    else:
        w = ((x2 - x1).astype(F64) + 1.0).astype(F32)
        h = ((y2 - y1).astype(F64) + 1.0).astype(F32)
        cx = (x1.astype(F64) + 0.5 * (w.astype(F64) - 1.0)).astype(F32)
        cy = (y1.astype(F64) + 0.5 * (h.astype(F64) - 1.0)).astype(F32)
        with np.errstate(over="ignore"):
            pw, ph = xp.exp(d[2]) * w, xp.exp(d[3]) * h
        px1, px2 = _half_span(d[0] * w + cx, pw)
        py1, py2 = _half_span(d[1] * h + cy, ph)
    lim_w, lim_h = F32(im_w) - F32(1), F32(im_h) - F32(1)
    clip = [xp.maximum(xp.minimum(v, lim), F32(0))
            for v, lim in ((px1, lim_w), (py1, lim_h), (px2, lim_w), (py2, lim_h))]
    return xp.stack(clip, -1)


def _image(xp, p, base, prob, deltas, info):
    """(kept proposals (n, 5): x1 y1 x2 y2 score, in rank order) of one image."""
    n_anchor, hgt, wid = prob.shape[0] // 2, prob.shape[1], prob.shape[2]
    stride = p.feature_stride
    real_h, real_w = int(F32(info[0]) / F32(stride)), int(F32(info[1]) / F32(stride))
    if real_h > hgt or real_w > wid:
        raise ValueError(f"im_info {info.tolist()} asks for a {real_h}x{real_w} feature map "
                         f"(image size / feature_stride {stride}) but the map is {hgt}x{wid}")
    shift_x = (xp.arange(wid) * stride).astype(F32)
    shift_y = (xp.arange(hgt) * stride).astype(F32)
    sx, sy = shift_x[None, :, None], shift_y[:, None, None]
    corner = [base[None, None, :, k] for k in range(4)]
    boxes = xp.stack(xp.broadcast_arrays(corner[0] + sx, corner[1] + sy, corner[2] + sx,
                                         corner[3] + sy), -1)      # (h, w, anchors, 4)
    delta = deltas.reshape(n_anchor, 4, hgt, wid).transpose(2, 3, 0, 1)
    boxes = _decode(xp, p, boxes, delta.astype(F32), info[0], info[1])
    score = prob[n_anchor:].transpose(1, 2, 0).astype(F32).copy()
    score[real_h:] = -1
    score[:, real_w:] = -1
    boxes, score = boxes.reshape(-1, 4), score.reshape(-1)
    least = F32(p.rpn_min_size) * F32(info[2])
    small = ((boxes[:, 2] - boxes[:, 0] + F32(1)) < least) | \
        ((boxes[:, 3] - boxes[:, 1] + F32(1)) < least)
    grow = least / F32(2)
    boxes[small] += xp.asarray([-grow, -grow, grow, grow], dtype=F32)
    score[small] = -1
    pre = p.rpn_pre_nms_top_n if p.rpn_pre_nms_top_n > 0 else score.size
    order = xp.argsort(-score, kind="stable")[:min(pre, score.size)]
    dets = xp.concatenate([boxes[order], score[order][:, None]], 1)
    area = (dets[:, 2] - dets[:, 0] + F32(1)) * (dets[:, 3] - dets[:, 1] + F32(1))
    keep = greedy_keep(xp, dets[:, :4], area, None, F32(p.threshold), plus_one=True)
    post = min(p.rpn_post_nms_top_n, dets.shape[0])
    return dets[xp.flatnonzero(keep)[:post]]


def _proposal(xp, p, prob, deltas, info, out, score) -> None:
    base = xp.asarray(anchors(p))
    rows = p.rpn_post_nms_top_n
    for b in range(prob.shape[0]):
        kept = _image(xp, p, base, prob[b], deltas[b], info[b].astype(F32))
        pick = kept[xp.arange(rows) % kept.shape[0]]  # fewer survivors: cycle through them
        out[b * rows:(b + 1) * rows, 0] = b
        out[b * rows:(b + 1) * rows, 1:] = pick[:, :4]
        score[b * rows:(b + 1) * rows, 0] = pick[:, 4]


@kernel("_contrib_Proposal", "_contrib_MultiProposal")
def proposal(call):
    return partial(_proposal, call.xp, call.params, *call.inputs, *call.outputs)
