"""ONNX Resize / Upsample importers, nearest and (N-)linear modes (see :mod:`.importer`).

graphexec's UpSampling repeats by one integer factor; ONNX resizing maps every output
coordinate back to the input by ``coordinate_transformation_mode``. With static shapes those
maps are constants, so each resized axis becomes a ``take`` of constant source indices
(nearest) or two takes blended by constant weights (linear: the source coordinate clamped to
the input, between its floor and the next index)."""
from __future__ import annotations

import math

import numpy as np

from ..importing import importer, node_attrs, node_error, op
from .common import ints, normalize

#: the largest resized axis imported (its sampling positions are computed at import)
_MAX_SIZE = 1 << 24

_NEAREST = {"round_prefer_floor": lambda v: math.ceil(v - 0.5),
            "round_prefer_ceil": lambda v: math.floor(v + 0.5),
            "floor": math.floor, "ceil": math.ceil}


def _targets(ctx, node, attrs: dict, shape: tuple, legacy: bool) -> list[tuple[int, float]]:
    """(output size, scale) per axis, from ``scales`` or ``sizes`` (and the aspect policy)."""
    rank = len(shape)
    axes = normalize(node, ints(node, attrs.get("axes", range(rank)), "axes"), rank)
    if legacy:
        scales = attrs.get("scales")
        scales = ctx.const(node, 1, "scales") if scales is None else np.array(scales)
        sizes = None
    else:
        scales, sizes = ctx.const(node, 2, "scales"), ctx.const(node, 3, "sizes")
    out = [(d, 1.0) for d in shape]
    if sizes is not None and sizes.size:
        want = ints(node, sizes, "sizes")
        if len(want) != len(axes) or min(want) < 1 or 0 in (shape[a] for a in axes):
            raise node_error(node, f"sizes {want} must give one size >= 1 per resized axis "
                              f"{axes} of a non-empty input")
        policy = attrs.get("keep_aspect_ratio_policy", b"stretch").decode()
        if policy == "stretch":
            for a, n in zip(axes, want):
                out[a] = (n, n / shape[a])
            return out
        pick = min if policy == "not_larger" else max
        scale = pick(n / shape[a] for a, n in zip(axes, want))
        for a in axes:
            out[a] = (math.floor(scale * shape[a] + 0.5), scale)
        return out
    if scales is None or scales.size != len(axes):
        raise node_error(node, f"scales must give one value per resized axis {axes}")
    for a, s in zip(axes, (float(v) for v in scales.reshape(-1))):
        if not (math.isfinite(s) and s > 0):
            raise node_error(node, f"scale {s} of axis {a} must be a finite number > 0")
        out[a] = (math.floor(shape[a] * s), s)
    return out


def _source(mode: str, i: int, n_in: int, n_out: int, scale: float) -> float:
    """The input coordinate output index ``i`` samples (coordinate_transformation_mode)."""
    if mode == "asymmetric":
        return i / scale
    if mode == "align_corners":  # over the fractional resized length n_in * scale
        return 0.0 if n_out == 1 else i * (n_in - 1) / (n_in * scale - 1)
    if mode == "pytorch_half_pixel" and n_out == 1:
        return 0.0
    if mode == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / (n_in * scale))
        return offset + (i + 0.5) / scale - 0.5
    return (i + 0.5) / scale - 0.5


def _modes(node, attrs: dict, legacy: bool) -> tuple[str, str, str]:
    """(mode, coordinate mode, nearest rounding); Upsample and Resize-10 sample at i / scale
    rounded down."""
    mode = attrs.get("mode", b"nearest").decode()
    coords = "asymmetric" if legacy else attrs.get("coordinate_transformation_mode",
                                                   b"half_pixel").decode()
    nearest = "floor" if legacy else attrs.get("nearest_mode", b"round_prefer_floor").decode()
    if mode not in ("nearest", "linear"):
        raise node_error(node, f"mode {mode!r}: only nearest and linear resizing are imported")
    if coords in ("tf_crop_and_resize", "tf_half_pixel_for_nn") or attrs.get("antialias", 0):
        raise node_error(node, f"{coords if not attrs.get('antialias', 0) else 'antialias'} "
                          "is not imported")
    return mode, coords, nearest


@importer("Resize", "Upsample")
def _resize(ctx, node):
    attrs = node_attrs(node)
    legacy = node.op_type == "Upsample" or ctx.opset < 11
    mode, coords, nearest = _modes(node, attrs, legacy)
    shape = ctx.static_shape(node, node.input[0], node.op_type)
    x = ctx.sym(node.input[0])
    targets = _targets(ctx, node, attrs, shape, legacy)
    axes = [(a, n, s) for a, ((n, s), d) in enumerate(zip(targets, shape)) if (n, s) != (d, 1.0)]
    for axis, n_out, scale in axes:
        if not 0 < n_out <= _MAX_SIZE or (coords == "align_corners" and n_out > 1 and
                                          shape[axis] * scale == 1):
            raise node_error(node, f"axis {axis} resized from {shape[axis]} to {n_out} "
                              f"(scale {scale}); sizes from 1 to {_MAX_SIZE} are imported")
        ctx.spend(node, n_out * 24, f"the sampling positions of axis {axis}")
    for k, (axis, n_out, scale) in enumerate(axes):
        src = [_source(coords, i, shape[axis], n_out, scale) for i in range(n_out)]
        suffix = "" if k == len(axes) - 1 else f"ax{axis}_out"
        if mode == "nearest":
            idx = [min(max(_NEAREST[nearest](v), 0), shape[axis] - 1) for v in src]
            x = _take(ctx, node, x, axis, idx, f"ax{axis}", suffix)
        else:
            x = _linear(ctx, node, x, axis, shape, src, suffix)
    return [x]


def _take(ctx, node, x, axis: int, idx: list[int], tag: str, suffix: str):
    name = f"{ctx.name(node)}_{tag}_index"
    ctx.consts[name] = np.array(idx, dtype=np.int64)
    return op(ctx, node, "take", [x, ctx.sym(name)], axis=axis, mode="clip", suffix=suffix)


def _linear(ctx, node, x, axis: int, shape: tuple, src: list[float], suffix: str):
    """Blend of the samples at floor(c) and floor(c) + 1 of each clamped coordinate c."""
    n_in, rank = shape[axis], len(shape)
    coords = [min(max(c, 0.0), n_in - 1.0) for c in src]
    lo = [math.floor(c) for c in coords]
    hi = [min(i + 1, n_in - 1) for i in lo]
    frac = np.array([c - i for c, i in zip(coords, lo)])
    dtype = ctx.dtype(node.input[0]) or np.dtype("float32")
    parts = []
    for tag, idx, w in (("lo", lo, 1.0 - frac), ("hi", hi, frac)):
        picked = _take(ctx, node, x, axis, idx, f"ax{axis}_{tag}", f"ax{axis}_{tag}")
        wname = f"{ctx.name(node)}_ax{axis}_{tag}_weight"
        ctx.consts[wname] = w.astype(dtype).reshape([-1 if a == axis else 1
                                                      for a in range(rank)])
        parts.append(op(ctx, node, "broadcast_mul", [picked, ctx.sym(wname)],
                        suffix=f"ax{axis}_{tag}_w"))
    return op(ctx, node, "elemwise_add", parts, suffix=suffix)
