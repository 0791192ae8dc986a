"""Geometric operators of MXNet's vision models: ``Crop``, ``GridGenerator``,
``BilinearSampler``, ``SpatialTransformer``, ``Correlation``, ``im2col`` and ``col2im``.

As MXNet 1.9.1 computes them on the CPU (checked against it, tests/data/vision/geometry):

- ``Crop(arg0[, arg1])``: an (h, w) window of 4-D data at ``offset`` (or centred), its size
  from ``h_w`` or from the second input's height and width (which gets a zero gradient);
- ``GridGenerator``: 'affine' maps a (N, 6) transform over the target grid (x, y in
  [-1, 1], x = -1 + j * 2 / (W - 1) in the data's dtype) to (N, 2, H, W) source positions;
  'warp' adds a (N, 2, H, W) flow to the pixel grid and normalises it to [-1, 1];
- ``BilinearSampler(data, grid)``: samples data at grid positions (x = (gx + 1) (W - 1) / 2),
  bilinearly, zero outside; gradients for both inputs;
- ``SpatialTransformer(data, loc)``: the affine grid of ``loc`` sampled bilinearly;
- ``Correlation(data1, data2)``: per displacement (dy, dx) on a grid of radius
  max_displacement // stride2 (times stride2), the mean over channels and a kernel_size
  window of data1 * shifted data2 (or |data1 - shifted data2|), both zero-padded by pad_size;
  the CPU kernel's window starts at the position (it is not centred);
- ``im2col``: every sliding window of the data as a column, (N, C * prod(kernel), L);
  ``col2im``: the sum of such columns back into an image of ``output_size``. Each is the
  other's gradient.
"""
from __future__ import annotations

import math

from .common import (Bool, Enum, InferError, Int, OpDef, Shape, assign, fmt, register_op,
                     same_type)
from .conv import Geometry
from .tensor_grad import backward_op, forward_params

__all__ = ["crop_box", "correlation_geometry", "patch_geometry", "patch_count"]


def _rank(shape: tuple, n: int, what: str, layout: str) -> tuple:
    if len(shape) != n:
        raise InferError(f"{what} must be {n}-D ({layout}), got {fmt(shape)}")
    return shape


# -- Crop -------------------------------------------------------------------------------------
def crop_box(p, data: tuple, like: tuple | None) -> tuple[int, int, int, int]:
    """(top, left, height, width) of the window a Crop node takes from ``data``."""
    h, w = (like[2], like[3]) if p.num_args == 2 else tuple(p.h_w)
    if min(h, w) < 1:
        raise InferError(f"the crop size must be at least 1x1, got {h}x{w}")
    if h > data[2] or w > data[3]:
        raise InferError(f"the crop {h}x{w} is larger than the data {fmt(data)}")
    if p.center_crop:
        return (data[2] - h) // 2, (data[3] - w) // 2, h, w
    top, left = tuple(p.offset)
    if top < 0 or left < 0 or top + h > data[2] or left + w > data[3]:
        raise InferError(f"offset {tuple(p.offset)} puts the {h}x{w} crop outside the data "
                         f"{fmt(data)}")
    return top, left, h, w


def _crop_shape(p, ins, outs):
    if p.num_args not in (1, 2):
        raise InferError(f"num_args must be 1 or 2, got {p.num_args}")
    if len(p.h_w) != 2 or len(p.offset) != 2:
        raise InferError(f"h_w and offset take (height, width), got h_w={tuple(p.h_w)}, "
                         f"offset={tuple(p.offset)}")
    data = ins[0]
    like = ins[1] if p.num_args == 2 else None
    if data is None or (p.num_args == 2 and like is None):
        return
    _rank(data, 4, "data", "batch, channel, height, width")
    if like is not None:
        _rank(like, 4, "crop_like", "batch, channel, height, width")
    if min(data) < 0 or (like is not None and min(like[2:]) < 0):
        return
    _, _, h, w = crop_box(p, data, like)
    assign(outs, 0, (data[0], data[1], h, w), "out")


# -- GridGenerator / BilinearSampler / SpatialTransformer ---------------------------------------
def _target(p) -> tuple[int, int]:
    size = tuple(p.target_shape)
    if len(size) != 2 or min(size) < 2:
        raise InferError(f"target_shape must be (height, width), each at least 2 (the grid "
                         f"spans [-1, 1]), got {size}")
    return size


