"""Kernels of the bounding-box operators (core/ops/detection.py): box_nms and its backward,
box_iou, box_encode, box_decode and bipartite_matching. Arithmetic follows MXNet 1.9.1's
kernels operation by operation in the data's dtype, so that threshold comparisons (IoU >
overlap_thresh) decide alike; greedy suppression runs block by block (see
:func:`greedy_keep`), never box by box in Python."""
from __future__ import annotations

from functools import partial
from math import prod

import numpy as np

from .base import kernel

#: boxes per block of the greedy suppression: a block's IoU matrix is BLOCK x BLOCK
BLOCK = 128


def _edges(xp, boxes, center: bool):
    """(x1, y1, x2, y2) of (..., 4) boxes; center boxes as MXNet's Intersect sees them."""
    if not center:
        return boxes[..., 0], boxes[..., 1], boxes[..., 2], boxes[..., 3]
    two = boxes.dtype.type(2)
    hw, hh = boxes[..., 2] / two, boxes[..., 3] / two
    return (boxes[..., 0] - hw, boxes[..., 1] - hh, boxes[..., 0] + hw, boxes[..., 1] + hh)


def areas(xp, boxes, center: bool):
    """MXNet's BoxArea: width * height, 0 when either is negative."""
    if center:
        w, h = boxes[..., 2], boxes[..., 3]
    else:
        w, h = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    return xp.where((w < 0) | (h < 0), w.dtype.type(0), w * h)


def intersections(xp, a, b, center: bool):
    """Pairwise intersection areas of boxes a (n, 4) and b (m, 4): (n, m)."""
    ax1, ay1, ax2, ay2 = (e[:, None] for e in _edges(xp, a, center))
    bx1, by1, bx2, by2 = (e[None, :] for e in _edges(xp, b, center))
    zero = a.dtype.type(0)
    w = xp.maximum(xp.minimum(ax2, bx2) - xp.maximum(ax1, bx1), zero)
    h = xp.maximum(xp.minimum(ay2, by2) - xp.maximum(ay1, by1), zero)
    return w * h


class _Boxes:
    """Edges and areas of ranked boxes as contiguous arrays, and scratch matrices reused
    by every block (fresh large temporaries would cost a page fault per page each time)."""

    def __init__(self, xp, boxes, box_areas, center: bool, inclusive: bool = False,
                 plus_one: bool = False):
        self.xp, self.inclusive, self.plus_one = xp, inclusive, plus_one
        self.edges = [xp.ascontiguousarray(e) for e in _edges(xp, boxes, center)]
        self.areas = box_areas
        self._scratch = None

    def _buffers(self, shape):
        size = shape[0] * shape[1]
        if self._scratch is None or self._scratch[0].size < size:
            dt = self.areas.dtype
            self._scratch = (self.xp.empty(size, dt), self.xp.empty(size, dt),
                             self.xp.empty(size, dt), self.xp.empty(size, bool),
                             self.xp.empty(size, bool))
        return [b[:size].reshape(shape) for b in self._scratch]

    def hits(self, rows, cols, thresh):
        """(len(rows), len(cols)): IoU of box ``rows[i]`` and ``cols[j]`` > thresh, as MXNet
        computes it: w = min(x2) - max(x1) clipped at 0, likewise h, IoU = w * h /
        ((area_i + area_j) - w * h). With thresh >= 0 a pair with w <= 0 or h <= 0 (IoU 0
        or NaN) never passes, so the clipping is a mask. ``inclusive``: MultiBoxDetection's
        test, IoU >= thresh with IoU 0 where the union is <= 0. ``plus_one``: Proposal's
        pixel sizes, w = min(x2) - max(x1) + 1. The result is scratch memory, valid until
        the next call."""
        xp, (x1, y1, x2, y2) = self.xp, self.edges
        w, h, u, pos, hit = self._buffers((rows.size, cols.size))
        r, c = (slice(None), None), (None, slice(None))
        xp.minimum(x2[rows][r], x2[cols][c], out=w)
        w -= xp.maximum(x1[rows][r], x1[cols][c], out=u)
        xp.minimum(y2[rows][r], y2[cols][c], out=h)
        h -= xp.maximum(y1[rows][r], y1[cols][c], out=u)
        if self.plus_one:
            w += 1
            h += 1
        if thresh < 0:  # IoU 0 passes: clip as MXNet does
            xp.maximum(w, 0, out=w)
            xp.maximum(h, 0, out=h)
            pos.fill(True)
        else:
            xp.logical_and(xp.greater(w, 0, out=pos), xp.greater(h, 0, out=hit), out=pos)
        w *= h
        xp.add(self.areas[rows][r], self.areas[cols][c], out=u)
        u -= w
        if self.inclusive:
            xp.logical_and(pos, xp.greater(u, 0, out=hit), out=pos)
        with np.errstate(invalid="ignore", divide="ignore"):
            w /= u
        test = xp.greater_equal if self.inclusive else xp.greater
        return xp.logical_and(pos, test(w, thresh, out=hit), out=hit)


