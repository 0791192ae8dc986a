"""Bounding-box operators of MXNet 1.9.1's contrib namespace: ``_contrib_box_nms`` (alias
``_contrib_box_non_maximum_suppression``), ``_contrib_box_iou``, ``_contrib_box_encode``,
``_contrib_box_decode`` and ``_contrib_bipartite_matching``. The SSD operators
(``_contrib_MultiBox*``) are in detection_multibox.py, the region ones in detection_roi.py.

As MXNet 1.9.1 computes them (src/operator/contrib/bounding_box-inl.h):
- box_nms sees the data as (batch, num_box, width) (leading dimensions are batches); boxes
  with score <= valid_thresh (or, with id_index, of class background_id) are dropped, the
  rest ordered by descending score (stable: ties keep input order), only the first ``topk``
  take part, and a box is suppressed when its IoU with a kept, higher-ranked box (of the same
  class unless force_suppress) is > overlap_thresh. Kept rows come first in rank order; the
  other rows are -1. ``topk=0`` copies the data. With in_format != out_format the kept rows
  are converted, except rows whose first coordinate is negative (MXNet skips those). A hidden
  second output records each row's source index (-1 for none); the gradient copies each
  output row's gradient back to its source row.
- box_iou, box_encode, box_decode and bipartite_matching have zero gradients, as in MXNet.
"""
from __future__ import annotations

from ..ir.graph import Entry
from .common import (Bool, Enum, Float, InferError, Int, OpDef, assign, fmt, register_op,
                     same_type)
from .tensor_grad import backward_op, forward_params, zero_grad

__all__ = ["nms_layout", "zero_grads"]

FORMATS = ("corner", "center")


def nms_layout(p, width: int) -> None:
    """Check box_nms's column attributes against the box width (MXNet's BoxNMSShape)."""
    need = 6 if p.id_index >= 0 else 5
    if width < need:
        raise InferError(f"the last dimension of data (box width) is {width}; it must hold at "
                         f"least {need} values (score, 4 coordinates"
                         f"{', class id' if need == 6 else ''})")
    coords = range(p.coord_start, p.coord_start + 4)
    if p.coord_start < 0 or p.coord_start + 3 >= width:
        raise InferError(f"coord_start={p.coord_start}: the 4 coordinates must lie within the "
                         f"box width {width}")
    if not 0 <= p.score_index < width or p.score_index in coords:
        raise InferError(f"score_index={p.score_index} must lie in [0, {width}) outside the "
                         f"coordinates [{p.coord_start}, {p.coord_start + 3}]")
    if p.id_index >= 0 and (p.id_index >= width or p.id_index in coords
                            or p.id_index == p.score_index):
        raise InferError(f"id_index={p.id_index} must lie in [0, {width}) apart from "
                         f"score_index and the coordinates [{p.coord_start}, "
                         f"{p.coord_start + 3}]")


def _nms_shape(p, ins, outs):
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return
    if len(data) < 2:
        raise InferError(f"data {fmt(data)} must have at least 2 dimensions (..., num_box, "
                         f"box width)")
    if data[-1] >= 0:
        nms_layout(p, data[-1])
    assign(ins, 0, data)
    assign(outs, 0, data, "out")
    assign(outs, 1, data[:-1] + (1,), "out")


def _nms_grad(g, node, ograds):
    bw = g.backward_node(node, "_backward_contrib_box_nms",
                         [ograds[0], ograds[1], Entry(node, 0), Entry(node, 1)])
    return [Entry(bw, 0)]


def zero_grads(g, node, ograds):
    """Every input gets a zero gradient (MXNet's MakeZeroGradNodes and the zero backward
    kernels of box_iou and bipartite_matching)."""
    return [zero_grad(g, node, k, f"{node.name}_in{k}_backward") for k in range(len(node.inputs))]