def _grid_shape(p, ins, outs):
    data = ins[0]
    if p.transform_type == "affine":
        h, w = _target(p)
        if data is not None:
            if len(data) != 2 or data[1] not in (6, -1):
                raise InferError(f"an affine transform is (batch, 6), got {fmt(data)}")
            assign(outs, 0, (data[0], 2, h, w), "out")
        return
    if data is not None:
        _rank(data, 4, "a warp flow", "batch, 2, height, width")
        if data[1] not in (2, -1):
            raise InferError(f"a warp flow has 2 channels (dx, dy), got {fmt(data)}")
        assign(outs, 0, data, "out")


def _sampler_shape(p, ins, outs):
    data, grid = ins
    if data is None or grid is None:
        return
    _rank(data, 4, "data", "batch, channel, height, width")
    _rank(grid, 4, "grid", "batch, 2, height, width")
    if grid[1] != 2 or min(data[0], grid[0]) >= 0 and data[0] != grid[0]:
        raise InferError(f"grid {fmt(grid)} must be (batch, 2, height, width) with the batch "
                         f"of data {fmt(data)}")
    assign(outs, 0, (data[0], data[1], grid[2], grid[3]), "out")


def _stn_shape(p, ins, outs):
    h, w = _target(p)
    data, loc = ins
    if loc is not None and (len(loc) != 2 or loc[1] not in (6, -1)):
        raise InferError(f"loc (an affine transform) is (batch, 6), got {fmt(loc)}")
    if data is None:
        return
    _rank(data, 4, "data", "batch, channel, height, width")
    assign(ins, 1, (data[0], 6))
    assign(outs, 0, (data[0], data[1], h, w), "out")


# -- Correlation --------------------------------------------------------------------------------
def correlation_geometry(p, shape: tuple) -> tuple[int, int, int]:
    """(grid radius, output height, output width) of a Correlation of data ``shape``."""
    radius = p.max_displacement // p.stride2
    border = p.max_displacement + (p.kernel_size - 1) // 2
    sizes = []
    for x in shape[2:]:
        room = x + 2 * p.pad_size - 2 * border
        if room < 1:
            raise InferError(f"the data ({fmt(shape)}) padded by pad_size={p.pad_size} leaves "
                             f"no room for max_displacement={p.max_displacement} and "
                             f"kernel_size={p.kernel_size}")
        sizes.append(math.ceil(room / p.stride1))
    return radius, sizes[0], sizes[1]


def _correlation_shape(p, ins, outs):
    a, b = ins
    if a is None or b is None:
        return
    _rank(a, 4, "data1", "batch, channel, height, width")
    if tuple(a) != tuple(b):
        raise InferError(f"data1 {fmt(a)} and data2 {fmt(b)} must have one shape")
    if p.kernel_size % 2 == 0:
        raise InferError(f"kernel_size must be odd, got {p.kernel_size}")
    radius, oh, ow = correlation_geometry(p, a)
    assign(outs, 0, (a[0], (2 * radius + 1) ** 2, oh, ow), "out")


# -- im2col / col2im ------------------------------------------------------------------------------
def _per_axis(p, name: str, n: int, default: int, low: int) -> tuple:
    value = tuple(getattr(p, name)) or (default,) * n
    if len(value) != n or min(value) < low:
        raise InferError(f"{name} {value} must have {n} entries (one per kernel axis), each "
                         f"at least {low}")
    return value


def patch_geometry(p) -> Geometry:
    """Kernel, stride, dilate and pad of an im2col / col2im node (defaults filled in)."""
    kernel = tuple(p.kernel)
    if len(kernel) not in (1, 2, 3) or min(kernel) < 1:
        raise InferError(f"kernel must have 1, 2 or 3 entries, each at least 1, got {kernel}")
    n = len(kernel)
    return Geometry(kernel, _per_axis(p, "stride", n, 1, 1), _per_axis(p, "dilate", n, 1, 1),
                    _per_axis(p, "pad", n, 0, 0), False)


