"""2-D pooling as loops for numba (source only: the compiled-loops module, :mod:`.compiled`,
compiles them; as Python they are never called), over planes (the N x C maps of
channel-first data, a range of them per call so that the host's threads can share them;
:func:`.conv.pooling`, :func:`.conv_grad.pooling_backward`):

- max (:func:`_max_planes`): each window's running maximum from the dtype's lowest value,
  an element taken only when greater (NaN never is; a window of NaN, -inf or padding only
  gives the lowest value), as MXNet's. The maximum does not depend on the order, so each
  output row first combines its window's input rows (contiguous loops) and then the
  columns of that row, the column stride of 1 or 2 written as a constant (LLVM then
  vectorises the strided loads);
- max in training (:func:`_max_planes_tracked`): the same maxima, with each window's first
  maximum's offset for the gradient (:func:`_max_planes_backward`: each dY added there,
  the outputs in row-major order, as MXNet);
- sum and avg (:func:`_sum_planes`): each window's elements added in row-major window
  order from 0, in the data's type, padding skipped; avg then divides by the window's
  count (``AVERAGE``: MXNet 1.9.1's oneDNN pooling, float32 windows of the 'valid' and
  'same' conventions) or divides each element by it before adding it (``EACH_AVERAGED``:
  MXNet's own CPU pooling, which takes float64 and the 'full' convention): MXNet's numbers
  bit for bit, where numpy's axis passes differed in the last bit;
- the gradient of sum and avg (:func:`_sum_planes_backward`): each dY (avg: divided by its
  window's count) added over its window, outputs and windows in row-major order, as MXNet;
- max over channels-last data (:func:`_max_rows`, :func:`_max_rows_backward`): images
  rather than planes, each output pixel's channels at once, the same maxima, offsets and
  gradient sums as the plane loops.
"""
from __future__ import annotations

import numpy as np

#: what the sum loops give (their ``mode``; the compiled module defines the same names)
SUM_MODES = ("SUMMED", "AVERAGE", "EACH_AVERAGED")
SUMMED, AVERAGE, EACH_AVERAGED = range(len(SUM_MODES))
#: about how many elements the stride-1 sum loops take at a time (a block of planes with
#: their borders; the compiled module defines it too)
FLAT_BLOCK = 8192


