"""Region operators of MXNet 1.9.1 (Faster R-CNN, R-FCN): ``_contrib_ROIAlign``,
``ROIPooling``, ``_contrib_Proposal``, ``_contrib_MultiProposal``, ``_contrib_PSROIPooling``
and ``_contrib_RROIAlign``.

As MXNet 1.9.1 computes them (src/operator/roi_pooling.cc, contrib/roi_align.cc,
proposal.cc, multi_proposal.cc, psroi_pooling.cc, rroi_align.cc):
- rois are rows [batch index, x1, y1, x2, y2] in image coordinates, scaled by
  ``spatial_scale`` onto the feature map; a negative batch index gives zeros.
- ROIAlign averages bilinear samples (``sample_ratio`` per bin side, or ceil(bin size)),
  with ``aligned`` the half-pixel shift of Detectron2 (then an empty ROI is an error) and
  without it ROIs of at least 1x1; ``position_sensitive`` reads channel group (ph, pw) for
  bin (ph, pw). Its gradient scatters back with the same weights; the rois get none.
- ROIPooling takes the max of each bin (rounded ROI, floor/ceil bin edges, empty bins 0)
  and records the argmax (a hidden output); its gradient adds the output gradient there.
- Proposal / MultiProposal: anchors from scales x ratios around each feature-map cell,
  decoded with the box deltas, clipped to the image, boxes smaller than rpn_min_size *
  scale flagged (score -1), the best rpn_pre_nms_top_n kept (stable sort), NMS with "+1"
  box sizes, and rpn_post_nms_top_n rows written, cycling through the kept boxes when
  fewer survive. Proposal takes one image; gradients are zero.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import (Bool, Float, FloatTuple, InferError, Int, OpDef, Shape, assign,
                     assign_dtype, fmt, register_op, same_type)
from .detection import zero_grads
from .tensor_grad import backward_op, forward_params

__all__ = ["check_pooled", "psroi_group"]


def check_pooled(p) -> tuple[int, int]:
    """(PH, PW) of ``pooled_size``; both positive."""
    if len(p.pooled_size) != 2 or min(p.pooled_size) < 1:
        raise InferError(f"pooled_size {p.pooled_size} must be 2 positive sizes (h, w)")
    return p.pooled_size


def _check_scale(p) -> None:
    if not 0.0 <= p.spatial_scale <= 1.0:
        raise InferError(f"spatial_scale={p.spatial_scale} must lie in [0, 1] (feature map "
                         f"size / image size)")


def _roi_inputs(data, rois, cols: int = 5) -> None:
    if data is not None and len(data) != 4:
        raise InferError(f"data {fmt(data)} must be a 4-D feature map (batch, channel, y, x)")
    if rois is not None and (len(rois) != 2 or rois[1] not in (cols, -1)):
        fields = "batch index, x1, y1, x2, y2" if cols == 5 else \
            "batch index, x, y, w, h, angle"
        raise InferError(f"rois {fmt(rois)} must be (num_rois, {cols}): rows of [{fields}]")


def _roi_shape(channels_of, cols: int = 5):
    """Shape rule of an ROI op whose rois have ``cols`` columns."""
    def rule(p, ins, outs):
        ph, pw = check_pooled(p)
        _check_scale(p)
        data, rois = ins
        _roi_inputs(data, rois, cols)
        if data is None or rois is None:
            return
        shape = (rois[0], channels_of(p, data[1]), ph, pw)
        for k in range(len(outs)):
            assign(outs, k, shape, "out")
    return rule


def _align_channels(p, channels: int) -> int:
    ph, pw = p.pooled_size
    if p.position_sensitive:
        if channels >= 0 and channels % (ph * pw):
            raise InferError(f"position_sensitive: the {channels} input channels must divide "
                             f"by pooled_size {ph}x{pw}")
        return channels // (ph * pw) if channels >= 0 else -1
    return channels


def _same_channels(p, channels: int) -> int:
    return channels


def _two_types(p, ins, outs):
    """data and rois share a dtype, as MXNet checks; ROIPooling's argmax is int32."""
    first = outs[:1]
    same_type(p, ins, first)
    outs[0] = first[0]
    if len(outs) > 1:
        assign_dtype(outs, 1, np.dtype("int32"), "out")


def psroi_group(p) -> int:
    """PSROIPooling's group size (0: pooled_size, as MXNet)."""
    return p.group_size or p.pooled_size


def _psroi_channels(p, channels: int) -> int:
    if p.output_dim < 1 or p.group_size < 0:
        raise InferError(f"output_dim={p.output_dim} must be positive and group_size="
                         f"{p.group_size} not negative")
    group = psroi_group(p)
    if channels >= 0 and channels < p.output_dim * group * group:
        raise InferError(f"data has {channels} channels; PSROIPooling reads output_dim * "
                         f"group_size^2 = {p.output_dim} * {group}^2 of them")
    return p.output_dim


