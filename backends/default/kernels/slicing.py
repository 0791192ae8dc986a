"""Kernels of Concat, stack, SliceChannel, slice, slice_axis, slice_like, Pad and
UpSampling (core/ops/slicing.py) and of their backward ops: copies between views fixed at
bind time. A backward kernel copies the output gradient into the part of the input it came
from (zeros elsewhere) or, where the forward op copied an element several times (Pad's
borders, UpSampling's blocks), sums the copies."""
from __future__ import annotations

import itertools
from functools import partial

from graphexec.core.ops.slicing import slice_axis_bounds, slice_bounds, slice_like_axes

from .base import kernel, sequence
from .legacy import upsampling_bilinear, upsampling_bilinear_backward
from .tensor import copy_plan, out_view


def _along(ndim: int, axis: int, index) -> tuple:
    """An index tuple selecting ``index`` on ``axis`` and everything elsewhere."""
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def _concat_slabs(whole, axis: int, parts: list) -> list:
    """Views of ``whole`` along ``axis``, one per array of ``parts``, sized like it (the
    pieces Concat joins)."""
    ax = axis % whole.ndim
    edges = list(itertools.accumulate((a.shape[ax] for a in parts), initial=0))
    return [whole[_along(whole.ndim, ax, slice(b, e))] for b, e in zip(edges, edges[1:])]


def _split_slabs(whole, p) -> list:
    """Views of ``whole`` along SliceChannel's axis, one per output (``squeeze_axis``: the
    axis indexed away)."""
    ax = p.axis % whole.ndim
    k = whole.shape[ax] // p.num_outputs
    return [whole[_along(whole.ndim, ax, i if p.squeeze_axis else slice(i * k, (i + 1) * k))]
            for i in range(p.num_outputs)]


@kernel("Concat")
def concat(call):
    slabs = _concat_slabs(call.outputs[0], call.params.dim, call.inputs)
    return copy_plan(call.xp, list(zip(slabs, call.inputs)))


@kernel("stack")
def stack(call):
    out = call.outputs[0]
    ax = call.params.axis % out.ndim
    return copy_plan(call.xp, [(out[_along(out.ndim, ax, i)], x)
                               for i, x in enumerate(call.inputs)])


@kernel("SliceChannel")
def split(call):
    slabs = _split_slabs(call.inputs[0], call.params)
    return copy_plan(call.xp, list(zip(call.outputs, slabs)))


@kernel("slice")
def slice_(call):
    x = call.inputs[0]
    return copy_plan(call.xp, [(call.outputs[0], x[tuple(slice_bounds(call.params, x.shape))])])


@kernel("slice_axis")
def slice_axis(call):
    x = call.inputs[0]
    ax, b, e = slice_axis_bounds(call.params, x.shape)
    return copy_plan(call.xp, [(call.outputs[0], x[_along(x.ndim, ax, slice(b, e))])])


@kernel("slice_like")
def slice_like(call):
    x, like = call.inputs
    axes = slice_like_axes(call.params, x.shape, like.shape)
    index = tuple(slice(0, like.shape[i]) if i in axes else slice(None) for i in range(x.ndim))
    return copy_plan(call.xp, [(call.outputs[0], x[index])])


# -- Pad ------------------------------------------------------------------------------------
def _border_copies(out, widths: list[tuple[int, int]], mode: str) -> list:
    """(dst, src) views filling the borders of ``out`` from its interior, one axis after
    the other (later axes read the borders earlier ones wrote, so corners come out right)."""
    pairs = []
    for ax, (before, after) in enumerate(widths):
        n = out.shape[ax]
        stop = n - after
        if before:
            src = slice(before, before + 1) if mode == "edge" else slice(2 * before, before, -1)
            pairs.append((out[_along(out.ndim, ax, slice(0, before))],
                          out[_along(out.ndim, ax, src)]))
        if after:
            end = stop - 2 - after
            src = slice(stop - 1, stop) if mode == "edge" else \
                slice(stop - 2, end if end >= 0 else None, -1)
            pairs.append((out[_along(out.ndim, ax, slice(stop, n))],
                          out[_along(out.ndim, ax, src)]))
    return pairs


def _skip_null(call, pairs):
    """The (output k, value) pairs whose output is requested."""
    return [pair for pair, req in zip(pairs, call.req) if req != "null"]


@kernel("_backward_Concat")
def concat_backward(call):
    slabs = _concat_slabs(call.inputs[0], call.params.dim, call.outputs)
    return copy_plan(call.xp, _skip_null(call, list(zip(call.outputs, slabs))))


@kernel("_backward_stack")
def stack_backward(call):
    og = call.inputs[0]
    ax = call.params.axis % og.ndim
    pairs = [(dx, og[_along(og.ndim, ax, i)]) for i, dx in enumerate(call.outputs)]
    return copy_plan(call.xp, _skip_null(call, pairs))


