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


class _Ops:
    """Elementwise helpers on one converter's builder, in the data's dtype."""

    def __init__(self, c: ConvertCall):
        self.c, self.b, self.dtype = c, c.b, c.in_dtypes[0]

    def __getattr__(self, op_type):
        return lambda *xs: self.b.one(op_type, list(xs), hint=self.c.hint(op_type.lower()))

    def num(self, value) -> str:
        return self.b.const(value, self.dtype, self.c.hint("k"))

    def columns(self, x: str, rows: int) -> list:
        """The 4 box values of ``x`` seen as (rows, 4): 4 (rows, 1) columns."""
        flat = self.b.one("Reshape", [x, self.b.ints([rows, 4])], hint=self.c.hint("boxes"))
        return self.b.add("Split", [flat, self.b.ints([1, 1, 1, 1])],
                          [self.b.fresh(self.c.hint("col")) for _ in range(4)], axis=1)

    def edges(self, box: list, center: bool) -> list:
        if not center:
            return box
        two = self.num(2)
        hw, hh = self.Div(box[2], two), self.Div(box[3], two)
        return [self.Sub(box[0], hw), self.Sub(box[1], hh), self.Add(box[0], hw),
                self.Add(box[1], hh)]


def _count(shape) -> int:
    return int(np.prod(shape[:-1], dtype=np.int64))


@converter("_contrib_box_iou")
def _box_iou(c: ConvertCall) -> None:
    """As the kernel: w = max(min(x2) - max(x1), 0), likewise h; areas 0 when a side is
    negative; IoU = inter / ((area_a + area_b) - inter), 0 where inter <= 0."""
    o = _Ops(c)
    center = c.p.format == "center"
    a = o.columns(c.inputs[0], _count(c.in_shapes[0]))
    b = [o.Transpose(v) for v in o.columns(c.inputs[1], _count(c.in_shapes[1]))]
    zero = o.num(0)

    def area(box):
        w, h = (box[2], box[3]) if center else (o.Sub(box[2], box[0]), o.Sub(box[3], box[1]))
        return o.Where(o.Or(o.Less(w, zero), o.Less(h, zero)), zero, o.Mul(w, h))
    ea, eb = o.edges(a, center), o.edges(b, center)
    w = o.Max(o.Sub(o.Min(ea[2], eb[2]), o.Max(ea[0], eb[0])), zero)
    h = o.Max(o.Sub(o.Min(ea[3], eb[3]), o.Max(ea[1], eb[1])), zero)
    inter = o.Mul(w, h)
    iou = o.Div(inter, o.Sub(o.Add(area(a), area(b)), inter))
    res = o.Where(o.LessOrEqual(inter, zero), zero, iou)
    c.b.one("Reshape", [res, c.b.ints(c.out_shapes[0])], c.out)


@converter("_contrib_box_decode")
def _box_decode(c: ConvertCall) -> None:
    """As the kernel: anchor centres (corner anchors: x1 + w * 0.5), then centre + delta *
    std * size and size * exp(delta * std, clipped) * 0.5 either side."""
    o, p = _Ops(c), c.p
    data_shape = c.in_shapes[0]
    ax, ay, aw, ah = o.columns(c.inputs[1], data_shape[1])
    half = o.num(0.5)
    if p.format == "corner":
        aw, ah = o.Sub(aw, ax), o.Sub(ah, ay)
        ax, ay = o.Add(ax, o.Mul(aw, half)), o.Add(ay, o.Mul(ah, half))
    d = o.columns(c.inputs[0], _count(data_shape))
    d = [o.Reshape(v, c.b.ints([data_shape[0], data_shape[1], 1])) for v in d]
    std = [o.num(v) for v in (p.std0, p.std1, p.std2, p.std3)]
    ox = o.Add(o.Mul(o.Mul(d[0], std[0]), aw), ax)
    oy = o.Add(o.Mul(o.Mul(d[1], std[1]), ah), ay)
    dw, dh = o.Mul(d[2], std[2]), o.Mul(d[3], std[3])
    if p.clip > 0:
        dw, dh = o.Min(dw, o.num(p.clip)), o.Min(dh, o.num(p.clip))
    ow = o.Mul(o.Mul(o.Exp(dw), aw), half)
    oh = o.Mul(o.Mul(o.Exp(dh), ah), half)
    c.b.one("Concat", [o.Sub(ox, ow), o.Sub(oy, oh), o.Add(ox, ow), o.Add(oy, oh)], c.out,
            axis=-1)


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
