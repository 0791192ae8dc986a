"""Converters of the shape and index helpers: the ranges, eyes and index grids (which depend
only on shapes and attributes) become initializers computed by the native kernels' own
formulas; shape_array / size_array are Shape / Size; reshape_like a Reshape to the inferred
shape; batch_take a GatherElements over the rows of the last axis, indices clipped."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.ranges import linspace_step

from ..convert import ConvertCall, converter, onnx_dtype


def _constant(c: ConvertCall, values) -> None:
    arr = np.asarray(values).astype(c.out_dtypes[0]).reshape(c.out_shapes[0])
    c.b.one("Identity", [c.b.const(arr, arr.dtype, c.hint("value"))], c.out)


def _range(c: ConvertCall, start: float, step: float, repeat: int) -> np.ndarray:
    dtype, n = np.dtype(c.out_dtypes[0]), int(np.prod(c.out_shapes[0]))
    return dtype.type(start) + (np.arange(n) // repeat).astype(dtype) * dtype.type(step)


@converter("_arange")
def _arange(c: ConvertCall) -> None:
    p = c.p
    _constant(c, _range(c, 0.0 if p.stop is None and not p.infer_range else p.start, p.step,
                        p.repeat))


@converter("_contrib_arange_like")
def _arange_like(c: ConvertCall) -> None:
    _constant(c, _range(c, c.p.start, c.p.step, c.p.repeat))


@converter("_linspace")
def _linspace(c: ConvertCall) -> None:
    n = c.out_shapes[0][0]
    _constant(c, c.p.start + linspace_step(c.p) * np.arange(n, dtype=np.float64))


@converter("_eye")
def _eye(c: ConvertCall) -> None:
    rows, cols = c.out_shapes[0]
    _constant(c, np.eye(rows, cols, c.p.k))


@converter("_contrib_index_array")
def _index_array(c: ConvertCall) -> None:
    shape = c.in_shapes[0]
    axes = range(len(shape)) if c.p.axes is None else [a % len(shape) for a in c.p.axes]
    grid = np.indices(shape, dtype=np.int64)
    _constant(c, np.stack([grid[a] for a in axes], axis=-1))


@converter("shape_array")
def _shape_array(c: ConvertCall) -> None:
    c.b.one("Shape", [c.x], c.out)


@converter("size_array")
def _size_array(c: ConvertCall) -> None:
    size = c.b.one("Size", [c.x], hint=c.hint("size"))
    c.b.one("Reshape", [size, c.b.ints([1], c.hint("one"))], c.out)


@converter("reshape_like")
def _reshape_like(c: ConvertCall) -> None:
    c.b.one("Reshape", [c.x, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


@converter("batch_take")
def _batch_take(c: ConvertCall) -> None:
    b, shape = c.b, c.in_shapes[0]
    width = shape[-1]
    rows = b.one("Reshape", [c.x, b.ints([-1, width], c.hint("rows"))], hint=c.hint("rows"))
    idx = b.one("Cast", [c.inputs[1]], hint=c.hint("idx"), to=onnx_dtype(np.int64))
    idx = b.one("Clip", [idx, b.const(0, np.int64, c.hint("lo")),
                         b.const(width - 1, np.int64, c.hint("hi"))], hint=c.hint("clip"))
    col = b.one("Reshape", [idx, b.ints([-1, 1], c.hint("col"))], hint=c.hint("col"))
    taken = b.one("GatherElements", [rows, col], hint=c.hint("taken"), axis=1)
    b.one("Reshape", [taken, b.ints(c.out_shapes[0], c.hint("out"))], c.out)