@kernel("_backward_SliceChannel")
def split_backward(call):
    slabs = _split_slabs(call.outputs[0], call.params)
    return copy_plan(call.xp, list(zip(slabs, call.inputs)))


def _scatter_into_zeros(xp, dx, index, og):
    def run():
        dx.fill(0)
        xp.copyto(dx[index], og)
    return run


@kernel("_backward_slice")
def slice_backward(call):
    dx = call.outputs[0]
    index = tuple(slice_bounds(call.params, dx.shape))
    return _scatter_into_zeros(call.xp, dx, index, call.inputs[0])


@kernel("_backward_slice_axis")
def slice_axis_backward(call):
    dx = call.outputs[0]
    ax, b, e = slice_axis_bounds(call.params, dx.shape)
    return _scatter_into_zeros(call.xp, dx, _along(dx.ndim, ax, slice(b, e)), call.inputs[0])


@kernel("_backward_slice_like")
def slice_like_backward(call):
    """Output 1, the gradient of shape_like, is zero."""
    (dx, dlike), og = call.outputs, call.inputs[0]
    axes = slice_like_axes(call.params, dx.shape, dlike.shape)
    index = tuple(slice(0, dlike.shape[i]) if i in axes else slice(None) for i in range(dx.ndim))
    scatter = _scatter_into_zeros(call.xp, dx, index, og)

    def run():
        scatter()
        dlike.fill(0)
    return run


@kernel("Pad")
def pad(call):
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    widths = [(p.pad_width[2 * i], p.pad_width[2 * i + 1]) for i in range(x.ndim)]
    inner = out[tuple(slice(b, out.shape[i] - a) for i, (b, a) in enumerate(widths))]
    if p.mode == "constant":
        value = out.dtype.type(p.constant_value)

        def run():
            out.fill(value)
            xp.copyto(inner, x)
        return run
    return copy_plan(xp, [(inner, x)] + _border_copies(out, widths, p.mode))


@kernel("_backward_Pad")
def pad_backward(call):
    """Constant mode: the interior of the output gradient. Edge and reflect: undo the border
    copies in reverse order on a work copy, each adding its border's gradient to the
    elements it was copied from (summed over the copies of an edge)."""
    xp, og, dx, p = call.xp, call.inputs[0], call.outputs[0], call.params
    widths = [(p.pad_width[2 * i], p.pad_width[2 * i + 1]) for i in range(dx.ndim)]
    inner = tuple(slice(b, og.shape[i] - a) for i, (b, a) in enumerate(widths))
    if p.mode == "constant":
        return copy_plan(xp, [(dx, og[inner])])
    work = xp.empty_like(og)
    steps = []
    for border, src in reversed(_border_copies(work, widths, p.mode)):
        axes = tuple(i for i, (a, b) in enumerate(zip(border.shape, src.shape)) if a != b)
        steps.append((border, src, axes))

    def run():
        xp.copyto(work, og)
        for border, src, axes in steps:
            xp.add(src, border.sum(axis=axes, keepdims=True) if axes else border, out=src)
        xp.copyto(dx, work[inner])
    return run


# -- UpSampling (nearest) -------------------------------------------------------------------
def _blocks(out, x, c0: int, c1: int):
    """(dst, src): out[:, c0:c1] seen as (n, c, h, s, w, s) and x with the s axes added."""
    h, w = x.shape[2:]
    s = out.shape[2] // h
    dst = out_view(out, out.shape[:2] + (h, s, w, s))[:, c0:c1]
    return dst, x[:, :, :, None, :, None]


@kernel("UpSampling")
def upsampling(call):
    if call.params.sample_type == "bilinear":
        return upsampling_bilinear(call)
    xp, out, ins = call.xp, call.outputs[0], call.inputs
    if call.params.multi_input_mode == "sum":
        first, *rest = [_blocks(out, x, 0, out.shape[1]) for x in ins]

        def run():
            xp.copyto(*first)
            for dst, src in rest:
                xp.add(dst, src, out=dst)
        return run
    pairs, c0 = [], 0
    for x in ins:
        pairs.append(_blocks(out, x, c0, c0 + x.shape[1]))
        c0 += x.shape[1]
    return copy_plan(xp, pairs)


@kernel("_backward_UpSampling")
def upsampling_backward(call):
    """Each input's gradient sums its scale x scale blocks of the output gradient (over its
    own channels for multi_input_mode='concat', over all of them for 'sum'). Bilinear:
    the grouped Deconvolution's backward."""
    if call.params.sample_type == "bilinear":
        return upsampling_bilinear_backward(call)
    xp, og = call.xp, call.inputs[0]
    summed = call.params.multi_input_mode == "sum"
    steps, c0 = [], 0
    for dx, req in zip(call.outputs, call.req):
        c1 = og.shape[1] if summed else c0 + dx.shape[1]
        block, _ = _blocks(og, dx, 0 if summed else c0, c1)
        if req != "null":
            steps.append(partial(xp.sum, block, axis=(3, 5), out=dx))
        c0 = c1
    return sequence(steps)


