"""Cases for the deformable convolutions: float64 twins reading every tap with a scalar
bilinear read (MXNet's CPU rules: DCNv1 clamps reads in the last row/column and counts
0 <= y < H; DCNv2 counts -1 < y < H with zero corners outside), then a plain convolution
sum; tests/test_vision_geometry.py compares with MXNet's own numbers."""
from __future__ import annotations

import itertools
import math

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _read(img, y: float, x: float, modulated: bool) -> float:
    h, w = img.shape
    if modulated:
        if not (-1 < y < h and -1 < x < w):
            return 0.0
        y0, x0 = math.floor(y), math.floor(x)
        total = 0.0
        for cy, cx in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
            if 0 <= cy < h and 0 <= cx < w:
                total += img[cy, cx] * (1 - abs(y - cy)) * (1 - abs(x - cx))
        return total
    if not (0 <= y < h and 0 <= x < w):
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    if y0 >= h - 1:
        y = y0 = h - 1
    if x0 >= w - 1:
        x = x0 = w - 1
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1]
            + ly * (1 - lx) * img[y1, x0] + ly * lx * img[y1, x1])


def deform_twin(modulated: bool):
    def twin(x, offset, *rest, kernel, num_filter, stride=(), dilate=(), pad=(), num_group=1,
             num_deformable_group=1, no_bias=False, **_):
        x, offset = np.asarray(x, np.float64), np.asarray(offset, np.float64)
        rest = [np.asarray(r, np.float64) for r in rest]
        mask = rest.pop(0) if modulated else None
        weight, bias = rest[0], (rest[1] if len(rest) > 1 else None)
        (kh, kw), (sh, sw) = kernel, stride or (1, 1)
        dh, dw = dilate or (1, 1)
        ph, pw = pad or (0, 0)
        n, c = x.shape[:2]
        oh, ow = offset.shape[2:]
        cpg, cg, fg = c // num_deformable_group, c // num_group, num_filter // num_group
        cols = np.zeros((n, c, kh * kw, oh, ow))
        for b, ch, k, i, j in itertools.product(range(n), range(c), range(kh * kw), range(oh),
                                                range(ow)):
            g = ch // cpg
            ky, kx = divmod(k, kw)
            y = i * sh - ph + ky * dh + offset[b, g * 2 * kh * kw + 2 * k, i, j]
            xx = j * sw - pw + kx * dw + offset[b, g * 2 * kh * kw + 2 * k + 1, i, j]
            v = _read(x[b, ch], y, xx, modulated)
            cols[b, ch, k, i, j] = v * (mask[b, g * kh * kw + k, i, j] if modulated else 1)
        out = np.zeros((n, num_filter, oh, ow))
        for f in range(num_filter):
            grp = f // fg
            w = weight[f].reshape(cg, kh * kw)
            out[:, f] = np.einsum("nckij,ck->nij", cols[:, grp * cg:(grp + 1) * cg], w)
            if bias is not None and not no_bias:
                out[:, f] += bias[f]
        return out
    return twin


def _offsets(rng, shape, dtype, index):
    """Offsets up to 1.5 pixels (reads leave the data at the borders)."""
    return rng.uniform(-1.5, 1.5, size=shape).astype(dtype) if index == 1 else None


def _offsets_mask(rng, shape, dtype, index):
    """Offsets as ``_offsets``, masks in [0, 1)."""
    if index == 2:
        return rng.uniform(0, 1, size=shape).astype(dtype)
    return _offsets(rng, shape, dtype, index)


