"""Geometry converters (core/ops/geometry.py). Crop is a Slice; GridGenerator is a MatMul by
the kernels' own base grid (affine) or the normalised pixel grid plus the flow (warp);
BilinearSampler and SpatialTransformer are GridSample (bilinear, zero padding,
align_corners=1: x = (gx + 1) (W - 1) / 2, MXNet's mapping) on the grid moved to channel-last;
im2col is a grouped Conv by one-hot kernels (each output is one input element times 1) and
col2im the grouped ConvTranspose by the same kernels. Correlation has no converter (see
tests/test_onnx_converters.py UNCONVERTED)."""
from __future__ import annotations

import math

import numpy as np

from graphexec.core.ops.geometry import crop_box, patch_geometry

from ..convert import ConvertCall, converter
from .resample import _needs_shapes


@converter("Crop", supports=_needs_shapes)
def _crop(c: ConvertCall) -> None:
    like = c.in_shapes[1] if len(c.in_shapes) > 1 else None
    top, left, h, w = crop_box(c.p, c.in_shapes[0], like)
    b = c.b
    b.one("Slice", [c.x, b.ints([top, left], c.hint("starts")),
                    b.ints([top + h, left + w], c.hint("ends")), b.ints([2, 3], c.hint("axes"))],
          c.out)


def _base_grid(h: int, w: int, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    j, i = np.arange(h * w) % w, np.arange(h * w) // w
    x = dtype.type(-1) + j.astype(dtype) * dtype.type(2.0 / (w - 1))
    y = dtype.type(-1) + i.astype(dtype) * dtype.type(2.0 / (h - 1))
    return np.stack([x, y, np.ones(h * w, dtype)])


def _affine(c: ConvertCall, theta: str, n: int, h: int, w: int, out: str | None = None) -> str:
    b, dt = c.b, c.in_dtypes[-1]
    mat = b.one("Reshape", [theta, b.ints((n, 2, 3), c.hint("theta_shape"))],
                hint=c.hint("theta"))
    flat = b.one("MatMul", [mat, b.const(_base_grid(h, w, dt), dt, c.hint("base"))],
                 hint=c.hint("grid_flat"))
    return b.one("Reshape", [flat, b.ints((n, 2, h, w), c.hint("grid_shape"))], out,
                 hint=c.hint("grid"))


@converter("GridGenerator", supports=_needs_shapes)
def _grid_generator(c: ConvertCall) -> None:
    n, _, h, w = c.out_shapes[0]
    if c.p.transform_type == "affine":
        _affine(c, c.x, n, h, w, c.out)
        return
    b, dt = c.b, c.in_dtypes[0]
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    pixels = b.const(np.stack([xs, ys])[None], dt, c.hint("pixels"))
    half = b.const(np.array([(w - 1.0) / 2.0, (h - 1.0) / 2.0]).reshape(1, 2, 1, 1), dt,
                   c.hint("half"))
    moved = b.one("Div", [b.one("Add", [c.x, pixels], hint=c.hint("moved")), half],
                  hint=c.hint("scaled"))
    b.one("Sub", [moved, b.const(1, dt, c.hint("one"))], c.out)


def _sample(c: ConvertCall, data: str, grid: str) -> None:
    last = c.b.one("Transpose", [grid], hint=c.hint("grid_last"), perm=[0, 2, 3, 1])
    c.b.one("GridSample", [data, last], c.out, align_corners=1, mode="bilinear",
            padding_mode="zeros")


@converter("BilinearSampler")
def _bilinear_sampler(c: ConvertCall) -> None:
    _sample(c, c.inputs[0], c.inputs[1])


@converter("SpatialTransformer", supports=_needs_shapes)
def _spatial_transformer(c: ConvertCall) -> None:
    n, _, h, w = c.out_shapes[0]
    _sample(c, c.inputs[0], _affine(c, c.inputs[1], n, h, w))


def _one_hot(channels: int, kernel: tuple, dtype) -> np.ndarray:
    """(channels * K, 1, *kernel): filter c * K + k picks offset k of channel c."""
    k = math.prod(kernel)
    eye = np.eye(k, dtype=dtype).reshape(k, 1, *kernel)
    return np.tile(eye, (channels, 1) + (1,) * len(kernel))


@converter("im2col", supports=_needs_shapes)
def _im2col(c: ConvertCall) -> None:
    geo = patch_geometry(c.p)
    n, ch = c.in_shapes[0][:2]
    b = c.b
    weight = b.const(_one_hot(ch, geo.kernel, c.in_dtypes[0]), c.in_dtypes[0], c.hint("picks"))
    cols = b.one("Conv", [c.x, weight], hint=c.hint("cols"), kernel_shape=list(geo.kernel),
                 strides=list(geo.stride), dilations=list(geo.dilate), pads=list(geo.pad) * 2,
                 group=ch)
    b.one("Reshape", [cols, b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


@converter("col2im", supports=_needs_shapes)
def _col2im(c: ConvertCall) -> None:
    geo = patch_geometry(c.p)
    n, ch, *size = c.out_shapes[0]
    count = [(x + 2 * q - d * (k - 1) - 1) // s + 1 for x, q, d, k, s in
             zip(size, geo.pad, geo.dilate, geo.kernel, geo.stride)]
    reach = [(m - 1) * s + d * (k - 1) + 1 - 2 * q for m, s, d, k, q in
             zip(count, geo.stride, geo.dilate, geo.kernel, geo.pad)]
    b = c.b
    cols = b.one("Reshape", [c.x, b.ints((n, c.in_shapes[0][1], *count), c.hint("grid"))],
                 hint=c.hint("cols"))
    weight = b.const(_one_hot(ch, geo.kernel, c.in_dtypes[0]), c.in_dtypes[0], c.hint("picks"))
    b.one("ConvTranspose", [cols, weight], c.out, kernel_shape=list(geo.kernel),
          strides=list(geo.stride), dilations=list(geo.dilate), pads=list(geo.pad) * 2,
          output_padding=[x - r for x, r in zip(size, reach)], group=ch)
