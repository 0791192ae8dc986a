"""Faster paths of the native Convolution (``conv.py`` picks them):

- depthwise convolutions (one filter per input channel, channel-first) run directly, one
  multiply-add per kernel offset over strided views of the (padded) data, with no columns
  and no products: as a batch of (1 x k) @ (k x P) products, each a BLAS call, MobileNet's
  depthwise layers spent their time in call overhead and OpenBLAS's thread hand-offs;
- one-group stride-1 convolutions with few filters for their channels (DenseNet's 3x3
  layers, 128 -> 32) run without columns, one product per kernel offset over the padded
  data's flat rows;
- the one-group products of a batch run with BLAS on one thread per part, the images split
  across the BLAS threads (:mod:`graphexec.core.runtime.blas_threads`): OpenBLAS's own idle
  threads spin after each call and, on a machine whose cores other work shares, took the
  cores from the next one. One image's product runs on OpenBLAS's own threads (small ones
  on one BLAS thread): split by filter rows (each part packing the whole column matrix)
  ResNet-18 v1's 3x3 layers took 52-54 ms against 29 ms at batch 1 on a quiet machine, and
  split by columns 51 ms (benchmarks/README.md).
"""
from __future__ import annotations

import numpy as np

from graphexec.core.runtime.blas_threads import run_parts, serial_blas, split
from graphexec.core.runtime.layout import stored_channels_last

from .base import sequence
from .compiled import compiled_for, over_rows
from .nn import reshaper

__all__ = ["is_depthwise", "depthwise_runner", "compiled_depthwise_runner", "grouped_matmul",
           "offsets_applicable", "offsets_layout", "offsets_runner"]

#: one image's products of fewer floating-point operations run on one BLAS thread
SMALL_PRODUCT = 1e7


def is_depthwise(p, geo, channels: int, dtype) -> bool:
    """One filter per input channel (num_group == channels == num_filter), channel-first,
    float32/float64: what :func:`depthwise_runner` runs."""
    return (not geo.last and p.num_group == channels == p.num_filter and channels > 1
            and np.dtype(dtype) in (np.float32, np.float64))


def depthwise_runner(xp, weight, out, slices: list, source, scratch):
    """The run function of a depthwise Convolution: ``weight`` the (C, 1, *kernel) array,
    ``slices`` the strided slices of each kernel offset over ``source(bufs)`` (the data,
    padded), ``scratch.take()`` gives ``tmp`` (the output's shape) and what ``source``
    needs. One numpy multiply-add per kernel offset (2-D on the host with numba installed:
    :func:`compiled_depthwise_runner` instead)."""
    c = weight.shape[0]
    w2 = reshaper(weight, (c, len(slices)))
    bshape = (1, c) + (1,) * (out.ndim - 2)

    def run():
        bufs = scratch.take()
        src, w, tmp = source(bufs), w2(), bufs["tmp"]
        for k, sl in enumerate(slices):
            wk = w[:, k].reshape(bshape)
            if k == 0:
                xp.multiply(src[sl], wk, out=out)
            else:
                xp.multiply(src[sl], wk, out=tmp)
                xp.add(out, tmp, out=out)
    return run


def compiled_depthwise_runner(xp, x, weight, out, geo):
    """The run function of a 2-D depthwise Convolution through numba's compiled loop
    (:mod:`.compiled`, compiled now for these arrays), padding handled in the loop (no padded
    copy), or None where it does not apply (no numba, not the host, not 2-D). MobileNet v1
    0.25's 13 depthwise layers at batch 1: 1.4 ms against 6.3-7.5 ms for the numpy offsets
    (benchmarks/README.md); the same sums in the same order (no fast-math), 0 where a tap
    falls in the padding."""
    if xp.__name__ != "numpy" or len(geo.kernel) != 2:
        return None
    c = weight.shape[0]
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = geo.kernel, geo.stride, geo.dilate, geo.pad
    w2 = reshaper(weight, (c, kh * kw))
    loop = compiled_for("depthwise", x, w2(), out, kh, kw, sh, sw, dh, dw, ph, pw)
    if loop is None:
        return None
    return lambda: loop(x, w2(), out, kh, kw, sh, sw, dh, dw, ph, pw)


