"""Loops compiled by numba where numpy needs many passes over the data: an optional path of
the native kernels (numba is the ``fused`` extra's dependency). :func:`compiled` gives the
compiled function, or None without numba: the kernels then run their numpy code, which
computes the same sums in the same order (no fast-math). The loops' source goes through the
compiled-kernel cache (:mod:`graphexec.core.runtime.jit_cache`: a private folder, numba's
disk cache beside it), and :func:`prepare` compiles a loop for its arguments' types when a
kernel is created: 1-3 s the first time on a machine, a fraction of that in later
processes.

- ``depthwise``: a 2-D depthwise convolution (``conv_fast.compiled_depthwise_runner``);
- ``channel_affine``: out = x * scale[c] + shift[c] over (N, C, rest), BatchNorm with given
  statistics in one pass (``nn.batch_norm``).
"""
from __future__ import annotations

import inspect

import numpy as np

__all__ = ["compiled", "prepare"]


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


#: the compiled functions, in the order the generated module defines them (a loop calls
#: the ones before it)
_FUNCTIONS = (_depthwise_flat, _depthwise_loops, _channel_affine)
_LOOPS = {"depthwise": "_depthwise_loops", "channel_affine": "_channel_affine"}
_MODULE: list = []


def _source() -> str:
    from graphexec.core.runtime.jit_cache import CACHE_OPTION
    parts = ["import numpy as np", "from numba import njit"]
    for fn in _FUNCTIONS:
        parts += ["", "", f"@njit({CACHE_OPTION}, nogil=True)", inspect.getsource(fn).rstrip()]
    return "\n".join(parts) + "\n"


def _module():
    if not _MODULE:
        try:
            import numba  # noqa: F401 - only whether it is there
        except ImportError:
            _MODULE.append(None)
        else:
            from graphexec.core.runtime.jit_cache import load_module
            _MODULE.append(load_module(_source()))
    return _MODULE[0]


def compiled(name: str):
    """The numba-compiled loop ``name`` (a key of the module's list), or None without numba."""
    module = _module()
    return None if module is None else getattr(module, _LOOPS[name])


def prepare(name: str, *args) -> None:
    """Compile the loop ``name`` for the types of ``args`` now (from numba's disk cache when an
    earlier process compiled it), not at its first call."""
    import numba

    from graphexec.core.runtime.jit_cache import compile_cached
    compile_cached(compiled(name), tuple(numba.typeof(a) for a in args), _module())
