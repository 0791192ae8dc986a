"""Cases for Concat, stack, SliceChannel, slice, slice_axis, slice_like, Pad and UpSampling
(core/ops/slicing.py). Multi-output twins return lists."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
INT = dict(dtypes=("int32",), low=-50, high=50)


def _concat(*xs, dim=1):
    return np.concatenate(xs, axis=dim)


def _stack(*xs, axis=0):
    return np.stack(xs, axis=axis)


CASES += [
    OpCase("Concat", [(2, 3), (2, 4), (2, 1)], _concat),
    OpCase("Concat", [(2, 3, 4), (1, 3, 4)], _concat, attrs={"dim": 0}, id="dim0"),
    OpCase("concat", [(2, 3, 4), (2, 3, 2)], _concat, attrs={"dim": -1}, id="negative"),
    OpCase("Concat", [(2, 3), (2, 2)], _concat, id="int", **INT),
    OpCase("Concat", [(4, 2)], _concat, attrs={"dim": 0}, id="single"),
    OpCase("stack", [(2, 3), (2, 3), (2, 3)], _stack),
    OpCase("stack", [(2, 3), (2, 3)], _stack, attrs={"axis": 1}, id="axis1"),
    OpCase("stack", [(2, 3), (2, 3)], _stack, attrs={"axis": -1}, id="last", **INT),
]


def _split(x, num_outputs, axis=1, squeeze_axis=False):
    parts = np.split(x, num_outputs, axis=axis)
    return [np.squeeze(p, axis) for p in parts] if squeeze_axis else parts


CASES += [
    OpCase("SliceChannel", [(2, 6)], _split, attrs={"num_outputs": 3}),
    OpCase("split", [(3, 4)], _split, attrs={"num_outputs": 3, "axis": 0, "squeeze_axis": True},
           id="squeeze"),
    OpCase("split", [(2, 3, 4)], _split, attrs={"num_outputs": 2, "axis": -1}, id="negative"),
    OpCase("SliceChannel", [(2, 4)], _split, attrs={"num_outputs": 1}, id="one"),
]


def _slice(x, begin, end, step=()):
    step = step or (None,) * len(begin)
    return x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))]


for begin, end, step, tag in (((0, 1), (2, 3), (), "plain"),
                              ((None,), (None,), (-1,), "reverse"),
                              ((0, None, None), (None, None, None), (1, 2, -2), "steps"),
                              ((-1, -2), (None, None), (), "negative"),
                              ((None, 2), (None, 0), (None, -1), "backward"),
                              ((None, None, 3), (None, None, 0), (1, 1, -1), "down-to-1"),
                              ((0, 0), (2, 10), (), "clamped")):
    attrs = {"begin": begin, "end": end, **({"step": step} if step else {})}
    CASES.append(OpCase("slice", [(2, 3, 4)], _slice, attrs=attrs, id=tag))
CASES += [
    OpCase("crop", [(4, 5)], _slice, attrs={"begin": (1, 1), "end": (3, 4)}, id="alias"),
    OpCase("slice", [(4, 5)], _slice, attrs={"begin": (1,), "end": (-1,), "step": (2,)},
           id="int", **INT),
]


def _slice_axis(x, axis, begin, end=None):
    index = [slice(None)] * x.ndim
    index[axis] = slice(begin, end)
    return x[tuple(index)]


for axis, begin, end in ((0, 0, 1), (1, -2, None), (2, 1, -1), (-1, 0, 2)):
    attrs = {"axis": axis, "begin": begin, **({"end": end} if end is not None else {})}
    CASES.append(OpCase("slice_axis", [(2, 3, 4)], _slice_axis, attrs=attrs,
                        id=f"{axis}-{begin}-{end}"))


def _slice_like(x, like, axes=()):
    axes = [a % x.ndim for a in axes] or range(x.ndim)
    return x[tuple(slice(0, like.shape[i]) if i in axes else slice(None) for i in range(x.ndim))]


CASES += [
    OpCase("slice_like", [(4, 5, 6), (2, 3, 4)], _slice_like),
    OpCase("slice_like", [(4, 5, 6), (2, 3)], _slice_like, attrs={"axes": (0,)}, id="axis0"),
    OpCase("slice_like", [(4, 5, 6), (2, 3, 4)], _slice_like, attrs={"axes": (-1, 1)},
           id="negative"),
]


def _pad(x, mode, pad_width, constant_value=0.0):
    widths = list(zip(pad_width[::2], pad_width[1::2]))
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=constant_value)
    return np.pad(x, widths, mode=mode)


for mode in ("constant", "edge", "reflect"):
    CASES.append(OpCase("Pad", [(2, 3, 4, 5)], _pad, id=mode,
                        attrs={"mode": mode, "pad_width": (0, 0, 0, 0, 2, 3, 1, 3)}))
CASES += [
    OpCase("pad", [(1, 2, 3, 4, 5)], _pad, id="reflect-5d",
           attrs={"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1, 3, 4)}),
    OpCase("Pad", [(1, 2, 3, 3)], _pad, id="value",
           attrs={"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 2, 2),
                  "constant_value": 1.5}),
]


def _nearest(x, s):
    return x.repeat(s, axis=2).repeat(s, axis=3)


def _upsampling(*xs, scale, sample_type, multi_input_mode="concat"):
    size = xs[0].shape[2] * scale
    parts = [_nearest(x, size // x.shape[2]) for x in xs]
    return sum(parts) if multi_input_mode == "sum" else np.concatenate(parts, axis=1)


CASES += [
    OpCase("UpSampling", [(2, 3, 4, 5)], _upsampling,
           attrs={"scale": 2, "sample_type": "nearest"}),
    OpCase("UpSampling", [(1, 2, 2, 3)], _upsampling, id="scale3",
           attrs={"scale": 3, "sample_type": "nearest"}),
    OpCase("UpSampling", [(2, 3, 2, 2), (2, 2, 4, 4), (2, 1, 1, 1)], _upsampling, id="concat",
           attrs={"scale": 2, "sample_type": "nearest"}),
    OpCase("UpSampling", [(2, 3, 2, 2), (2, 3, 4, 4)], _upsampling, id="sum",
           attrs={"scale": 2, "sample_type": "nearest", "multi_input_mode": "sum"}),
]