def greedy_keep(xp, boxes, box_areas, classes, thresh, center: bool = False,
                inclusive: bool = False, plus_one: bool = False):
    """Greedy NMS over boxes already in rank order: which are kept (bool (n,)). With
    ``classes``, a box only suppresses boxes of its own class, so each class runs alone
    (unless there are so many distinct ids that the classes are better compared in bulk)."""
    table = _Boxes(xp, boxes, box_areas, center, inclusive, plus_one)
    n = boxes.shape[0]
    if classes is None:
        return _greedy(xp, table, xp.arange(n), None, thresh)
    ids, groups = xp.unique(classes, return_inverse=True)
    if ids.size * 32 > n:
        return _greedy(xp, table, xp.arange(n), classes, thresh)
    keep = xp.zeros(n, dtype=bool)
    by_class = xp.argsort(groups, kind="stable")
    bounds = xp.searchsorted(groups[by_class], xp.arange(ids.size + 1))
    for g in range(ids.size):
        members = by_class[int(bounds[g]):int(bounds[g + 1])]
        keep[members] = _greedy(xp, table, members, None, thresh)
    return keep


def _greedy(xp, table, members, classes, thresh):
    """Greedy suppression among ``members`` (indices in rank order), block by block: the
    boxes a block keeps (decided inside it as a fixed point, see :func:`_fixed_point`)
    then suppress the later boxes still alive, so each box meets kept boxes only until it
    is suppressed; where the threshold allows, only those near them (see :class:`_Near`)."""
    n = members.size
    keep = xp.zeros(n, dtype=bool)
    alive = xp.ones(n, dtype=bool)
    near = _Near(xp, table, members, thresh)
    for start in range(0, n, BLOCK):
        end = min(n, start + BLOCK)
        blk = members[start:end]
        inner = xp.triu(_hits(xp, table, blk, blk, classes, thresh), 1)
        keep[start:end] = _fixed_point(xp, inner, alive[start:end])
        kept = xp.flatnonzero(keep[start:end]) + start
        if kept.size:
            for rows, cols in near.pairs(kept, alive, end):
                hit = _hits(xp, table, members[rows], members[cols], classes, thresh)
                alive[cols[hit.any(axis=0)]] = False
    return keep


class _Near:
    """Which later boxes a group of kept boxes can suppress. IoU > t >= 0 needs the
    intersection's width iw > t * max(w_i, w_j) (iw * ih > t * union >= t * w_i * h_i, and
    ih <= h_i), and iw <= w_i - |x1_i - x1_j|, so the left edges lie closer than (1 - t) *
    the widest box (widened against rounding): kept boxes are taken in groups by left
    edge, each against the later boxes whose left edge lies within that radius of the
    group's (a slice of the boxes sorted by left edge). Below a threshold of 0.05 the
    radius spans everything: every later box is a candidate."""

    GROUP = 16

    def __init__(self, xp, table, members, thresh):
        x1, _, x2, _ = table.edges
        self.xp = xp
        self.x = x1[members].astype(np.float64)
        widths = x2[members].astype(np.float64) - self.x + (1.0 if table.plus_one else 0.0)
        reach = float(widths.max(initial=0.0)) * (1.0 - float(thresh)) * 1.01
        self.radius = reach + 1e-5 * float(xp.abs(self.x).max(initial=0.0)) + 1e-6
        self.usable = float(thresh) >= 0.05 and bool(np.isfinite(self.radius))
        self.by_x = xp.argsort(self.x, kind="stable")

    def pairs(self, kept, alive, end):
        """(kept positions, later alive positions) to compare, group by group."""
        xp = self.xp
        if not self.usable:
            later = xp.flatnonzero(alive[end:]) + end
            return [(kept, later)] if later.size else []
        cand = self.by_x[alive[self.by_x] & (self.by_x >= end)]
        if not cand.size:
            return []
        xs = self.x[cand]
        kept = kept[xp.argsort(self.x[kept], kind="stable")]
        kx = self.x[kept]
        out = []
        for g in range(0, kept.size, self.GROUP):
            last = min(kept.size, g + self.GROUP) - 1
            lo = int(xp.searchsorted(xs, kx[g] - self.radius, side="left"))
            hi = int(xp.searchsorted(xs, kx[last] + self.radius, side="right"))
            if hi > lo:
                out.append((kept[g:last + 1], cand[lo:hi]))
        return out