def _column_range(off, sw, w, ow):  # pragma: no cover - numba's
    """(lo, hi): the output columns ox with 0 <= ox * sw + off < w."""
    lo = 0
    if off < 0:
        lo = (-off + sw - 1) // sw
    hi = min(ow, (w - 1 - off) // sw + 1)
    return lo, max(lo, hi)


def _max_columns(tmp, row, kw, sw):  # pragma: no cover - numba's
    """row[ox] = the greatest of tmp[sw * ox + kx] over kx < kw (taken only when greater),
    the row already holding tmp[sw * ox]."""
    ow = row.size
    for kx in range(1, kw):
        t = tmp[kx:]
        if sw == 1:
            for i in range(ow):
                v, m = t[i], row[i]
                row[i] = v if v > m else m
        elif sw == 2:
            for i in range(ow):
                v, m = t[2 * i], row[i]
                row[i] = v if v > m else m
        else:
            for i in range(ow):
                v, m = t[sw * i], row[i]
                row[i] = v if v > m else m


def _max_planes(x, out, kh, kw, sh, sw, ph, pw, lowest, p0, p1):  # pragma: no cover
    """Max pooling of planes [p0, p1) of ``x`` (P, H, W) into ``out`` (P, OH, OW): per
    output row the window's input rows combined into ``tmp`` (the row with ``pw`` columns
    of the lowest value before it and enough after it for every window), then its columns
    (:func:`_max_columns`)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    tmp = np.empty(max(pw + w, sw * (ow - 1) + kw), x.dtype)
    inner = tmp[pw:pw + w]
    for p in range(p0, p1):
        src, dst = x[p], out[p]
        tmp[:] = lowest
        for oy in range(oh):
            y0 = oy * sh - ph
            first = True
            for ky in range(kh):
                y = y0 + ky
                if y < 0 or y >= h:
                    continue
                srow = src[y]
                if first:  # the running maxima start at the lowest value
                    for i in range(w):
                        v = srow[i]
                        inner[i] = v if v > lowest else lowest
                    first = False
                else:
                    for i in range(w):
                        v, m = srow[i], inner[i]
                        inner[i] = v if v > m else m
            if first:  # no input row in the window
                inner[:] = lowest
            row = dst[oy]
            if sw == 1:
                for i in range(ow):
                    row[i] = tmp[i]
            else:
                for i in range(ow):
                    row[i] = tmp[sw * i]
            _max_columns(tmp, row, kw, sw)


def _first_columns(tmp, rows, row, wrow, kw, sw):  # pragma: no cover - numba's
    """row[ox], wrow[ox] = the greatest of tmp[sw * ox + kx] over kx < kw and its window
    offset rows[.] * kw + kx, the first in row-major window order among equal maxima (an
    element taken when greater, or when equal at a smaller offset; NaN never)."""
    ow = row.size
    for kx in range(kw):
        t, r = tmp[kx:], rows[kx:]
        if sw == 1:
            for i in range(ow):
                v, m, k = t[i], row[i], wrow[i]
                off = r[i] * kw + kx
                take = (v > m) | ((v == m) & (off < k))
                row[i] = v if take else m
                wrow[i] = off if take else k
        elif sw == 2:
            for i in range(ow):
                v, m, k = t[2 * i], row[i], wrow[i]
                off = r[2 * i] * kw + kx
                take = (v > m) | ((v == m) & (off < k))
                row[i] = v if take else m
                wrow[i] = off if take else k
        else:
            for i in range(ow):
                v, m, k = t[sw * i], row[i], wrow[i]
                off = r[sw * i] * kw + kx
                take = (v > m) | ((v == m) & (off < k))
                row[i] = v if take else m
                wrow[i] = off if take else k


def _max_planes_tracked(x, out, ws, kh, kw, sh, sw, ph, pw, lowest, p0,
                        p1):  # pragma: no cover - numba's
    """Max pooling of planes [p0, p1) as :func:`_max_planes` (the same maxima), ``ws`` (P,
    OH, OW) int32 receiving each window's first maximum's kernel offset (ky * kw + kx,
    row-major within the window; 0 where no element is above the lowest value), what the
    backward (:func:`_max_planes_backward`) reads. Per output row the window's input rows
    first (each column's first greatest value and its row, in ``tmp`` and ``rows``), then
    the columns (:func:`_first_columns`)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    width = max(pw + w, sw * (ow - 1) + kw)
    tmp = np.empty(width, x.dtype)
    rows = np.zeros(width, np.int32)
    inner, inner_rows = tmp[pw:pw + w], rows[pw:pw + w]
    tmp[:] = lowest
    for p in range(p0, p1):
        src, dst, where = x[p], out[p], ws[p]
        for oy in range(oh):
            inner[:] = lowest
            inner_rows[:] = 0
            y0 = oy * sh - ph
            for ky in range(kh):
                y = y0 + ky
                if y < 0 or y >= h:
                    continue
                srow = src[y]
                kyv = np.int32(ky)
                for i in range(w):
                    v, m = srow[i], inner[i]
                    take = v > m
                    inner[i] = v if take else m
                    inner_rows[i] = kyv if take else inner_rows[i]
            row, wrow = dst[oy], where[oy]
            row[:] = lowest
            wrow[:] = 0
            _first_columns(tmp, rows, row, wrow, kw, sw)


def _max_planes_backward(og, ws, dx, kh, kw, sh, sw, ph, pw, p0,
                         p1):  # pragma: no cover - numba's
    """The gradient of max pooling for planes [p0, p1): ``dx`` (P, H, W) zeroed, then each
    output's dY added at its window's first maximum (``ws``, the forward's offsets; one in
    the padding is dropped), the outputs in row-major order."""
    h, w = dx.shape[1], dx.shape[2]
    oh, ow = og.shape[1], og.shape[2]
    for p in range(p0, p1):
        g, where, d = og[p], ws[p], dx[p]
        d[:, :] = 0
        for oy in range(oh):
            for ox in range(ow):
                k = where[oy, ox]
                y = oy * sh - ph + k // kw
                c = ox * sw - pw + k % kw
                if 0 <= y < h and 0 <= c < w:
                    d[y, c] += g[oy, ox]


def _sum_planes_backward(og, dx, counts, kh, kw, sh, sw, ph, pw, average, p0,
                         p1):  # pragma: no cover - numba's
    """The gradient of sum or (``average``) avg pooling for planes [p0, p1): ``dx`` (P, H,
    W) zeroed, then each output's dY (divided by its window's count ``counts`` (OH, OW))
    added to every element of its window inside the data, the outputs in row-major order and
    each window in row-major order, as MXNet adds them."""
    h, w = dx.shape[1], dx.shape[2]
    oh, ow = og.shape[1], og.shape[2]
    for p in range(p0, p1):
        g, d = og[p], dx[p]
        d[:, :] = 0
        for oy in range(oh):
            y0 = oy * sh - ph
            for ox in range(ow):
                v = g[oy, ox] / counts[oy, ox] if average else g[oy, ox]
                c0 = ox * sw - pw
                for ky in range(kh):
                    y = y0 + ky
                    if 0 <= y < h:
                        for kx in range(kw):
                            if 0 <= c0 + kx < w:
                                d[y, c0 + kx] += v


def _sum_planes(x, out, kh, kw, sh, sw, ph, pw, counts, mode, p0, p1):  # pragma: no cover
    """Sum or average (``mode``; ``counts`` (OH, OW) the windows' counts) pooling of planes
    [p0, p1) of ``x`` (P, H, W) into ``out`` (P, OH, OW): each output from 0 plus every
    window element inside the data in row-major window order. Stride 1 (but
    EACH_AVERAGED): one flat loop per kernel offset over a zero-bordered copy of the plane
    (a zero adds nothing to a sum that started at 0, so the numbers are those of skipping
    the border); otherwise a loop over an output row's columns per kernel offset."""
    if sh == 1 and sw == 1 and mode != EACH_AVERAGED:
        _sum_planes_flat(x, out, kh, kw, ph, pw, counts, mode == AVERAGE, p0, p1)
        return
    h, w = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    zero = x.dtype.type(0)
    for p in range(p0, p1):
        src, dst = x[p], out[p]
        for oy in range(oh):
            row = dst[oy]
            y0 = oy * sh - ph
            if ow == 1:  # one window a row (a pooling over the whole map): one running sum
                acc, count = zero, counts[oy, 0]
                for ky in range(kh):
                    y = y0 + ky
                    if 0 <= y < h:
                        for kx in range(kw):
                            if 0 <= kx - pw < w:
                                if mode == EACH_AVERAGED:
                                    acc += src[y, kx - pw] / count
                                else:
                                    acc += src[y, kx - pw]
                row[0] = acc / count if mode == AVERAGE else acc
                continue
            row[:] = zero
            crow = counts[oy]
            for ky in range(kh):
                y = y0 + ky
                if y < 0 or y >= h:
                    continue
                srow = src[y]
                for kx in range(kw):
                    off = kx - pw
                    lo, hi = _column_range(off, sw, w, ow)
                    if lo == hi:
                        continue
                    part = row[lo:hi]
                    s = srow[sw * lo + off:]
                    if mode == EACH_AVERAGED:
                        c = crow[lo:hi]
                        for i in range(hi - lo):
                            part[i] += s[sw * i] / c[i]
                    elif sw == 1:
                        for i in range(hi - lo):
                            part[i] += s[i]
                    elif sw == 2:
                        for i in range(hi - lo):
                            part[i] += s[2 * i]
                    else:
                        for i in range(hi - lo):
                            part[i] += s[sw * i]
            if mode == AVERAGE:
                for i in range(ow):
                    row[i] = row[i] / crow[i]


def _sum_planes_flat(x, out, kh, kw, ph, pw, counts, average, p0, p1):  # pragma: no cover
    """:func:`_sum_planes` for stride 1, a block of planes at a time (about FLAT_BLOCK
    elements): each plane copied inside a zero border (rows and columns enough for every
    window, and a row more), the block's planes one after another, so that one flat loop
    per kernel offset runs over all of them (the columns past each output row's width and
    the rows past each plane's output are dropped)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    hp, wp = oh - 1 + kh, ow - 1 + kw
    rows, cols = min(h, hp - ph), min(w, wp - pw)  # the data rows and columns windows reach
    plane = (hp + 1) * wp
    per = max(1, FLAT_BLOCK // plane)
    padded = np.zeros(per * plane, x.dtype)
    acc = np.empty(per * plane, x.dtype)
    zero = x.dtype.type(0)
    for b0 in range(p0, p1, per):
        count = min(p1, b0 + per) - b0
        for j in range(count):
            src = x[b0 + j]
            for y in range(rows):
                prow, srow = padded[j * plane + (ph + y) * wp + pw:], src[y]
                for i in range(cols):
                    prow[i] = srow[i]
        length = (count - 1) * plane + oh * wp
        if kh == 3 and kw == 3:  # the nine taps in one loop, added in the same order
            t0, t1, t2 = padded, padded[1:], padded[2:]
            t3, t4, t5 = padded[wp:], padded[wp + 1:], padded[wp + 2:]
            t6, t7, t8 = padded[2 * wp:], padded[2 * wp + 1:], padded[2 * wp + 2:]
            for i in range(length):
                a = zero + t0[i]
                a += t1[i]
                a += t2[i]
                a += t3[i]
                a += t4[i]
                a += t5[i]
                a += t6[i]
                a += t7[i]
                a += t8[i]
                acc[i] = a
        else:
            acc[:length] = zero
            for ky in range(kh):
                for kx in range(kw):
                    tap = padded[ky * wp + kx:]
                    for i in range(length):
                        acc[i] += tap[i]
        for j in range(count):
            dst = out[b0 + j]
            for oy in range(oh):
                row, arow = dst[oy], acc[j * plane + oy * wp:]
                if average:
                    crow = counts[oy]
                    for i in range(ow):
                        row[i] = arow[i] / crow[i]
                else:
                    for i in range(ow):
                        row[i] = arow[i]


def _max_rows(x, out, ws, track, kh, kw, sh, sw, ph, pw, lowest, n0,
              n1):  # pragma: no cover - numba's
    """Max pooling of images [n0, n1) of channels-last data: ``x`` (N, H, W, C) and
    ``out`` (N, OH, OW, C) as views of N x H x W x C memory, each output pixel's C channels
    at once over its window in row-major order, an element taken only when greater (the
    first maximum, NaN never: :func:`_max_planes`'s maxima); with ``track``, ``ws`` (N, OH,
    OW, C) int32 receiving each window's first maximum's kernel offset (ky * kw + kx; 0
    where no element is above the lowest value), as :func:`_max_planes_tracked`."""
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = out.shape[1], out.shape[2]
    for n in range(n0, n1):
        for oy in range(oh):
            for ox in range(ow):
                best, where = out[n, oy, ox], ws[n, oy, ox]
                best[:] = lowest
                if track:
                    where[:] = 0
                for ky in range(kh):
                    y = oy * sh - ph + ky
                    if y < 0 or y >= h:
                        continue
                    for kx in range(kw):
                        col = ox * sw - pw + kx
                        if col < 0 or col >= w:
                            continue
                        src = x[n, y, col]
                        if track:
                            k = np.int32(ky * kw + kx)
                            for ch in range(c):
                                v, m = src[ch], best[ch]
                                take = v > m
                                best[ch] = v if take else m
                                where[ch] = k if take else where[ch]
                        else:
                            for ch in range(c):
                                v, m = src[ch], best[ch]
                                best[ch] = v if v > m else m


def _max_rows_backward(og, ws, dx, kh, kw, sh, sw, ph, pw, n0,
                       n1):  # pragma: no cover - numba's
    """The gradient of :func:`_max_rows` for images [n0, n1) of channels-last data: ``dx``
    (N, H, W, C) zeroed, then each output's dY added at its window's first maximum (``ws``;
    one in the padding is dropped), the outputs in row-major order (each element's sum in
    :func:`_max_planes_backward`'s order)."""
    h, w, c = dx.shape[1], dx.shape[2], dx.shape[3]
    oh, ow = og.shape[1], og.shape[2]
    for n in range(n0, n1):
        dx[n] = 0
        for oy in range(oh):
            for ox in range(ow):
                g, where = og[n, oy, ox], ws[n, oy, ox]
                for ch in range(c):
                    k = where[ch]
                    y = oy * sh - ph + k // kw
                    col = ox * sw - pw + k % kw
                    if 0 <= y < h and 0 <= col < w:
                        dx[n, y, col, ch] += g[ch]


FUNCTIONS = (_column_range, _max_columns, _first_columns, _max_planes, _max_planes_tracked,
             _max_planes_backward, _sum_planes_backward, _sum_planes_flat, _sum_planes,
             _max_rows, _max_rows_backward)
LOOPS = ("_max_planes", "_max_planes_tracked", "_max_planes_backward", "_sum_planes",
         "_sum_planes_backward", "_max_rows", "_max_rows_backward")
#: inlined into the loops
INLINE = ("_column_range", "_max_columns", "_first_columns")
