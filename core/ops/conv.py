"""Spatial layers: Convolution, Deconvolution and Pooling (1-D, 2-D and 3-D; channel-first
layouts NCW/NCHW/NCDHW by default, channel-last NWC/NHWC/NDHWC on request).

The geometry helpers here (``conv_geometry``, ``deconv_pads``, ``pool_geometry``) are shared
with the native kernels so shape inference and computation agree on every size.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .common import (Bool, Enum, InferError, Int, OpDef, OptInt, Shape, assign, assign_dtype, fmt,
                     register_op, same_type)
from .nn import OptBool, OptEnum, PositiveInt

__all__ = ["Geometry", "conv_geometry", "winograd_tiles", "WinogradTiles", "deconv_pads",
           "deconv_adjustments", "pool_geometry",
           "pool_count_region", "to_channel_first", "channel_last", "pool_outputs",
           "conv_out_size"]

_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
_CONV_DATA = {1: "3D in batch-num_filter-x", 2: "4D in batch-num_filter-y-x",
              3: "5D in batch-num_filter-depth-y-x"}
_POOL_DATA = {1: "3D in (batch, channel, x)", 2: "4D in (batch, channel, y, x)",
              3: "5D in (batch, channel, d, y, x)"}


class Geometry(NamedTuple):
    """Per-spatial-axis kernel, stride, dilation and padding, and whether channels are last."""

    kernel: tuple
    stride: tuple
    dilate: tuple
    pad: tuple
    last: bool


def channel_last(layout: str | None) -> bool:
    return layout is not None and layout.endswith("C")


def to_channel_first(shape: tuple, last: bool) -> tuple:
    """(N, *spatial, C) -> (N, C, *spatial) when ``last``; unchanged otherwise."""
    return (shape[0], shape[-1], *shape[1:-1]) if last else tuple(shape)


def from_channel_first(shape: tuple, last: bool) -> tuple:
    return (shape[0], *shape[2:], shape[1]) if last else tuple(shape)


def _per_axis(value: tuple, n: int, default: int, name: str, kernel: tuple, low: int) -> tuple:
    if not value:
        return (default,) * n
    if len(value) != n:
        raise InferError(f"{name} must have the same number of dimensions as kernel, but kernel "
                         f"is {kernel} while {name} is {value}")
    if any(v < low for v in value):
        raise InferError(f"incorrect {name} {value}: every entry must be >= {low}")
    return tuple(value)


def _check_layout(layout: str | None, n: int) -> bool:
    if layout is not None and layout not in _LAYOUTS[n]:
        raise InferError(f"layout {layout} does not fit a {n}-D kernel; expected "
                         f"{' or '.join(_LAYOUTS[n])}")
    return channel_last(layout)


def conv_geometry(p, what: str = "convolution") -> Geometry:
    """Validated geometry of a Convolution/Deconvolution node (defaults filled in)."""
    k = tuple(p.kernel)
    n = len(k)
    if n not in (1, 2, 3):
        raise InferError(f"{n}D {what} not supported: kernel must have 1, 2 or 3 dimensions, got "
                         f"kernel={k}")
    if any(v < 1 for v in k):
        raise InferError(f"incorrect kernel size {k}: every entry must be >= 1")
    return Geometry(k, _per_axis(p.stride, n, 1, "stride", k, 1),
                    _per_axis(p.dilate, n, 1, "dilate", k, 1),
                    _per_axis(p.pad, n, 0, "pad", k, 0), _check_layout(p.layout, n))


class WinogradTiles(NamedTuple):
    """How Winograd's F(2x2, 3x3) cuts a convolution: 2x2 output tiles, ``th`` x ``tw`` per
    sample, the windows offset by the padding (``ph``, ``pw``) into the input."""

    th: int
    tw: int
    ph: int
    pw: int


def winograd_tiles(p, data: tuple) -> WinogradTiles | None:
    """The F(2x2, 3x3) tiling of the Convolution ``p`` on ``data`` (NCHW), or None unless it
    is a 2-D channel-first 3x3 convolution of stride 1, no dilation, one group and a padding
    of at most 2 (the windows then stay within one tile's reach of the input)."""
    geo = conv_geometry(p)
    if (geo.kernel != (3, 3) or geo.stride != (1, 1) or geo.dilate != (1, 1) or geo.last
            or p.num_group != 1 or len(data) != 4 or max(geo.pad) > 2):
        return None
    ho, wo = (x + 2 * pad - 2 for x, pad in zip(data[2:], geo.pad))
    if ho < 1 or wo < 1:
        return None
    return WinogradTiles(-(-ho // 2), -(-wo // 2), *geo.pad)


def _check_groups(c: int, p) -> int:
    g = p.num_group
    if c >= 0 and c % g:
        raise InferError(f"input channels ({c}) must be divisible by num_group ({g})")
    if p.num_filter % g:
        raise InferError(f"num_filter ({p.num_filter}) must be divisible by num_group ({g})")
    return c // g if c >= 0 else -1


def _data_nc(data: tuple, geo: Geometry, text: dict, op: str) -> tuple:
    n = len(geo.kernel)
    if len(data) != n + 2:
        raise InferError(f"{op}: Input data should be {text[n]}, got {fmt(data)} for the "
                         f"{n}-D kernel {geo.kernel}")
    return to_channel_first(data, geo.last)


def conv_out_size(x: int, axis: int, geo: Geometry) -> int:
    """The output size along spatial ``axis`` of a convolution over ``x`` input positions
    (-1 for an unknown ``x``); InferError when the dilated kernel does not fit."""
    k, s, d, pad = geo.kernel[axis], geo.stride[axis], geo.dilate[axis], geo.pad[axis]
    dk = d * (k - 1) + 1
    if x < 0:
        return -1
    if dk > x + 2 * pad:
        raise InferError(f"kernel size exceeds input: the (dilated) kernel spans {dk} along "
                         f"spatial axis {axis} but the input is {x} padded to {x + 2 * pad}")
    return (x + 2 * pad - dk) // s + 1


def _conv_back(p, geo: Geometry, ins, outs) -> None:
    """MXNet's incomplete inference from a known output: the batch size always, a spatial
    size where the stride is 1."""
    out = outs[0]
    if out is None or ins[0] is None or len(out) != len(geo.kernel) + 2:
        return
    o_n, _, *o_sp = to_channel_first(out, geo.last)
    d_n, d_c, *d_sp = to_channel_first(ins[0], geo.last)
    sp = [x if x >= 0 or o < 0 or geo.stride[i] != 1 else
          o + geo.dilate[i] * (geo.kernel[i] - 1) - 2 * geo.pad[i]
          for i, (x, o) in enumerate(zip(d_sp, o_sp))]
    assign(ins, 0, from_channel_first((d_n if d_n >= 0 else o_n, d_c, *sp), geo.last))


def _conv_shape(p, ins, outs):
    geo = conv_geometry(p)
    data = ins[0]
    if data is None:
        return
    _data_nc(data, geo, _CONV_DATA, "Convolution")
    _conv_back(p, geo, ins, outs)
    n, c, *sp = _data_nc(ins[0], geo, _CONV_DATA, "Convolution")
    cg = _check_groups(c, p)
    assign(ins, 1, from_channel_first((p.num_filter, cg, *geo.kernel), geo.last))
    if not p.no_bias:
        assign(ins, 2, (p.num_filter,))
    out = (n, p.num_filter, *(conv_out_size(x, i, geo) for i, x in enumerate(sp)))
    assign(outs, 0, from_channel_first(out, geo.last), "out")


def deconv_pads(x: int, axis: int, geo: Geometry, adj: tuple, target: tuple) -> tuple[int, int]:
    """(pad, adj) actually applied along ``axis``: the given ones, or the ones that produce
    ``target_shape`` when it is set (nonzero) for this axis."""
    k, s, d = geo.kernel[axis], geo.stride[axis], geo.dilate[axis]
    full = s * (x - 1) + d * (k - 1) + 1
    if target and target[axis] > 0:
        if target[axis] > full:
            raise InferError(f"too big target shape: target_shape {target} asks for "
                             f"{target[axis]} along spatial axis {axis} but at most {full} is "
                             f"reachable from an input of {x}")
        total = full - target[axis]
        return (total + 1) // 2, total % 2
    return geo.pad[axis], adj[axis]


def deconv_adjustments(p, n: int) -> tuple[tuple, tuple]:
    """Validated (adj, target_shape) of a Deconvolution node, zeros where unset."""
    kernel = tuple(p.kernel)
    adj = _per_axis(p.adj, n, 0, "adj", kernel, 0)
    target = _per_axis(p.target_shape, n, 0, "target_shape", kernel, 0)
    stride = p.stride or (1,) * n
    for i in range(n):
        if adj[i] >= stride[i] and not target[i]:   # a target shape overrides adj (MXNet)
            raise InferError(f"adj must be smaller than stride along every axis, got adj {adj} "
                             f"and stride {tuple(stride)}")
    return adj, target


def _deconv_out(x: int, axis: int, geo: Geometry, adj: tuple, target: tuple) -> int:
    if x < 0:
        return -1
    pad, a = deconv_pads(x, axis, geo, adj, target)
    k, s, d = geo.kernel[axis], geo.stride[axis], geo.dilate[axis]
    out = s * (x - 1) + d * (k - 1) + 1 - 2 * pad + a
    if out < 1:
        raise InferError(f"the output would be empty along spatial axis {axis}: input {x}, "
                         f"kernel {k}, stride {s}, pad {pad}")
    return out


def _deconv_shape(p, ins, outs):
    geo = conv_geometry(p, "deconvolution")
    adj, target = deconv_adjustments(p, len(geo.kernel))
    data = ins[0]
    if data is None:
        return
    n, c, *sp = _data_nc(data, geo, _CONV_DATA, "Deconvolution")
    _check_groups(c, p)
    fg = p.num_filter // p.num_group
    assign(ins, 1, from_channel_first((c, fg, *geo.kernel), geo.last))
    if not p.no_bias:
        assign(ins, 2, (p.num_filter,))
    out = (n, p.num_filter, *(_deconv_out(x, i, geo, adj, target) for i, x in enumerate(sp)))
    assign(outs, 0, from_channel_first(out, geo.last), "out")


# -- Pooling ----------------------------------------------------------------------------------
def pool_outputs(p) -> list[str]:
    """Max pooling in a channel-first layout keeps MXNet's hidden ``workspace`` output (int32,
    the output's shape; in training it receives each window's argmax for the gradient)."""
    if p.pool_type == "max" and not channel_last(p.layout):
        return ["output", "workspace"]
    return ["output"]


def pool_geometry(p, data: tuple) -> tuple[Geometry, tuple]:
    """(geometry, output spatial sizes) of a Pooling node for ``data`` (its full shape).
    Pads are (left, right) pairs in ``Geometry.pad`` so 'full' and 'same' fit one rule."""
    nd = len(data) - 2
    if p.global_pool:
        if nd not in (1, 2, 3):
            raise InferError(f"Pooling: Input data should be 3D in (batch, channel, x) Or 4D in "
                             f"(batch, channel, y, x) Or 5D in (batch, channel, d, y, x), got "
                             f"{fmt(data)}")
        last = _check_layout(p.layout, nd)
        sp = to_channel_first(data, last)[2:]
        return Geometry(sp, (1,) * nd, (1,) * nd, ((0, 0),) * nd, last), (1,) * nd
    kernel = tuple(p.kernel)
    if len(kernel) not in (1, 2, 3):
        raise InferError(f"{len(kernel)}D pooling not supported: kernel must have 1, 2 or 3 "
                         f"dimensions (or set global_pool=True), got kernel={kernel}")
    if nd != len(kernel):
        raise InferError(f"Pooling: Input data should be {_POOL_DATA[len(kernel)]} for the "
                         f"kernel {kernel}, got {fmt(data)}")
    if p.pool_type == "lp" and p.p_value is None:
        raise InferError("pool_type='lp' needs p_value")
    last = _check_layout(p.layout, nd)
    stride = _per_axis(p.stride, nd, 1, "stride", kernel, 1)
    pad = _per_axis(p.pad, nd, 0, "pad", kernel, 0)
    if p.pooling_convention == "same" and (nd != 1 or any(pad)):
        raise InferError("pooling_convention='same' supports 1-D pooling without pad only, got "
                         f"kernel {kernel}, pad {p.pad}")
    sp = to_channel_first(data, last)[2:]
    pairs, out = [], []
    for i, x in enumerate(sp):
        o, pr = _pool_axis(x, kernel[i], stride[i], pad[i], p.pooling_convention, i)
        out.append(o)
        pairs.append(pr)
    return Geometry(kernel, stride, (1,) * nd, tuple(pairs), last), tuple(out)


def _pool_axis(x: int, k: int, s: int, pad: int, convention: str, axis: int):
    if x < 0:
        return -1, (pad, pad)
    if convention == "same":
        out = -(-x // s)
        total = max((out - 1) * s + k - x, 0)
        return out, (total // 2, total - total // 2)
    if k > x + 2 * pad:
        raise InferError(f"kernel size ({k}) exceeds input ({x} padded to {x + 2 * pad}) along "
                         f"spatial axis {axis}")
    if convention == "full":
        out = -(-(x + 2 * pad - k) // s) + 1
    else:
        out = (x + 2 * pad - k) // s + 1
    # 'full' windows may run past the padded input: pad the right side for them
    return out, (pad, max(pad, (out - 1) * s + k - x - pad))


def pool_count_region(p, x: int, pads: tuple[int, int]) -> tuple[int, int]:
    """Positions [lo, hi) (input coordinates) an avg window counts along one axis: the padded
    input with count_include_pad (the default), the input alone without. Windows of the
    'full' convention that run past the padded input count only what they cover."""
    if p.count_include_pad is False:
        return 0, x
    left, right = pads
    return -left, x + (right if p.pooling_convention == "same" else left)


def _pool_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    geo, out_sp = pool_geometry(p, data)
    n, c = to_channel_first(data, geo.last)[:2]
    out = from_channel_first((n, c, *out_sp), geo.last)
    for j in range(len(outs)):
        assign(outs, j, out, "out")


def _pool_type(p, ins, outs):
    if ins[0] is None and outs[0] is not None:
        ins[0] = outs[0]
    if ins[0] is not None:
        assign_dtype(outs, 0, ins[0], "out")
    if len(outs) > 1:
        assign_dtype(outs, 1, np.dtype("int32"), "out")


# -- declarations -----------------------------------------------------------------------------
_CUDNN_TUNE = OptEnum(("fastest", "limited_workspace", "off"), None)
_CONV_LAYOUT = OptEnum(("NCDHW", "NCHW", "NCW", "NDHWC", "NHWC"), None)


def _conv_params(workspace: int, no_bias: bool, extra: dict) -> dict:
    return {"kernel": Shape(), "stride": Shape(()), "dilate": Shape(()), "pad": Shape(()),
            **extra, "num_filter": PositiveInt(), "num_group": PositiveInt(1),
            "workspace": Int(workspace), "no_bias": Bool(no_bias), "cudnn_tune": _CUDNN_TUNE,
            "cudnn_off": Bool(False), "layout": _CONV_LAYOUT}


def _with_bias(p):
    return ["data", "weight"] if p.no_bias else ["data", "weight", "bias"]


def _declare() -> None:
    register_op(OpDef("Convolution", params=_conv_params(1024, False, {}), inputs=_with_bias,
                      infer_shape=_conv_shape, infer_type=same_type, traits=("conv",)))
    register_op(OpDef("Deconvolution",
                      params=_conv_params(512, True, {"adj": Shape(()),
                                                      "target_shape": Shape(())}),
                      inputs=_with_bias, infer_shape=_deconv_shape, infer_type=same_type,
                      traits=("conv",)))
    register_op(OpDef(
        "Pooling", params={
            "kernel": Shape(()), "pool_type": Enum(("avg", "lp", "max", "sum"), "max"),
            "global_pool": Bool(False), "cudnn_off": Bool(False),
            "pooling_convention": Enum(("full", "same", "valid"), "valid"),
            "stride": Shape(()), "pad": Shape(()), "p_value": OptInt(None),
            "count_include_pad": OptBool(None),
            "layout": OptEnum(("NCDHW", "NCHW", "NCW", "NDHWC", "NHWC", "NWC"), None)},
        outputs=pool_outputs, num_visible=1, infer_shape=_pool_shape, infer_type=_pool_type,
        traits=("pooling",)))


_declare()
