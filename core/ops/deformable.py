"""Deformable operators of MXNet's contrib namespace: ``_contrib_DeformableConvolution``
(DCNv1), ``_contrib_ModulatedDeformableConvolution`` (DCNv2, with a mask) and
``_contrib_DeformablePSROIPooling``.

A 2-D convolution whose every kernel tap reads the data at its regular position moved by a
learned offset: ``offset`` is (N, 2 * num_deformable_group * kh * kw, out_h, out_w), channel
g * 2K + 2k the row shift and g * 2K + 2k + 1 the column shift of tap k (row-major in the
kernel) for the channels of deformable group g. The data is read bilinearly, as MXNet 1.9.1's
CPU kernels do (checked against them, tests/data/vision/geometry):

- DCNv1: a position counts when 0 <= y < H and 0 <= x < W, and one in the last row or
  column reads that row or column only (the taps are clamped); elsewhere 0;
- DCNv2: a position counts when -1 < y < H and -1 < x < W, corners outside the data read 0;
  each tap's value is multiplied by ``mask`` (N, num_deformable_group * kh * kw, out_h, out_w).

Gradients for every input: the data (scattered through the bilinear weights), the offsets
(the derivative of the bilinear read), the mask, the weight and the bias.

``DeformablePSROIPooling(data, rois, trans)``: position-sensitive ROI pooling (R-FCN) whose
bins move by ``trans`` (num_rois, 2 * classes, part_size, part_size) times ``trans_std`` times
the ROI's size: output (num_rois, output_dim, pooled_size, pooled_size) averages
sample_per_part^2 bilinear reads per bin from channel (ctop * group_size + gh) * group_size + gw
(reads more than half a pixel outside are skipped, the others clamped to the data); hidden
output ``top_count`` (the reads counted). Gradients: the data, and ``trans`` by MXNet's rule
(the bilinear derivative at the clamped position); the ROIs get none.
"""
from __future__ import annotations

from ..ir.graph import Entry
from .common import (Bool, Float, InferError, Int, OpDef, Shape, assign, fmt, register_op,
                     same_type)
from .conv import conv_geometry
from .nn import OptEnum, PositiveInt
from .tensor_grad import backward_op, forward_params

__all__ = ["deformable_out_size", "psroi_part_size"]


def _inputs(modulated: bool):
    def names(p):
        base = ["data", "offset"] + (["mask"] if modulated else []) + ["weight"]
        return base if p.no_bias else base + ["bias"]
    return names