def patch_count(geo: Geometry, spatial: tuple) -> tuple:
    """Windows along each spatial axis."""
    out = []
    for x, k, s, d, pad in zip(spatial, geo.kernel, geo.stride, geo.dilate, geo.pad):
        span = d * (k - 1) + 1
        if span > x + 2 * pad:
            raise InferError(f"the (dilated) kernel spans {span} but the input is {x} padded "
                             f"to {x + 2 * pad}")
        out.append((x + 2 * pad - span) // s + 1)
    return tuple(out)


def _im2col_shape(p, ins, outs):
    geo = patch_geometry(p)
    data = ins[0]
    if data is None:
        return
    _rank(data, len(geo.kernel) + 2, "data", "batch, channel, spatial...")
    if min(data) < 0:
        return
    blocks = math.prod(patch_count(geo, data[2:]))
    assign(outs, 0, (data[0], data[1] * math.prod(geo.kernel), blocks), "out")


def _col2im_shape(p, ins, outs):
    geo = patch_geometry(p)
    size = tuple(p.output_size)
    if len(size) != len(geo.kernel):
        raise InferError(f"output_size {size} must have one entry per kernel axis "
                         f"({geo.kernel})")
    data = ins[0]
    if data is None:
        return
    _rank(data, 3, "data", "batch, channel * prod(kernel), blocks")
    k = math.prod(geo.kernel)
    blocks = math.prod(patch_count(geo, size))
    if data[1] >= 0 and data[1] % k:
        raise InferError(f"data has {data[1]} rows, not a multiple of prod(kernel) = {k}")
    if data[2] >= 0 and data[2] != blocks:
        raise InferError(f"data has {data[2]} columns but output_size {size} with these "
                         f"parameters has {blocks} windows")
    assign(outs, 0, (data[0], data[1] // k if data[1] >= 0 else -1, *size), "out")


# -- declarations -------------------------------------------------------------------------------
def _one_backward(op_name: str, with_inputs: bool = True):
    def rule(g, node, ograds):
        ins = [ograds[0], *node.inputs] if with_inputs else [ograds[0]]
        return g.outputs(g.backward_node(node, op_name, ins))
    return rule


def _patch_params(**extra) -> dict:
    return {"kernel": Shape(), "stride": Shape(()), "dilate": Shape(()), "pad": Shape(()),
            **extra}


def _declare() -> None:
    register_op(OpDef(
        "Crop", params={"num_args": Int(), "offset": Shape((0, 0)), "h_w": Shape((0, 0)),
                        "center_crop": Bool(False)},
        inputs=lambda p: [f"arg{i}" for i in range(p.num_args)], variadic="num_args",
        named_inputs=False, infer_shape=_crop_shape, infer_type=same_type,
        gradient=_one_backward("_backward_Crop", with_inputs=False)))
    backward_op("_backward_Crop", params=forward_params("Crop"),
                outputs=lambda p: [f"output{i}" for i in range(p.num_args)]
                if p.num_args > 1 else ["output"])
    register_op(OpDef(
        "GridGenerator", params={"transform_type": Enum(("affine", "warp")),
                                 "target_shape": Shape((0, 0))},
        infer_shape=_grid_shape, infer_type=same_type,
        gradient=_one_backward("_backward_GridGenerator", with_inputs=False)))
    backward_op("_backward_GridGenerator", params=forward_params("GridGenerator"))
    register_op(OpDef(
        "BilinearSampler", params={"cudnn_off": Bool(False)}, inputs=("data", "grid"),
        infer_shape=_sampler_shape, infer_type=same_type,
        gradient=_one_backward("_backward_BilinearSampler")))
    backward_op("_backward_BilinearSampler", inputs=("ograd", "data", "grid"), outputs=2,
                params=forward_params("BilinearSampler"))
    register_op(OpDef(
        "SpatialTransformer", params={
            "target_shape": Shape((0, 0)), "transform_type": Enum(("affine",)),
            "sampler_type": Enum(("bilinear",)), "cudnn_off": Bool(False)},
        inputs=("data", "loc"), infer_shape=_stn_shape, infer_type=same_type,
        gradient=_one_backward("_backward_SpatialTransformer")))
    backward_op("_backward_SpatialTransformer", inputs=("ograd", "data", "loc"), outputs=2,
                params=forward_params("SpatialTransformer"))
    register_op(OpDef(
        "Correlation", params={
            "kernel_size": Int(1), "max_displacement": Int(1), "stride1": Int(1),
            "stride2": Int(1), "pad_size": Int(0), "is_multiply": Bool(True)},
        inputs=("data1", "data2"), infer_shape=_correlation_shape, infer_type=same_type,
        gradient=_one_backward("_backward_Correlation")))
    backward_op("_backward_Correlation", inputs=("ograd", "data1", "data2"), outputs=2,
                params=forward_params("Correlation"))
    register_op(OpDef("im2col", params=_patch_params(), infer_shape=_im2col_shape,
                      infer_type=same_type, gradient=_one_backward("_backward_im2col", False)))
    backward_op("_backward_im2col", params=forward_params("im2col"))
    # MXNet's order puts output_size first (col2im(data, output_size, kernel, ...) positionally)
    register_op(OpDef("col2im", params={"output_size": Shape(), **_patch_params()},
                      infer_shape=_col2im_shape, infer_type=same_type,
                      gradient=_one_backward("_backward_col2im", False)))
    backward_op("_backward_col2im", params=forward_params("col2im"))


_declare()
