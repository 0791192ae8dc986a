"""Loops compiled by numba where numpy needs many passes over the data: an optional path of
the native kernels (numba is the ``fused`` extra's dependency). :func:`compiled_for` gives a
loop compiled for the arrays of a kernel when the kernel is created (1-3 s the first time on
a machine, a fraction of that in later processes: the source goes through the compiled-kernel
cache, :mod:`graphexec.core.runtime.jit_cache`, a private folder with numba's disk cache
beside it), or None without numba or when numba fails: the kernels then run their numpy
code, which computes the same numbers (no fast-math): the depthwise and affine loops bit for
bit, BatchNorm's statistics and gradients within rounding (below).

- ``depthwise``: a 2-D depthwise convolution (``conv_fast.compiled_depthwise_runner``);
- ``channel_affine``: out = x * scale[c] + shift[c] over (N, C, rest), BatchNorm with given
  statistics in one pass (``nn.batch_norm``);
- ``channel_stats``: BatchNorm's batch mean and biased variance per channel (``nn.batch_norm``);
- ``batch_norm_backward``: BatchNorm's gradients in two passes per channel, written into the
  gradient arrays (``nn_grad.batch_norm_backward``).

The BatchNorm loops sum in the data type over eight lanes (vectorised) in blocks of at most
BLOCK elements, the blocks' sums in float64, two passes for the variance as numpy's: float32
data gives statistics within rounding of the exact ones (as close as numpy's float32 sums or
closer, also for data far from zero), not numpy's numbers bit for bit.
ResNet-18 v1's native train step (batch 16, 112x112) took 0.91-0.96x its time with numpy's
BatchNorm, MobileNet v1 0.25's 0.94-0.99x. They run on the calling thread: split across
numba's threads (``parallel=True``, its OpenMP layer) the same steps took 1.24-1.68x, those
threads and OpenBLAS's spinning against each other on two cores (benchmarks/README.md).
"""
from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

__all__ = ["channel_view", "compiled_for", "loops_apply"]


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


#: the longest run of elements summed in the data type before the sum moves to float64
BLOCK = 1024


def _lane_sums(a, b, lo, hi, shift_a, shift_b, acc):  # pragma: no cover - numba's
    """(sum of d, sum of d * (b[i] - shift_b)) with d = a[i] - shift_a over [lo, hi), in the
    data type over the sixteen lanes ``acc`` (vectorised; the lanes' order is fixed, so the
    sums are the same at every call). Callers keep hi - lo <= BLOCK and add the results in
    float64. With ``b`` = ``a`` and equal shifts: a block's first and second moments."""
    end = hi - (hi - lo) % 8
    acc[:] = 0
    for i in range(lo, end, 8):
        for k in range(8):
            d = a[i + k] - shift_a
            acc[k] += d
            acc[8 + k] += d * (b[i + k] - shift_b)
    first, second = acc.dtype.type(0), acc.dtype.type(0)
    for k in range(8):
        first += acc[k]
        second += acc[8 + k]
    for i in range(end, hi):
        d = a[i] - shift_a
        first += d
        second += d * (b[i] - shift_b)
    return first, second


def _channel_stats(x, mean, var):  # pragma: no cover - numba's
    """mean[c] and the biased variance var[c] of x (N, C, rest) over its axes 0 and 2, in
    blocks of at most BLOCK elements: a block's sum gives its rough mean, then (while the
    block is in cache) its deviations d from that mean give its mean and squared deviations
    exactly enough (sum d, sum d ** 2, both small); blocks merge in float64 by Chan et al.'s
    pairwise update (the mean moves by the blocks' difference, the squared deviations gain
    their spread), stable for data far from zero."""
    n, c, m = x.shape
    zero = x.dtype.type(0)
    for ch in range(c):
        acc = np.zeros(16, x.dtype)
        count, mu, sq = 0.0, 0.0, 0.0
        for b in range(n):
            row = x[b, ch]
            for lo in range(0, m, BLOCK):
                hi = min(lo + BLOCK, m)
                size = np.float64(hi - lo)
                rough = np.float64(_lane_sums(row, row, lo, hi, zero, zero, acc)[0]) / size
                shift = x.dtype.type(rough)
                first, second = _lane_sums(row, row, lo, hi, shift, shift, acc)
                block_mean = np.float64(shift) + np.float64(first) / size
                block_sq = max(np.float64(second) - np.float64(first) ** 2 / size, 0.0)
                merged = count + size
                delta = block_mean - mu
                mu += delta * size / merged
                sq += block_sq + delta * delta * count * size / merged
                count = merged
        mean[ch] = mu
        var[ch] = sq / max(count, 1.0)