def grouped_matmul(xp, weight, cols, result) -> bool:
    """result[i, 0] = weight[0] @ cols[i, 0] for a one-group convolution ((1, F, K),
    (N, 1, K, P), (N, 1, F, P)) of several images, the images split across the BLAS threads
    with BLAS on one thread each. False (nothing done) for one image, several groups,
    float16 or off the host."""
    if (xp.__name__ != "numpy" or weight.shape[0] != 1
            or result.dtype not in (np.float32, np.float64)):
        return False
    w = weight[0]
    if cols.shape[0] == 1:
        if 2 * w.size * cols.shape[-1] >= SMALL_PRODUCT:
            return False
        with serial_blas(xp):
            xp.matmul(w, cols[0, 0], out=result[0, 0])
        return True

    def images(j, i0, i1, sync):
        for i in range(i0, i1):
            xp.matmul(w, cols[i, 0], out=result[i, 0])
    run_parts(xp, split(xp, cols.shape[0], 1), images)
    return True


def offsets_applicable(p, geo, channels: int, dtype, xp) -> bool:
    """A 2-D one-group stride-1 convolution with a kernel larger than 1x1 and at most half as
    many filters as input channels, channel-first, float32/float64 on the host: what
    :func:`offsets_runner` runs. With as many filters as channels or more (ResNet's, VGG's
    layers) the columns and one product measured as fast or faster (whole models, batch 1:
    ResNet-18 1.12-1.19x slower, VGG-11 0.96-1.12x; DenseNet-121, 128 -> 32, 0.85-0.92x)."""
    return (xp.__name__ == "numpy" and not geo.last and p.num_group == 1
            and 2 * p.num_filter <= channels
            and len(geo.kernel) == 2 and all(s == 1 for s in geo.stride)
            and any(k > 1 for k in geo.kernel) and np.dtype(dtype) in (np.float32, np.float64))


