"""Depthwise 2-D convolutions over channels-last data as loops for numba (source only: the
compiled-loops module, :mod:`.compiled`, compiles them; as Python they are never called).

The data is N x H x W x C in memory (:mod:`graphexec.core.runtime.layout`), the loops take
it as that (N, H, W, C) array, the weight as (KH, KW, C). One image row of C channels is
one vector of W * C elements, so a kernel offset's contribution to an output row is one
multiply-add over a span of that row when the stride along W is 1: the weight's C values
repeated along the span (``lanes``, lane t is channel t % C). Other strides go pixel by
pixel, C channels at a time. Rows run in ``prange`` (numba's threads), each output row
written by one thread only: the data gradient gathers from the output rows that read an
input row; the weight gradient sums each thread's rows into its own lanes, added up at
the end in float64.
"""
from __future__ import annotations

import numpy as np

#: numba gives ``prange`` its meaning in the generated module
prange = range


def _dw_lanes(w, width):  # pragma: no cover - numba's
    """lanes[a, e, t] = w[a, e, t % C] for t < width * C."""
    kh, kw, c = w.shape
    lanes = np.empty((kh, kw, width * c), w.dtype)
    for a in range(kh):
        for e in range(kw):
            for t in range(width * c):
                lanes[a, e, t] = w[a, e, t % c]
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
        fixed = lead[:c]  # step 0: the same C values for every column, sliced once
        for j in range(ow):
            xx = j * sw + off
            if 0 <= xx < wd:
                _madd(dst[j * c:j * c + c], fixed if step == 0 else lead[j * c:j * c + c],
                      xf[xx * c:xx * c + c])


def _dw_row(x, w, lanes, b, y, of, sw, pw, dw, a):  # pragma: no cover - numba's
    """of (one output row, OW * C) += kernel row ``a`` over input row ``y`` of image b."""
    wd, c = x.shape[2], x.shape[3]
    xf = x[b, y].reshape(wd * c)
    for e in range(w.shape[1]):
        _span_madd(of, lanes[a, e], 0, xf, e * dw - pw, sw, of.size // c, wd, c)


def _dw_forward(x, w, bias, out, sh, sw, ph, pw, dh, dw):  # pragma: no cover - numba's
    """out[n, i, j, c] = sum over (a, e) of x[n, i*sh - ph + a*dh, j*sw - pw + e*dw, c]
    * w[a, e, c] + bias[c] (zero outside the input)."""
    n, h = x.shape[0], x.shape[1]
    oh, ow, c = out.shape[1], out.shape[2], out.shape[3]
    lanes = _dw_lanes(w, ow if sw == 1 else 1)
    start = _dw_lanes(bias.reshape(1, 1, c), ow)[0, 0]
    for r in prange(n * oh):
        b, i = r // oh, r % oh
        of = out[b, i].reshape(ow * c)
        of[:] = start
        for a in range(w.shape[0]):
            y = i * sh - ph + a * dh
            if 0 <= y < h:
                _dw_row(x, w, lanes, b, y, of, sw, pw, dw, a)


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
                    for j in range(ow):
                        xx = j * sw + off
                        if 0 <= xx < wd:
                            _madd(df[xx * c:xx * c + c], gf[j * c:j * c + c], w[a, e])


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
                for t in range(ow * c):
                    total[t % c] += np.float64(acc[p, a, e, t])
            for k in range(c):
                dwt[k, a, e] = total[k]


#: the loops in definition order (a loop calls the ones before it); the three last run
#: on numba's threads
FUNCTIONS = (_dw_lanes, _madd, _inside, _span_madd, _dw_row, _dw_forward, _dw_data_gradient,
             _dw_weight_gradient)
PARALLEL = ("_dw_forward", "_dw_data_gradient", "_dw_weight_gradient")
