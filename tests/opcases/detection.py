"""Cases for the bounding-box operators (core/ops/detection.py): plain, box-by-box numpy twins
of MXNet 1.9.1's kernels. MXNet's own numbers, edge cases included, are replayed by
tests/test_vision_detection.py. box_iou, box_encode, box_decode and bipartite_matching have
zero gradients in MXNet (not their derivatives), so only box_nms's gradient is checked here."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
FLOATS = ("float32", "float64")


def _rows(rng, shape, dtype, index):
    """[id, score, x1, y1, x2, y2] rows in clusters: boxes overlap, scores are distinct."""
    n = shape[-2]
    lead = int(np.prod(shape[:-2]))
    centers = rng.uniform(0.3, 0.7, (lead, 3, 2))
    pick = rng.integers(0, 3, (lead, n))
    c = np.take_along_axis(centers, pick[..., None], 1) + rng.normal(0, 0.05, (lead, n, 2))
    wh = rng.uniform(0.1, 0.3, (lead, n, 2))
    score = rng.permutation(lead * n).reshape(lead, n, 1) / (lead * n) + 0.01
    ids = rng.integers(0, 2, (lead, n, 1)) + 0.25  # int() of id +- eps stays the class
    rows = np.concatenate([ids, score, c - wh / 2, c + wh / 2], -1)
    return rows.reshape(shape).astype(dtype)


def _area(b, center):
    w, h = (b[2], b[3]) if center else (b[2] - b[0], b[3] - b[1])
    return 0 * w if w < 0 or h < 0 else w * h


def _inter(a, b, center):
    if center:
        a = [a[0] - a[2] / 2, a[1] - a[3] / 2, a[0] + a[2] / 2, a[1] + a[3] / 2]
        b = [b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2]
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0 * w) * max(h, 0 * h)


def _nms(x, overlap_thresh=0.5, valid_thresh=0.0, topk=-1, coord_start=2, score_index=1,
         id_index=-1, background_id=-1, force_suppress=False, in_format="corner",
         out_format="corner"):
    n, w = x.shape[-2:]
    data = x.reshape(-1, n, w)
    out = np.full_like(data, -1)
    cs, center = coord_start, in_format == "center"
    for b, rows in enumerate(data):
        cand = [i for i in range(n) if rows[i, score_index] > rows.dtype.type(valid_thresh)
                and (id_index < 0 or rows[i, id_index] != background_id)]
        cand = sorted(cand, key=lambda i: -rows[i, score_index])[:n if topk < 0 else topk]
        kept = []
        for i in cand:
            if not any((force_suppress or id_index < 0
                        or int(rows[k, id_index]) == int(rows[i, id_index]))
                       and _iou(rows[k, cs:cs + 4], rows[i, cs:cs + 4], center)
                       > np.float32(overlap_thresh) for k in kept):
                kept.append(i)
        out[b, :len(kept)] = rows[kept]
    if in_format != out_format:
        for row in out.reshape(-1, w):
            a, b_, c, d = row[cs:cs + 4].copy()
            if a >= 0:
                row[cs:cs + 4] = ([(a + c) / 2, (b_ + d) / 2, c - a, d - b_]
                                  if out_format == "center"
                                  else [a - c / 2, b_ - d / 2, a + c / 2, b_ + d / 2])
    return out.reshape(x.shape)


def _iou(a, b, center):
    inter = _inter(a, b, center)
    return inter / (_area(a, center) + _area(b, center) - inter)


NMS = dict(gen=_rows, dtypes=FLOATS)
CASES += [
    OpCase("_contrib_box_nms", [(12, 6)], _nms, **NMS),
    OpCase("_contrib_box_nms", [(2, 10, 6)], _nms, id="ids-topk", **NMS,
           attrs={"id_index": 0, "topk": 6, "overlap_thresh": 0.3, "valid_thresh": 0.2}),
    OpCase("_contrib_box_non_maximum_suppression", [(2, 1, 9, 6)], _nms, id="force-center",
           attrs={"id_index": 0, "force_suppress": True, "in_format": "center",
                  "out_format": "corner", "background_id": 1}, gen=_rows, dtypes=FLOATS,
           grad_inputs=()),  # MXNet's gradient ignores the format conversion (replayed)
]


def _boxes(rng, shape, dtype, index):
    xy = rng.uniform(0, 0.6, shape[:-1] + (2,))
    return np.concatenate([xy, xy + rng.uniform(0.05, 0.4, xy.shape)], -1).astype(dtype)


def _box_iou(lhs, rhs, format="corner"):
    a, b = lhs.reshape(-1, 4), rhs.reshape(-1, 4)
    center = format == "center"
    out = np.array([[0.0 if _inter(p, q, center) <= 0 else _iou(p, q, center) for q in b]
                    for p in a])
    return out.reshape(lhs.shape[:-1] + rhs.shape[:-1])


def _decode(data, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0,
            format="center"):
    a = anchors.reshape(-1, 4).astype(np.float64)
    if format == "corner":
        a = np.stack([(a[:, 0] + a[:, 2]) / 2, (a[:, 1] + a[:, 3]) / 2, a[:, 2] - a[:, 0],
                      a[:, 3] - a[:, 1]], 1)
    d = data * np.array([std0, std1, std2, std3])
    if clip > 0:
        d[..., 2:] = np.minimum(d[..., 2:], clip)
    cx, cy = d[..., 0] * a[:, 2] + a[:, 0], d[..., 1] * a[:, 3] + a[:, 1]
    hw, hh = np.exp(d[..., 2]) * a[:, 2] / 2, np.exp(d[..., 3]) * a[:, 3] / 2
    return np.stack([cx - hw, cy - hh, cx + hw, cy + hh], -1)


def _encode_inputs(rng, shape, dtype, index):
    if index == 0:
        return rng.choice([-1.0, 0.0, 1.0], shape).astype(dtype)
    if index == 1:
        return rng.integers(0, 3, shape).astype(dtype)
    if index in (2, 3):
        return _boxes(rng, shape, dtype, index)
    return (rng.uniform(-0.1, 0.1, 4) if index == 4 else rng.uniform(0.1, 0.3, 4)).astype(dtype)


def _encode(samples, matches, anchors, refs, means, stds):
    ref = np.take_along_axis(refs, matches.astype(int)[..., None], 1).astype(np.float64)
    a = anchors.astype(np.float64)
    aw, ah = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
    rw, rh = ref[..., 2] - ref[..., 0], ref[..., 3] - ref[..., 1]
    t = np.stack([(ref[..., 0] + rw / 2 - a[..., 0] - aw / 2) / aw,
                  (ref[..., 1] + rh / 2 - a[..., 1] - ah / 2) / ah,
                  np.log(rw / aw), np.log(rh / ah)], -1)
    valid = (samples > 0.5)[..., None]
    return [np.where(valid, (t - means) / stds, 0), np.repeat(valid, 4, -1).astype(float)]


def _matching(x, threshold, is_ascend=False, topk=-1):
    nrow, ncol = x.shape[-2:]
    flat = x.reshape(-1, nrow * ncol)
    rows, cols = np.full((flat.shape[0], nrow), -1.0), np.full((flat.shape[0], ncol), -1.0)
    for b, s in enumerate(flat):
        count = 0
        for j in sorted(range(s.size), key=lambda j: s[j] if is_ascend else -s[j]):
            r, c = divmod(j, ncol)
            if rows[b, r] != -1 or cols[b, c] != -1:
                continue
            if not (s[j] < threshold if is_ascend else s[j] > threshold):
                break
            rows[b, r], cols[b, c], count = c, r, count + 1
            if 0 < topk < count:
                break
    return [rows.reshape(x.shape[:-1]), cols.reshape(x.shape[:-2] + (ncol,))]


def _distinct(rng, shape, dtype, index):
    return (rng.permutation(int(np.prod(shape))).reshape(shape) / np.prod(shape)).astype(dtype)


NO_GRAD = dict(dtypes=FLOATS, grad_inputs=())
CASES += [
    OpCase("_contrib_box_iou", [(5, 4), (2, 3, 4)], _box_iou, gen=_boxes, **NO_GRAD),
    OpCase("_contrib_box_iou", [(4, 4), (3, 4)], _box_iou, gen=_boxes, id="center",
           attrs={"format": "center"}, **NO_GRAD),
    OpCase("_contrib_box_decode", [(2, 6, 4), (1, 6, 4)], _decode, low=-1, high=1,
           gen=lambda rng, s, d, i: _boxes(rng, s, d, i) if i else None, **NO_GRAD),
    OpCase("_contrib_box_decode", [(2, 6, 4), (1, 6, 4)], _decode, low=-1, high=3,
           id="corner-clip", attrs={"format": "corner", "clip": 1.5, "std0": 0.1,
                                    "std2": 0.2}, rtol=1e-4,
           gen=lambda rng, s, d, i: _boxes(rng, s, d, i) if i else None, **NO_GRAD),
    OpCase("_contrib_box_encode", [(2, 5), (2, 5), (2, 5, 4), (2, 3, 4), (4,), (4,)],
           _encode, gen=_encode_inputs, rtol=1e-4, atol=1e-5, **NO_GRAD),
    OpCase("_contrib_bipartite_matching", [(2, 4, 5)], _matching, gen=_distinct,
           attrs={"threshold": 0.3}, **NO_GRAD),
    OpCase("_contrib_bipartite_matching", [(5, 3)], _matching, gen=_distinct, id="ascend-topk",
           attrs={"threshold": 0.8, "is_ascend": True, "topk": 1}, **NO_GRAD),
]


# -- SSD operators (core/ops/detection_multibox.py) ------------------------------------------
def _prior(data, sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0),
           offsets=(0.5, 0.5)):
    h, w = data.shape[2:4]
    sy, sx = (steps if steps[0] > 0 and steps[1] > 0 else (1 / h, 1 / w))
    shapes = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    out = []
    for r in range(h):
        for c in range(w):
            cy, cx = (r + offsets[0]) * sy, (c + offsets[1]) * sx
            for size, ratio in shapes:
                hw, hh = size * h / w * np.sqrt(ratio) / 2, size / np.sqrt(ratio) / 2
                out.append([cx - hw, cy - hh, cx + hw, cy + hh])
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


def _overlap(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return 0.0 if u <= 0 else w * h / u


def _detection(cls_prob, loc_pred, anchor, clip=True, threshold=0.01, nms_threshold=0.5,
               force_suppress=False, variances=(0.1, 0.1, 0.2, 0.2), nms_topk=-1):
    b_, _, n = cls_prob.shape
    out = np.full((b_, n, 6), -1.0)
    for b in range(b_):
        rows = []
        for i in range(n):
            score, cid = max((cls_prob[b, j, i], j) for j in range(1, cls_prob.shape[1]))
            if score < threshold:
                continue
            al, at, ar, ab = anchor[0, i]
            px, py, pw, ph = loc_pred[b, 4 * i:4 * i + 4]
            aw, ah = ar - al, ab - at
            ox, oy = px * variances[0] * aw + (al + ar) / 2, py * variances[1] * ah + (at + ab) / 2
            ow, oh = np.exp(pw * variances[2]) * aw / 2, np.exp(ph * variances[3]) * ah / 2
            box = np.array([ox - ow, oy - oh, ox + ow, oy + oh])
            rows.append([cid - 1, score, *(np.clip(box, 0, 1) if clip else box)])
        out[b, :len(rows)] = rows  # rows cut by nms_topk keep these values, class -1
        out[b, :len(rows), 0] = -1
        rows = sorted(rows, key=lambda r: -r[1])[:nms_topk if nms_topk > 0 else None]
        for i, ri in enumerate(rows):
            for rj in rows[i + 1:]:
                if ri[0] >= 0 and rj[0] >= 0 and (force_suppress or ri[0] == rj[0]) \
                        and _overlap(ri[2:], rj[2:]) >= nms_threshold:
                    rj[0] = -1
        out[b, :len(rows)] = rows
    return out


def _target(anchor, label, cls_pred, overlap_threshold=0.5, ignore_label=-1.0,
            variances=(0.1, 0.1, 0.2, 0.2)):
    """Without negative mining (the replayed MXNet cases cover it)."""
    anchors, n = anchor[0], anchor.shape[1]
    loc, mask = np.zeros((label.shape[0], n, 4)), np.zeros((label.shape[0], n, 4))
    cls = np.full((label.shape[0], n), ignore_label)
    for b, lab in enumerate(label):
        gts = [row for row in lab]
        gts = gts[:next((k for k, r in enumerate(gts) if r[0] == -1), len(gts))]
        if not gts:
            continue
        iou = np.array([[_overlap(a, g[1:5]) for g in gts] for a in anchors])
        match, free_a, free_g = {}, set(range(n)), set(range(len(gts)))
        while free_g:
            best = max(((iou[j, k], -j, -k) for j in free_a for k in free_g), default=None)
            if best is None or best[0] <= 1e-6:
                break
            match[-best[1]] = -best[2]
            free_a.discard(-best[1])
            free_g.discard(-best[2])
        for j in free_a:
            if overlap_threshold > 0 and iou[j].max() > overlap_threshold:
                match[j] = int(np.argmax(iou[j]))
        cls[b] = 0
        for j, k in match.items():
            a, g = anchors[j], gts[k][1:5]
            aw, ah, gw, gh = a[2] - a[0], a[3] - a[1], g[2] - g[0], g[3] - g[1]
            loc[b, j] = [((g[0] + g[2]) - (a[0] + a[2])) / 2 / aw / variances[0],
                         ((g[1] + g[3]) - (a[1] + a[3])) / 2 / ah / variances[1],
                         np.log(gw / aw) / variances[2], np.log(gh / ah) / variances[3]]
            mask[b, j], cls[b, j] = 1, gts[k][0] + 1
    return [loc.reshape(len(label), -1), mask.reshape(len(label), -1), cls]


def _ssd_inputs(rng, shape, dtype, index):
    if len(shape) == 3 and shape[-1] == 4:        # anchors
        return _boxes(rng, shape, dtype, index)
    if index == 0 and len(shape) == 3:            # class probabilities (distinct)
        p = rng.permutation(int(np.prod(shape))).reshape(shape) + 1.0
        return (p / p.sum(axis=1, keepdims=True)).astype(dtype)
    return rng.normal(0, 0.5, shape).astype(dtype)


def _target_inputs(rng, shape, dtype, index):
    if index == 1:  # labels: 2 ground truths, then padding
        lab = np.full(shape, -1.0)
        lab[:, :2, 0] = rng.integers(0, 3, (shape[0], 2))
        lab[:, :2, 1:5] = _boxes(rng, (shape[0], 2, 4), "float64", 0)
        return lab.astype(dtype)
    return _ssd_inputs(rng, shape, dtype, index)


F32_ONLY = {"dtypes": ("float32",), "grad_inputs": ()}
CASES += [
    OpCase("_contrib_MultiBoxPrior", [(1, 2, 3, 4)], _prior, **F32_ONLY),
    OpCase("_contrib_MultiBoxPrior", [(2, 1, 4, 3)], _prior, id="sizes-ratios-clip",
           attrs={"sizes": (0.4, 0.8), "ratios": (1, 2, 0.5), "clip": True,
                  "steps": (0.3, 0.2), "offsets": (0.25, 0.75)}, **F32_ONLY),
    OpCase("_contrib_MultiBoxDetection", [(2, 3, 12), (2, 48), (1, 12, 4)], _detection,
           gen=_ssd_inputs, attrs={"threshold": 0.2, "nms_threshold": 0.3},
           rtol=1e-5, atol=1e-6, **F32_ONLY),
    OpCase("_contrib_MultiBoxDetection", [(1, 4, 10), (1, 40), (1, 10, 4)], _detection,
           gen=_ssd_inputs, id="force-topk", attrs={"force_suppress": True, "nms_topk": 5,
                                                    "clip": False}, **F32_ONLY),
    OpCase("_contrib_MultiBoxTarget", [(1, 12, 4), (2, 3, 5), (2, 3, 12)], _target,
           gen=_target_inputs, attrs={"overlap_threshold": 0.1}, rtol=1e-4, atol=1e-5,
           **F32_ONLY),
]