def _batch_norm_backward(g, x, mean, invstd, scale, sums, dx, batch, want):  # pragma: no cover
    """Per channel of (N, C, rest): sums[c] = (sum dY, sum dY * xhat) with xhat =
    (x - mean) * invstd; then, when ``want``, dx = (dY - (sum dY + xhat * sum dY xhat)
    / count) * scale for batch statistics (``batch``), dY * scale otherwise. ``dx`` may be
    ``g`` (each element is read before it is written)."""
    n, c, m = x.shape
    count = max(n * m, 1)
    zero = x.dtype.type(0)
    for ch in range(c):
        acc = np.zeros(16, x.dtype)
        inv = np.float64(invstd[ch])
        shift = x.dtype.type(mean[ch])
        sg, sgx = 0.0, 0.0
        for b in range(n):
            grow, xrow = g[b, ch], x[b, ch]
            for lo in range(0, m, BLOCK):
                plain, dot = _lane_sums(grow, xrow, lo, min(lo + BLOCK, m), zero, shift, acc)
                sg += plain
                sgx += dot
        sgx *= inv
        sums[ch, 0] = sg
        sums[ch, 1] = sgx
        if not want:
            continue
        s = scale[ch]
        if batch:
            k1 = x.dtype.type(sg / count)
            k2 = x.dtype.type(sgx * inv / count)
            for b in range(n):
                grow, xrow, drow = g[b, ch], x[b, ch], dx[b, ch]
                for i in range(m):
                    drow[i] = (grow[i] - k1 - (xrow[i] - shift) * k2) * s
        else:
            for b in range(n):
                grow, drow = g[b, ch], dx[b, ch]
                for i in range(m):
                    drow[i] = grow[i] * s


#: the compiled functions, in the order the generated module defines them (a loop calls
#: the ones before it)
_FUNCTIONS = (_depthwise_flat, _depthwise_loops, _channel_affine, _lane_sums, _channel_stats,
              _batch_norm_backward)
_LOOPS = {"depthwise": "_depthwise_loops", "channel_affine": "_channel_affine",
          "channel_stats": "_channel_stats", "batch_norm_backward": "_batch_norm_backward"}
_MODULE: list = []
#: loops numba failed to compile (warned once each)
_FAILED: set[str] = set()


def _source() -> str:
    from graphexec.core.runtime.jit_cache import CACHE_OPTION
    parts = ["import numpy as np", "from numba import njit", "", f"BLOCK = {BLOCK}"]
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


def loops_apply(xp, dtype, *arrays) -> bool:
    """Whether the loops can take ``arrays``: host (numpy) arrays, not empty, C-contiguous,
    all of ``dtype``, float32 or float64."""
    return (xp.__name__ == "numpy" and dtype in (np.float32, np.float64)
            and all(a.size and a.dtype == dtype and a.flags.c_contiguous for a in arrays))


def channel_view(shape: tuple, axis: int) -> tuple[int, int, int]:
    """``shape`` as the loops see it: (before ``axis``, ``axis``, after it)."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def compiled_for(name: str, *args):
    """The loop ``name`` (a key of the module's list) compiled for the types of ``args``
    (now, or from numba's disk cache when an earlier process compiled it), or None: without
    numba, or when numba cannot compile it (a warning once per loop; the kernel then runs its
    numpy code, which computes the same numbers)."""
    module = _module()
    if module is None:
        return None
    import numba

    from graphexec.core.runtime.jit_cache import compile_cached
    loop = getattr(module, _LOOPS[name])
    try:
        compile_cached(loop, tuple(numba.typeof(a) for a in args), module)
    except Exception as exc:  # noqa: BLE001 - numba raises many kinds; numpy's code stays
        if name not in _FAILED:
            _FAILED.add(name)
            warnings.warn(f"the native kernels' compiled loop {name!r} could not be compiled "
                          f"({type(exc).__name__}: {exc}); those kernels run their numpy "
                          f"code (same results, slower)", RuntimeWarning, stacklevel=2)
        return None
    return loop