def _hits(xp, table, rows, cols, classes, thresh):
    """(len(rows), len(cols)): row box suppresses column box (same class when given)."""
    hit = table.hits(rows, cols, thresh)
    if classes is not None:
        hit &= classes[rows][:, None] == classes[cols][None, :]
    return hit


def _fixed_point(xp, inner, alive):
    """``keep[j] = alive[j] and no kept i < j suppresses j``, iterated from ``alive``: the
    solution is unique (decided in rank order) and reached after at most as many rounds as
    the longest suppression chain."""
    cur = alive
    while True:
        nxt = alive & ~(inner & cur[:, None]).any(axis=0)
        if bool((nxt == cur).all()):
            return cur
        cur = nxt


def _cast(arr, value):
    return arr.dtype.type(np.float32(value))


def rank(xp, scores, valid):
    """Per row, positions ordered by descending score, stable (ties keep input order),
    invalid positions last; and the number of valid positions per row."""
    key = xp.where(valid, -scores, scores.dtype.type(np.inf))
    return xp.argsort(key, axis=-1, kind="stable"), valid.sum(axis=-1)


def _box_nms(xp, p, data, out, record) -> None:
    n, width = data.shape[-2], data.shape[-1]
    batches = prod(data.shape[:-2])
    d, o = data.reshape(batches, n, width), out.reshape(batches, n, width)
    rec = record.reshape(batches, n)
    topk = n if p.topk < 0 else min(n, p.topk)
    if topk < 1:
        xp.copyto(o, d)
        rec[...] = xp.arange(batches * n).reshape(batches, n)
        return
    scores = d[..., p.score_index]
    valid = scores > _cast(d, p.valid_thresh)
    if p.id_index >= 0:
        valid &= d[..., p.id_index] != _cast(d, p.background_id)
    order, counts = rank(xp, scores, valid)
    o.fill(-1)
    rec.fill(-1)
    for b in range(batches):
        idx = order[b, :min(int(counts[b]), topk)]
        kept = idx[_keep_rows(xp, p, d[b, idx])]
        o[b, :kept.size] = d[b, kept]
        rec[b, :kept.size] = kept + b * n
    if p.in_format != p.out_format:
        _convert(xp, o[..., p.coord_start:p.coord_start + 4], p.out_format == "center")


def _keep_rows(xp, p, rows):
    boxes = rows[:, p.coord_start:p.coord_start + 4]
    center = p.in_format == "center"
    classes = None
    if p.id_index >= 0 and not p.force_suppress:
        classes = rows[:, p.id_index].astype(np.int64)  # MXNet compares int() of the ids
    return greedy_keep(xp, boxes, areas(xp, boxes, center), classes,
                       np.float32(p.overlap_thresh), center)


def _convert(xp, boxes, to_center: bool) -> None:
    """MXNet's corner_to_center / center_to_corner in place; rows whose first value is
    negative (the -1 rows, and any box with a negative left edge) stay as they are."""
    a, b, c, e = (boxes[..., k].copy() for k in range(4))
    two = boxes.dtype.type(2)
    if to_center:
        new = ((a + c) / two, (b + e) / two, c - a, e - b)
    else:
        hw, hh = c / two, e / two
        new = (a - hw, b - hh, a + hw, b + hh)
    skip = a < 0
    for k in range(4):
        boxes[..., k] = xp.where(skip, boxes[..., k], new[k])


@kernel("_contrib_box_nms")
def box_nms(call):
    return partial(_box_nms, call.xp, call.params, call.inputs[0], *call.outputs)


def _nms_backward(xp, og, record, dx) -> None:
    width = dx.shape[-1]
    flat_dx, flat_og = dx.reshape(-1, width), og.reshape(-1, width)
    rec = record.reshape(-1)
    rows = xp.flatnonzero(rec >= 0)
    dx.fill(0)
    flat_dx[rec[rows].astype(np.int64)] = flat_og[rows]


@kernel("_backward_contrib_box_nms")
def box_nms_backward(call):
    og, _, _, record = call.inputs
    return partial(_nms_backward, call.xp, og, record, call.outputs[0])


def _box_iou(xp, center, lhs, rhs, out) -> None:
    a, b = lhs.reshape(-1, 4), rhs.reshape(-1, 4)
    inter = intersections(xp, a, b, center)
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = inter / ((areas(xp, a, center)[:, None] + areas(xp, b, center)[None, :]) - inter)
    out.reshape(a.shape[0], b.shape[0])[...] = xp.where(inter <= 0, inter.dtype.type(0), iou)


