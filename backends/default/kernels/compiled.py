"""Loops compiled by numba where numpy needs many passes over the data: an optional path of
the native kernels (numba is the ``fused`` extra's dependency). :func:`compiled_for` gives a
loop compiled for the arrays of a kernel when the kernel is created (1-3 s the first time on
a machine, a fraction of that in later processes: the source goes through the compiled-kernel
cache, :mod:`graphexec.core.runtime.jit_cache`, a private folder with numba's disk cache
beside it), or None without numba or when numba fails: the kernels then run their numpy
code, which computes the same numbers: the depthwise and affine loops bit for bit,
BatchNorm's statistics and gradients within rounding (below).

- ``depthwise``: a 2-D depthwise convolution (``conv_fast.compiled_depthwise_runner``);
- ``channel_affine``: out = x * scale[c] + shift[c] over (N, C, rest), BatchNorm with given
  statistics in one pass (``nn.batch_norm``), max(., 0) in the same pass for a relu after
  it;
- ``channel_shift``: out += shift[c] in place, a convolution's bias, and the relu after it
  (``conv._bias_adder``);
- ``batch_norm_train``: BatchNorm's training forward: batch mean and biased variance per
  channel, then the normalisation of that channel while its data are in cache
  (``nn.batch_norm``);
- ``batch_norm_backward``: BatchNorm's gradient sums and data gradient, a few channels at a
  time, written into the gradient arrays (``nn_grad.batch_norm_backward``);
- ``batch_norm_train_parts``, ``batch_norm_backward_parts``: the same over channel ranges on
  numba's threads (``parallel=True``), for the kernels' ``openmp`` variant;
- ``batch_norm_finish``: the backward's parameter gradients and moving statistics;
- ``batch_norm_rows_train``, ``batch_norm_rows_affine``, ``batch_norm_rows_backward``:
  BatchNorm over channels-last data taken as rows (N*H*W, C) (:func:`channel_rows`), the
  rows split across numba's threads (:func:`over_rows`);
- ``winograd_*``: the transforms of Winograd's F(2x2, 3x3) convolution over channel planes
  on numba's threads (:mod:`.winograd_loops`, :mod:`.winograd`);
- ``dw_forward``, ``dw_data_gradient``, ``dw_weight_gradient``: a 2-D depthwise
  convolution and its gradients over channels-last data on numba's threads
  (:mod:`.depthwise_rows`, ``conv_fast.rows_depthwise_runner``; products and sums fused
  into one rounding each, ``contract``);
- ``reduce_rows``, ``reduce_columns``: MXNet's sequential sums, products and norms over a
  range of outputs (:mod:`.reduce_loops`, :mod:`.reducers`; no fast-math flag: Kahan's
  compensation needs every rounding; numpy's error model, so x / 0 is inf or NaN);
- ``max_planes``, ``max_planes_tracked``, ``sum_planes`` and the gradients'
  ``max_planes_backward``, ``sum_planes_backward``: 2-D max, sum and average pooling over a
  range of planes, MXNet's numbers and order (:mod:`.pool_loops`, ``conv.pooling``,
  ``conv_grad.pooling_backward``).

The BatchNorm loops take rows (a channel's elements in one sample) one channel at a time,
summing blocks of at most BLOCK elements in the data type (vectorised by one fast-math flag,
``reassoc``) and the blocks in float64; short rows in batches (ResNet's 7x7 and 4x4 maps at
batch 16, see SHORT) as lanes: flat loops over a sample's run of channels, one lane per
element, blocks of rows summed lane by lane. float32 data gives statistics within rounding
of the exact ones (as close as numpy's float32 sums or closer, also for data far from zero),
not numpy's numbers bit for bit; the normalisation given the statistics is numpy's, bit for
bit.
Against numpy's BatchNorm, ResNet-18 v1's native train step (batch 16, 112x112) took 0.90x
its time, MobileNet v1 0.25's 0.84x (benchmarks/README.md). Data of at least two MIN_PART
runs is split by channels across the host's threads (:func:`over_channels`), Python threads
in the plain kernels: numba's OpenMP threads and OpenBLAS's spun against each other on two
cores in native steps (1.20-1.68x slower); smaller data stays on the calling thread, where
handing work to a Python thread cost more than it saved. The ``openmp`` variant (chosen by
the ``torch`` strategy, whose heavy kernels are PyTorch's) splits from MIN_OPENMP_PART
elements a part on numba's threads, which start a part at once.
"""
from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

from graphexec.core.runtime.layout import stored_channels_last

from .depthwise_rows import FUNCTIONS as DEPTHWISE_ROWS_LOOPS
from .depthwise_rows import PARALLEL as DEPTHWISE_ROWS_PARALLEL
from .pool_loops import FLAT_BLOCK, SUM_MODES
from .pool_loops import FUNCTIONS as POOL_LOOPS
from .pool_loops import INLINE as POOL_INLINE
from .pool_loops import LOOPS as POOL_LOOP_NAMES
from .reduce_loops import FUNCTIONS as REDUCE_LOOPS
from .reduce_loops import INLINE as REDUCE_INLINE
from .reduce_loops import LOOPS as REDUCE_LOOP_NAMES
from .reduce_loops import COLUMNS, REDUCERS
from .winograd_loops import FUNCTIONS as WINOGRAD_LOOPS
from .winograd_loops import RUN as WINOGRAD_RUN

__all__ = ["affine_runner", "channel_range", "channel_rows", "channel_view", "compiled_for",
           "over_channels", "over_rows", "shift_runner"]

#: the functions below are source for numba (:func:`_source`), which gives ``prange`` its
#: meaning there; as Python they are never called
prange = range


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


