"""Depthwise convolutions over channels-last data (backends/default/kernels/depthwise_rows.py,
conv_fast.rows_depthwise_runner and its backward): the compiled loops against float64 sums
over every geometry the Convolution takes in 2-D (kernel sizes, strides, padding, dilation,
bias, maps smaller than the kernel's reach), forward, data and weight gradients; the weight
gradient's parts (any split of the rows, empty parts too); the ``torch`` strategy's choice
of the loops for small output maps and the results of a whole block against the native
strategy. Skips (saying so) without numba."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from graphexec.backends.default.kernels.compiled import compiled_for
from graphexec.backends.default.kernels.conv_fast import (rows_depthwise_backward_runner,
                                                          rows_depthwise_runner, stored_rows)

pytest.importorskip("numba", reason="the depthwise rows loops are numba's")


def _last(a):
    """``a`` (N, C, H, W) stored channels-last, seen as (N, C, H, W)."""
    out = np.empty((a.shape[0], *a.shape[2:], a.shape[1]), a.dtype).transpose(0, 3, 1, 2)
    out[...] = a
    return out


def _reference(x, w, bias, g, geo):
    """Forward, data gradient and weight gradient in float64 by sums over the kernel's
    offsets (x (N, C, H, W), w (C, 1, KH, KW), g the output gradient)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geo.kernel, geo.stride, geo.pad, geo.dilate
    n, c, h, wd = x.shape
    oh, ow = g.shape[2:]
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    out = np.zeros((n, c, oh, ow)) + (0 if bias is None else bias.reshape(1, c, 1, 1))
    dxp = np.zeros_like(xp)
    dwt = np.zeros((c, kh, kw))
    for a in range(kh):
        for e in range(kw):
            rows = slice(a * dh, a * dh + (oh - 1) * sh + 1, sh)
            cols = slice(e * dw, e * dw + (ow - 1) * sw + 1, sw)
            win = xp[:, :, rows, cols]
            out += win * w[:, 0, a, e].reshape(1, c, 1, 1)
            dxp[:, :, rows, cols] += g * w[:, 0, a, e].reshape(1, c, 1, 1)
            dwt[:, a, e] = (g * win).sum(axis=(0, 2, 3))
    return out, dxp[:, :, ph:ph + h, pw:pw + wd], dwt.reshape(c, 1, kh, kw)


GEOMETRIES = [  # shape (N, C, H, W), kernel, stride, pad, dilate, bias
    ((2, 8, 7, 7), (3, 3), (1, 1), (1, 1), (1, 1), False),
    ((3, 5, 9, 6), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 3, 10, 11), (5, 3), (1, 2), (2, 0), (1, 1), True),
    ((1, 7, 11, 9), (3, 5), (3, 1), (2, 2), (2, 2), False),
    ((2, 4, 8, 8), (3, 3), (1, 1), (0, 0), (3, 3), True),
    ((2, 6, 2, 3), (3, 3), (1, 1), (1, 1), (1, 1), False),  # maps smaller than the kernel
    ((4, 16, 4, 4), (1, 1), (2, 2), (0, 0), (1, 1), True),
    # 3 x 3 at column stride 2 and 3 (nine taps a pixel where its rows and columns are
    # inside), dilated, padded beyond the stride; the same with a one-row map
    ((2, 6, 13, 12), (3, 3), (2, 2), (2, 1), (2, 2), True),
    ((1, 4, 9, 10), (3, 3), (1, 3), (0, 2), (1, 1), False),
    ((2, 9, 1, 8), (3, 3), (1, 2), (1, 1), (1, 1), True),
]


def _out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


