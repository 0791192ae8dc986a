"""Cases for the geometry family (Crop, GridGenerator, BilinearSampler, SpatialTransformer,
Correlation, im2col, col2im): float64 twins looping over output positions from the
definitions in core/ops/geometry.py; tests/test_vision_geometry.py compares with MXNet's own
numbers."""
from __future__ import annotations

import itertools
import math

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _f64(x):
    return np.asarray(x, np.float64)


def crop_twin(x, like=None, *, num_args, offset=(0, 0), h_w=(0, 0), center_crop=False):
    h, w = like.shape[2:] if like is not None else h_w
    top, left = ((x.shape[2] - h) // 2, (x.shape[3] - w) // 2) if center_crop else offset
    return _f64(x)[:, :, top:top + h, left:left + w]


def _affine_base(h, w):
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    return np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])


def grid_twin(x, *, transform_type, target_shape=(0, 0)):
    x = _f64(x)
    if transform_type == "affine":
        h, w = target_shape
        return (x.reshape(-1, 2, 3) @ _affine_base(h, w)).reshape(-1, 2, h, w)
    h, w = x.shape[2:]
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([(x[:, 0] + xs) / ((w - 1) / 2) - 1, (x[:, 1] + ys) / ((h - 1) / 2) - 1],
                    axis=1)


def sampler_twin(data, grid, **_):
    data, grid = _f64(data), _f64(grid)
    n, c, h, w = data.shape
    oh, ow = grid.shape[2:]
    out = np.zeros((n, c, oh, ow))
    for b, i, j in itertools.product(range(n), range(oh), range(ow)):
        x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
        y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
        x0, y0 = math.floor(x), math.floor(y)
        for yy, xx in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
            if 0 <= yy < h and 0 <= xx < w:
                out[b, :, i, j] += data[b, :, yy, xx] * (1 - abs(y - yy)) * (1 - abs(x - xx))
    return out


def stn_twin(data, loc, *, target_shape, **_):
    return sampler_twin(data, grid_twin(loc, transform_type="affine",
                                        target_shape=target_shape))