#: the longest run of elements summed in the data type before the sum moves to float64
BLOCK = 1024
#: rows (the elements of one channel in one sample) shorter than SHORT, in batches of at
#: least LANE_BATCH samples, or shorter than TINY in any batch, are taken in lanes: flat loops
#: over a sample's run of channels, one lane per element, instead of a short loop per row
#: (measured over row lengths 9-196: in lanes 1.8-10x faster below 64 elements at batch 16,
#: slower from 100; at batch 1 faster below 32 only)
SHORT, LANE_BATCH, TINY = 80, 4, 32
#: the most lanes (elements) of one run of channels in the lanes' loops (their scratch
#: arrays stay in the first-level cache)
LANES = 2048


def _block_sums(a, b, shift_a, shift_b):  # pragma: no cover - numba's
    """(sum of d, sum of d * (b[i] - shift_b)) with d = a[i] - shift_a, over 1-D ``a`` and
    ``b`` of one length (at most BLOCK; callers add the results in float64), in the data
    type. Compiled with one fast-math flag, ``reassoc``: LLVM sums in vector lanes (5x
    faster than eight explicit lanes, which it did not vectorise); the order is fixed by
    the compiled code, NaN and infinities propagate. With ``b`` = ``a`` and equal shifts: a
    block's first and second moments. Callers pass slices: indices from 0 need no
    negative-index checks (a loop over [lo, hi) of the whole row ran 3-4x slower)."""
    first, second = a.dtype.type(0), a.dtype.type(0)
    for i in range(a.size):
        d = a[i] - shift_a
        first += d
        second += d * (b[i] - shift_b)
    return first, second


def _lane_sums(a, b, shift_a, shift_b, first, second):  # pragma: no cover - numba's
    """first[i] += d, second[i] += d * (b[i] - shift_b[i]) with d = a[i] - shift_a[i]: the
    lanes' form of :func:`_block_sums` (every element its own lane, shifts per element)."""
    for i in range(a.size):
        d = a[i] - shift_a[i]
        first[i] += d
        second[i] += d * (b[i] - shift_b[i])


def _lane_data_gradient(g, x, dx, shifts, offsets, slopes, scales, batch, fs, ft,
                        relu):  # pragma: no cover - numba's
    """dx[i] = (g[i] - offsets[i] - (x[i] - shifts[i]) * slopes[i]) * scales[i] for batch
    statistics, g[i] * scales[i] otherwise: the lanes' data gradient (every element its own
    lane, factors per element; ``dx`` may be ``g``). With ``relu``, g[i] counts where the
    forward's x[i] * fs[i] + ft[i] (the BatchNorm output the relu after it saw,
    computed as the forward computed it: multiply, then add) was positive, else 0: the
    relu's gradient, its mask the relu's own."""
    zero = g.dtype.type(0)
    if relu:
        if batch:
            for i in range(dx.size):
                gi, xi = g[i], x[i]  # loaded first: the choice below is then a select
                gi = gi if xi * fs[i] + ft[i] > 0 else zero
                dx[i] = (gi - offsets[i] - (xi - shifts[i]) * slopes[i]) * scales[i]
        else:
            for i in range(dx.size):
                gi, xi = g[i], x[i]
                dx[i] = (gi if xi * fs[i] + ft[i] > 0 else zero) * scales[i]
    elif batch:
        for i in range(dx.size):
            dx[i] = (g[i] - offsets[i] - (x[i] - shifts[i]) * slopes[i]) * scales[i]
    else:
        for i in range(dx.size):
            dx[i] = g[i] * scales[i]


def _merge(state, size, shift, first, second):  # pragma: no cover - numba's
    """Adds a block of ``size`` elements to ``state`` = (count, mean, squared deviations)
    in float64 by Chan et al.'s pairwise update: the block's sums ``first`` and ``second``
    of d and d ** 2, d = x - ``shift`` (a rough mean of the block, so both are small), give
    its mean and squared deviations; the merged mean moves by the blocks' difference, the
    squared deviations gain their spread. Stable for data far from zero."""
    block_mean = np.float64(shift) + first / size
    block_sq = max(second - first * first / size, 0.0)
    merged = state[0] + size
    delta = block_mean - state[1]
    state[1] += delta * size / merged
    state[2] += block_sq + delta * delta * state[0] * size / merged
    state[0] = merged


def _expand(values, lo, hi, m, out):  # pragma: no cover - numba's
    """out[(k - lo) * m + i] = values[k] for channels k in [lo, hi), i < m: per-channel
    values per lane."""
    for k in range(lo, hi):
        v = values[k]
        base = (k - lo) * m
        for i in range(m):
            out[base + i] = v


def _lanes(n, m):  # pragma: no cover - numba's
    """Whether rows of ``m`` elements in ``n`` samples are taken in lanes."""
    return m < TINY or (m < SHORT and n >= LANE_BATCH)


