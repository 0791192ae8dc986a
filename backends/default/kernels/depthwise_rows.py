"""Depthwise 2-D convolutions over channels-last data as loops for numba (source only: the
compiled-loops module, :mod:`.compiled`, compiles them; as Python they are never called).

The data is N x H x W x C in memory (:mod:`graphexec.core.runtime.layout`), the loops take
it as that (N, H, W, C) array, the weight as (KH, KW, C). One image row of C channels is
one vector of W * C elements, so a kernel offset's contribution to an output row is one
multiply-add over a span of that row when the stride along W is 1: the weight's C values
repeated along the span (``lanes``, lane t is channel t % C). Other strides go pixel by
pixel, C channels at a time, at unsigned offsets into the rows (:func:`_strided_madd`).
The forward of a 3 x 3 kernel takes its taps together: at stride 1 a kernel row's three
taps in one pass over the output row, at a larger column stride a pixel's nine taps in one
pass over its channels (MobileNet v1 0.25's layers, batch 16: stride 2 0.54-0.87x, stride
1 0.71-0.94x the time tap by tap; the same sums in the same order, so the same numbers bit
for bit). Rows run in ``prange`` (numba's
threads), each output row written by one thread only: the data gradient gathers from the
output rows that read an input row; the weight gradient sums each thread's rows into its
own lanes, added up at the end in float64.
"""
from __future__ import annotations

import numpy as np

#: numba gives ``prange`` its meaning in the generated module
prange = range


def _dw_lanes(w, width):  # pragma: no cover - numba's
    """lanes[a, e, j * C + k] = w[a, e, k] for j < width."""
    kh, kw, c = w.shape
    lanes = np.empty((kh, kw, width * c), w.dtype)
    for a in range(kh):
        for e in range(kw):
            for j in range(width):
                lanes[a, e, j * c:j * c + c] = w[a, e]
    return lanes


def _madd(dst, a, b):  # pragma: no cover - numba's
    """dst[t] += a[t] * b[t] over dst's length (slices from index 0, so no negative-index
    checks in the loop)."""
    for t in range(dst.size):
        dst[t] += a[t] * b[t]


def _inside(off, count, width):  # pragma: no cover - numba's
    """The output columns [j0, j1) (of ``count``) whose input column j + off falls in a row
    ``width`` columns wide."""
    return max(0, -off), min(count, width - off)