def offsets_layout(x_shape: tuple, geo, out_sp: tuple, f: int, xp) -> dict:
    """Shapes of the scratch of :func:`offsets_runner`: the padded data with the extra rows
    the last offset's flat slice runs into, the accumulator, one product buffer per part and
    the weights with the kernel offsets first (each offset's F x C block contiguous)."""
    n, c, h, w = x_shape
    (ph, pw), dw = geo.pad, geo.dilate[1]
    wp = w + 2 * pw
    extra = -(-(geo.kernel[1] - 1) * dw // wp)
    length = out_sp[0] * wp
    parts = len(split(xp, n, 1))
    return {"padded": (n, c, h + 2 * ph + extra, wp), "acc": (n, f, length),
            "tmp": (parts, f, length), "wt": (*geo.kernel, f, c)}


def offsets_runner(xp, x, weight, out, geo, scratch):
    """Convolution without columns: for each kernel offset (i, j), one product of that
    offset's weights (F x C) with the padded data's flat rows starting at offset
    i * dilation * padded_width + j * dilation (C x out_h * padded_width), summed; the
    columns past the output width are dropped at the end. The images are split across the
    BLAS threads (one image: OpenBLAS's own threads). No columns to write: 9x the data for a
    3x3 kernel, the cost that dominates when the product has few rows (filters)."""
    n, c, h, w = x.shape
    f = weight.shape[0]
    (ph, pw), (dh, dw) = geo.pad, geo.dilate
    wp, (ho, wo) = w + 2 * pw, out.shape[2:]
    length = ho * wp
    starts = [(i, j, i * dh * wp + j * dw) for i in range(geo.kernel[0])
              for j in range(geo.kernel[1])]
    parts = split(xp, n, 1)

    def run():
        bufs = scratch.take()
        padded, acc, tmp, wt = bufs["padded"], bufs["acc"], bufs["tmp"], bufs["wt"]
        xp.copyto(wt, weight.transpose(2, 3, 0, 1))
        padded[:, :, :ph] = 0  # the border only: the inside is overwritten
        padded[:, :, ph + h:] = 0
        padded[:, :, ph:ph + h, :pw] = 0
        padded[:, :, ph:ph + h, pw + w:] = 0
        padded[:, :, ph:ph + h, pw:pw + w] = x
        flat = padded.reshape(n, c, -1)

        def product(b, r0, r1, t):
            a = acc[b, r0:r1]
            for k, (i, j, s) in enumerate(starts):
                src = flat[b, :, s:s + length]
                if k == 0:
                    xp.matmul(wt[i, j, r0:r1], src, out=a)
                else:
                    xp.matmul(wt[i, j, r0:r1], src, out=t)
                    xp.add(a, t, out=a)

        def part(jpart, u0, u1, sync):
            for b in range(u0, u1):
                product(b, 0, f, tmp[jpart])
        if n == 1:
            product(0, 0, f, tmp[0])
        else:
            run_parts(xp, parts, part)
        xp.copyto(out, acc.reshape(n, f, ho, wp)[..., :wo])
    return run


def stored_rows(*arrays) -> bool:
    """Whether the arrays are all host arrays stored channels-last (N x H x W x C in memory:
    :mod:`graphexec.core.runtime.layout`)."""
    return all(isinstance(a, np.ndarray) and stored_channels_last(a) for a in arrays)


def _rows_geometry(geo) -> tuple:
    (sh, sw), (ph, pw), (dh, dw) = geo.stride, geo.pad, geo.dilate
    return sh, sw, ph, pw, dh, dw


def _kernel_last(weight):
    """``f()``: the (C, 1, KH, KW) ``weight`` as (KH, KW, C), copied into one buffer."""
    c, _, kh, kw = weight.shape
    buf = np.empty((kh, kw, c), weight.dtype)

    def run():
        np.copyto(buf, weight.reshape(c, kh, kw).transpose(1, 2, 0))
        return buf
    return run


def rows_depthwise_runner(x, weight, bias, out, geo):
    """The run function of a 2-D depthwise Convolution over channels-last data (``x`` and
    ``out`` stored N x H x W x C) through numba's compiled loops on numba's threads
    (:mod:`.depthwise_rows`), or None where they do not apply (no numba, other layouts).
    ``bias`` is the bias array or None."""
    if len(geo.kernel) != 2 or not stored_rows(x, out):
        return None
    xr, outr = x.transpose(0, 2, 3, 1), out.transpose(0, 2, 3, 1)
    kernel_last = _kernel_last(weight)
    b = np.zeros(x.shape[1], x.dtype) if bias is None else bias
    args = _rows_geometry(geo)
    loop = compiled_for("dw_forward", xr, kernel_last(), b, outr, *args)
    if loop is None:
        return None
    return lambda: loop(xr, kernel_last(), b, outr, *args)


def rows_depthwise_backward_runner(og, x, weight, dx, dw, geo):
    """The run function of a 2-D depthwise Convolution's data and weight gradients
    (``dx``, ``dw``: None where not wanted) over channels-last ``og``, ``x`` and ``dx``
    through numba's compiled loops, or None where they do not apply. The weight gradient's
    output rows are split across numba's threads (:func:`~.compiled.over_rows`; each part
    sums into its own lanes)."""
    if len(geo.kernel) != 2 or not stored_rows(og, x, *([] if dx is None else [dx])):
        return None
    gr, xr = og.transpose(0, 2, 3, 1), x.transpose(0, 2, 3, 1)
    kernel_last = _kernel_last(weight)
    args = _rows_geometry(geo)
    steps = []
    if dx is not None:
        dxr = dx.transpose(0, 2, 3, 1)
        data = compiled_for("dw_data_gradient", gr, kernel_last(), dxr, *args)
        if data is None:
            return None
        steps.append(lambda: data(gr, kernel_last(), dxr, *args))
    if dw is not None:
        dwt = dw.reshape(dw.shape[0], *dw.shape[2:])
        weights = compiled_for("dw_weight_gradient", gr, xr, dwt, *args, np.zeros(2, np.int64))
        if weights is None:
            return None
        rows = over_rows(weights, (og.shape[0] * og.shape[2], og.shape[3] * og.shape[1]))
        steps.append(lambda: rows(gr, xr, dwt, *args))
    return sequence(steps)