def _group(n, m):  # pragma: no cover - numba's
    """How many channels the loops take at a time: one with rows taken one by one, else as
    many as fit LANES lanes."""
    return max(1, LANES // m) if _lanes(n, m) else 1


def _moments(x, lo, hi, states, lanes):  # pragma: no cover - numba's
    """states[k] = (count, mean, squared deviations) of channel lo + k of x (N, C, rest)
    over axes 0 and 2, in blocks of at most BLOCK elements of a channel: a block's sum gives
    its rough mean, then (while the block is in cache) its deviations from that mean give
    its moments exactly enough; blocks merge in float64 (:func:`_merge`). Long rows: blocks
    within a row (:func:`_block_sums`); short ones: blocks of rows in lanes (``lanes``: four
    scratch rows of LANES)."""
    n, c, m = x.shape
    states[:] = 0
    if not _lanes(n, m):
        zero = x.dtype.type(0)
        for ch in range(lo, hi):
            for b in range(n):
                row = x[b, ch]
                for start in range(0, m, BLOCK):
                    block = row[start:min(start + BLOCK, m)]
                    size = np.float64(block.size)
                    shift = x.dtype.type(np.float64(_block_sums(block, block, zero, zero)[0])
                                         / size)
                    first, second = _block_sums(block, block, shift, shift)
                    _merge(states[ch - lo], size, shift, np.float64(first), np.float64(second))
        return
    xf = x.reshape(n, c * m)
    width, rows = (hi - lo) * m, max(1, BLOCK // m)
    first, second, zeros, shifts = lanes[0, :width], lanes[1, :width], lanes[2, :width], \
        lanes[3, :width]
    zeros[:] = 0
    for b0 in range(0, n, rows):
        b1 = min(b0 + rows, n)
        size = np.float64((b1 - b0) * m)
        first[:] = 0
        for b in range(b0, b1):
            run = xf[b, lo * m:hi * m]
            _lane_sums(run, run, zeros, zeros, first, second)
        for k in range(hi - lo):
            shifts[k * m:(k + 1) * m] = x.dtype.type(np.float64(first[k * m:(k + 1) * m].sum())
                                                     / size)
        first[:] = 0
        second[:] = 0
        for b in range(b0, b1):
            run = xf[b, lo * m:hi * m]
            _lane_sums(run, run, shifts, shifts, first, second)
        for k in range(hi - lo):
            _merge(states[k], size, shifts[k * m], np.float64(first[k * m:(k + 1) * m].sum()),
                   np.float64(second[k * m:(k + 1) * m].sum()))


def _affine(x, scale, shift, out, lo, hi, lanes):  # pragma: no cover - numba's
    """out[b, c, i] = x[b, c, i] * scale[c] + shift[c] for channels [lo, hi) (``lanes``:
    scratch rows for short rows' per-lane scale and shift)."""
    n, c, m = x.shape
    if not _lanes(n, m):
        for ch in range(lo, hi):
            s, t = scale[ch], shift[ch]
            for b in range(n):
                src, dst = x[b, ch], out[b, ch]
                for i in range(m):
                    dst[i] = src[i] * s + t
        return
    xf, of = x.reshape(n, c * m), out.reshape(n, c * m)
    s_lanes, t_lanes = lanes[0], lanes[1]
    _expand(scale, lo, hi, m, s_lanes)
    _expand(shift, lo, hi, m, t_lanes)
    for b in range(n):
        src, dst = xf[b, lo * m:hi * m], of[b, lo * m:hi * m]
        for i in range(src.size):
            dst[i] = src[i] * s_lanes[i] + t_lanes[i]


def _channel_affine(x, scale, shift, out, relu, c0, c1):  # pragma: no cover - numba's
    """out[b, c, i] = x[b, c, i] * scale[c] + shift[c] (then max(., 0) with ``relu``, NaN
    kept as the relu kernels keep it) for channels [c0, c1) of ``x`` and ``out`` as (N, C,
    rest), possibly the same array: one pass where numpy takes two, in memory order (row by
    row: in lanes, with the per-lane scale and shift to write first, it was slower at every
    size measured but 4x4 maps at batch 16)."""
    n, c, m = x.shape
    zero = x.dtype.type(0)
    for b in range(n):
        for ch in range(c0, c1):
            s, t = scale[ch], shift[ch]
            src, dst = x[b, ch], out[b, ch]
            if relu:
                for i in range(m):
                    v = src[i] * s + t
                    dst[i] = zero if v <= 0 else v
            else:
                for i in range(m):
                    dst[i] = src[i] * s + t


def _channel_shift(out, shift, relu, c0, c1):  # pragma: no cover - numba's
    """out[b, c, i] += shift[c] (then max(., 0) with ``relu``, NaN kept) in place for
    channels [c0, c1) of ``out`` as (N, C, rest): a convolution's bias (and the relu after
    it). One array, so the loop vectorises (with the data as a second, aliased array it ran
    scalar: 0.8 against 0.24 ms for 96 x 109 x 109); 0.2-0.5x numpy's addition and
    maximum."""
    n, c, m = out.shape
    zero = out.dtype.type(0)
    for b in range(n):
        for ch in range(c0, c1):
            t = shift[ch]
            dst = out[b, ch]
            if relu:
                for i in range(m):
                    v = dst[i] + t
                    dst[i] = zero if v <= 0 else v
            else:
                for i in range(m):
                    dst[i] = dst[i] + t


def _statistics(state, ch, gamma, beta, eps, fix_gamma, mean, var, invstd, scale,
                shift):  # pragma: no cover - numba's
    """Channel ``ch``'s batch statistics from its ``state`` (count, mean, squared
    deviations): mean and biased variance, invstd = 1 / sqrt(var + eps), scale = invstd (*
    gamma unless ``fix_gamma``), shift = beta - mean * scale, in the data type."""
    mean[ch] = mu = mean.dtype.type(state[1])
    var[ch] = v = mean.dtype.type(state[2] / max(state[0], 1.0))
    invstd[ch] = inv = mean.dtype.type(1) / np.sqrt(v + eps)
    scale[ch] = s = inv if fix_gamma else inv * gamma[ch]
    shift[ch] = beta[ch] - mu * s


def _gradient_factors(sums, ch, invstd, count, batch, offset, slope):  # pragma: no cover
    """Channel ``ch``'s sum dY * (x - mean) scaled to sum dY * xhat, and with batch
    statistics the data gradient's offset (mean dY) and slope (mean dY * xhat * invstd)."""
    inv = np.float64(invstd[ch])
    sums[ch, 1] *= inv
    if batch:
        offset[ch] = offset.dtype.type(sums[ch, 0] / count)
        slope[ch] = offset.dtype.type(sums[ch, 1] * inv / count)


def _batch_norm_train(x, gamma, beta, eps, fix_gamma, mean, var, invstd, scale, shift, out, c0,
                      c1):  # pragma: no cover - numba's
    """BatchNorm with batch statistics for channels [c0, c1) of (N, C, rest), a few
    channels at a time, each normalised while its data are still in cache (two passes over
    memory where statistics then normalisation take three): mean and biased variance
    (:func:`_moments`), invstd = 1 / sqrt(var + eps), scale = invstd (* gamma unless
    ``fix_gamma``), shift = beta - mean * scale, out = x * scale + shift, all in the data
    type in numpy's order (the numpy path's numbers for the same statistics)."""
    n, c, m = x.shape
    step = _group(n, m)
    states = np.empty((step, 3))
    lanes = np.empty((4, step * m), x.dtype)
    for lo in range(c0, c1, step):
        hi = min(lo + step, c1)
        _moments(x, lo, hi, states, lanes)
        for ch in range(lo, hi):
            _statistics(states[ch - lo], ch, gamma, beta, eps, fix_gamma, mean, var, invstd,
                        scale, shift)
        _affine(x, scale, shift, out, lo, hi, lanes)


def _gradient_sums(g, x, mean, sums, lo, hi, lanes):  # pragma: no cover - numba's
    """sums[c] = (sum dY, sum dY * (x - mean[c])) in float64 for channels [lo, hi) of (N, C,
    rest), in blocks of at most BLOCK elements (long rows) or of rows in lanes."""
    n, c, m = x.shape
    sums[lo:hi] = 0
    if not _lanes(n, m):
        zero = x.dtype.type(0)
        for ch in range(lo, hi):
            shift = x.dtype.type(mean[ch])
            for b in range(n):
                grow, xrow = g[b, ch], x[b, ch]
                for start in range(0, m, BLOCK):
                    end = min(start + BLOCK, m)
                    plain, dot = _block_sums(grow[start:end], xrow[start:end], zero, shift)
                    sums[ch, 0] += plain
                    sums[ch, 1] += dot
        return
    gf, xf = g.reshape(n, c * m), x.reshape(n, c * m)
    width, rows = (hi - lo) * m, max(1, BLOCK // m)
    first, second, zeros, shifts = lanes[0, :width], lanes[1, :width], lanes[2, :width], \
        lanes[3, :width]
    zeros[:] = 0
    _expand(mean, lo, hi, m, shifts)
    for b0 in range(0, n, rows):
        first[:] = 0
        second[:] = 0
        for b in range(b0, min(b0 + rows, n)):
            _lane_sums(gf[b, lo * m:hi * m], xf[b, lo * m:hi * m], zeros, shifts, first, second)
        for k in range(hi - lo):
            sums[lo + k, 0] += np.float64(first[k * m:(k + 1) * m].sum())
            sums[lo + k, 1] += np.float64(second[k * m:(k + 1) * m].sum())


def _data_gradient(g, x, mean, offset, slope, scale, dx, batch, lo, hi,
                   lanes):  # pragma: no cover - numba's
    """dx = (dY - offset[c] - (x - mean[c]) * slope[c]) * scale[c] for batch statistics,
    dY * scale[c] otherwise, for channels [lo, hi) (``dx`` may be ``g``)."""
    n, c, m = x.shape
    if not _lanes(n, m):
        for ch in range(lo, hi):
            s, shift, k1, k2 = scale[ch], x.dtype.type(mean[ch]), offset[ch], slope[ch]
            for b in range(n):
                grow, xrow, drow = g[b, ch], x[b, ch], dx[b, ch]
                if batch:
                    for i in range(m):
                        drow[i] = (grow[i] - k1 - (xrow[i] - shift) * k2) * s
                else:
                    for i in range(m):
                        drow[i] = grow[i] * s
        return
    gf, xf, df = g.reshape(n, c * m), x.reshape(n, c * m), dx.reshape(n, c * m)
    width = (hi - lo) * m
    shifts, offsets, slopes, scales = lanes[0, :width], lanes[1, :width], lanes[2, :width], \
        lanes[3, :width]
    _expand(mean, lo, hi, m, shifts)
    _expand(offset, lo, hi, m, offsets)
    _expand(slope, lo, hi, m, slopes)
    _expand(scale, lo, hi, m, scales)
    for b in range(n):
        _lane_data_gradient(gf[b, lo * m:hi * m], xf[b, lo * m:hi * m], df[b, lo * m:hi * m],
                            shifts, offsets, slopes, scales, batch, shifts, shifts, False)


def _batch_norm_backward(g, x, mean, invstd, scale, sums, dx, batch, want, c0,
                         c1):  # pragma: no cover - numba's
    """For channels [c0, c1) of (N, C, rest), a few at a time (each channel's data gradient
    while its data are still in cache): sums[c] = (sum dY, sum dY * xhat) with xhat =
    (x - mean) * invstd; then, when ``want``, dx = (dY - (sum dY + xhat * sum dY xhat)
    / count) * scale for batch statistics (``batch``), dY * scale otherwise. ``dx`` may be
    ``g`` (each element is read before it is written)."""
    n, c, m = x.shape
    count = max(n * m, 1)
    step = _group(n, m)
    lanes = np.empty((4, step * m), x.dtype)
    offset, slope = np.zeros(c, x.dtype), np.zeros(c, x.dtype)
    for lo in range(c0, c1, step):
        hi = min(lo + step, c1)
        _gradient_sums(g, x, mean, sums, lo, hi, lanes)
        for ch in range(lo, hi):
            _gradient_factors(sums, ch, invstd, count, batch, offset, slope)
        if want:
            _data_gradient(g, x, mean, offset, slope, scale, dx, batch, lo, hi, lanes)


def _batch_norm_finish(sum_g, sum_gx, mean, invstd, moving_mean, moving_var, momentum, eps,
                       dgamma, dbeta, gamma_mode, want_beta, update):  # pragma: no cover
    """BatchNorm backward's bookkeeping in one call where numpy takes a dozen: dbeta = sum dY
    (``want_beta``), dgamma = sum dY * xhat (``gamma_mode`` 1; 2: zero, fix_gamma; 0: not
    wanted); with ``update``, moving = moving * momentum + (1 - momentum) * statistic for the
    batch mean and the biased variance 1 / invstd ** 2 - eps, every operation in the
    statistics' type in numpy's order (the numpy path's numbers bit for bit)."""
    rest = moving_mean.dtype.type(1) - momentum
    one = invstd.dtype.type(1)
    for ch in range(sum_g.size):
        if want_beta:
            dbeta[ch] = sum_g[ch]
        if gamma_mode == 1:
            dgamma[ch] = sum_gx[ch]
        elif gamma_mode == 2:
            dgamma[ch] = 0
        if update:
            inv = invstd[ch]
            var = one / (inv * inv) - eps
            moving_mean[ch] = moving_mean[ch] * momentum + rest * mean[ch]
            moving_var[ch] = moving_var[ch] * momentum + rest * var


def _batch_norm_train_parts(x, gamma, beta, eps, fix_gamma, mean, var, invstd, scale, shift,
                            out, bounds):  # pragma: no cover - numba's
    """:func:`_batch_norm_train` over the channel ranges [bounds[j], bounds[j + 1]), one per
    thread of numba's pool (its threading layer: OpenMP where TBB is not installed)."""
    for j in prange(bounds.size - 1):
        _batch_norm_train(x, gamma, beta, eps, fix_gamma, mean, var, invstd, scale, shift, out,
                          bounds[j], bounds[j + 1])


def _batch_norm_backward_parts(g, x, mean, invstd, scale, sums, dx, batch, want,
                               bounds):  # pragma: no cover - numba's
    """:func:`_batch_norm_backward` over the channel ranges of ``bounds``, one per thread of
    numba's pool."""
    for j in prange(bounds.size - 1):
        _batch_norm_backward(g, x, mean, invstd, scale, sums, dx, batch, want, bounds[j],
                             bounds[j + 1])


#: lanes per run of the loops over channels-last rows: RUN_LANES // C rows of C channels
#: side by side (at least one row)
RUN_LANES = 256


def _run_width(c):  # pragma: no cover - numba's
    """The lanes of one run over rows of ``c`` channels (whole rows)."""
    return max(1, RUN_LANES // c) * c


def _tile(values, lanes):  # pragma: no cover - numba's
    """lanes[i] = values[i % C] (C = values.size, cast to the lanes' type): per-channel
    values over a run of whole channels-last rows."""
    c = values.size
    for i in range(lanes.size):
        lanes[i] = values[i % c]


def _rows_moments(x, r0, r1, states, lanes):  # pragma: no cover - numba's
    """states[c] = (count, mean, squared deviations) of channel c over rows [r0, r1) of x
    (R, C), channels-last data: runs of whole rows as lanes (lane i is channel i % C), in
    blocks of at most BLOCK runs: each lane's block sum gives its rough mean, its deviations
    from it its moments, merged into its channel's state in float64 (:func:`_merge`); the
    rows past the last whole run one element at a time."""
    c = x.shape[1]
    width = _run_width(c)
    xf = x.reshape(x.size)
    first, second, shifts = lanes[0, :width], lanes[1, :width], lanes[2, :width]
    states[:] = 0
    start, end = r0 * c, r1 * c
    runs = (end - start) // width
    for q0 in range(0, runs, BLOCK):
        q1 = min(q0 + BLOCK, runs)
        size = np.float64(q1 - q0)
        first[:] = 0
        for q in range(q0, q1):
            run = xf[start + q * width:start + (q + 1) * width]
            for i in range(width):
                first[i] += run[i]
        for i in range(width):
            shifts[i] = x.dtype.type(np.float64(first[i]) / size)
        first[:] = 0
        second[:] = 0
        for q in range(q0, q1):
            run = xf[start + q * width:start + (q + 1) * width]
            for i in range(width):
                d = run[i] - shifts[i]
                first[i] += d
                second[i] += d * d
        for i in range(width):
            _merge(states[i % c], size, shifts[i], np.float64(first[i]), np.float64(second[i]))
    for k in range(start + runs * width, end):
        _merge(states[(k - start) % c], 1.0, xf[k], 0.0, 0.0)


def _rows_affine(x, scale, shift, out, r0, r1, lanes, relu):  # pragma: no cover - numba's
    """out[r, c] = x[r, c] * scale[c] + shift[c] (then max(., 0) with ``relu``, NaN kept
    as the relu kernels keep it) for rows [r0, r1) of (R, C) channels-last data, in runs of
    whole rows with per-lane scale and shift."""
    c = x.shape[1]
    zero = x.dtype.type(0)
    width = _run_width(c)
    xf, of = x.reshape(x.size), out.reshape(out.size)
    s_lanes, t_lanes = lanes[0, :width], lanes[1, :width]
    _tile(scale, s_lanes)
    _tile(shift, t_lanes)
    start, end = r0 * c, r1 * c
    runs = (end - start) // width
    for q in range(runs):
        src = xf[start + q * width:start + (q + 1) * width]
        dst = of[start + q * width:start + (q + 1) * width]
        if relu:
            for i in range(width):
                v = src[i] * s_lanes[i] + t_lanes[i]
                dst[i] = zero if v <= 0 else v
        else:
            for i in range(width):
                dst[i] = src[i] * s_lanes[i] + t_lanes[i]
    for k in range(start + runs * width, end):
        j = (k - start) % c
        v = xf[k] * s_lanes[j] + t_lanes[j]
        of[k] = zero if relu and v <= 0 else v


def _rows_train_parts(x, gamma, beta, eps, fix_gamma, mean, var, invstd, scale, shift, out,
                      relu, bounds):  # pragma: no cover - numba's
    """:func:`_batch_norm_train` for channels-last data as rows (R, C), the rows split at
    ``bounds`` across numba's threads: each part's moments, merged in float64, then the
    statistics as :func:`_batch_norm_train` derives them, then each part normalised (and
    with ``relu`` max(., 0): a relu after the BatchNorm in the same pass)."""
    c = x.shape[1]
    parts = bounds.size - 1
    states = np.zeros((parts, c, 3))
    lanes = np.empty((parts, 3, _run_width(c)), x.dtype)
    for j in prange(parts):
        _rows_moments(x, bounds[j], bounds[j + 1], states[j], lanes[j])
    for ch in range(c):
        state = states[0, ch]
        for j in range(1, parts):
            if states[j, ch, 0] > 0:
                _merge(state, states[j, ch, 0], states[j, ch, 1], 0.0, states[j, ch, 2])
        _statistics(state, ch, gamma, beta, eps, fix_gamma, mean, var, invstd, scale, shift)
    for j in prange(parts):
        _rows_affine(x, scale, shift, out, bounds[j], bounds[j + 1], lanes[j], relu)


def _rows_affine_parts(x, scale, shift, out, relu, bounds):  # pragma: no cover - numba's
    """:func:`_rows_affine` over the row ranges of ``bounds`` on numba's threads."""
    lanes = np.empty((bounds.size - 1, 2, _run_width(x.shape[1])), x.dtype)
    for j in prange(bounds.size - 1):
        _rows_affine(x, scale, shift, out, bounds[j], bounds[j + 1], lanes[j], relu)


def _rows_gradient_sums(g, x, mean, sums, r0, r1, lanes, affine,
                        relu):  # pragma: no cover - numba's
    """sums[c] = (sum dY, sum dY * (x - mean[c])) in float64 over rows [r0, r1) of (R, C)
    channels-last data, in runs of whole rows as lanes, blocks of at most BLOCK runs; with
    ``relu``, dY masked by the relu after the forward (see :func:`_lane_data_gradient`)."""
    c = x.shape[1]
    width = _run_width(c)
    gf, xf = g.reshape(g.size), x.reshape(x.size)
    first, second, shifts = lanes[0, :width], lanes[1, :width], lanes[2, :width]
    fs, ft = lanes[3, :width], lanes[4, :width]
    zero = g.dtype.type(0)
    if relu:
        _tile(affine[0], fs)
        _tile(affine[1], ft)
    _tile(mean, shifts)
    sums[:] = 0
    start, end = r0 * c, r1 * c
    runs = (end - start) // width
    for q0 in range(0, runs, BLOCK):
        first[:] = 0
        second[:] = 0
        for q in range(q0, min(q0 + BLOCK, runs)):
            base = start + q * width
            grun, xrun = gf[base:base + width], xf[base:base + width]
            if relu:
                for i in range(width):
                    gi, xi = grun[i], xrun[i]  # loaded first: the choice is then a select
                    gi = gi if xi * fs[i] + ft[i] > 0 else zero
                    first[i] += gi
                    second[i] += gi * (xi - shifts[i])
            else:
                for i in range(width):
                    first[i] += grun[i]
                    second[i] += grun[i] * (xrun[i] - shifts[i])
        for i in range(width):
            sums[i % c, 0] += np.float64(first[i])
            sums[i % c, 1] += np.float64(second[i])
    for k in range(start + runs * width, end):
        j = (k - start) % c
        gk = gf[k]
        if relu and not xf[k] * fs[j] + ft[j] > 0:
            gk = zero
        sums[j, 0] += np.float64(gk)
        sums[j, 1] += np.float64(gk * (xf[k] - shifts[j]))


def _rows_data_gradient(g, x, mean, offset, slope, scale, dx, batch, r0, r1, lanes,
                        affine, relu):  # pragma: no cover - numba's
    """:func:`_data_gradient` for rows [r0, r1) of (R, C) channels-last data (``dx`` may
    be ``g``; with ``relu``, dY masked as in :func:`_rows_gradient_sums`). Each run is
    :func:`_lane_data_gradient`, the channel loops' lanes loop, inlined by numba (called as
    a function, per-run loops shared this way took 10-25% longer, benchmarks/README.md)."""
    c = x.shape[1]
    width = _run_width(c)
    gf, xf, df = g.reshape(g.size), x.reshape(x.size), dx.reshape(dx.size)
    shifts, offsets, slopes, scales = lanes[0, :width], lanes[1, :width], lanes[2, :width], \
        lanes[3, :width]
    fs, ft = lanes[4, :width], lanes[5, :width]
    if relu:
        _tile(affine[0], fs)
        _tile(affine[1], ft)
    _tile(mean, shifts)
    _tile(offset, offsets)
    _tile(slope, slopes)
    _tile(scale, scales)
    start, end = r0 * c, r1 * c
    runs = (end - start) // width
    for q in range(runs):
        base = start + q * width
        _lane_data_gradient(gf[base:base + width], xf[base:base + width],
                            df[base:base + width], shifts, offsets, slopes, scales, batch,
                            fs, ft, relu)
    for k in range(start + runs * width, end):
        j = (k - start) % c
        gk = gf[k]
        if relu and not xf[k] * fs[j] + ft[j] > 0:
            gk = g.dtype.type(0)
        if batch:
            df[k] = (gk - offsets[j] - (xf[k] - shifts[j]) * slopes[j]) * scales[j]
        else:
            df[k] = gk * scales[j]


def _rows_backward_parts(g, x, mean, invstd, scale, sums, dx, batch, want, affine, relu,
                         bounds):  # pragma: no cover - numba's
    """:func:`_batch_norm_backward` for channels-last data as rows (R, C), the rows split at
    ``bounds`` across numba's threads: each part's sums, added in float64, then each part's
    data gradient (``dx`` may be ``g``). With ``relu``, dY is the gradient of a relu after
    the forward, which the forward applied with its scale and shift ``affine`` (2, C): dY
    masked where that output was not positive (:func:`_masked`)."""
    c = x.shape[1]
    parts = bounds.size - 1
    count = max(x.shape[0], 1)
    partial = np.zeros((parts, c, 2))
    lanes = np.empty((parts, 6, _run_width(c)), x.dtype)
    for j in prange(parts):
        _rows_gradient_sums(g, x, mean, partial[j], bounds[j], bounds[j + 1], lanes[j], affine,
                            relu)
    offset, slope = np.zeros(c, x.dtype), np.zeros(c, x.dtype)
    for ch in range(c):
        sums[ch, 0] = 0
        sums[ch, 1] = 0
        for j in range(parts):
            sums[ch, 0] += partial[j, ch, 0]
            sums[ch, 1] += partial[j, ch, 1]
        _gradient_factors(sums, ch, invstd, count, batch, offset, slope)
    if want:
        for j in prange(parts):
            _rows_data_gradient(g, x, mean, offset, slope, scale, dx, batch, bounds[j],
                                bounds[j + 1], lanes[j], affine, relu)


#: the compiled functions, in the order the generated module defines them (a loop calls
#: the ones before it)
_FUNCTIONS = (_depthwise_flat, _depthwise_loops, _block_sums, _lane_sums, _lane_data_gradient,
              _merge, _expand, _lanes, _group, _moments, _statistics, _gradient_factors, _affine,
              _channel_affine, _channel_shift,
              _batch_norm_train, _gradient_sums, _data_gradient, _batch_norm_backward,
              _batch_norm_finish, _batch_norm_train_parts, _batch_norm_backward_parts,
              _run_width, _tile, _rows_moments, _rows_affine, _rows_train_parts,
              _rows_affine_parts, _rows_gradient_sums, _rows_data_gradient, _rows_backward_parts,
              *WINOGRAD_LOOPS, *DEPTHWISE_ROWS_LOOPS, *REDUCE_LOOPS, *POOL_LOOPS)
#: the options beyond caching and nogil: the one fast-math flag of the block sums (see
#: :func:`_block_sums`), numba's threads for the loops over channel ranges, planes and
#: rows, fused multiply-adds in the depthwise rows loops, whose shared multiply-add is
#: inlined by numba (called as a function it left them 1.2-2x slower on small maps)
_OPTIONS = {"_block_sums": ", fastmath={'reassoc'}", "_batch_norm_train_parts": ", parallel=True",
            "_batch_norm_backward_parts": ", parallel=True",
            **{name: ", parallel=True" for name in ("_rows_train_parts", "_rows_affine_parts",
                                                    "_rows_backward_parts")},
            **{fn.__name__: ", parallel=True" for fn in WINOGRAD_LOOPS},
            **{name: ", parallel=True, fastmath={'contract'}" for name in DEPTHWISE_ROWS_PARALLEL},
            "_madd": ", fastmath={'contract'}, inline='always'",
            "_span_madd": ", fastmath={'contract'}, inline='always'",
            "_strided_madd": ", fastmath={'contract'}, inline='always'",
            "_lane_data_gradient": ", inline='always'", "_inside": ", inline='always'",
            "_three_taps": ", fastmath={'contract'}, inline='always'",
            "_dw_row": ", fastmath={'contract'}, inline='always'",
            "_strided_3x3_row": ", fastmath={'contract'}",
            **{name: ", inline='always'" for name in REDUCE_INLINE + POOL_INLINE},
            **{name: ", error_model='numpy'" for name in REDUCE_LOOP_NAMES}}
_LOOPS = {"depthwise": "_depthwise_loops", "channel_affine": "_channel_affine",
          "channel_shift": "_channel_shift",
          "batch_norm_train": "_batch_norm_train", "batch_norm_backward": "_batch_norm_backward",
          "batch_norm_finish": "_batch_norm_finish",
          "batch_norm_train_parts": "_batch_norm_train_parts",
          "batch_norm_backward_parts": "_batch_norm_backward_parts",
          "batch_norm_rows_train": "_rows_train_parts",
          "batch_norm_rows_affine": "_rows_affine_parts",
          "batch_norm_rows_backward": "_rows_backward_parts",
          **{fn.__name__[1:]: fn.__name__ for fn in WINOGRAD_LOOPS},
          **{name[1:]: name for name in DEPTHWISE_ROWS_PARALLEL},
          **{name[1:]: name for name in REDUCE_LOOP_NAMES + POOL_LOOP_NAMES}}
_MODULE: list = []
#: loops numba failed to compile (warned once each)
_FAILED: set[str] = set()


def _source() -> str:
    from graphexec.core.runtime.jit_cache import CACHE_OPTION
    parts = ["import math", "import numpy as np", "from numba import njit, prange", "",
             f"{', '.join(REDUCERS)} = range({len(REDUCERS)})", f"COLUMNS = {COLUMNS}",
             f"BLOCK = {BLOCK}",
             f"SHORT = {SHORT}", f"LANE_BATCH = {LANE_BATCH}", f"TINY = {TINY}",
             f"LANES = {LANES}", f"RUN = {WINOGRAD_RUN}", f"RUN_LANES = {RUN_LANES}",
             f"FLAT_BLOCK = {FLAT_BLOCK}", f"{', '.join(SUM_MODES)} = range({len(SUM_MODES)})"]
    for fn in _FUNCTIONS:
        extra = _OPTIONS.get(fn.__name__, "")
        parts += ["", "", f"@njit({CACHE_OPTION}, nogil=True{extra})",
                  inspect.getsource(fn).rstrip()]
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


def channel_view(shape: tuple, axis: int) -> tuple[int, int, int]:
    """``shape`` as the loops see it: (before ``axis``, ``axis``, after it)."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def channel_rows(xp, dtype, axis: int, *arrays) -> tuple[list, bool] | None:
    """``arrays`` (alike in shape) as the BatchNorm loops take them, and whether as rows:
    None where the loops do not apply (they take host (numpy) arrays, not empty, all of
    ``dtype``, float32 or float64). C-contiguous arrays as (before ``axis``, ``axis``,
    after it) for the loops over channels; 4-D arrays all stored channels-last (N x H x W
    x C in memory, :mod:`graphexec.core.runtime.layout`) and normalised over axis 1 as
    rows (N*H*W, C) for the loops over rows (``_rows_*``)."""
    if (xp.__name__ != "numpy" or dtype not in (np.float32, np.float64)
            or not all(a.size and a.dtype == dtype for a in arrays)):
        return None
    if all(a.flags.c_contiguous for a in arrays):
        return [a.reshape(channel_view(a.shape, axis)) for a in arrays], False
    if axis == 1 and all(stored_channels_last(a) for a in arrays):
        return [a.transpose(0, 2, 3, 1).reshape(-1, a.shape[1]) for a in arrays], True
    return None


def _planes(xp, axis: int, *arrays) -> list | None:
    """``arrays`` as (before ``axis``, ``axis``, after it) for the loops over channels, or
    None where those do not apply (see :func:`channel_rows`; channels-last rows take the
    rows loops)."""
    found = channel_rows(xp, arrays[-1].dtype, axis, *arrays)
    return None if found is None or found[1] else found[0]


def affine_runner(xp, x, out, axis: int, relu: bool):
    """``f(scale, shift)``: out = x * scale[c] + shift[c] over ``axis`` (then max(., 0) with
    ``relu``) in one pass of the compiled ``channel_affine`` loop, split across the host's
    threads for large data (``out`` may be ``x``); None where it does not apply."""
    planes = _planes(xp, axis, x, out)
    if planes is None:
        return None
    x3, out3 = planes
    stat = np.empty(x3.shape[1], out.dtype)
    loop = compiled_for("channel_affine", x3, stat, stat, out3, relu,
                        *channel_range(x3.shape[1], False))
    if loop is None:
        return None
    run = over_channels(loop, x3.shape)
    return lambda scale, shift: run(x3, scale, shift, out3, relu)


def shift_runner(xp, out, axis: int, relu: bool):
    """``f(shift)``: out += shift[c] over ``axis`` in place (then max(., 0) with ``relu``)
    in one pass of the compiled ``channel_shift`` loop, split across the host's threads for
    large data; None where it does not apply."""
    planes = _planes(xp, axis, out)
    if planes is None:
        return None
    out3 = planes[0]
    stat = np.empty(out3.shape[1], out.dtype)
    loop = compiled_for("channel_shift", out3, stat, relu, *channel_range(out3.shape[1], False))
    if loop is None:
        return None
    run = over_channels(loop, out3.shape)
    return lambda shift: run(out3, shift, relu)


def over_rows(loop, shape: tuple[int, int]):
    """``f(*args)`` running a ``_rows_*_parts`` loop over rows data of ``shape`` (R, C), the
    rows split across the host's threads (at least MIN_OPENMP_PART elements a part) on
    numba's threads: the parts' bounds are the loop's last argument."""
    from graphexec.core.runtime.blas_threads import on_numba_threads, split
    rows, c = shape
    parts = split(np, rows, -(-MIN_OPENMP_PART // max(c, 1)))
    bounds = np.array([lo for lo, _ in parts] + [rows], np.int64)
    run_parallel = on_numba_threads(loop, len(parts))
    return lambda *args: run_parallel(*args, bounds)


#: the fewest elements worth a thread of their own in the BatchNorm loops: on Python threads
#: (handing work over cost more than it saved below), on numba's OpenMP threads (they spin
#: briefly after a loop, so a part starts at once: 2^14 to 2^16 measured alike, 2^18 lost)
MIN_PART, MIN_OPENMP_PART = 1 << 20, 1 << 14


def over_channels(loop, shape: tuple[int, int, int], openmp: bool = False):
    """``f(*args)`` running a BatchNorm loop over the channels of data viewed as ``shape``
    (N, C, rest), the channels split across the host's threads (one part per BLAS thread,
    :func:`~graphexec.core.runtime.blas_threads.split`): with ``openmp``, ``loop`` is a
    ``_parts`` loop taking the parts' bounds, run on numba's own threads (at least
    MIN_OPENMP_PART elements a part; one part too, so the serial loop is not compiled at
    all); otherwise ``loop(*args, c0, c1)`` runs on Python threads
    (:func:`~graphexec.core.runtime.blas_threads.run_parts`; the loops release the GIL), at
    least MIN_PART elements a part."""
    from graphexec.core.runtime.blas_threads import on_numba_threads, run_parts, split
    n, c, m = shape
    parts = split(np, c, -(-(MIN_OPENMP_PART if openmp else MIN_PART) // max(n * m, 1)))
    if openmp:
        bounds = np.array([lo for lo, _ in parts] + [c], np.int64)
        run_parallel = on_numba_threads(loop, len(parts))
        return lambda *args: run_parallel(*args, bounds)
    if len(parts) == 1:
        return lambda *args: loop(*args, 0, c)

    def run(*args):
        run_parts(np, parts, lambda j, c0, c1, sync: loop(*args, c0, c1),
                  one_blas_thread=False)
    return run


def channel_range(c: int, openmp: bool) -> tuple:
    """The trailing arguments a BatchNorm loop is compiled for: the channel range (0, c),
    or a bounds array for the ``_parts`` loops (``openmp``)."""
    return (np.zeros(2, np.int64),) if openmp else (0, c)


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
