"""ONNX convolution and pooling importers: Conv, ConvTranspose, MaxPool / AveragePool /
LpPool and their global forms (see :mod:`.importer`).

graphexec pads both sides of an axis equally: ONNX pads that differ (explicit, or from
``auto_pad`` SAME_*) become a ``Pad`` node for the difference (4-D / 5-D inputs), and a
ceil-mode output one window shorter than graphexec's 'full' convention is sliced."""
from __future__ import annotations

import numpy as np

from ..checks import MAX_RANK
from ..importing import importer, node_attrs, node_error, op


def _geometry(node, kernel: tuple, **lists) -> None:
    """Every per-axis attribute has one value per spatial axis (``pads``: two), kernel sizes,
    strides and dilations are positive, pads not negative."""
    nd = len(kernel)
    if not 1 <= nd <= MAX_RANK or min(kernel) < 1:
        raise node_error(node, f"kernel {list(kernel)} must hold 1 to {MAX_RANK} sizes >= 1")
    for name, values in lists.items():
        want, low = (2 * nd, 0) if name == "pads" else (nd, 0 if "pad" in name else 1)
        if values is not None and (len(values) != want or min(values, default=low) < low):
            raise node_error(node, f"{name} {list(values)} must hold {want} values >= {low} "
                              f"for a {nd}-D kernel")


def _spatial(ctx, node, nd: int, why: str) -> tuple:
    return ctx.static_shape(node, node.input[0], why)[2:2 + nd]


