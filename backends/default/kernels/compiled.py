"""Loops compiled by numba where numpy needs many passes over the data: an optional path of
the native kernels (numba is the ``fused`` extra's dependency). :func:`compiled` gives the
compiled function, or None without numba: the kernels then run their numpy code, which
computes the same sums in the same order (no fast-math). Each loop compiles once per process
and signature at its first use (about a second).

- ``depthwise``: a 2-D depthwise convolution (``conv_fast.compiled_depthwise_runner``);
- ``channel_affine``: out = x * scale[c] + shift[c] over (N, C, rest), BatchNorm with given
  statistics in one pass (``nn.batch_norm``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["compiled"]


def _depthwise_loops(x, w, out, kh, kw, sh, sw, dh, dw, ph, pw):  # pragma: no cover - numba's
    """out[b, c, y, x_] = sum over (i, j) of w[c, i * kw + j] * x[b, c, sh * y + dh * i - ph,
    sw * x_ + dw * j - pw], taps outside the data counting 0, the offsets accumulated in
    the numpy path's order. Stride 1 or no dilation (every zoo model): by phases and long
    flat loops (:func:`_depthwise_flat`; MobileNet v1 0.25's layers 0.07-0.13 ms each
    against 0.15-0.34 ms row by row). Otherwise (strided and dilated) row by row, the inner
    loops over 1-D views from 0 (numba needs no negative-index checks there)."""
    n, c, ho, wo = out.shape
    height, width = x.shape[2], x.shape[3]
    if (sh == 1 and sw == 1) or (dh == 1 and dw == 1):
        _depthwise_flat(x, w, out, kh, kw, sh, sw, dh, dw, ph, pw)
        return
    for b in range(n):
        for ch in range(c):
            for y in range(ho):
                orow = out[b, ch, y]
                orow[:] = 0
                for k in range(kh * kw):
                    r = sh * y + dh * (k // kw) - ph
                    if r < 0 or r >= height:
                        continue
                    c0 = dw * (k % kw) - pw  # input column of output column 0
                    lo = max(0, (-c0 + sw - 1) // sw)
                    hi = min(wo, (width - 1 - c0) // sw + 1)
                    if lo >= hi:
                        continue
                    wv = w[ch, k]
                    dst = orow[lo:hi]
                    srow = x[b, ch, r, c0 + sw * lo:]  # from column >= 0
                    for i in range(hi - lo):
                        dst[i] += wv * srow[sw * i]


def _depthwise_flat(x, w, out, kh, kw, sh, sw, dh, dw, ph, pw):  # pragma: no cover - numba's
    """Stride 1, or no dilation: each plane is padded and split once into its sh x sw
    phases (rows and columns by their remainder by the stride: a tap then reads one phase
    at stride 1), each with the row the last offset's slice runs into; then one long
    product-sum per kernel offset over its phase's flat rows, as wide as the phase (the
    columns past the output width are dropped at the end): kh * kw loops over the plane
    instead of kh * kw per output row."""
    n, c, ho, wo = out.shape
    height, width = x.shape[2], x.shape[3]
    wq = -(-(width + 2 * pw) // sw)
    hq = -(-(height + 2 * ph) // sh) + 1
    phases = np.zeros((sh * sw, hq, wq), x.dtype)
    length = ho * wq
    acc = np.empty(length, out.dtype)
    for b in range(n):
        for ch in range(c):
            for pr in range(sh):
                for pc in range(sw):
                    phase = phases[pr * sw + pc]
                    # the phase's columns v inside the data: 0 <= sw * v + pc - pw < width
                    v_lo = max(0, -(-(pw - pc) // sw))
                    v_hi = min(wq, (width - 1 + pw - pc) // sw + 1)
                    for u in range(hq):
                        r = sh * u + pr - ph
                        prow = phase[u]
                        if r < 0 or r >= height or v_lo >= v_hi:
                            prow[:] = 0
                            continue
                        prow[:v_lo] = 0
                        prow[v_hi:] = 0
                        dst = prow[v_lo:v_hi]
                        xrow = x[b, ch, r, sw * v_lo + pc - pw:]
                        if sw == 1:
                            for v in range(v_hi - v_lo):
                                dst[v] = xrow[v]
                        else:
                            for v in range(v_hi - v_lo):
                                dst[v] = xrow[sw * v]
            for k in range(kh * kw):
                i, j = dh * (k // kw), dw * (k % kw)
                flat = phases[(i % sh) * sw + j % sw].reshape(hq * wq)
                src = flat[(i // sh) * wq + j // sw:]
                wv = w[ch, k]
                if k == 0:
                    for t in range(length):
                        acc[t] = wv * src[t]
                else:
                    for t in range(length):
                        acc[t] += wv * src[t]
            for y in range(ho):
                orow, arow = out[b, ch, y], acc[y * wq:]
                for q in range(wo):
                    orow[q] = arow[q]


def _channel_affine(x, scale, shift, out):  # pragma: no cover - numba's
    """out[b, c, i] = x[b, c, i] * scale[c] + shift[c] (``x`` and ``out`` as (N, C, rest),
    possibly the same array): one pass where numpy takes two."""
    n, c, m = x.shape
    for b in range(n):
        for ch in range(c):
            s, t = scale[ch], shift[ch]
            src, dst = x[b, ch], out[b, ch]
            for i in range(m):
                dst[i] = src[i] * s + t


_LOOPS = {"depthwise": _depthwise_loops, "channel_affine": _channel_affine}
#: the functions a loop calls, compiled first (numba resolves them as this module's globals)
_HELPERS = {"depthwise": ("_depthwise_flat",)}
_COMPILED: dict = {}


def compiled(name: str):
    """The numba-compiled loop ``name`` (a key of the module's list), or None without numba."""
    if name not in _COMPILED:
        try:
            from numba import njit
        except ImportError:
            _COMPILED[name] = None
        else:
            for helper in _HELPERS.get(name, ()):
                if not hasattr(globals()[helper], "py_func"):
                    globals()[helper] = njit(nogil=True)(globals()[helper])
            _COMPILED[name] = njit(nogil=True)(_LOOPS[name])
    return _COMPILED[name]