def _box_last(shape, what: str, min_ndim: int = 2, exact: bool = False) -> None:
    if shape is None:
        return
    if (len(shape) != min_ndim) if exact else (len(shape) < min_ndim):
        want = f"exactly {min_ndim}" if exact else f"at least {min_ndim}"
        raise InferError(f"{what} {fmt(shape)} must have {want} dimensions")
    if shape[-1] >= 0 and shape[-1] != 4:
        raise InferError(f"{what} {fmt(shape)}: the last dimension must be 4 (a box), "
                         f"not {shape[-1]}")


def _iou_shape(p, ins, outs):
    lhs, rhs = ins
    _box_last(lhs, "lhs")
    _box_last(rhs, "rhs")
    if lhs is not None and rhs is not None:
        assign(outs, 0, lhs[:-1] + rhs[:-1], "out")


def _decode_shape(p, ins, outs):
    data, anchors = ins
    _box_last(data, "data", 3, exact=True)
    _box_last(anchors, "anchors", 3)
    if anchors is not None and data is not None and min(data[1], anchors[-2]) >= 0 \
            and data[1] * 4 != _size(anchors):
        raise InferError(f"anchors {fmt(anchors)} must hold one box per position of data "
                         f"{fmt(data)} ({data[1]} boxes)")
    if data is not None:
        assign(outs, 0, data, "out")


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _encode_shape(p, ins, outs):
    samples, matches, anchors, refs = ins[:4]
    for shape, what in ((samples, "samples"), (matches, "matches")):
        if shape is not None and len(shape) != 2:
            raise InferError(f"{what} {fmt(shape)} must have 2 dimensions (batch, anchors)")
    _box_last(anchors, "anchors", 3, exact=True)
    _box_last(refs, "refs", 3, exact=True)
    assign(ins, 4, (4,))
    assign(ins, 5, (4,))
    if anchors is not None:
        for k in (0, 1):
            assign(ins, k, anchors[:2])
        assign(outs, 0, anchors, "out")
        assign(outs, 1, anchors, "out")


def _matching_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if len(data) < 2:
        raise InferError(f"the score matrix {fmt(data)} must have at least 2 dimensions "
                         f"(..., rows, columns)")
    assign(outs, 0, data[:-1], "out")
    assign(outs, 1, data[:-2] + data[-1:], "out")


def _declare() -> None:
    nms = {"overlap_thresh": Float(0.5), "valid_thresh": Float(0.0), "topk": Int(-1),
           "coord_start": Int(2), "score_index": Int(1), "id_index": Int(-1),
           "background_id": Int(-1), "force_suppress": Bool(False),
           "in_format": Enum(FORMATS, "corner"), "out_format": Enum(FORMATS, "corner")}
    register_op(OpDef("_contrib_box_nms", aliases=("_contrib_box_non_maximum_suppression",),
                      params=nms, outputs=("output0", "output1"), num_visible=1,
                      infer_shape=_nms_shape, infer_type=same_type, gradient=_nms_grad))
    backward_op("_backward_contrib_box_nms",
                inputs=("ograd0", "ograd1", "output0", "output1"),
                params=forward_params("_contrib_box_nms"))
    register_op(OpDef("_contrib_box_iou", params={"format": Enum(FORMATS, "corner")},
                      inputs=("lhs", "rhs"), infer_shape=_iou_shape, infer_type=same_type,
                      gradient=zero_grads))
    register_op(OpDef("_contrib_box_encode",
                      inputs=("samples", "matches", "anchors", "refs", "means", "stds"),
                      outputs=("output0", "output1"), infer_shape=_encode_shape,
                      infer_type=same_type, gradient=zero_grads))
    register_op(OpDef("_contrib_box_decode", inputs=("data", "anchors"),
                      params={"std0": Float(1.0), "std1": Float(1.0), "std2": Float(1.0),
                              "std3": Float(1.0), "clip": Float(-1.0),
                              "format": Enum(FORMATS, "center")},
                      infer_shape=_decode_shape, infer_type=same_type, gradient=zero_grads))
    register_op(OpDef("_contrib_bipartite_matching",
                      params={"is_ascend": Bool(False), "threshold": Float(),
                              "topk": Int(-1)},
                      outputs=("output0", "output1"), infer_shape=_matching_shape,
                      infer_type=same_type, gradient=zero_grads))


_declare()
