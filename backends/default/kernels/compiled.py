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
    the numpy path's order, row by row (a row stays in cache). The inner loops index 1-D
    views from 0, so numba needs no negative-index checks there and they vectorise (4x the
    speed of the same loop over 4-D indices); with stride 2 each input plane is first split
    into its even and odd columns, so that those loops read contiguous memory too. (Summing
    a 3x3 row's nine taps in registers, the borders apart, measured slower: the per-row
    calls and border loops cost more than the loads and stores saved.)"""
    n, c, ho, wo = out.shape
    height, width = x.shape[2], x.shape[3]
    half = (width + 1) // 2
    phases = np.empty((2, height, half), x.dtype) if sw == 2 else np.empty((2, 1, 1), x.dtype)
    for b in range(n):
        for ch in range(c):
            if sw == 2:
                for r in range(height):
                    for q in range(width):
                        phases[q % 2, r, q // 2] = x[b, ch, r, q]
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
                    first = c0 + sw * lo  # >= 0
                    if sw == 1:
                        srow = x[b, ch, r, first:]
                        for i in range(hi - lo):
                            dst[i] += wv * srow[i]
                    elif sw == 2:
                        srow = phases[first % 2, r, first // 2:]
                        for i in range(hi - lo):
                            dst[i] += wv * srow[i]
                    else:
                        srow = x[b, ch, r, first:]
                        for i in range(hi - lo):
                            dst[i] += wv * srow[sw * i]


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
_COMPILED: dict = {}


def compiled(name: str):
    """The numba-compiled loop ``name`` (a key of the module's list), or None without numba."""
    if name not in _COMPILED:
        try:
            from numba import njit
        except ImportError:
            _COMPILED[name] = None
        else:
            _COMPILED[name] = njit(nogil=True)(_LOOPS[name])
    return _COMPILED[name]