D, M = "_contrib_DeformableConvolution", "_contrib_ModulatedDeformableConvolution"
CASES += [
    OpCase(D, [(2, 3, 5, 6), (2, 18, 5, 6), (4, 3, 3, 3), (4,)], deform_twin(False),
           attrs={"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)}, gen=_offsets,
           dtypes=("float32", "float64"), rtol=1e-4, atol=1e-4),
    OpCase(D, [(1, 4, 6, 5), (1, 16, 4, 5), (4, 2, 2, 2)], deform_twin(False), id="groups",
           attrs={"kernel": (2, 2), "num_filter": 4, "stride": (2, 1), "pad": (1, 1),
                  "dilate": (1, 2), "num_group": 2, "num_deformable_group": 2,
                  "no_bias": True}, gen=_offsets, dtypes=("float32", "float64"),
           rtol=1e-4, atol=1e-4),
    OpCase(M, [(2, 3, 5, 6), (2, 18, 5, 6), (2, 9, 5, 6), (4, 3, 3, 3), (4,)],
           deform_twin(True), attrs={"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)},
           gen=_offsets_mask, dtypes=("float32", "float64"), rtol=1e-4, atol=1e-4),
    OpCase(M, [(1, 4, 6, 5), (1, 16, 4, 5), (1, 8, 4, 5), (4, 2, 2, 2)], deform_twin(True),
           id="groups", attrs={"kernel": (2, 2), "num_filter": 4, "stride": (2, 1),
                               "pad": (1, 1), "dilate": (1, 2), "num_group": 2,
                               "num_deformable_group": 2, "no_bias": True},
           gen=_offsets_mask, dtypes=("float32", "float64"), rtol=1e-4, atol=1e-4),
]


def _c_round(v: float) -> float:
    return math.copysign(math.floor(abs(v) + 0.5), v)


def dpsroi_twin(data, rois, trans=None, *, spatial_scale, output_dim, group_size, pooled_size,
                part_size=0, sample_per_part=1, trans_std=0.0, no_trans=False):
    data = np.asarray(data, np.float64)
    part = part_size or pooled_size
    _, _, h, w = data.shape
    classes = 1 if no_trans else trans.shape[1] // 2
    out = np.zeros((rois.shape[0], output_dim, pooled_size, pooled_size))
    for r, d, ph, pw in itertools.product(range(rois.shape[0]), range(output_dim),
                                          range(pooled_size), range(pooled_size)):
        b, x1, y1, x2, y2 = rois[r]
        sw, sh = _c_round(x1) * spatial_scale - 0.5, _c_round(y1) * spatial_scale - 0.5
        rw = max((_c_round(x2) + 1) * spatial_scale - 0.5 - sw, 0.1)
        rh = max((_c_round(y2) + 1) * spatial_scale - 0.5 - sh, 0.1)
        bw, bh = rw / pooled_size, rh / pooled_size
        cls = d // (output_dim // classes)
        parth, partw = math.floor(ph / pooled_size * part), math.floor(pw / pooled_size * part)
        tx = 0 if no_trans else trans[r, 2 * cls, parth, partw] * trans_std
        ty = 0 if no_trans else trans[r, 2 * cls + 1, parth, partw] * trans_std
        gw = min(max(math.floor(pw * group_size / pooled_size), 0), group_size - 1)
        gh = min(max(math.floor(ph * group_size / pooled_size), 0), group_size - 1)
        img = data[int(b), (d * group_size + gh) * group_size + gw]
        total, count = 0.0, 0
        for ih, iw in itertools.product(range(sample_per_part), repeat=2):
            x = pw * bw + sw + tx * rw + iw * bw / sample_per_part
            y = ph * bh + sh + ty * rh + ih * bh / sample_per_part
            if x < -0.5 or x > w - 0.5 or y < -0.5 or y > h - 0.5:
                continue
            x, y = min(max(x, 0), w - 1), min(max(y, 0), h - 1)
            xa, ya, xb, yb = math.floor(x), math.floor(y), math.ceil(x), math.ceil(y)
            fx, fy = x - xa, y - ya
            total += ((1 - fx) * (1 - fy) * img[ya, xa] + (1 - fx) * fy * img[yb, xa]
                      + fx * (1 - fy) * img[ya, xb] + fx * fy * img[yb, xb])
            count += 1
        out[r, d, ph, pw] = total / count if count else 0.0
    return out


_ROIS = np.array([[0, 1, 1, 9, 8], [0, 0, 2, 5, 11], [1, 3.5, 0.5, 11, 10.5]])


def _psroi_inputs(rng, shape, dtype, index):
    """ROIs (batch index, x1, y1, x2, y2) in the 12x12 image of a 6x6 map at scale 0.5."""
    return _ROIS.astype(dtype) if index == 1 else None


P = "_contrib_DeformablePSROIPooling"
_PSROI = {"spatial_scale": 0.5, "output_dim": 2, "group_size": 2, "pooled_size": 2,
          "part_size": 2, "sample_per_part": 2, "trans_std": 0.1}
CASES += [
    OpCase(P, [(2, 8, 6, 6), (3, 5), (3, 2, 2, 2)], dpsroi_twin, attrs=_PSROI,
           gen=_psroi_inputs, grad_inputs=(0,), dtypes=("float32", "float64")),
    OpCase(P, [(2, 8, 6, 6), (3, 5)], dpsroi_twin, attrs={**_PSROI, "no_trans": True},
           gen=_psroi_inputs, grad_inputs=(0,), id="no_trans", dtypes=("float32", "float64")),
]