def _pads(ctx, node, kernel: tuple, strides: tuple, dil: tuple) -> tuple[list, list]:
    """(begin, end) pads per spatial axis, from ``pads`` or ``auto_pad``."""
    attrs, nd = node_attrs(node), len(kernel)
    mode = attrs.get("auto_pad", b"NOTSET").decode()
    if mode in ("NOTSET", "VALID"):
        pads = list(attrs.get("pads", [0] * 2 * nd)) if mode == "NOTSET" else [0] * 2 * nd
        return pads[:nd], pads[nd:]
    begin, end = [], []
    for x, k, s, d in zip(_spatial(ctx, node, nd, f"auto_pad {mode}"), kernel, strides, dil):
        total = max((-(-x // s) - 1) * s + (k - 1) * d + 1 - x, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else big)
        end.append(big if mode == "SAME_UPPER" else small)
    return begin, end


def _pad_extra(ctx, node, x, begin: list, end: list, fill: float, suffix: str = "pad"):
    """``x`` padded by what ``begin`` / ``end`` exceed their common part; the common part."""
    common = [min(b, e) for b, e in zip(begin, end)]
    if common == list(begin) == list(end):
        return x, tuple(common)
    if len(begin) not in (2, 3):
        raise node_error(node, f"pads {begin + end} differ per side on a {len(begin)}-D input;"
                          " graphexec pads both sides equally and its Pad takes 4-D / 5-D data")
    width = [0, 0, 0, 0]
    for b, e, c in zip(begin, end, common):
        width += [b - c, e - c]
    return op(ctx, node, "Pad", [x], mode="constant", pad_width=tuple(width),
              constant_value=fill, suffix=suffix), tuple(common)


@importer("Conv")
def _conv(ctx, node):
    attrs = node_attrs(node)
    w_shape = ctx.static_shape(node, node.input[1], "Conv's num_filter and kernel")
    kernel = tuple(attrs.get("kernel_shape", w_shape[2:]))
    nd = len(kernel)
    _geometry(node, kernel, strides=attrs.get("strides"), dilations=attrs.get("dilations"),
              pads=attrs.get("pads"))
    if attrs.get("group", 1) < 1:
        raise node_error(node, f"group {attrs['group']} must be at least 1")
    strides, dil = tuple(attrs.get("strides", [1] * nd)), tuple(attrs.get("dilations", [1] * nd))
    begin, end = _pads(ctx, node, kernel, strides, dil)
    x, pad = _pad_extra(ctx, node, ctx.sym(node.input[0]), begin, end, 0.0)
    ins = [x] + [ctx.sym(n) for n in node.input[1:] if n]
    return [op(ctx, node, "Convolution", ins, kernel=kernel, num_filter=w_shape[0],
               num_group=attrs.get("group", 1), no_bias=len(ins) < 3, stride=strides,
               dilate=dil, pad=pad)]


def _deconv_pads(ctx, node, kernel, strides, dil) -> tuple[list, list]:
    """(begin, end) crops of the full transposed-convolution output per spatial axis."""
    attrs, nd = node_attrs(node), len(kernel)
    out_pad = list(attrs.get("output_padding", [0] * nd))
    mode = attrs.get("auto_pad", b"NOTSET").decode()
    if "output_shape" not in attrs and mode in ("NOTSET", "VALID"):
        pads = list(attrs.get("pads", [0] * 2 * nd)) if mode == "NOTSET" else [0] * 2 * nd
        return pads[:nd], [e - o for e, o in zip(pads[nd:], out_pad)]
    xs = _spatial(ctx, node, nd, "ConvTranspose output_shape / auto_pad")
    target = list(attrs.get("output_shape", [x * s for x, s in zip(xs, strides)]))[-nd:]
    begin, end = [], []
    for x, k, s, d, o, t in zip(xs, kernel, strides, dil, out_pad, target):
        total = s * (x - 1) + o + (k - 1) * d + 1 - t
        small, big = total // 2, total - total // 2
        b, e = (small, big) if mode == "SAME_UPPER" else (big, small)
        begin.append(b)
        end.append(e - o)
    return begin, end


@importer("ConvTranspose")
def _conv_transpose(ctx, node):
    """Deconvolution crops ``pad`` before and ``pad - adj`` after (0 <= adj < stride): the
    largest such pad within the wanted crops is used, and the rest sliced off its output."""
    attrs = node_attrs(node)
    w_shape = ctx.static_shape(node, node.input[1], "ConvTranspose's num_filter and kernel")
    kernel = tuple(attrs.get("kernel_shape", w_shape[2:]))
    nd, group = len(kernel), attrs.get("group", 1)
    _geometry(node, kernel, strides=attrs.get("strides"), dilations=attrs.get("dilations"),
              pads=attrs.get("pads"), output_padding=attrs.get("output_padding"))
    if group < 1:
        raise node_error(node, f"group {group} must be at least 1")
    if "output_shape" in attrs and len(attrs["output_shape"]) not in (nd, nd + 2):
        raise node_error(node, f"output_shape {list(attrs['output_shape'])} must give the "
                          f"{nd} spatial sizes (or the full shape)")
    strides, dil = tuple(attrs.get("strides", [1] * nd)), tuple(attrs.get("dilations", [1] * nd))
    begin, end = _deconv_pads(ctx, node, kernel, strides, dil)
    pad = [min(b, e + s - 1) if e <= b else b for b, e, s in zip(begin, end, strides)]
    if min(pad) < 0:
        raise node_error(node, f"crops {begin} / {end} (pads less output_padding) are not "
                          "expressible as Deconvolution pad and adj")
    adj = [p - e if e <= b else 0 for b, e, p in zip(begin, end, pad)]
    ins = [ctx.sym(n) for n in node.input if n]
    crops = [(b - p, e - p + a) for b, e, p, a in zip(begin, end, pad, adj)]
    out = op(ctx, node, "Deconvolution", ins, kernel=kernel, num_filter=w_shape[1] * group,
             num_group=group, no_bias=len(ins) < 3, stride=strides, dilate=dil,
             pad=tuple(pad), adj=tuple(adj), suffix="full" if any(map(any, crops)) else "")
    return [_crop(ctx, node, out, crops)]


def _crop(ctx, node, x, crops: list[tuple[int, int]], tag: str = ""):
    """``x`` with ``(before, after)`` elements sliced off each spatial axis; the last slice
    is named ``tag`` (the node's own name when empty)."""
    todo = [(i, c) for i, c in enumerate(crops) if any(c)]
    for k, (i, (lo, hi)) in enumerate(todo):
        last = k == len(todo) - 1
        x = op(ctx, node, "slice_axis", [x], axis=2 + i, begin=lo, end=-hi if hi else None,
               suffix=tag if last else f"{tag}crop{i}")
    return x


def _pool_out(x: int, k: int, s: int, begin: int, end: int, ceil: bool) -> int:
    """ONNX's output length: a ceil-mode window must start inside the input or left pad."""
    span = x + begin + end - k
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= x + begin:
        out -= 1
    return out


def _convention(ctx, node, kernel, strides, pad, begin, end) -> tuple[str, list]:
    """graphexec's pooling_convention giving ONNX's windows, and (0, n) crops of the
    trailing windows 'full' adds beyond them."""
    if not node_attrs(node).get("ceil_mode", 0):
        return "valid", [(0, 0)] * len(kernel)
    xs = _spatial(ctx, node, len(kernel), "ceil_mode")
    want = [_pool_out(x, k, s, b, e, True) for x, k, s, b, e in
            zip(xs, kernel, strides, begin, end)]
    padded = [x + b + e - 2 * p for x, b, e, p in zip(xs, begin, end, pad)]
    valid = [(x + 2 * p - k) // s + 1 for x, p, k, s in zip(padded, pad, kernel, strides)]
    if want == valid:
        return "valid", [(0, 0)] * len(kernel)
    full = [-(-(x + 2 * p - k) // s) + 1 for x, p, k, s in zip(padded, pad, kernel, strides)]
    return "full", [(0, f - w) for f, w in zip(full, want)]


def _pool_attrs(ctx, node) -> dict:
    attrs = node_attrs(node)
    kernel = tuple(attrs["kernel_shape"])
    nd = len(kernel)
    _geometry(node, kernel, strides=attrs.get("strides"), dilations=attrs.get("dilations"),
              pads=attrs.get("pads"))
    dil = list(attrs.get("dilations", [1] * nd))
    if dil != [1] * nd:
        raise node_error(node, f"pooling dilations {dil}: graphexec's Pooling has none")
    if attrs.get("storage_order", 0):
        raise node_error(node, "storage_order=1 (column-major indices) is not imported")
    strides = tuple(attrs.get("strides", [1] * nd))
    begin, end = _pads(ctx, node, kernel, strides, (1,) * nd)
    return {"kernel": kernel, "stride": strides, "begin": begin, "end": end}


@importer("MaxPool", "AveragePool", "LpPool")
def _pool(ctx, node):
    if len(node.output) > 1 and node.output[1]:
        raise node_error(node, "the MaxPool Indices output is not imported")
    attrs, geo = node_attrs(node), _pool_attrs(ctx, node)
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[node.op_type]
    include = bool(attrs.get("count_include_pad", 0))
    x = ctx.sym(node.input[0])
    if kind == "lp":
        x = op(ctx, node, "abs", [x], suffix="abs")
    if kind == "avg" and not include and geo["begin"] != geo["end"]:
        return [_avg_excluding_pads(ctx, node, x, geo)]
    fill = _lowest(ctx.dtype(node.input[0])) if kind == "max" else 0.0
    x, pad = _pad_extra(ctx, node, x, geo["begin"], geo["end"], fill)
    conv, crops = _convention(ctx, node, geo["kernel"], geo["stride"], pad, geo["begin"],
                              geo["end"])
    extra = {"count_include_pad": include} if kind == "avg" else {}
    if kind == "lp":
        extra["p_value"] = attrs.get("p", 2)
    out = op(ctx, node, "Pooling", [x], kernel=geo["kernel"], pool_type=kind,
             pooling_convention=conv, stride=geo["stride"], pad=pad, **extra,
             suffix="full" if any(map(any, crops)) else "")
    return [_crop(ctx, node, out, crops)]


def _lowest(dtype) -> float:
    """Max pooling's padding: below every value of ``dtype``."""
    if dtype is not None and dtype.kind in "iu":
        return float(np.iinfo(dtype).min)
    return float("-inf")


def _avg_excluding_pads(ctx, node, x, geo: dict):
    """Average pooling over unequal pads that are not counted: window sums of the padded
    input divided by window sums of a padded ones tensor (the counted positions)."""
    ones = op(ctx, node, "ones_like", [x], suffix="ones")
    sums = []
    for tag, src in (("num", x), ("den", ones)):
        padded, pad = _pad_extra(ctx, node, src, geo["begin"], geo["end"], 0.0, f"{tag}_pad")
        conv, crops = _convention(ctx, node, geo["kernel"], geo["stride"], pad, geo["begin"],
                                  geo["end"])
        pooled = op(ctx, node, "Pooling", [padded], kernel=geo["kernel"], pool_type="sum",
                    pooling_convention=conv, stride=geo["stride"], pad=pad, suffix=tag)
        sums.append(_crop(ctx, node, pooled, crops, f"{tag}_crop"))
    return op(ctx, node, "elemwise_div", sums)


@importer("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(ctx, node):
    kind = {"GlobalMaxPool": "max", "GlobalAveragePool": "avg", "GlobalLpPool": "lp"}
    x, extra = ctx.sym(node.input[0]), {}
    if node.op_type == "GlobalLpPool":
        x = op(ctx, node, "abs", [x], suffix="abs")
        extra["p_value"] = node_attrs(node).get("p", 2)
    return [op(ctx, node, "Pooling", [x], global_pool=True, pool_type=kind[node.op_type],
               **extra)]
