"""Spatial converters: Convolution, Deconvolution and Pooling. Channel-last layouts (NWC,
NHWC, NDHWC) are transposed to channel-first around the ONNX op, their weights too."""
from __future__ import annotations

import math
from typing import Callable

from graphexec.core.ops.common import known, lowest
from graphexec.core.ops.conv import (channel_last, conv_geometry, deconv_adjustments, deconv_pads,
                                     pool_geometry, to_channel_first)

from ..convert import ConvertCall, converter

Emit = Callable[[ConvertCall, list, str], None]


def _channel_first(emit: Emit, transposed: int):
    """A converter running ``emit(c, inputs, out)`` on channel-first values: with a
    channel-last layout the first ``transposed`` inputs (data, weight) are transposed to
    channel-first and the result back."""
    def convert(c: ConvertCall) -> None:
        ins = list(c.inputs)
        if not channel_last(c.p.layout):
            emit(c, ins, c.out)
            return
        nd = len(c.in_shapes[0]) - 2
        perm = [0, nd + 1, *range(1, nd + 1)]
        for i in range(transposed):
            ins[i] = c.b.one("Transpose", [ins[i]], hint=c.hint("first"), perm=perm)
        y = c.b.fresh(c.hint("channel_first"))
        emit(c, ins, y)
        c.b.one("Transpose", [y], c.out, perm=[0, *range(2, nd + 2), 1])
    return convert


def _conv(c: ConvertCall, ins: list, out: str) -> None:
    geo = conv_geometry(c.p)
    ins = ins[:2] if c.p.no_bias else ins[:3]
    c.b.one("Conv", ins, out, kernel_shape=list(geo.kernel), strides=list(geo.stride),
            dilations=list(geo.dilate), pads=list(geo.pad) * 2, group=c.p.num_group)


def _deconv(c: ConvertCall, ins: list, out: str) -> None:
    """MXNet crops ``pad`` from both ends of the full transposed convolution and adds ``adj``
    at the end: pads (pad, pad - adj), with output_padding only for what exceeds pad."""
    p = c.p
    geo = conv_geometry(p, "deconvolution")
    adj, target = deconv_adjustments(p, len(geo.kernel))
    begins, ends, extra = [], [], []
    for axis, size in enumerate(to_channel_first(c.in_shapes[0], geo.last)[2:]):
        pad, a = deconv_pads(size, axis, geo, adj, target)
        begins.append(pad)
        ends.append(max(pad - a, 0))
        extra.append(max(a - pad, 0))
    ins = ins[:2] if p.no_bias else ins[:3]
    c.b.one("ConvTranspose", ins, out, kernel_shape=list(geo.kernel), strides=list(geo.stride),
            dilations=list(geo.dilate), pads=begins + ends, output_padding=extra,
            group=p.num_group)


converter("Convolution")(_channel_first(_conv, 2))
converter("Deconvolution")(_channel_first(_deconv, 2))


# -- Pooling ----------------------------------------------------------------------------------
def _pooling_supports(node, shapes) -> "bool | str":
    p = node.params
    if p.global_pool or p.pool_type != "avg" or p.pooling_convention == "same":
        return True
    return _avg_pool_counts(p, _pool_pads(p, shapes))


def _pool_pads(p, shapes) -> list | None:
    """(left, right) pads per spatial axis; None when they depend on an unknown shape."""
    if p.pooling_convention == "valid":
        return [(d, d) for d in (p.pad or (0,) * len(p.kernel))]
    if not shapes or not known(shapes[0]):
        return None
    return list(pool_geometry(p, tuple(shapes[0]))[0].pad)


def _avg_pool_counts(p, pads: list | None) -> "bool | str":
    """Where ONNX's divisor of an avg window differs from MXNet's: 'full' windows running
    past the padded input (MXNet counts less padding), and, without count_include_pad,
    windows over padding alone (ONNX would divide by 0)."""
    if pads is None:
        return "avg pooling with pooling_convention 'full' needs the input shape"
    if p.count_include_pad is False:
        if any(max(pair) >= k for pair, k in zip(pads, p.kernel)):
            return "avg pooling without count_include_pad and windows over padding alone " \
                   "is not converted"
    elif any(right > left for left, right in pads):
        return "avg pooling whose 'full' windows run past the padded input is not " \
               "converted (ONNX would count the extra padding)"
    return True