def _psroi_shape(p, ins, outs):
    if p.pooled_size < 1:
        raise InferError(f"pooled_size={p.pooled_size} must be positive")
    _check_scale(p)
    data, rois = ins
    _roi_inputs(data, rois)
    if data is None or rois is None:
        return
    assign(outs, 0, (rois[0], _psroi_channels(p, data[1]), p.pooled_size, p.pooled_size),
           "out")


def _roi_grad(op_name: str, extra_outputs: bool):
    def rule(g, node, ograds):
        inputs = [ograds[0], node.inputs[1]]
        if extra_outputs:
            inputs.append(Entry(node, 1))
        bw = g.backward_node(node, op_name, inputs)
        return g.outputs(bw)
    return rule


def _proposal_shape(batched: bool):
    def rule(p, ins, outs):
        _check_proposal(p)
        prob = ins[0]
        if prob is None:
            return
        if len(prob) != 4 or (prob[1] >= 0 and prob[1] != 2 * len(p.scales) * len(p.ratios)):
            raise InferError(f"cls_prob {fmt(prob)} must be (batch, 2 * anchors, y, x) with "
                             f"anchors = len(scales) * len(ratios) = "
                             f"{len(p.scales) * len(p.ratios)}")
        if not batched and prob[0] not in (1, -1):
            raise InferError(f"cls_prob {fmt(prob)}: Proposal takes one image (batch 1); "
                             f"use MultiProposal for a batch")
        assign(ins, 1, (prob[0], prob[1] * 2, prob[2], prob[3]))
        assign(ins, 2, (prob[0], 3))
        rows = p.rpn_post_nms_top_n * (prob[0] if batched else 1)
        assign(outs, 0, (rows, 5), "out")
        assign(outs, 1, (rows, 1), "out")
    return rule


def _check_proposal(p) -> None:
    if not p.scales or not p.ratios or min(p.scales) <= 0 or min(p.ratios) <= 0:
        raise InferError(f"scales {p.scales} and ratios {p.ratios} must be non-empty and "
                         f"positive")
    if p.feature_stride < 1 or p.rpn_post_nms_top_n < 1 or p.rpn_min_size < 0:
        raise InferError(f"feature_stride={p.feature_stride} and rpn_post_nms_top_n="
                         f"{p.rpn_post_nms_top_n} must be positive, rpn_min_size="
                         f"{p.rpn_min_size} not negative")


def _declare() -> None:
    align = {"pooled_size": Shape(), "spatial_scale": Float(), "sample_ratio": Int(-1),
             "position_sensitive": Bool(False), "aligned": Bool(False)}
    register_op(OpDef("_contrib_ROIAlign", inputs=("data", "rois"), params=align,
                      infer_shape=_roi_shape(_align_channels), infer_type=_two_types,
                      gradient=_roi_grad("_backward_ROIAlign", False)))
    backward_op("_backward_ROIAlign", inputs=("ograd", "rois"), outputs=2,
                params=forward_params("_contrib_ROIAlign"))
    register_op(OpDef("ROIPooling", inputs=("data", "rois"), outputs=("output", "maxidx"),
                      num_visible=1, params={"pooled_size": Shape(), "spatial_scale": Float()},
                      infer_shape=_roi_shape(_same_channels), infer_type=_two_types,
                      gradient=_roi_grad("_backward_ROIPooling", True)))
    backward_op("_backward_ROIPooling", inputs=("ograd", "rois", "maxidx"), outputs=2,
                params=forward_params("ROIPooling"))
    register_op(OpDef("_contrib_PSROIPooling", inputs=("data", "rois"), params={
        "spatial_scale": Float(), "output_dim": Int(), "pooled_size": Int(),
        "group_size": Int(0)}, infer_shape=_psroi_shape, infer_type=_two_types,
        gradient=_roi_grad("_backward_PSROIPooling", False)))
    backward_op("_backward_PSROIPooling", inputs=("ograd", "rois"), outputs=2,
                params=forward_params("_contrib_PSROIPooling"))
    # no gradient, as MXNet ("RROIAlign: Backward is not supported")
    register_op(OpDef("_contrib_RROIAlign", inputs=("data", "rois"), params={
        "pooled_size": Shape(), "spatial_scale": Float(), "sampling_ratio": Int(-1)},
        infer_shape=_roi_shape(_same_channels, 6), infer_type=_two_types))
    proposal = {"rpn_pre_nms_top_n": Int(6000), "rpn_post_nms_top_n": Int(300),
                "threshold": Float(0.7), "rpn_min_size": Int(16),
                "scales": FloatTuple((4.0, 8.0, 16.0, 32.0)),
                "ratios": FloatTuple((0.5, 1.0, 2.0)), "feature_stride": Int(16),
                "output_score": Bool(False), "iou_loss": Bool(False)}
    for name, batched in (("_contrib_Proposal", False), ("_contrib_MultiProposal", True)):
        register_op(OpDef(name, inputs=("cls_prob", "bbox_pred", "im_info"),
                          outputs=("output", "score"), params=proposal,
                          num_visible=lambda p: 2 if p.output_score else 1,
                          infer_shape=_proposal_shape(batched), infer_type=same_type,
                          gradient=zero_grads))


_declare()
