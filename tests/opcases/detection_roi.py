"""Cases for the region operators (core/ops/detection_roi.py): box-by-box numpy twins of
MXNet 1.9.1's ROIAlign, ROIPooling, PSROIPooling, RROIAlign and Proposal kernels. MXNet's
own numbers are replayed by tests/test_vision_detection.py. The rois get no gradient in
MXNet (not their derivative), so only the data's is checked."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
FLOATS = ("float32", "float64")
F32_ONLY = {"dtypes": ("float32",), "grad_inputs": ()}


# -- region operators (core/ops/detection_roi.py) --------------------------------------------
def _roi_inputs(rng, shape, dtype, index):
    if index == 0:  # distinct values: max pooling has no ties
        return (rng.permutation(int(np.prod(shape))).reshape(shape) / np.prod(shape)
                ).astype(dtype)
    n = shape[0]
    xy = rng.uniform(-2, 14, (n, 2))
    rois = np.concatenate([rng.integers(0, 2, (n, 1)), xy, xy + rng.uniform(1, 12, (n, 2))], 1)
    return rois.astype(dtype)


def _bilinear(img, y, x):
    h, w = img.shape[-2:]
    if y < -1 or y > h or x < -1 or x > w:
        return 0 * img[..., 0, 0]
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = (y0, x0)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[..., y0, x0] + (1 - ly) * lx * img[..., y0, x1]
            + ly * (1 - lx) * img[..., y1, x0] + ly * lx * img[..., y1, x1])


def _roi_align(data, rois, pooled_size, spatial_scale, sample_ratio=-1,
               position_sensitive=False, aligned=False):
    ph, pw = pooled_size
    c = data.shape[1] // (ph * pw if position_sensitive else 1)
    out = np.zeros((len(rois), c, ph, pw))
    off = 0.5 if aligned else 0.0
    for n, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = (v * spatial_scale - off for v in (x1, y1, x2, y2))
        rw, rh = (x2 - x1, y2 - y1) if aligned else (max(x2 - x1, 1.0), max(y2 - y1, 1.0))
        gh = sample_ratio if sample_ratio > 0 else int(np.ceil(rh / ph))
        gw = sample_ratio if sample_ratio > 0 else int(np.ceil(rw / pw))
        for i in range(ph):
            for j in range(pw):
                chans = (np.arange(c) * ph * pw + i * pw + j) if position_sensitive \
                    else np.arange(c)
                img = data[int(b)][chans].astype(np.float64)
                acc = sum(_bilinear(img, y1 + i * rh / ph + (iy + .5) * rh / ph / gh,
                                    x1 + j * rw / pw + (ix + .5) * rw / pw / gw)
                          for iy in range(gh) for ix in range(gw))
                out[n, :, i, j] = acc / (gh * gw)
    return out


def _roi_pool(data, rois, pooled_size, spatial_scale):
    ph, pw = pooled_size
    h, w = data.shape[2:]
    out = np.zeros((len(rois), data.shape[1], ph, pw))
    for n, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1, x2, y2 = (int(np.floor(v * np.float32(spatial_scale) + 0.5)) for v in roi[1:])
        bh, bw = max(y2 - y1 + 1, 1) / ph, max(x2 - x1 + 1, 1) / pw
        for i in range(ph):
            for j in range(pw):
                hs = min(max(int(np.floor(i * bh)) + y1, 0), h)
                he = min(max(int(np.ceil((i + 1) * bh)) + y1, 0), h)
                ws = min(max(int(np.floor(j * bw)) + x1, 0), w)
                we = min(max(int(np.ceil((j + 1) * bw)) + x1, 0), w)
                if he > hs and we > ws:
                    out[n, :, i, j] = data[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


ROI = {"gen": _roi_inputs, "grad_inputs": (0,)}
CASES += [
    OpCase("_contrib_ROIAlign", [(2, 3, 6, 7), (4, 5)], _roi_align, dtypes=FLOATS,
           attrs={"pooled_size": (2, 3), "spatial_scale": 0.5}, rtol=1e-4, atol=1e-5, **ROI),
    OpCase("_contrib_ROIAlign", [(2, 8, 5, 6), (3, 5)], _roi_align, dtypes=FLOATS,
           id="aligned-ps", attrs={"pooled_size": (2, 2), "spatial_scale": 0.5,
                                   "aligned": True, "sample_ratio": 2,
                                   "position_sensitive": True}, rtol=1e-4, atol=1e-5, **ROI),
    OpCase("ROIPooling", [(2, 3, 6, 7), (4, 5)], _roi_pool, dtypes=("float32",),
           attrs={"pooled_size": (2, 3), "spatial_scale": 0.5}, **ROI),
]


def _proposal_anchors(stride, scales, ratios):
    base_w = float(stride)
    ctr = (stride - 1) / 2
    out = []
    for r in ratios:
        for s in scales:
            w = np.floor(np.sqrt(np.floor(base_w * base_w / r)) + 0.5) * s
            h = np.floor(w / s * r + 0.5) * s
            out.append([ctr - (w - 1) / 2, ctr - (h - 1) / 2, ctr + (w - 1) / 2,
                        ctr + (h - 1) / 2])
    return np.array(out)


def _proposal(cls_prob, bbox_pred, im_info, rpn_pre_nms_top_n=6000, rpn_post_nms_top_n=300,
              threshold=0.7, rpn_min_size=16, scales=(4, 8, 16, 32), ratios=(0.5, 1, 2),
              feature_stride=16, output_score=False, iou_loss=False):
    base = _proposal_anchors(feature_stride, scales, ratios)
    n_a, hgt, wid = base.shape[0], cls_prob.shape[2], cls_prob.shape[3]
    rows, scores = [], []
    for b in range(cls_prob.shape[0]):
        ih, iw, sc = im_info[b]
        dets = []
        for j in range(hgt):
            for k in range(wid):
                for a in range(n_a):
                    x1, y1, x2, y2 = base[a] + [k * feature_stride, j * feature_stride] * 2
                    dx, dy, dw, dh = bbox_pred[b, 4 * a:4 * a + 4, j, k]
                    w, h = x2 - x1 + 1, y2 - y1 + 1
                    cx, cy = x1 + (w - 1) / 2 + dx * w, y1 + (h - 1) / 2 + dy * h
                    pw_, ph_ = np.exp(dw) * w, np.exp(dh) * h
                    box = np.clip([cx - (pw_ - 1) / 2, cy - (ph_ - 1) / 2, cx + (pw_ - 1) / 2,
                                   cy + (ph_ - 1) / 2], 0, [iw - 1, ih - 1] * 2)
                    score = cls_prob[b, n_a + a, j, k]
                    if j >= int(ih / feature_stride) or k >= int(iw / feature_stride):
                        score = -1
                    least = rpn_min_size * sc
                    if box[2] - box[0] + 1 < least or box[3] - box[1] + 1 < least:
                        box, score = box + np.array([-1, -1, 1, 1]) * least / 2, -1
                    dets.append((box, score))
        order = sorted(range(len(dets)), key=lambda i: -dets[i][1])[:rpn_pre_nms_top_n]
        kept = []
        for i in order:
            bi = dets[i][0]
            if all(_plus_one_iou(bi, dets[k][0]) <= threshold for k in kept):
                kept.append(i)
        kept = kept[:rpn_post_nms_top_n]
        for r in range(rpn_post_nms_top_n):
            box, score = dets[kept[r % len(kept)]]
            rows.append([b, *box])
            scores.append([score])
    return [np.array(rows), np.array(scores)] if output_score else np.array(rows)


def _plus_one_iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]) + 1)
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]) + 1)
    area = (a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
    return w * h / (area - w * h)


def _rpn_inputs(rng, shape, dtype, index):
    if index == 0:  # distinct foreground probabilities
        return (rng.permutation(int(np.prod(shape))).reshape(shape) / np.prod(shape)
                ).astype(dtype)
    if index == 1:
        return rng.normal(0, 0.2, shape).astype(dtype)
    return np.tile(np.array([[64, 80, 1.0]], dtype), (shape[0], 1))


RPN = {"scales": (2, 4), "ratios": (0.5, 1, 2), "rpn_pre_nms_top_n": 50,
       "rpn_post_nms_top_n": 12, "rpn_min_size": 4, "threshold": 0.5}
CASES += [
    OpCase("_contrib_Proposal", [(1, 12, 4, 5), (1, 24, 4, 5), (1, 3)], _proposal,
           gen=_rpn_inputs, attrs=RPN, rtol=1e-4, atol=1e-4, **F32_ONLY),
    OpCase("_contrib_MultiProposal", [(2, 12, 4, 5), (2, 24, 4, 5), (2, 3)], _proposal,
           gen=_rpn_inputs, attrs={**RPN, "output_score": True, "rpn_post_nms_top_n": 40},
           id="score-cycle", rtol=1e-4, atol=1e-4, **F32_ONLY),
]


def _psroi(data, rois, spatial_scale, output_dim, pooled_size, group_size=0):
    group = group_size or pooled_size
    h, w = data.shape[2:]
    out = np.zeros((len(rois), output_dim, pooled_size, pooled_size))
    rnd = lambda v: np.sign(v) * np.floor(abs(v) + 0.5)  # noqa: E731 - C's round()
    for n, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        sx, sy = rnd(x1) * spatial_scale, rnd(y1) * spatial_scale
        bw = max((rnd(x2) + 1) * spatial_scale - sx, 0.1) / pooled_size
        bh = max((rnd(y2) + 1) * spatial_scale - sy, 0.1) / pooled_size
        for i in range(pooled_size):
            for j in range(pooled_size):
                hs, he = (min(max(int(f(v)), 0), h) for f, v in
                          ((np.floor, i * bh + sy), (np.ceil, (i + 1) * bh + sy)))
                ws, we = (min(max(int(f(v)), 0), w) for f, v in
                          ((np.floor, j * bw + sx), (np.ceil, (j + 1) * bw + sx)))
                gi, gj = (min(int(np.floor(k * group / pooled_size)), group - 1) for k in (i, j))
                if he > hs and we > ws:
                    chans = (np.arange(output_dim) * group + gi) * group + gj
                    out[n, :, i, j] = data[int(b)][chans, hs:he, ws:we].mean(axis=(1, 2))
    return out


def _rroi_align(data, rois, pooled_size, spatial_scale, sampling_ratio=-1):
    ph, pw = pooled_size
    out = np.zeros((len(rois), data.shape[1], ph, pw))
    for n, (b, cx, cy, w, h, angle) in enumerate(rois.astype(np.float64)):
        cx, cy = cx * spatial_scale, cy * spatial_scale
        w, h = max(w * spatial_scale, 1.0), max(h * spatial_scale, 1.0)
        cos, sin = np.cos(np.deg2rad(angle)), np.sin(np.deg2rad(angle))
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(h / ph))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(w / pw))
        img = data[int(b)].astype(np.float64)
        for i in range(ph):
            for j in range(pw):
                acc = 0
                for iy in range(gh):
                    for ix in range(gw):
                        yy = -h / 2 + i * h / ph + (iy + .5) * h / ph / gh
                        xx = -w / 2 + j * w / pw + (ix + .5) * w / pw / gw
                        acc = acc + _bilinear(img, yy * cos - xx * sin + cy,
                                              xx * cos + yy * sin + cx)
                out[n, :, i, j] = acc / (gh * gw)
    return out


def _rotated_rois(rng, shape, dtype, index):
    if index == 0:
        return rng.normal(0, 1, shape).astype(dtype)
    n = shape[0]
    return np.stack([rng.integers(0, 2, n), rng.uniform(0, 14, n), rng.uniform(0, 12, n),
                     rng.uniform(1, 10, n), rng.uniform(1, 10, n), rng.uniform(-180, 180, n)],
                    1).astype(dtype)


CASES += [
    OpCase("_contrib_PSROIPooling", [(2, 8, 6, 7), (4, 5)], _psroi, dtypes=FLOATS,
           attrs={"spatial_scale": 0.5, "output_dim": 2, "pooled_size": 2}, rtol=1e-4,
           atol=1e-5, **ROI),
    OpCase("_contrib_PSROIPooling", [(2, 12, 6, 7), (3, 5)], _psroi, dtypes=FLOATS,
           id="group", attrs={"spatial_scale": 0.5, "output_dim": 3, "pooled_size": 3,
                              "group_size": 2}, rtol=1e-4, atol=1e-5, **ROI),
    OpCase("_contrib_RROIAlign", [(2, 3, 6, 7), (4, 6)], _rroi_align, dtypes=FLOATS,
           gen=_rotated_rois, attrs={"pooled_size": (2, 3), "spatial_scale": 0.5},
           rtol=1e-4, atol=1e-5, grad_inputs=()),
]