@pytest.mark.parametrize("shape,kernel,stride,pad,dilate,bias", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loops_match_float64_sums(shape, kernel, stride, pad, dilate, bias, dtype):
    geo = SimpleNamespace(kernel=kernel, stride=stride, pad=pad, dilate=dilate)
    n, c = shape[:2]
    out_sp = tuple(_out_size(*v) for v in zip(shape[2:], kernel, stride, pad, dilate))
    rng = np.random.default_rng(sum(shape))
    x = rng.uniform(-1, 1, shape)
    w = rng.uniform(-1, 1, (c, 1, *kernel))
    b = rng.uniform(-1, 1, c) if bias else None
    g = rng.uniform(-1, 1, (n, c, *out_sp))
    want_out, want_dx, want_dw = _reference(x, w, b, g, geo)
    xs, gs, ws = _last(x.astype(dtype)), _last(g.astype(dtype)), w.astype(dtype)
    out, dx = _last(np.full((n, c, *out_sp), np.nan, dtype)), _last(np.full(shape, np.nan, dtype))
    dw = np.full(w.shape, np.nan, dtype)
    assert stored_rows(xs, out, gs, dx) and not stored_rows(x)
    forward = rows_depthwise_runner(xs, ws, None if b is None else b.astype(dtype), out, geo)
    backward = rows_depthwise_backward_runner(gs, xs, ws, dx, dw, geo)
    forward()
    backward()
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for got, want in ((out, want_out), (dx, want_dx), (dw, want_dw)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    # one gradient at a time writes only its own array
    dx[...] = 7
    rows_depthwise_backward_runner(gs, xs, ws, None, dw, geo)()
    assert (dx == 7).all()
    np.testing.assert_allclose(dw, want_dw, rtol=tol, atol=tol * np.abs(want_dw).max())
    rows_depthwise_backward_runner(gs, xs, ws, dx, None, geo)()
    np.testing.assert_allclose(dx, want_dx, rtol=tol, atol=tol * np.abs(want_dx).max())


@pytest.mark.parametrize("cuts", [[0, 9], [0, 0, 4, 9], [0, 1, 2, 3, 9, 9], [0, 3, 6, 9]])
def test_weight_gradient_parts_add_up(cuts):
    """Each part sums its own output rows into its own lanes; empty parts add nothing."""
    geo = SimpleNamespace(kernel=(3, 3), stride=(1, 1), pad=(1, 1), dilate=(1, 1))
    rng = np.random.default_rng(3)
    x, g = rng.uniform(-1, 1, (3, 4, 3, 5)), rng.uniform(-1, 1, (3, 4, 3, 5))
    w = rng.uniform(-1, 1, (4, 1, 3, 3))
    _, _, want = _reference(x, w, None, g, geo)
    xr, gr = (np.ascontiguousarray(a.transpose(0, 2, 3, 1)) for a in (x, g))
    dwt = np.empty((4, 3, 3))  # the loop writes (C, KH, KW)
    bounds = np.array(cuts, np.int64)
    loop = compiled_for("dw_weight_gradient", gr, xr, dwt, 1, 1, 1, 1, 1, 1, bounds)
    loop(gr, xr, dwt, 1, 1, 1, 1, 1, 1, bounds)
    np.testing.assert_allclose(dwt, want[:, 0], rtol=1e-12, atol=1e-12)


def test_other_layouts_are_not_taken():
    geo = SimpleNamespace(kernel=(3, 3), stride=(1, 1), pad=(1, 1), dilate=(1, 1))
    x = np.zeros((2, 4, 5, 5), np.float32)
    w = np.zeros((4, 1, 3, 3), np.float32)
    assert rows_depthwise_runner(x, w, None, np.zeros_like(x), geo) is None
    assert rows_depthwise_runner(_last(x), w, None, np.zeros_like(x), geo) is None
    assert rows_depthwise_backward_runner(_last(x), x, w, None, np.zeros_like(w), geo) is None
    flat = SimpleNamespace(kernel=(3,), stride=(1,), pad=(1,), dilate=(1,))
    assert rows_depthwise_runner(_last(x), w, None, _last(x), flat) is None
