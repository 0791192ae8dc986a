"""Kernels of MultiBoxPrior, MultiBoxTarget and MultiBoxDetection
(core/ops/detection_multibox.py), following MXNet 1.9.1's CPU arithmetic: the prior boxes and
the regression targets are computed in float32 whatever the dtype, the decoding in the
data's dtype."""
from __future__ import annotations

from functools import partial

import numpy as np

from .base import kernel
from .detection import areas, greedy_keep

F32 = np.float32


def _prior(xp, p, data, out) -> None:
    h, w = data.shape[2], data.shape[3]
    if p.steps[0] > 0 and p.steps[1] > 0:
        step_y, step_x = F32(p.steps[0]), F32(p.steps[1])
    else:  # 1 / the map's size, in float32 as MXNet
        step_y, step_x = F32(1) / F32(h), F32(1) / F32(w)
    cy = (xp.arange(h, dtype=F32) + F32(p.offsets[0])) * step_y
    cx = (xp.arange(w, dtype=F32) + F32(p.offsets[1])) * step_x
    pairs = [(s, p.ratios[0]) for s in p.sizes] + [(p.sizes[0], r) for r in p.ratios[1:]]
    half = []
    for size, ratio in pairs:  # as MXNet: size * h / w * sqrt(ratio) / 2, size / sqrt / 2
        root = np.sqrt(F32(ratio))
        half.append((F32(size) * F32(h) / F32(w) * root / F32(2), F32(size) / root / F32(2)))
    hw = xp.asarray([v[0] for v in half], dtype=F32)
    hh = xp.asarray([v[1] for v in half], dtype=F32)
    boxes = xp.stack(xp.broadcast_arrays(cx[None, :, None] - hw, cy[:, None, None] - hh,
                                         cx[None, :, None] + hw, cy[:, None, None] + hh), -1)
    res = boxes.reshape(out.shape).astype(out.dtype)
    if p.clip:
        res = xp.clip(res, 0, 1)
    out[...] = res


@kernel("_contrib_MultiBoxPrior")
def multibox_prior(call):
    return partial(_prior, call.xp, call.params, call.inputs[0], call.outputs[0])


# -- MultiBoxTarget -------------------------------------------------------------------------
def _overlaps(xp, anchors, gts):
    """MXNet's (anchors, ground truths) IoU: unclipped areas, 0 where the union is 0."""
    a, g = anchors[:, None, :], gts[None, :, :]
    zero = anchors.dtype.type(0)
    iw = xp.maximum(zero, xp.minimum(a[..., 2], g[..., 2]) - xp.maximum(a[..., 0], g[..., 0]))
    ih = xp.maximum(zero, xp.minimum(a[..., 3], g[..., 3]) - xp.maximum(a[..., 1], g[..., 1]))
    inter = iw * ih
    union = ((a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
             + (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1])) - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return xp.where(union == 0, zero, inter / union).astype(F32)


def _valid_labels(xp, label) -> int:
    """The ground truths: the rows before the first class -1 (whose box must be -1 too)."""
    ends = xp.flatnonzero(label[:, 0] == -1)
    if not ends.size:
        return label.shape[0]
    end = int(ends[0])
    if bool((label[end, 1:5] != -1).any()):
        raise ValueError(f"label row {end} has class -1 (the end of the ground truths) but "
                         f"box {label[end, 1:5].tolist()}; padding rows must be all -1")
    return end


def _match(xp, iou, thresh: float):
    """(ground truth per anchor or -1, positive anchors): the greedy bipartite stage, then
    every other anchor whose best IoU > thresh (thresh <= 0: none)."""
    n_anchor, n_gt = iou.shape
    gt_of = xp.full(n_anchor, -1, dtype=np.int64)
    work = iou.copy()
    for _ in range(n_gt):  # each round matches one ground truth, or stops
        best = int(xp.argmax(work))
        j, k = divmod(best, n_gt)
        if not work[j, k] > F32(1e-6):
            break
        gt_of[j] = k
        work[j, :] = -np.inf
        work[:, k] = -np.inf
    positive = gt_of >= 0
    if thresh > 0:
        best_gt = xp.argmax(iou, axis=1)
        more = ~positive & (iou.max(axis=1) > F32(thresh))
        gt_of[more] = best_gt[more]
        positive |= more
    return gt_of, positive


def _mine(xp, p, iou, positive, preds):
    """Negatives by hard mining: the anchors (not positive, best IoU < thresh) whose
    background probability is lowest, ``ratio * positives`` of them."""
    n_anchor = iou.shape[0]
    count = int(F32(int(positive.sum())) * F32(p.negative_mining_ratio))
    count = min(count, n_anchor - int(positive.sum()))
    negative = xp.zeros(n_anchor, dtype=bool)
    if count <= 0:
        return negative
    top = preds.max(axis=0)
    total = xp.zeros_like(top)
    for k in range(preds.shape[0]):  # in class order, as MXNet sums
        total += xp.exp(preds[k] - top)
    prob = xp.exp(preds[0] - top) / total
    cand = xp.flatnonzero(~positive & (iou.max(axis=1) < F32(p.negative_mining_thresh)))
    if cand.size < count:
        raise ValueError(f"negative mining needs {count} negative anchors but only "
                         f"{cand.size} have an IoU below negative_mining_thresh")
    chosen = cand[xp.argsort(prob[cand], kind="stable")[:count]]
    negative[chosen] = True
    return negative


