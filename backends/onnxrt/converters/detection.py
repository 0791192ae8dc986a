"""Detection operators and ONNX: which ones ONNX expresses with MXNet 1.9.1's results, and
why the others end a region (the reason appears in the partition plan).

ROIAlign is ONNX RoiAlign (opset 16: ``half_pixel`` for aligned=True, ``output_half_pixel``
otherwise; ONNX Runtime's CPU kernel is the same Detectron sampling MXNet uses) and
ROIPooling is MaxRoiPool (Caffe's rounding and bins, as MXNet's). Both need every ROI's batch
index to name an image: ONNX Runtime rejects the others where graphexec writes zeros."""
from __future__ import annotations

import numpy as np

from ..convert import ConvertCall, converter, not_expressed


def _align_supports(node, shapes) -> "bool | str":
    if node.params.position_sensitive:
        return "position-sensitive ROIAlign has no ONNX RoiAlign form"
    return True


@converter("_contrib_ROIAlign", supports=_align_supports)
def _roi_align(c: ConvertCall) -> None:
    b, p = c.b, c.p
    data, rois = c.inputs
    index = b.one("Squeeze", [b.one("Slice", [rois, b.ints([0]), b.ints([1]), b.ints([1])],
                                    hint=c.hint("batch_col")), b.ints([1])],
                  hint=c.hint("batch_f"))
    batch = b.one("Cast", [index], hint=c.hint("batch"), to=7)  # int64
    boxes = b.one("Slice", [rois, b.ints([1]), b.ints([5]), b.ints([1])], hint=c.hint("boxes"))
    ph, pw = p.pooled_size
    b.one("RoiAlign", [data, boxes, batch], c.out, mode="avg", output_height=ph,
          output_width=pw, sampling_ratio=max(p.sample_ratio, 0),
          spatial_scale=float(np.float32(p.spatial_scale)),
          coordinate_transformation_mode="half_pixel" if p.aligned else "output_half_pixel")


@converter("ROIPooling")
def _roi_pooling(c: ConvertCall) -> None:
    c.b.one("MaxRoiPool", list(c.inputs), c.out, pooled_shape=list(c.p.pooled_size),
            spatial_scale=float(np.float32(c.p.spatial_scale)))

not_expressed("ONNX NonMaxSuppression returns the selected indices per class (ties and "
              "the IoU arithmetic as it likes), not MXNet's score-sorted rows padded with -1 "
              "and its hidden index record", "_contrib_box_nms")
not_expressed("a greedy, data-dependent matching ONNX has no operator for",
              "_contrib_bipartite_matching")
not_expressed("left to the native kernels: used when training detectors (target "
              "assignment), never at inference", "_contrib_box_encode")
not_expressed("left to the native kernels for now (elementwise box arithmetic ONNX could "
              "express; not converted yet)", "_contrib_box_iou", "_contrib_box_decode")
not_expressed("SSD training-target assignment (greedy matching, hard negative mining); "
              "training only", "_contrib_MultiBoxTarget")
not_expressed("anchor boxes depend only on the feature map's shape: left to the native "
              "kernel (the values could be a constant, not converted yet)",
              "_contrib_MultiBoxPrior")
not_expressed("MXNet's per-class NMS keeps every row in place (suppressed ones get class -1) "
              "after a stable score sort; ONNX NonMaxSuppression returns selected indices",
              "_contrib_MultiBoxDetection")
not_expressed("anchor generation, decoding, a stable sort and MXNet's '+1' NMS with cycled "
              "output rows: no ONNX operator sequence reproduces it", "_contrib_Proposal",
              "_contrib_MultiProposal")
not_expressed("position-sensitive average pooling over rounded bins: ONNX has no such "
              "operator", "_contrib_PSROIPooling")
not_expressed("rotated ROIs: ONNX RoiAlign samples axis-aligned boxes only",
              "_contrib_RROIAlign")
