"""Resampling operators of MXNet's vision models: ``_contrib_BilinearResize2D`` (every mode),
``_contrib_AdaptiveAvgPooling2D``, ``depth_to_space`` and ``space_to_depth``. (Bilinear
``UpSampling`` is declared with the nearest one in ``slicing``: MXNet runs it as a grouped
Deconvolution.)

Both resizers are separable linear maps: ``out[n, c] = Ry @ x[n, c] @ Rx.T`` with one
(output, input) matrix per spatial axis, built here (``resize_weights``, ``adaptive_weights``)
and shared with the kernels and the ONNX converters so every backend computes the same
weights. MXNet 1.9.1 computes the bilinear source positions in float32, so do these.

Gradients follow MXNet: the resizers' backward ops read only the output gradient
(``_backward_contrib_*``; ``mode='like'`` gives its second input a zero gradient), and the
gradient of ``depth_to_space`` is ``space_to_depth`` of the output gradient and vice versa.
"""
from __future__ import annotations

import numpy as np

from ..ir.attrs import Params
from .common import (Bool, Enum, InferError, OpDef, OptFloat, Shape, assign, fmt,
                     register_op, same_type)
from .nn import PositiveInt
from .tensor_grad import backward_op, forward_params

__all__ = ["resize_out_size", "resize_weights", "adaptive_weights", "resize_taps",
           "upsampling_deconv_attrs"]