@kernel("_contrib_box_iou")
def box_iou(call):
    return partial(_box_iou, call.xp, call.params.format == "center", *call.inputs,
                   call.outputs[0])


def _mid(lo, size):
    """lo + size * 0.5 as MXNet computes it: in double, rounded once to the dtype."""
    return (lo.astype(np.float64) + size.astype(np.float64) * 0.5).astype(lo.dtype)


def _box_decode(xp, p, x, anchors, out) -> None:
    a = anchors.reshape(-1, 4)
    ax, ay, aw, ah = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    if p.format == "corner":
        aw, ah = aw - ax, ah - ay
        ax, ay = _mid(ax, aw), _mid(ay, ah)
    t = x.dtype.type
    ox = x[..., 0] * t(p.std0) * aw + ax
    oy = x[..., 1] * t(p.std1) * ah + ay
    dw, dh = x[..., 2] * t(p.std2), x[..., 3] * t(p.std3)
    if p.clip > 0:
        dw, dh = xp.minimum(dw, t(p.clip)), xp.minimum(dh, t(p.clip))
    with np.errstate(over="ignore"):
        ow, oh = xp.exp(dw) * aw * t(0.5), xp.exp(dh) * ah * t(0.5)
    out[..., 0], out[..., 1] = ox - ow, oy - oh
    out[..., 2], out[..., 3] = ox + ow, oy + oh


@kernel("_contrib_box_decode")
def box_decode(call):
    return partial(_box_decode, call.xp, call.params, *call.inputs, call.outputs[0])


def _centers(box):
    w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    return _mid(box[..., 0], w), _mid(box[..., 1], h), w, h


def _box_encode(xp, samples, matches, anchors, refs, means, stds, targets, masks) -> None:
    m = refs.shape[1]
    match = xp.clip(matches.astype(np.int64), 0, m - 1)  # MXNet reads out of bounds
    ref = xp.take_along_axis(refs, match[..., None], axis=1)
    rx, ry, rw, rh = _centers(ref)
    ax, ay, aw, ah = _centers(anchors)
    with np.errstate(all="ignore"):
        enc = ((rx - ax) / aw, (ry - ay) / ah, xp.log(rw / aw), xp.log(rh / ah))
    valid = samples > samples.dtype.type(0.5)
    masks[...] = valid[..., None].astype(masks.dtype)
    zero = targets.dtype.type(0)
    for k in range(4):
        with np.errstate(all="ignore"):
            targets[..., k] = xp.where(valid, (enc[k] - means[k]) / stds[k], zero)


@kernel("_contrib_box_encode")
def box_encode(call):
    return partial(_box_encode, call.xp, *call.inputs, *call.outputs)


def _matching(xp, p, scores, rows_out, cols_out) -> None:
    nrow, ncol = scores.shape[-2], scores.shape[-1]
    flat = scores.reshape(-1, nrow * ncol)
    key = flat if p.is_ascend else -flat
    order = xp.argsort(key, axis=1, kind="stable")
    r_out, c_out = rows_out.reshape(-1, nrow), cols_out.reshape(-1, ncol)
    r_out.fill(-1)
    c_out.fill(-1)
    thresh = np.float32(p.threshold)
    for b in range(flat.shape[0]):
        ranked = flat[b][order[b]]
        good = ranked < thresh if p.is_ascend else ranked > thresh
        _match_batch(xp, order[b] // ncol, order[b] % ncol, good, p.topk, r_out[b], c_out[b])


def _match_batch(xp, rows, cols, good, topk, r_out, c_out) -> None:
    """MXNet's greedy walk over the ranked pairs: the first pair whose row and column are
    both free is matched if its score passes the threshold, and the walk stops at the first
    free pair that does not, or once more than ``topk`` pairs are matched (topk + 1 then)."""
    free_r = xp.ones(r_out.shape[0], dtype=bool)
    free_c = xp.ones(c_out.shape[0], dtype=bool)
    pos, count = 0, 0
    while pos < rows.size:
        free = free_r[rows[pos:]] & free_c[cols[pos:]]
        if not bool(free.any()):
            return
        pos += int(xp.argmax(free))
        if not bool(good[pos]):
            return
        r, c = int(rows[pos]), int(cols[pos])
        r_out[r], c_out[c] = c, r
        free_r[r], free_c[c] = False, False
        count += 1
        if 0 < topk < count:
            return


@kernel("_contrib_bipartite_matching")
def bipartite_matching(call):
    return partial(_matching, call.xp, call.params, call.inputs[0], *call.outputs)
