"""The SSD operators of MXNet 1.9.1's contrib namespace: ``_contrib_MultiBoxPrior`` (anchor
boxes), ``_contrib_MultiBoxTarget`` (training targets) and ``_contrib_MultiBoxDetection``
(decoding + per-class NMS). Their gradients are zero, as in MXNet.

As MXNet 1.9.1 computes them (src/operator/contrib/multibox_*.cc):
- MultiBoxPrior: per feature-map cell (row-major), ``sizes`` with the first ratio, then the
  other ``ratios`` with the first size; centres ``(i + offset) * step`` (steps -1: 1 / the
  map's height and width); arithmetic in float32; ``clip`` clamps to [0, 1].
- MultiBoxTarget: ground truths are the label rows before the first class -1; each is first
  matched to its best anchor (greedy, IoU > 1e-6), then every other anchor to its best
  ground truth when IoU > overlap_threshold; with negative_mining_ratio > 0, the
  ``ratio * positives`` anchors with IoU < negative_mining_thresh and the lowest background
  probability are negatives and the rest are ignored, otherwise every unmatched anchor is a
  negative. ``minimum_negative_samples`` is accepted and unused, as in MXNet.
- MultiBoxDetection: class = the best non-background probability (below ``threshold`` none),
  boxes decoded with the variances (clipped to [0, 1] with ``clip``); valid rows are moved
  to the front, sorted by score (stable), cut to ``nms_topk``, and a row is suppressed
  (class set to -1) when its IoU with a kept higher row (same class unless force_suppress)
  is >= nms_threshold. ``background_id`` is accepted and unused (class 0 is the
  background), as in MXNet.
"""
from __future__ import annotations

from .common import (Bool, Float, FloatTuple, InferError, Int, OpDef, assign, fmt,
                     register_op, same_type)
from .detection import zero_grads

def _check_prior(p) -> None:
    if not p.sizes or not p.ratios:
        raise InferError(f"sizes {p.sizes} and ratios {p.ratios} must each hold at least one "
                         f"value")
    if any(v <= 0 for v in p.sizes) or any(v <= 0 for v in p.ratios):
        raise InferError(f"sizes {p.sizes} and ratios {p.ratios} must be positive")
    if len(p.steps) != 2 or len(p.offsets) != 2:
        raise InferError(f"steps {p.steps} and offsets {p.offsets} must each hold 2 values "
                         f"(y, x)")
    if not all(0 <= v <= 1 for v in p.offsets):
        raise InferError(f"offsets {p.offsets} must lie in [0, 1]")
    if p.steps[0] * p.steps[1] < 0:
        raise InferError(f"steps {p.steps}: give both steps (y, x), or neither (-1, -1)")


def _prior_shape(p, ins, outs):
    _check_prior(p)
    data = ins[0]
    if data is None:
        return
    if len(data) < 4:
        raise InferError(f"data {fmt(data)} must have 4 dimensions (batch, channel, y, x)")
    if min(data[2:4]) >= 0:
        if min(data[2:4]) < 1:
            raise InferError(f"data {fmt(data)}: the feature map must not be empty")
        count = data[2] * data[3] * (len(p.sizes) + len(p.ratios) - 1)
        assign(outs, 0, (1, count, 4), "out")


def _check_variances(p) -> None:
    if len(p.variances) != 4:
        raise InferError(f"variances {p.variances} must hold 4 values")