F32 = np.float32
_MODES = ("like", "odd_scale", "size", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up")


def _four_d(shape: tuple, what: str) -> tuple:
    if len(shape) != 4:
        raise InferError(f"{what} must be 4-D (batch, channel, height, width), got {fmt(shape)}")
    return shape


# -- BilinearResize2D -------------------------------------------------------------------------
def _scaled(scale: float | None, x: int, what: str) -> int:
    if scale is None:
        raise InferError(f"{what} must be set for this mode")
    return int(F32(scale) * F32(x))  # MXNet: static_cast<int>(float scale * int size)


def _odd_scaled(scale: float | None, x: int, what: str) -> int:
    if scale is None:
        raise InferError(f"mode='odd_scale' needs {what}")
    return int(F32(x) * F32(scale)) if x % 2 == 0 else int(F32(x - 1) * F32(scale)) + 1


def _parity(x: int, mode: str) -> int:
    even = x % 2 == 0
    return {"to_even_down": x if even else x - 1, "to_even_up": x if even else x + 1,
            "to_odd_down": x - 1 if even else x, "to_odd_up": x + 1 if even else x}[mode]


def resize_out_size(p, data: tuple, like: tuple | None) -> tuple[int, int]:
    """(height, width) of a BilinearResize2D node's output (-1 where not yet known).
    Mode 'size' with ``scale_height`` scales both axes (MXNet reads ``scale_width`` then too)."""
    h, w = data[2], data[3]
    if p.mode == "like":
        return (like[2], like[3]) if like is not None else (-1, -1)
    if p.mode == "size":
        if p.scale_height is None:
            return p.height, p.width
        return (_scaled(p.scale_height, h, "scale_height") if h >= 0 else -1,
                _scaled(p.scale_width, w, "scale_width (scale_height is set)") if w >= 0
                else -1)
    if p.mode == "odd_scale":
        return (_odd_scaled(p.scale_height, h, "scale_height") if h >= 0 else -1,
                _odd_scaled(p.scale_width, w, "scale_width") if w >= 0 else -1)
    return tuple(_parity(x, p.mode) if x >= 0 else -1 for x in (h, w))


def _resize_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    _four_d(data, "data")
    like = None
    if p.mode == "like":
        like = ins[1]
        if like is not None:
            _four_d(like, "like")
    oh, ow = resize_out_size(p, data, like)
    for axis, size in (("height", oh), ("width", ow)):
        if size == 0 or size < -1:
            raise InferError(f"the output {axis} would be {size} for data {fmt(data)} with "
                             f"mode={p.mode}: expected at least 1")
    assign(outs, 0, (data[0], data[1], oh, ow), "out")


def resize_taps(n_in: int, n_out: int, align_corners: bool):
    """Per output position: (low index, high index, low weight, high weight) along one axis,
    as MXNet's CPU kernel computes them (float32 positions, the high tap clamped to the
    last input, negative half-pixel positions clamped to 0)."""
    dst = np.arange(n_out, dtype=F32)
    if n_out > 1:
        scale = F32(n_in - 1) / F32(n_out - 1) if align_corners else F32(n_in) / F32(n_out)
    else:
        scale = F32(0)
    if n_in == n_out:
        src = dst
    elif align_corners:
        src = scale * dst
    else:
        src = np.maximum(scale * (dst + F32(0.5)) - F32(0.5), F32(0))
    lo = src.astype(np.int64)
    hi = np.where(lo < n_in - 1, lo + 1, lo)
    w_hi = src - lo.astype(F32)
    return lo, hi, F32(1) - w_hi, w_hi


def resize_weights(n_in: int, n_out: int, align_corners: bool) -> np.ndarray:
    """The (n_out, n_in) float32 interpolation matrix along one axis."""
    lo, hi, w_lo, w_hi = resize_taps(n_in, n_out, align_corners)
    m = np.zeros((n_out, n_in), F32)
    rows = np.arange(n_out)
    np.add.at(m, (rows, lo), w_lo)
    np.add.at(m, (rows, hi), w_hi)
    return m


# -- AdaptiveAvgPooling2D ---------------------------------------------------------------------
def adaptive_out_size(p) -> tuple[int, int]:
    size = tuple(p.output_size)
    if len(size) == 1:
        size = size * 2
    if not size:
        size = (1, 1)
    if len(size) != 2 or min(size) < 1:
        raise InferError(f"output_size must be empty, one size or (height, width), each at "
                         f"least 1; got output_size={p.output_size}")
    return size


def adaptive_weights(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) averaging matrix: output o averages inputs [floor(o n_in / n_out),
    ceil((o + 1) n_in / n_out))."""
    o = np.arange(n_out)
    start = (o * n_in) // n_out
    end = -((-(o + 1) * n_in) // n_out)
    i = np.arange(n_in)
    inside = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return inside / (end - start)[:, None]


def _adaptive_shape(p, ins, outs):
    oh, ow = adaptive_out_size(p)
    if ins[0] is None:
        return
    n, c = _four_d(ins[0], "data")[:2]
    assign(outs, 0, (n, c, oh, ow), "out")


def upsampling_deconv_attrs(p: Params) -> dict:
    """The Deconvolution a bilinear UpSampling node is, as MXNet computes it: kernel
    2s - s % 2, stride s, pad ceil((s - 1) / 2), one filter per channel (the weight is an
    input; GluonCV initialises it to the bilinear kernel)."""
    s = p.scale
    k = 2 * s - s % 2
    pad = -(-(s - 1) // 2)
    return {"kernel": (k, k), "stride": (s, s), "pad": (pad, pad), "num_filter": p.num_filter,
            "num_group": p.num_filter, "no_bias": True, "workspace": p.workspace}


# -- depth_to_space / space_to_depth ------------------------------------------------------------
def _no_empty_axis(shape: tuple) -> None:
    """MXNet 1.9.1 rejects a zero-size dimension in both block rearrangements."""
    for axis, x in enumerate(shape):
        if x == 0:
            raise InferError(f"dimension {axis} of the data is 0: the data must not be empty "
                             f"(shape {list(shape)})")


def _d2s_shape(p, ins, outs):
    if ins[0] is None:
        return
    n, c, h, w = _four_d(ins[0], "data")
    _no_empty_axis((n, c, h, w))
    b = p.block_size
    if c >= 0 and c % (b * b):
        raise InferError(f"the channels ({c}) must be a multiple of block_size^2 = {b * b}")
    assign(outs, 0, (n, c // (b * b) if c >= 0 else -1, h * b if h >= 0 else -1,
                     w * b if w >= 0 else -1), "out")


def _s2d_shape(p, ins, outs):
    if ins[0] is None:
        return
    n, c, h, w = _four_d(ins[0], "data")
    _no_empty_axis((n, c, h, w))
    b = p.block_size
    for axis, x in (("height", h), ("width", w)):
        if x >= 0 and x % b:
            raise InferError(f"the {axis} ({x}) must be a multiple of block_size = {b}")
    assign(outs, 0, (n, c * b * b if c >= 0 else -1, h // b if h >= 0 else -1,
                     w // b if w >= 0 else -1), "out")


def _inverse_block_gradient(op_name: str):
    def rule(g, node, ograds):
        bw = g.make(op_name, f"{node.name}_backward", [ograds[0]],
                    {"block_size": str(node.params.block_size)}, [node])
        return g.outputs(bw)
    return rule


def _backward_rule(op_name: str):
    def rule(g, node, ograds):
        return g.outputs(g.backward_node(node, op_name, [ograds[0]]))
    return rule


def _declare() -> None:
    register_op(OpDef(
        "_contrib_BilinearResize2D",
        params={"height": PositiveInt(1), "width": PositiveInt(1), "scale_height": OptFloat(None),
                "scale_width": OptFloat(None), "mode": Enum(_MODES, "size"),
                "align_corners": Bool(True)},
        inputs=lambda p: ["data", "like"] if p.mode == "like" else ["data"],
        infer_shape=_resize_shape, infer_type=same_type,
        gradient=_backward_rule("_backward_contrib_BilinearResize2D")))
    backward_op("_backward_contrib_BilinearResize2D",
                params=forward_params("_contrib_BilinearResize2D"),
                outputs=lambda p: ["output0", "output1"] if p.mode == "like" else ["output"])
    register_op(OpDef(
        "_contrib_AdaptiveAvgPooling2D", params={"output_size": Shape(())},
        infer_shape=_adaptive_shape, infer_type=same_type,
        gradient=_backward_rule("_backward_contrib_AdaptiveAvgPooling2D")))
    backward_op("_backward_contrib_AdaptiveAvgPooling2D",
                params=forward_params("_contrib_AdaptiveAvgPooling2D"))
    register_op(OpDef("depth_to_space", params={"block_size": PositiveInt()},
                      infer_shape=_d2s_shape, infer_type=same_type,
                      gradient=_inverse_block_gradient("space_to_depth")))
    register_op(OpDef("space_to_depth", params={"block_size": PositiveInt()},
                      infer_shape=_s2d_shape, infer_type=same_type,
                      gradient=_inverse_block_gradient("depth_to_space")))


_declare()
