"""Cases for the resampling family (BilinearResize2D, AdaptiveAvgPooling2D, depth_to_space,
space_to_depth) and bilinear UpSampling. Twins loop over output positions in float64 from
MXNet's definitions (bilinear source positions in float32, as its kernel computes them);
tests/test_vision_geometry.py compares with MXNet's own numbers."""
from __future__ import annotations

import math

import numpy as np

from . import OpCase
from .conv import deconv_twin

CASES: list[OpCase] = []
F32 = np.float32


def _source(i: int, n_in: int, n_out: int, align: bool) -> float:
    if n_in == n_out:
        return float(i)
    if n_out == 1:
        scale = F32(0)
    else:
        scale = F32(n_in - 1) / F32(n_out - 1) if align else F32(n_in) / F32(n_out)
    if align:
        return float(scale * F32(i))
    return float(max(scale * (F32(i) + F32(0.5)) - F32(0.5), F32(0)))


def _axis_weights(n_in: int, n_out: int, align: bool) -> np.ndarray:
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = _source(o, n_in, n_out, align)
        lo = int(src)
        m[o, lo] += 1 - (src - lo)
        m[o, min(lo + 1, n_in - 1)] += src - lo
    return m


def resize_twin(x, like=None, *, height=1, width=1, scale_height=None, scale_width=None,
                mode="size", align_corners=True):
    x = np.asarray(x, np.float64)
    h, w = x.shape[2:]
    if mode == "like":
        oh, ow = like.shape[2:]
    elif scale_height is not None:
        oh, ow = int(F32(scale_height) * F32(h)), int(F32(scale_width) * F32(w))
    else:
        oh, ow = height, width
    ry, rx = _axis_weights(h, oh, align_corners), _axis_weights(w, ow, align_corners)
    return np.einsum("oh,nchw,pw->ncop", ry, x, rx)


def adaptive_twin(x, *, output_size=()):
    x = np.asarray(x, np.float64)
    size = tuple(output_size) if isinstance(output_size, tuple) else (output_size,)
    oh, ow = (size * 2)[:2] if size else (1, 1)
    h, w = x.shape[2:]
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            ys = slice(i * h // oh, math.ceil((i + 1) * h / oh))
            xs = slice(j * w // ow, math.ceil((j + 1) * w / ow))
            out[:, :, i, j] = x[:, :, ys, xs].mean(axis=(2, 3))
    return out


def d2s_twin(x, *, block_size):
    n, c, h, w = x.shape
    b = block_size
    out = np.zeros((n, c // (b * b), h * b, w * b))
    for ch in range(c):
        i, j, k = ch // (b * c // (b * b)), (ch // (c // (b * b))) % b, ch % (c // (b * b))
        out[:, k, i::b, j::b] = x[:, ch]
    return out


def s2d_twin(x, *, block_size):
    n, c, h, w = x.shape
    b = block_size
    out = np.zeros((n, c * b * b, h // b, w // b))
    for ch in range(c * b * b):
        i, j, k = ch // (b * c), (ch // c) % b, ch % c
        out[:, ch] = x[:, k, i::b, j::b]
    return out


def upsampling_twin(x, w, *, scale, num_filter, **_):
    k = 2 * scale - scale % 2
    p = math.ceil((scale - 1) / 2)
    return deconv_twin(x, w, kernel=(k, k), stride=(scale, scale), pad=(p, p),
                       num_filter=num_filter, num_group=num_filter)


R = "_contrib_BilinearResize2D"
CASES += [
    OpCase(R, [(2, 3, 4, 5)], resize_twin, attrs={"height": 7, "width": 3}, id="size"),
    OpCase(R, [(1, 2, 5, 4)], resize_twin, id="half_pixel",
           attrs={"height": 3, "width": 9, "align_corners": False}),
    OpCase(R, [(1, 2, 5, 6)], resize_twin, attrs={"scale_height": 1.5, "scale_width": 0.5},
           id="scale"),
    OpCase(R, [(1, 2, 3, 4), (1, 1, 5, 2)], resize_twin, attrs={"mode": "like"}, id="like",
           grad_inputs=(0,)),
    OpCase(R, [(1, 2, 4, 5)], resize_twin, attrs={"height": 1, "width": 1}, id="to_one"),
    OpCase(R, [(1, 1, 4, 5)], resize_twin, attrs={"height": 4, "width": 5}, id="same"),
]
A = "_contrib_AdaptiveAvgPooling2D"
CASES += [
    OpCase(A, [(2, 3, 5, 7)], adaptive_twin, attrs={"output_size": (2, 3)}),
    OpCase(A, [(1, 2, 3, 2)], adaptive_twin, attrs={"output_size": (5, 4)}, id="up"),
    OpCase(A, [(2, 2, 3, 4)], adaptive_twin, id="global"),
]
CASES += [
    OpCase("depth_to_space", [(2, 8, 2, 3)], d2s_twin, attrs={"block_size": 2}),
    OpCase("space_to_depth", [(2, 2, 4, 6)], s2d_twin, attrs={"block_size": 2}),
    OpCase("UpSampling", [(2, 3, 3, 4), (3, 1, 4, 4)], upsampling_twin, id="bilinear",
           attrs={"scale": 2, "sample_type": "bilinear", "num_filter": 3, "num_args": 1}),
    OpCase("UpSampling", [(1, 2, 2, 3), (2, 1, 5, 5)], upsampling_twin, id="bilinear3",
           attrs={"scale": 3, "sample_type": "bilinear", "num_filter": 2, "num_args": 1}),
]