def _target_shape(p, ins, outs):
    _check_variances(p)
    if p.negative_mining_ratio > 0 and p.negative_mining_thresh <= 0:
        raise InferError(f"negative_mining_thresh={p.negative_mining_thresh} must be positive "
                         f"when negative mining is on (negative_mining_ratio="
                         f"{p.negative_mining_ratio})")
    anchor, label, pred = ins
    if anchor is not None and (len(anchor) != 3 or anchor[0] not in (1, -1)
                               or anchor[2] not in (4, -1)):
        raise InferError(f"anchor {fmt(anchor)} must be (1, num_anchors, 4)")
    if label is not None and (len(label) != 3 or 0 <= label[2] < 5):
        raise InferError(f"label {fmt(label)} must be (batch, num_labels, >= 5): rows of "
                         f"[class, x1, y1, x2, y2, ...]")
    if pred is not None and len(pred) != 3:
        raise InferError(f"cls_pred {fmt(pred)} must be (batch, num_classes, num_anchors)")
    if anchor is not None and pred is not None and min(anchor[1], pred[2]) >= 0 \
            and anchor[1] != pred[2]:
        raise InferError(f"cls_pred {fmt(pred)} has {pred[2]} anchors, anchor {fmt(anchor)} "
                         f"{anchor[1]}")
    if anchor is not None and label is not None:
        assign(outs, 0, (label[0], anchor[1] * 4), "out")
        assign(outs, 1, (label[0], anchor[1] * 4), "out")
        assign(outs, 2, (label[0], anchor[1]), "out")


def _detection_shape(p, ins, outs):
    _check_variances(p)
    prob, loc, anchor = ins
    for shape, rank, what in ((prob, 3, "cls_prob (batch, classes, anchors)"),
                              (loc, 2, "loc_pred (batch, anchors * 4)"),
                              (anchor, 3, "anchor (1, anchors, 4)")):
        if shape is not None and len(shape) != rank:
            raise InferError(f"{what.split()[0]} {fmt(shape)} must be {what.split(' ', 1)[1]}")
    if anchor is not None and anchor[2] not in (4, -1):
        raise InferError(f"anchor {fmt(anchor)}: the last dimension must be 4")
    if prob is not None and anchor is not None and min(prob[2], anchor[1]) >= 0 \
            and prob[2] != anchor[1]:
        raise InferError(f"cls_prob {fmt(prob)} has {prob[2]} anchors, anchor {fmt(anchor)} "
                         f"{anchor[1]}")
    if prob is not None and loc is not None and min(prob[2], loc[1]) >= 0 \
            and prob[2] * 4 != loc[1]:
        raise InferError(f"loc_pred {fmt(loc)} must hold 4 values per anchor of cls_prob "
                         f"{fmt(prob)}")
    if prob is not None and anchor is not None:
        assign(outs, 0, (prob[0], anchor[1], 6), "out")


VARIANCES = FloatTuple((0.1, 0.1, 0.2, 0.2))


def _declare() -> None:
    register_op(OpDef("_contrib_MultiBoxPrior", params={
        "sizes": FloatTuple((1.0,)), "ratios": FloatTuple((1.0,)), "clip": Bool(False),
        "steps": FloatTuple((-1.0, -1.0)), "offsets": FloatTuple((0.5, 0.5))},
        infer_shape=_prior_shape, infer_type=same_type, gradient=zero_grads))
    register_op(OpDef("_contrib_MultiBoxTarget", inputs=("anchor", "label", "cls_pred"),
                      outputs=("loc_target", "loc_mask", "cls_target"), params={
                          "overlap_threshold": Float(0.5), "ignore_label": Float(-1.0),
                          "negative_mining_ratio": Float(-1.0),
                          "negative_mining_thresh": Float(0.5),
                          "minimum_negative_samples": Int(0), "variances": VARIANCES},
                      infer_shape=_target_shape, infer_type=same_type, gradient=zero_grads))
    register_op(OpDef("_contrib_MultiBoxDetection", inputs=("cls_prob", "loc_pred", "anchor"),
                      params={"clip": Bool(True), "threshold": Float(0.01),
                              "background_id": Int(0), "nms_threshold": Float(0.5),
                              "force_suppress": Bool(False), "variances": VARIANCES,
                              "nms_topk": Int(-1)},
                      infer_shape=_detection_shape, infer_type=same_type,
                      gradient=zero_grads))


_declare()