def _strided_madd(dst, dst_strided, lead, step, src, off, sw, ow, wd, c):  # pragma: no cover
    """For the output columns j < ``ow`` whose input column xx = j * sw + off lies in a row
    of ``wd`` columns: the C values of column xx of ``dst`` += lead[C * step * j + k] *
    src[C * j + k] (``dst_strided``: the data gradient's row) or column j of ``dst`` +=
    lead[...] * src[C * xx + k] (the forward's and the weight gradient's), C channels at a
    time. Unsigned offsets: numba checks signed ones for wrapping below zero, which kept
    the loop scalar (a per-column slice instead cost 2-5x the time at 16-32 channels)."""
    cu = np.uint64(c)
    for j in range(max(0, -(off // sw)), min(ow, (wd - 1 - off) // sw + 1)):
        xx = np.uint64((j * sw + off) * c)
        jj = np.uint64(j * c)
        d0, s0 = (xx, jj) if dst_strided else (jj, xx)
        l0 = jj if step else np.uint64(0)
        for k in range(cu):
            dst[d0 + k] += lead[l0 + k] * src[s0 + k]


def _span_madd(dst, lead, step, xf, off, sw, ow, wd, c):  # pragma: no cover - numba's
    """dst[j * C + k] += lead[step * j * C + k] * xf[(j * sw + off) * C + k] for the output
    columns j < ``ow`` whose input column j * sw + off lies in the row of ``wd`` columns
    (``xf``): one multiply-add over the whole span with stride 1, C channels at a time
    otherwise. The forward's (``lead`` the weight's lanes, ``step`` 0: their first C
    repeat) and the weight gradient's (``lead`` the output gradient's row, ``step`` 1)."""
    if sw == 1:
        j0, j1 = _inside(off, ow, wd)
        if j1 > j0:
            n = (j1 - j0) * c
            k0 = step * j0 * c
            _madd(dst[j0 * c:j0 * c + n], lead[k0:k0 + n],
                  xf[(j0 + off) * c:(j0 + off) * c + n])
    else:
        _strided_madd(dst, 0, lead, step, xf, off, sw, ow, wd, c)


def _three_taps(d, l0, l1, l2, x0, x1, x2):  # pragma: no cover - numba's
    """d[t] += l0[t] * x0[t], then l1[t] * x1[t], then l2[t] * x2[t] (each its own
    rounding, as three passes of :func:`_madd` give) in one pass over d."""
    for t in range(d.size):
        v = d[t]
        v += l0[t] * x0[t]
        v += l1[t] * x1[t]
        v += l2[t] * x2[t]
        d[t] = v


def _dw_row(x, w, lanes, b, y, of, sw, pw, dw, a):  # pragma: no cover - numba's
    """of (one output row, OW * C) += kernel row ``a`` over input row ``y`` of image b.
    Three kernel columns at stride 1 go in one pass over the output columns all three read
    (one load and store of ``of`` for three multiply-adds), the columns near the edges and
    other kernels tap by tap."""
    wd, c = x.shape[2], x.shape[3]
    ow = of.size // c
    xf = x[b, y].reshape(wd * c)
    la = lanes[a]
    if w.shape[1] != 3 or sw != 1:
        for e in range(w.shape[1]):
            _span_madd(of, la[e], 0, xf, e * dw - pw, sw, ow, wd, c)
        return
    j0 = min(max(0, pw), ow)
    j1 = max(min(ow, wd - 2 * dw + pw), j0)
    if j1 > j0:
        u, n, s = j0 * c, (j1 - j0) * c, (j0 - pw) * c
        _three_taps(of[u:u + n], la[0, u:u + n], la[1, u:u + n], la[2, u:u + n], xf[s:s + n],
                    xf[s + dw * c:s + dw * c + n], xf[s + 2 * dw * c:s + 2 * dw * c + n])
    for e in range(3):
        off = e * dw - pw
        lo, hi = _inside(off, ow, wd)
        for p, q in ((lo, min(hi, j0)), (max(lo, j1), hi)):
            if q > p:
                _madd(of[p * c:q * c], la[e, p * c:q * c], xf[(p + off) * c:(q + off) * c])


def _strided_3x3_row(x, lanes, start, b, y, of, sw, pw, dh, dw):  # pragma: no cover
    """of (one output row) of a 3 x 3 kernel at column stride ``sw`` > 1 whose three input
    rows y, y + dh, y + 2 dh all lie in the image: the nine taps of an output pixel in one
    pass over its C channels where its three input columns lie in the row, tap by tap at
    the edges."""
    wd, c = x.shape[2], x.shape[3]
    ow = of.size // c
    r0 = x[b, y].reshape(wd * c)
    r1 = x[b, y + dh].reshape(wd * c)
    r2 = x[b, y + 2 * dh].reshape(wd * c)
    o1, o2 = dw * c, 2 * dw * c
    j0 = min((pw + sw - 1) // sw, ow)
    j1 = max(min(ow, (wd - 1 - 2 * dw + pw) // sw + 1), j0)
    l00, l01, l02 = lanes[0, 0], lanes[0, 1], lanes[0, 2]
    l10, l11, l12 = lanes[1, 0], lanes[1, 1], lanes[1, 2]
    l20, l21, l22 = lanes[2, 0], lanes[2, 1], lanes[2, 2]
    cu, u1, u2 = np.uint64(c), np.uint64(o1), np.uint64(o2)
    for j in range(j0, j1):
        s, o = np.uint64((j * sw - pw) * c), np.uint64(j * c)
        for k in range(cu):
            v = start[k]
            v += l00[k] * r0[s + k]
            v += l01[k] * r0[s + u1 + k]
            v += l02[k] * r0[s + u2 + k]
            v += l10[k] * r1[s + k]
            v += l11[k] * r1[s + u1 + k]
            v += l12[k] * r1[s + u2 + k]
            v += l20[k] * r2[s + k]
            v += l21[k] * r2[s + u1 + k]
            v += l22[k] * r2[s + u2 + k]
            of[o + k] = v
    for p, q in ((0, j0), (j1, ow)):
        for j in range(p, q):
            of[j * c:j * c + c] = start[:c]
            for a in range(3):
                xf = x[b, y + a * dh].reshape(wd * c)
                for e in range(3):
                    xx = j * sw + e * dw - pw
                    if 0 <= xx < wd:
                        _madd(of[j * c:j * c + c], lanes[a, e, :c], xf[xx * c:xx * c + c])


def _dw_forward(x, w, bias, out, sh, sw, ph, pw, dh, dw):  # pragma: no cover - numba's
    """out[n, i, j, c] = sum over (a, e) of x[n, i*sh - ph + a*dh, j*sw - pw + e*dw, c]
    * w[a, e, c] + bias[c] (zero outside the input), the taps added to the bias in kernel
    order."""
    n, h = x.shape[0], x.shape[1]
    oh, ow, c = out.shape[1], out.shape[2], out.shape[3]
    lanes = _dw_lanes(w, ow if sw == 1 else 1)
    start = _dw_lanes(bias.reshape(1, 1, c), ow)[0, 0]
    nine = w.shape[0] == 3 and w.shape[1] == 3 and sw != 1
    for r in prange(n * oh):
        b, i = r // oh, r % oh
        of = out[b, i].reshape(ow * c)
        y = i * sh - ph
        if nine and y >= 0 and y + 2 * dh < h:
            _strided_3x3_row(x, lanes, start, b, y, of, sw, pw, dh, dw)
            continue
        of[:] = start
        for a in range(w.shape[0]):
            if 0 <= y + a * dh < h:
                _dw_row(x, w, lanes, b, y + a * dh, of, sw, pw, dw, a)


def _dw_data_gradient(g, w, dx, sh, sw, ph, pw, dh, dw):  # pragma: no cover - numba's
    """dx = the adjoint of :func:`_dw_forward` applied to g (N, OH, OW, C): each input row
    gathers the output rows that read it, so each row of dx is written by one thread."""
    n, h, wd, c = dx.shape
    oh, ow = g.shape[1], g.shape[2]
    kh, kw = w.shape[0], w.shape[1]
    lanes = _dw_lanes(w, max(ow, wd) if sw == 1 else 0)
    for r in prange(n * h):
        b, y = r // h, r % h
        df = dx[b, y].reshape(wd * c)
        df[:] = 0
        for a in range(kh):
            t = y + ph - a * dh
            if t < 0 or t % sh != 0 or t // sh >= oh:
                continue
            gf = g[b, t // sh].reshape(ow * c)
            for e in range(kw):
                off = e * dw - pw
                if sw == 1:
                    x0, x1 = _inside(-off, wd, ow)
                    if x1 <= x0:
                        continue
                    m = (x1 - x0) * c
                    _madd(df[x0 * c:x0 * c + m], gf[(x0 - off) * c:(x0 - off) * c + m],
                          lanes[a, e, :m])
                else:
                    _strided_madd(df, 1, w[a, e], 0, gf, off, sw, ow, wd, c)


def _dw_weight_gradient(g, x, dwt, sh, sw, ph, pw, dh, dw, bounds):  # pragma: no cover
    """dwt[c, a, e] = sum over n, i, j of g[n, i, j, c] * x[n, i*sh - ph + a*dh,
    j*sw - pw + e*dw, c]: the output rows [bounds[p], bounds[p + 1]) (row r is image
    r // OH, row r % OH) summed by thread p into its own lanes (lane t of an offset holds
    channel t % C), the lanes added up in float64."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = g.shape[1], g.shape[2]
    kh, kw = dwt.shape[1], dwt.shape[2]
    parts = bounds.size - 1
    acc = np.zeros((parts, kh, kw, ow * c), x.dtype)
    for p in prange(parts):
        for r in range(bounds[p], bounds[p + 1]):
            b, i = r // oh, r % oh
            gf = g[b, i].reshape(ow * c)
            for a in range(kh):
                y = i * sh - ph + a * dh
                if y < 0 or y >= h:
                    continue
                xf = x[b, y].reshape(wd * c)
                for e in range(kw):
                    _span_madd(acc[p, a, e], gf, 1, xf, e * dw - pw, sw, ow, wd, c)
    for a in range(kh):
        for e in range(kw):
            total = np.zeros(c)
            for p in range(parts):
                for j in range(ow):
                    for k in range(c):
                        total[k] += np.float64(acc[p, a, e, j * c + k])
            for k in range(c):
                dwt[k, a, e] = total[k]


#: the loops in definition order (a loop calls the ones before it); the three last run
#: on numba's threads
FUNCTIONS = (_dw_lanes, _madd, _inside, _strided_madd, _span_madd, _three_taps, _dw_row,
             _strided_3x3_row, _dw_forward, _dw_data_gradient,
             _dw_weight_gradient)
PARALLEL = ("_dw_forward", "_dw_data_gradient", "_dw_weight_gradient")
