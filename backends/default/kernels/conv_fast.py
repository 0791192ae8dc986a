"""Faster paths of the native Convolution (``conv.py`` picks them):

- depthwise convolutions (one filter per input channel, channel-first) run directly, one
  multiply-add per kernel offset over strided views of the (padded) data, with no columns
  and no products: as a batch of (1 x k) @ (k x P) products, each a BLAS call, MobileNet's
  depthwise layers spent their time in call overhead and OpenBLAS's thread hand-offs;
- one-group stride-1 convolutions with few filters for their channels (DenseNet's 3x3
  layers, 128 -> 32) run without columns, one product per kernel offset over the padded
  data's flat rows;
- the one-group products run with BLAS on one thread per part, images (or, for one image,
  filter rows) split across the BLAS threads (:mod:`.blas_threads`): OpenBLAS's own idle
  threads spin after each call and, on a machine whose cores other work shares, took the
  cores from the next one.
"""
from __future__ import annotations

import numpy as np

from .blas_threads import run_parts, split
from .nn import matmul_into, reshaper

__all__ = ["is_depthwise", "depthwise_runner", "grouped_matmul", "split_matmul",
           "offsets_applicable", "offsets_layout", "offsets_runner"]

#: the fewest filter rows of a one-image product worth a thread of their own
MIN_ROWS = 16


def is_depthwise(p, geo, channels: int, dtype) -> bool:
    """One filter per input channel (num_group == channels == num_filter), channel-first,
    float32/float64: what :func:`depthwise_runner` runs."""
    return (not geo.last and p.num_group == channels == p.num_filter and channels > 1
            and np.dtype(dtype) in (np.float32, np.float64))


def depthwise_runner(xp, weight, out, slices: list, source, scratch):
    """The run function of a depthwise Convolution: ``weight`` the (C, 1, *kernel) array,
    ``slices`` the strided slices of each kernel offset over ``source(bufs)`` (the data,
    padded), ``scratch.take()`` gives ``tmp`` (the output's shape) and what ``source``
    needs."""
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


def grouped_matmul(xp, weight, cols, result) -> bool:
    """result[i, 0] = weight[0] @ cols[i, 0] for a one-group convolution ((1, F, K),
    (N, 1, K, P), (N, 1, F, P)), split across the BLAS threads with BLAS on one thread each.
    False (nothing done) for several groups, float16 or off the host."""
    if (xp.__name__ != "numpy" or weight.shape[0] != 1
            or result.dtype not in (np.float32, np.float64)):
        return False
    w, n, f = weight[0], cols.shape[0], weight.shape[1]
    if n > 1:
        def images(j, i0, i1, sync):
            for i in range(i0, i1):
                xp.matmul(w, cols[i, 0], out=result[i, 0])
        run_parts(xp, split(xp, n, 1), images)
        return True

    def rows(j, r0, r1, sync):
        xp.matmul(w[r0:r1], cols[0, 0], out=result[0, 0, r0:r1])
    run_parts(xp, split(xp, f, MIN_ROWS), rows)
    return True


def split_matmul(xp, a3, b3, out3) -> None:
    """out3 = a3 @ b3 over groups; one group's product (float32/float64 on the host) with its
    rows split across the BLAS threads, BLAS on one thread each (the backward's products)."""
    if xp.__name__ != "numpy" or a3.shape[0] != 1 or out3.dtype not in (np.float32, np.float64):
        matmul_into(xp, a3, b3, out3)
        return
    a, b, out = a3[0], b3[0], out3[0]

    def rows(j, r0, r1, sync):
        xp.matmul(a[r0:r1], b, out=out[r0:r1])
    run_parts(xp, split(xp, a.shape[0], MIN_ROWS), rows)



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
    parts = len(split(xp, n, 1)) if n > 1 else len(split(xp, f, MIN_ROWS))
    return {"padded": (n, c, h + 2 * ph + extra, wp), "acc": (n, f, length),
            "tmp": (parts, f, length), "wt": (*geo.kernel, f, c)}


def offsets_runner(xp, x, weight, out, geo, scratch):
    """Convolution without columns: for each kernel offset (i, j), one product of that
    offset's weights (F x C) with the padded data's flat rows starting at offset
    i * dilation * padded_width + j * dilation (C x out_h * padded_width), summed; the
    columns past the output width are dropped at the end. The products' rows (one image)
    or the images are split across the BLAS threads. No columns to write: 9x the data for a
    3x3 kernel, the cost that dominates when the product has few rows (filters)."""
    n, c, h, w = x.shape
    f = weight.shape[0]
    (ph, pw), (dh, dw) = geo.pad, geo.dilate
    wp, (ho, wo) = w + 2 * pw, out.shape[2:]
    length = ho * wp
    starts = [(i, j, i * dh * wp + j * dw) for i in range(geo.kernel[0])
              for j in range(geo.kernel[1])]
    per_image = n > 1
    parts = split(xp, n, 1) if per_image else split(xp, f, MIN_ROWS)

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
            if per_image:
                for b in range(u0, u1):
                    product(b, 0, f, tmp[jpart])
            else:
                product(0, u0, u1, tmp[jpart, u0:u1])
        run_parts(xp, parts, part)
        xp.copyto(out, acc.reshape(n, f, ho, wp)[..., :wo])
    return run
