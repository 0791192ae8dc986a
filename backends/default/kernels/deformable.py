"""Native kernels of the deformable convolutions (core/ops/deformable.py) and their backward
ops. The sampled columns (N, C, K, L) — K kernel taps, L output positions — are gathered for
all taps at once (four flat-index gathers per deformable group, MXNet's bilinear rules), then
one grouped matmul with the weight gives the output, as im2col convolution does. The backward
pass multiplies the output gradient back through the weight and scatters it through the same
bilinear weights (``bincount``) for the data; the offsets' gradient is the derivative of the
bilinear read, the mask's the value read."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from graphexec.core.ops.conv import conv_geometry

from .base import kernel
from .nn import work_dtype

__all__ = ["Taps", "taps"]


class Taps(NamedTuple):
    """Bilinear reads of every (sample, deformable group, tap, position): corner flat indices
    and validity (4 each, order ll, lh, hl, hh), the row/column weights of the high corner and
    the derivative of those weights with respect to the position (0 where clamped)."""

    index: list
    inside: list
    ly: object
    lx: object
    dly: object
    dlx: object


def taps(xp, p, offset, shape_in: tuple, modulated: bool) -> Taps:
    """Where each tap reads, from ``offset`` (N, dg * 2K, oh, ow) over data of ``shape_in``."""
    geo = conv_geometry(p, "deformable convolution")
    n, _, h, w = shape_in
    dg, (kh, kw) = p.num_deformable_group, geo.kernel
    oh, ow = offset.shape[2:]
    off = offset.reshape(n, dg, kh * kw, 2, oh, ow)
    ky, kx = np.divmod(np.arange(kh * kw), kw)
    base_y = (np.arange(oh) * geo.stride[0] - geo.pad[0])[None, :, None] \
        + (ky * geo.dilate[0])[:, None, None]
    base_x = (np.arange(ow) * geo.stride[1] - geo.pad[1])[None, None, :] \
        + (kx * geo.dilate[1])[:, None, None]
    y = xp.asarray(base_y, dtype=offset.dtype) + off[:, :, :, 0]
    x = xp.asarray(base_x, dtype=offset.dtype) + off[:, :, :, 1]
    if modulated:
        ok = (y > -1) & (x > -1) & (y < h) & (x < w)
    else:
        ok = (y >= 0) & (x >= 0) & (y < h) & (x < w)
    y0, x0 = xp.floor(y), xp.floor(x)
    ly, lx = y - y0, x - x0
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    one = xp.ones_like(ly)
    if modulated:
        y1, x1, dly, dlx = y0 + 1, x0 + 1, one, one
    else:  # DCNv1 (CPU): a read in the last row / column stays on it
        clamp_y, clamp_x = y0 >= h - 1, x0 >= w - 1
        y1, x1 = xp.where(clamp_y, y0, y0 + 1), xp.where(clamp_x, x0, x0 + 1)
        ly, lx = xp.where(clamp_y, 0, ly), xp.where(clamp_x, 0, lx)
        dly, dlx = xp.where(clamp_y, 0, one), xp.where(clamp_x, 0, one)
    index, inside = [], []
    for cy, cx in ((y0, x0), (y0, x1), (y1, x0), (y1, x1)):
        valid = ok & (cy >= 0) & (cy < h) & (cx >= 0) & (cx < w)
        index.append(xp.where(valid, cy * w + cx, 0).reshape(n, dg, 1, -1))
        inside.append(valid.reshape(n, dg, 1, -1))
    flat = (n, dg, 1, -1)
    return Taps(index, inside, ly.reshape(flat), lx.reshape(flat), dly.reshape(flat),
                dlx.reshape(flat))


def _corners(xp, data, t: Taps, dg: int):
    """The four corner values (N, dg, C / dg, K * L) each, zero where outside."""
    n, c = data.shape[:2]
    grouped = data.reshape(n, dg, c // dg, -1)
    return [xp.take_along_axis(grouped, idx, axis=3) * ok for idx, ok in zip(t.index, t.inside)]


def _weights(t: Taps):
    hy, hx = 1 - t.ly, 1 - t.lx
    return hy * hx, hy * t.lx, t.ly * hx, t.ly * t.lx


def _sampled(xp, data, t: Taps, dg: int):
    vals = _corners(xp, data, t, dg)
    return sum(v * wt for v, wt in zip(vals, _weights(t)))


def _split(call, modulated: bool):
    ins = call.inputs
    data, offset = ins[0], ins[1]
    mask = ins[2] if modulated else None
    k = 3 if modulated else 2
    weight = ins[k]
    bias = ins[k + 1] if len(ins) > k + 1 else None
    return data, offset, mask, weight, bias


def _columns(xp, p, data, offset, mask, modulated: bool):
    """(values (N, dg, C / dg, K * L), taps, columns (N, C, K, L)) in the working dtype."""
    wdt = work_dtype(data.dtype)
    data, offset = data.astype(wdt, copy=False), offset.astype(wdt, copy=False)
    t = taps(xp, p, offset, data.shape, modulated)
    vals = _sampled(xp, data, t, p.num_deformable_group)
    cols = vals if mask is None else vals * mask.astype(wdt, copy=False).reshape(
        vals.shape[0], vals.shape[1], 1, -1)
    n, c = data.shape[:2]
    k = p.kernel[0] * p.kernel[1]
    return vals, t, cols.reshape(n, c, k, -1)


def _forward(modulated: bool):
    def factory(call):
        xp, p = call.xp, call.params
        data, offset, mask, weight, bias = _split(call, modulated)
        out = call.outputs[0]
        n, f = out.shape[:2]
        g = p.num_group

        def run():
            _, _, cols = _columns(xp, p, data, offset, mask, modulated)
            w = weight.reshape(g, f // g, -1).astype(cols.dtype, copy=False)
            res = xp.matmul(w, cols.reshape(n, g, -1, cols.shape[-1]))
            if bias is not None:
                res = res + bias.reshape(1, g, f // g, 1)
            xp.copyto(out, res.reshape(out.shape), casting="unsafe")
        return run
    return factory


def _backward(modulated: bool):
    def factory(call):
        xp, p = call.xp, call.params
        og = call.inputs[0]
        data, offset, mask, weight, bias = _split(_Shifted(call), modulated)
        grads = dict(zip(("data", "offset", "mask", "weight", "bias") if modulated
                         else ("data", "offset", "weight", "bias"), call.outputs))
        wanted = dict(zip(grads, call.req))
        n, f = og.shape[:2]
        g, dg = p.num_group, p.num_deformable_group

        def run():
            vals, t, cols = _columns(xp, p, data, offset, mask, modulated)
            wdt = cols.dtype
            go = og.astype(wdt, copy=False).reshape(n, g, f // g, -1)
            if wanted.get("bias", "null") != "null":
                _put(xp, grads["bias"], go.sum(axis=(0, 3)))
            if wanted["weight"] != "null":
                cg = cols.reshape(n, g, -1, cols.shape[-1])
                _put(xp, grads["weight"], xp.matmul(go, cg.transpose(0, 1, 3, 2)).sum(axis=0))
            w = weight.reshape(g, f // g, -1).astype(wdt, copy=False)
            dcols = xp.matmul(w.transpose(0, 2, 1), go).reshape(vals.shape)
            if modulated and wanted["mask"] != "null":
                _put(xp, grads["mask"], (dcols * vals).sum(axis=2))
            if modulated:
                dcols = dcols * mask.astype(wdt, copy=False).reshape(n, dg, 1, -1)
            if wanted["offset"] != "null":
                _put(xp, grads["offset"], _offset_grad(xp, data.astype(wdt, copy=False), t,
                                                       dcols, dg, offset.shape))
            if wanted["data"] != "null":
                _put(xp, grads["data"], _data_grad(xp, t, dcols, data.shape, dg))
        return run
    return factory


class _Shifted:
    """A view of a backward call whose inputs skip the output gradient (for ``_split``)."""

    def __init__(self, call):
        self.inputs = call.inputs[1:]


def _put(xp, out, value) -> None:
    xp.copyto(out, value.reshape(out.shape), casting="unsafe")


def _offset_grad(xp, data, t: Taps, dcols, dg: int, shape):
    """d(value)/d(y) = dly * ((1 - lx)(hl - ll) + lx (hh - lh)), likewise for x; summed over
    the channels of each deformable group."""
    ll, lh, hl, hh = _corners(xp, data, t, dg)
    dy = t.dly * ((1 - t.lx) * (hl - ll) + t.lx * (hh - lh))
    dx = t.dlx * ((1 - t.ly) * (lh - ll) + t.ly * (hh - hl))
    n, oh, ow = shape[0], shape[2], shape[3]
    k = shape[1] // dg // 2
    gy, gx = ((dcols * d).sum(axis=2) for d in (dy, dx))
    return xp.stack([gy.reshape(n, dg, k, oh, ow), gx.reshape(n, dg, k, oh, ow)], axis=3)


def _data_grad(xp, t: Taps, dcols, shape: tuple, dg: int):
    n, c, h, w = shape
    cpg = c // dg
    base = (xp.arange(n * dg * cpg) * (h * w)).reshape(n, dg, cpg, 1)
    total = xp.zeros(n * c * h * w, dtype=dcols.dtype)
    for idx, ok, wt in zip(t.index, t.inside, _weights(t)):
        flat = (base + idx).reshape(-1)
        contrib = (dcols * (wt * ok)).reshape(-1)
        total += xp.bincount(flat, contrib, minlength=total.size).astype(total.dtype)
    return total


for _name, _modulated in (("DeformableConvolution", False),
                          ("ModulatedDeformableConvolution", True)):
    kernel(f"_contrib_{_name}")(_forward(_modulated))
    kernel(f"_backward_{_name}")(_backward(_modulated))