def deformable_out_size(p, data: tuple) -> tuple[int, int]:
    geo = conv_geometry(p, "deformable convolution")
    if len(geo.kernel) != 2:
        raise InferError(f"only 2-D deformable convolution is supported, got kernel "
                         f"{geo.kernel}")
    out = []
    for x, k, s, d, pad in zip(data[2:], geo.kernel, geo.stride, geo.dilate, geo.pad):
        span = d * (k - 1) + 1
        if span > x + 2 * pad:
            raise InferError(f"the (dilated) kernel spans {span} but the input is {x} padded "
                             f"to {x + 2 * pad}")
        out.append((x + 2 * pad - span) // s + 1)
    return tuple(out)


def _shape(modulated: bool):
    def rule(p, ins, outs):
        data = ins[0]
        if data is None:
            return
        if len(data) != 4:
            raise InferError(f"data must be 4-D (batch, channel, height, width), got "
                             f"{fmt(data)}")
        n, c = data[:2]
        g, dg, f = p.num_group, p.num_deformable_group, p.num_filter
        if c % g or f % g:
            raise InferError(f"num_group ({g}) must divide the channels ({c}) and num_filter "
                             f"({f})")
        if c % dg:
            raise InferError(f"num_deformable_group ({dg}) must divide the channels ({c})")
        oh, ow = deformable_out_size(p, data)
        taps = p.kernel[0] * p.kernel[1]
        try:
            assign(ins, 1, (n, 2 * dg * taps, oh, ow))
            if modulated:
                assign(ins, 2, (n, dg * taps, oh, ow))
        except InferError:
            raise InferError(f"offset{' and mask' if modulated else ''} must match the output "
                             f"({oh}x{ow}) with {2 * dg * taps} offset channels"
                             f"{f' and {dg * taps} mask channels' if modulated else ''}; got "
                             f"{', '.join(fmt(s) for s in ins[1:3 if modulated else 2])}") \
                from None
        w = 3 if modulated else 2
        assign(ins, w, (f, c // g, *p.kernel))
        if not p.no_bias:
            assign(ins, w + 1, (f,))
        assign(outs, 0, (n, f, oh, ow), "out")
    return rule


def _gradient(op_name: str):
    def rule(g, node, ograds):
        return g.outputs(g.backward_node(node, op_name, [ograds[0], *node.inputs]))
    return rule


def _params(modulated: bool) -> dict:
    extra = {"im2col_step": Int(64)} if modulated else {}
    return {"kernel": Shape(), "stride": Shape(()), "dilate": Shape(()), "pad": Shape(()),
            "num_filter": PositiveInt(), "num_group": PositiveInt(1),
            "num_deformable_group": PositiveInt(1), "workspace": Int(1024),
            "no_bias": Bool(False), **extra,
            "layout": OptEnum(("NCDHW", "NCHW", "NCW"), None)}


# -- DeformablePSROIPooling -----------------------------------------------------------------
def psroi_part_size(p) -> int:
    """part_size, or pooled_size where it is 0 (MXNet's default)."""
    return p.part_size or p.pooled_size


def _psroi_shape(p, ins, outs):
    for name, value in (("output_dim", p.output_dim), ("group_size", p.group_size),
                        ("pooled_size", p.pooled_size), ("sample_per_part", p.sample_per_part)):
        if value < 1:
            raise InferError(f"{name} must be at least 1, got {value}")
    data, rois = ins[0], ins[1]
    if data is not None:
        if len(data) != 4:
            raise InferError(f"data must be 4-D (batch, channel, height, width), got "
                             f"{fmt(data)}")
        need = p.output_dim * p.group_size ** 2
        if 0 <= data[1] < need:
            raise InferError(f"data has {data[1]} channels; output_dim * group_size^2 = {need} "
                             f"are read")
    if rois is None:
        return
    if len(rois) != 2 or rois[1] not in (5, -1):
        raise InferError(f"rois must be (num_rois, 5): batch index, x1, y1, x2, y2; got "
                         f"{fmt(rois)}")
    if not p.no_trans and ins[2] is not None:
        trans = ins[2]
        part = psroi_part_size(p)
        if len(trans) != 4 or trans[1] % 2 or tuple(trans[2:]) != (part, part) or \
                (trans[1] > 0 and p.output_dim % (trans[1] // 2)):
            raise InferError(f"trans must be (num_rois, 2 * classes, {part}, {part}) with "
                             f"classes dividing output_dim={p.output_dim}; got {fmt(trans)}")
        assign(ins, 2, (rois[0], *trans[1:]))
    out = (rois[0], p.output_dim, p.pooled_size, p.pooled_size)
    for j in range(2):
        assign(outs, j, out, "out")


def _psroi_gradient(g, node, ograds):
    return g.outputs(g.backward_node(node, "_backward_DeformablePSROIPooling",
                                     [ograds[0], *node.inputs, Entry(node, 1)]))


def _declare_psroi() -> None:
    inputs = lambda p: ["data", "rois"] if p.no_trans else ["data", "rois", "trans"]  # noqa
    register_op(OpDef(
        "_contrib_DeformablePSROIPooling", params={
            "spatial_scale": Float(), "output_dim": Int(), "group_size": Int(),
            "pooled_size": Int(), "part_size": Int(0), "sample_per_part": Int(1),
            "trans_std": Float(0.0), "no_trans": Bool(False)},
        inputs=inputs, outputs=("output", "top_count"), num_visible=1,
        infer_shape=_psroi_shape, infer_type=same_type, gradient=_psroi_gradient))
    backward_op("_backward_DeformablePSROIPooling",
                params=forward_params("_contrib_DeformablePSROIPooling"),
                inputs=lambda p: ["ograd", *inputs(p), "top_count"],
                outputs=lambda p: [f"output{k}" for k in range(len(inputs(p)))])


def _declare() -> None:
    _declare_psroi()
    for name, modulated in (("_contrib_DeformableConvolution", False),
                            ("_contrib_ModulatedDeformableConvolution", True)):
        register_op(OpDef(name, params=_params(modulated), inputs=_inputs(modulated),
                          infer_shape=_shape(modulated), infer_type=same_type,
                          gradient=_gradient(name.replace("_contrib_", "_backward_")),
                          traits=("conv",)))
        backward = name.replace("_contrib_", "_backward_")
        backward_op(backward, params=forward_params(name),
                    inputs=lambda p, m=modulated: ["ograd", *_inputs(m)(p)],
                    outputs=lambda p, m=modulated: [
                        f"output{k}" for k in range(len(_inputs(m)(p)))])


_declare()