def _pool(c: ConvertCall, ins: list, out: str) -> None:
    """max and avg map to ONNX; sum is avg over windows counting the whole kernel, times its
    size; lp (as MXNet: x ** p summed, then the real root keeping the sum's sign) is the
    sum pooling of x ** p."""
    p, dt, x = c.p, c.in_dtypes[0], ins[0]
    if p.pool_type in ("max", "avg"):
        _pooled(c, x, "MaxPool" if p.pool_type == "max" else "AveragePool", out)
        return
    power = p.p_value if p.pool_type == "lp" else 1
    if power != 1:
        x = c.b.one("Pow", [x, c.b.const(power, dt, c.hint("p"))], hint=c.hint("pow"))
    shape = to_channel_first(c.in_shapes[0], channel_last(p.layout))
    size = math.prod(shape[2:] if p.global_pool else p.kernel)
    mean = _pooled(c, x, "AveragePool", None)
    total = c.b.one("Mul", [mean, c.b.const(size, dt, c.hint("size"))],
                    out if power == 1 else None, hint=c.hint("sum"))
    if power != 1:
        _signed_root(c, total, power, out)


def _pooled(c: ConvertCall, x: str, op: str, out: str | None) -> str:
    """``op`` (MaxPool / AveragePool) of ``x``, global or over windows, into ``out``."""
    if c.p.global_pool:
        return c.b.one(f"Global{op}", [x], out, hint=c.hint("pool"))
    return _window_pool(c, x, op, out)


def _signed_root(c: ConvertCall, x: str, power: int, out: str) -> None:
    """sign(x) * |x| ** (1 / power) into ``out``."""
    b, dt = c.b, c.in_dtypes[0]
    root = b.one("Pow", [b.one("Abs", [x], hint=c.hint("abs")),
                         b.const(1 / power, dt, c.hint("inv_p"))], hint=c.hint("root"))
    b.one("Mul", [b.one("Sign", [x], hint=c.hint("sign")), root], out)


def _window_pool(c: ConvertCall, x: str, op: str, out: str | None) -> str:
    """Explicit (left, right) pads from graphexec's geometry, so 'full' and 'same' windows
    need no ceil_mode or auto_pad (ONNX drops a last window starting in the padding, MXNet
    keeps it). Pads as wide as the kernel (ONNX Runtime refuses them) become a Pad node
    filled with the dtype's lowest value (max) or 0 (every window then counts the kernel)."""
    geo, _ = pool_geometry(c.p, tuple(c.in_shapes[0]))
    pads = [left for left, _ in geo.pad] + [right for _, right in geo.pad]
    attrs = {"strides": list(geo.stride), "kernel_shape": list(geo.kernel)}
    if all(max(pair) < k for pair, k in zip(geo.pad, geo.kernel)):
        attrs["pads"] = pads
    else:
        x = _padded(c, x, pads, lowest(c.in_dtypes[0]) if op == "MaxPool" else 0)
    if op == "AveragePool":
        attrs["count_include_pad"] = int(c.p.pool_type != "avg"
                                         or c.p.count_include_pad in (None, True))
    return c.b.one(op, [x], out, hint=c.hint("pool"), **attrs)


def _padded(c: ConvertCall, x: str, pads: list[int], fill) -> str:
    """``x`` inside a border of ``fill`` (spatial ``pads``, begins then ends)."""
    nd = len(pads) // 2
    full = [0, 0] + pads[:nd] + [0, 0] + pads[nd:]
    value = c.b.const(fill, c.in_dtypes[0], c.hint("fill"))
    return c.b.one("Pad", [x, c.b.ints(full, c.hint("pads")), value], hint=c.hint("padded"))


converter("Pooling", supports=_pooling_supports)(_channel_first(_pool, 1))