def correlation_twin(a, b, *, kernel_size=1, max_displacement=1, stride1=1, stride2=1,
                     pad_size=0, is_multiply=True):
    a, b = (np.pad(_f64(v), ((0, 0), (0, 0), (pad_size,) * 2, (pad_size,) * 2)) for v in (a, b))
    radius = max_displacement // stride2
    border = max_displacement + (kernel_size - 1) // 2
    oh, ow = (math.ceil((x - 2 * border) / stride1) for x in a.shape[2:])
    grid = 2 * radius + 1
    out = np.zeros((a.shape[0], grid * grid, oh, ow))
    for tc, i, j in itertools.product(range(grid * grid), range(oh), range(ow)):
        y1, x1 = i * stride1 + max_displacement, j * stride1 + max_displacement
        y2 = y1 + (tc // grid - radius) * stride2
        x2 = x1 + (tc % grid - radius) * stride2
        pa = a[:, :, y1:y1 + kernel_size, x1:x1 + kernel_size]
        pb = b[:, :, y2:y2 + kernel_size, x2:x2 + kernel_size]
        term = pa * pb if is_multiply else np.abs(pa - pb)
        out[:, tc, i, j] = term.reshape(a.shape[0], -1).mean(axis=1)
    return out


def _windows(shape, kernel, stride, dilate, pad):
    n = len(kernel)
    stride, dilate, pad = (tuple(v) or (d,) * n for v, d in ((stride, 1), (dilate, 1), (pad, 0)))
    count = [(x + 2 * p - d * (k - 1) - 1) // s + 1
             for x, k, s, d, p in zip(shape, kernel, stride, dilate, pad)]
    for pos in itertools.product(*(range(c) for c in count)):
        for off in itertools.product(*(range(k) for k in kernel)):
            yield pos, off, tuple(q * s + o * d - p for q, s, o, d, p in
                                  zip(pos, stride, off, dilate, pad)), count


def im2col_twin(x, *, kernel, stride=(), dilate=(), pad=()):
    x = _f64(x)
    n, c = x.shape[:2]
    k = math.prod(kernel)
    rows = {}
    for pos, off, at, count in _windows(x.shape[2:], kernel, stride, dilate, pad):
        inside = all(0 <= a < s for a, s in zip(at, x.shape[2:]))
        rows[(pos, off)] = x[(slice(None), slice(None), *at)] if inside else np.zeros((n, c))
        shape = count
    out = np.zeros((n, c, k, math.prod(shape)))
    for (pos, off), v in rows.items():
        out[:, :, np.ravel_multi_index(off, kernel), np.ravel_multi_index(pos, shape)] = v
    return out.reshape(n, c * k, -1)


def col2im_twin(cols, *, output_size, kernel, stride=(), dilate=(), pad=()):
    cols = _f64(cols)
    n, k = cols.shape[0], math.prod(kernel)
    c = cols.shape[1] // k
    out = np.zeros((n, c, *output_size))
    per = cols.reshape(n, c, k, -1)
    for pos, off, at, count in _windows(output_size, kernel, stride, dilate, pad):
        if all(0 <= a < s for a, s in zip(at, output_size)):
            out[(slice(None), slice(None), *at)] += per[:, :, np.ravel_multi_index(off, kernel),
                                                        np.ravel_multi_index(pos, count)]
    return out


_THETA = np.array([[0.9, 0.2, 0.1, -0.15, 1.1, -0.05], [1.2, -0.3, 0.2, 0.25, 0.8, 0.1]])


def _theta(rng, shape, dtype, index):
    """A near-identity transform (input 1, or 0 for GridGenerator): sample points stay in and
    around the data."""
    if shape == (2, 6):
        return (_THETA + rng.uniform(-0.05, 0.05, shape)).astype(dtype)
    return None


CASES += [
    OpCase("Crop", [(2, 3, 5, 6)], crop_twin, attrs={"num_args": 1, "h_w": (2, 3),
                                                     "offset": (1, 2)}),
    OpCase("Crop", [(1, 2, 5, 6), (1, 1, 2, 2)], crop_twin, id="like_center",
           attrs={"num_args": 2, "center_crop": True}, grad_inputs=(0,)),
    OpCase("GridGenerator", [(2, 6)], grid_twin, gen=_theta, id="affine",
           attrs={"transform_type": "affine", "target_shape": (3, 4)}),
    OpCase("GridGenerator", [(2, 2, 3, 4)], grid_twin, attrs={"transform_type": "warp"},
           id="warp"),
    OpCase("BilinearSampler", [(2, 3, 5, 6), (2, 2, 3, 4)], sampler_twin, low=-1.2, high=1.2),
    OpCase("SpatialTransformer", [(2, 3, 5, 6), (2, 6)], stn_twin, gen=_theta,
           attrs={"target_shape": (3, 4), "transform_type": "affine",
                  "sampler_type": "bilinear"}),
    OpCase("Correlation", [(2, 3, 5, 6), (2, 3, 5, 6)], correlation_twin,
           attrs={"max_displacement": 2, "pad_size": 2}),
    OpCase("Correlation", [(1, 2, 7, 8), (1, 2, 7, 8)], correlation_twin, id="k3_strided",
           attrs={"kernel_size": 3, "max_displacement": 2, "stride1": 2, "stride2": 2,
                  "pad_size": 3}),
    OpCase("Correlation", [(1, 2, 6, 6), (1, 2, 6, 6)], correlation_twin, id="subtract",
           attrs={"max_displacement": 1, "pad_size": 1, "is_multiply": False}),
    OpCase("im2col", [(2, 3, 5, 6)], im2col_twin,
           attrs={"kernel": (2, 3), "stride": (1, 2), "pad": (1, 0)}),
    OpCase("im2col", [(1, 2, 6, 5)], im2col_twin, id="dilate",
           attrs={"kernel": (2, 2), "dilate": (2, 1), "pad": (1, 1)}),
    OpCase("col2im", [(2, 18, 12)], col2im_twin,
           attrs={"output_size": (5, 6), "kernel": (2, 3), "stride": (1, 2), "pad": (1, 0)}),
    OpCase("col2im", [(1, 8, 36)], col2im_twin, id="dilate",
           attrs={"output_size": (6, 5), "kernel": (2, 2), "dilate": (2, 1), "pad": (1, 1)}),
]