def _loc_targets(xp, anchors, gts, variances):
    """MXNet's AssignLocTargets, in float32."""
    a, g = anchors.astype(F32), gts.astype(F32)
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    gw, gh = g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
    half = F32(0.5)
    ax, ay = (a[:, 0] + a[:, 2]) * half, (a[:, 1] + a[:, 3]) * half
    gx, gy = (g[:, 0] + g[:, 2]) * half, (g[:, 1] + g[:, 3]) * half
    v = [F32(x) for x in variances]
    with np.errstate(all="ignore"):
        return xp.stack([(gx - ax) / aw / v[0], (gy - ay) / ah / v[1],
                         xp.log(gw / aw) / v[2], xp.log(gh / ah) / v[3]], -1)


def _target(xp, p, anchor, label, preds, loc, mask, cls) -> None:
    anchors = anchor.reshape(-1, 4)
    loc.fill(0)
    mask.fill(0)
    cls.fill(p.ignore_label)
    for b in range(label.shape[0]):
        n_gt = _valid_labels(xp, label[b])
        if not n_gt:
            continue
        gts = label[b, :n_gt]
        iou = _overlaps(xp, anchors, gts[:, 1:5])
        gt_of, positive = _match(xp, iou, p.overlap_threshold)
        if p.negative_mining_ratio > 0:
            negative = _mine(xp, p, iou, positive, preds[b])
        else:
            negative = ~positive
        pos = xp.flatnonzero(positive)
        cls[b, negative] = 0
        cls[b, pos] = gts[gt_of[pos], 0] + 1
        rows = mask[b].reshape(-1, 4)
        rows[pos] = 1
        loc[b].reshape(-1, 4)[pos] = _loc_targets(xp, anchors[pos], gts[gt_of[pos], 1:5],
                                                   p.variances)


@kernel("_contrib_MultiBoxTarget")
def multibox_target(call):
    return partial(_target, call.xp, call.params, *call.inputs, *call.outputs)


# -- MultiBoxDetection ----------------------------------------------------------------------
def _decode(xp, p, loc, anchors):
    """MXNet's TransformLocations in the data's dtype: (anchors, 4) corner boxes."""
    t = loc.dtype.type
    al, at, ar, ab = (anchors[:, k] for k in range(4))
    aw, ah = ar - al, ab - at
    ax, ay = (al + ar) / t(2), (at + ab) / t(2)
    v = [t(F32(x)) for x in p.variances]
    ox = loc[:, 0] * v[0] * aw + ax
    oy = loc[:, 1] * v[1] * ah + ay
    with np.errstate(over="ignore"):
        ow = xp.exp(loc[:, 2] * v[2]) * aw / t(2)
        oh = xp.exp(loc[:, 3] * v[3]) * ah / t(2)
    boxes = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
    return xp.clip(boxes, 0, 1) if p.clip else boxes


def _classes(xp, p, probs):
    """(class id - 1 per anchor, -1 for none; score): the best non-background class."""
    n_anchor = probs.shape[1]
    if probs.shape[0] < 2:
        return xp.full(n_anchor, -1, probs.dtype), xp.full(n_anchor, -1, probs.dtype)
    rest = probs[1:]
    best = xp.argmax(rest, axis=0)
    score = xp.take_along_axis(rest, best[None], 0)[0]
    found = score > probs.dtype.type(-1)
    score = xp.where(found, score, probs.dtype.type(-1))
    ids = xp.where(found, best + 1, 0)
    ids = xp.where((ids > 0) & (score < probs.dtype.type(F32(p.threshold))), 0, ids)
    return (ids - 1).astype(probs.dtype), score


def _detect(xp, p, cls_prob, loc_pred, anchor, out) -> None:
    anchors = anchor.reshape(-1, 4)
    out.fill(-1)
    for b in range(cls_prob.shape[0]):
        ids, score = _classes(xp, p, cls_prob[b])
        rows = xp.concatenate([ids[:, None], score[:, None],
                               _decode(xp, p, loc_pred[b].reshape(-1, 4), anchors)], 1)
        valid = rows[ids >= 0]
        out[b, :valid.shape[0]] = valid
        if not valid.shape[0] or not 0 < p.nms_threshold <= 1:
            continue
        order = xp.argsort(-valid[:, 1], kind="stable")
        keep = valid.shape[0] if p.nms_topk <= 0 else min(p.nms_topk, valid.shape[0])
        out[b, keep:valid.shape[0], 0] = -1  # cut rows keep their unsorted values
        top = valid[order[:keep]]
        boxes = top[:, 2:6]
        classes = None if p.force_suppress else top[:, 0].astype(np.int64)
        kept = greedy_keep(xp, boxes, areas(xp, boxes, False), classes,
                           F32(p.nms_threshold), inclusive=True)
        top[~kept, 0] = -1
        out[b, :keep] = top


@kernel("_contrib_MultiBoxDetection")
def multibox_detection(call):
    return partial(_detect, call.xp, call.params, *call.inputs, call.outputs[0])
