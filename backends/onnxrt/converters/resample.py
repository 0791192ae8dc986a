"""Resampling converters (core/ops/resample.py). Both resizers are written out with the
kernels' own float32 weights rather than ONNX's Resize, whose coordinate rules differ from
MXNet's at the borders (MXNet clamps negative half-pixel positions and the high tap):
BilinearResize2D gathers the two taps per output column, then per output row, and
AdaptiveAvgPooling2D is two MatMuls by its averaging matrices. float16 runs in float32, as
the kernels do. depth_to_space / space_to_depth are ONNX's DepthToSpace (DCR) / SpaceToDepth.
"""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.resample import adaptive_weights, resize_taps

from ..convert import ConvertCall, converter

F32 = np.dtype("float32")


def _work(c: ConvertCall) -> tuple[str, np.dtype]:
    """The data in the working dtype (float32 for float16)."""
    dt = c.in_dtypes[0]
    if dt == np.float16:
        return c.b.one("Cast", [c.x], hint=c.hint("f32"), to=1), F32
    return c.x, dt


def _finish(c: ConvertCall, y: str) -> None:
    if c.in_dtypes[0] == np.float16:
        c.b.one("Cast", [y], c.out, to=10)
    else:
        c.b.one("Identity", [y], c.out)


def _needs_shapes(node, shapes) -> "bool | str":
    if not shapes or shapes[0] is None or min(shapes[0]) < 0:
        return f"{node.op.name} needs the data's shape (its weights depend on it)"
    return True


def _interpolate(c: ConvertCall, x: str, n_in: int, n_out: int, axis: int, dt) -> str:
    lo, hi, w_lo, w_hi = resize_taps(n_in, n_out, c.p.align_corners)
    shape = [n_out, 1] if axis == 2 else [n_out]
    b, parts = c.b, []
    for idx, weight, tag in ((lo, w_lo, "lo"), (hi, w_hi, "hi")):
        taps = b.one("Gather", [x, b.ints(idx, c.hint(f"{tag}{axis}"))], hint=c.hint("taps"),
                     axis=axis)
        parts.append(b.one("Mul", [b.const(np.reshape(weight, shape), dt, c.hint("w")), taps],
                           hint=c.hint(f"weighted{axis}")))
    return b.one("Add", parts, hint=c.hint(f"axis{axis}"))


@converter("_contrib_BilinearResize2D", supports=_needs_shapes)
def _bilinear_resize(c: ConvertCall) -> None:
    (h, w), (oh, ow) = c.in_shapes[0][2:], c.out_shapes[0][2:]
    if (h, w) == (oh, ow):
        c.b.one("Identity", [c.x], c.out)
        return
    x, dt = _work(c)
    cols = _interpolate(c, x, w, ow, 3, dt)
    _finish(c, _interpolate(c, cols, h, oh, 2, dt))


@converter("_contrib_AdaptiveAvgPooling2D", supports=_needs_shapes)
def _adaptive_avg_pooling(c: ConvertCall) -> None:
    (h, w), (oh, ow) = c.in_shapes[0][2:], c.out_shapes[0][2:]
    x, dt = _work(c)
    rx = c.b.const(adaptive_weights(w, ow).T, dt, c.hint("rx"))
    ry = c.b.const(adaptive_weights(h, oh), dt, c.hint("ry"))
    cols = c.b.one("MatMul", [x, rx], hint=c.hint("cols"))
    _finish(c, c.b.one("MatMul", [ry, cols], hint=c.hint("rows")))


@converter("depth_to_space")
def _depth_to_space(c: ConvertCall) -> None:
    c.b.one("DepthToSpace", [c.x], c.out, blocksize=c.p.block_size, mode="DCR")


@converter("space_to_depth")
def _space_to_depth(c: ConvertCall) -> None:
    c.b.one("SpaceToDepth", [c.x], c.out, blocksize=c.p.block_size)
