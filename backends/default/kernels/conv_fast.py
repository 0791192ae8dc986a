"""Faster paths of the native Convolution (``conv.py`` picks them):

- depthwise convolutions (one filter per input channel, channel-first) run directly, one
  multiply-add per kernel offset over strided views of the (padded) data, with no columns
  and no products: as a batch of (1 x k) @ (k x P) products, each a BLAS call, MobileNet's
  depthwise layers spent their time in call overhead and OpenBLAS's thread hand-offs;
- the one-group products run with BLAS on one thread per part, images (or, for one image,
  filter rows) split across the BLAS threads (:mod:`.blas_threads`): OpenBLAS's own idle
  threads spin after each call and, on a machine whose cores other work shares, took the
  cores from the next one.
"""
from __future__ import annotations

import numpy as np

from .blas_threads import run_parts, split
from .nn import matmul_into, reshaper

__all__ = ["is_depthwise", "depthwise_runner", "grouped_matmul", "split_matmul"]

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

