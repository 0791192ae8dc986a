"""Native kernels of Convolution, Deconvolution and Pooling.

Convolution is im2col through a strided window view (one copy into a column buffer) and one
batched matmul over groups that writes the output directly. Deconvolution is the transpose:
one matmul into columns, then a strided scatter-add per kernel offset (col2im). Pooling runs
one ufunc per kernel offset over strided slices of a padded copy. Column and padding buffers
live in the executor's shared workspace (:class:`Scratch`), so their memory is not held per
node. Channel-last layouts run on transposed views. Everything is written against
``call.xp``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from graphexec.core.ops.common import lowest
from graphexec.core.ops.conv import (conv_geometry, deconv_adjustments, deconv_pads,
                                     pool_count_region, pool_geometry)
from graphexec.core.runtime.blas_threads import run_parts, split
from graphexec.core.runtime.layout import stored_channels_last

from .base import (NATIVE_RELU_FUSED, OPENMP, bound_by_scalar, kernel, kernel_variant, nothing,
                   sequence)
from .compiled import compiled_for, shift_runner
from .conv_fast import (compiled_depthwise_runner, depthwise_runner, grouped_matmul,
                        rows_depthwise_runner,
                        is_depthwise, offsets_applicable, offsets_layout, offsets_runner)
from .nn import matmul_into, reshaper, work_dtype
from .pool_loops import AVERAGE, EACH_AVERAGED, SUMMED

__all__ = ["channel_first_view", "windows", "Scratch", "padded_shape", "pad_into",
           "padded_source", "offset_slices", "avg_divisor", "lp_root", "first_maximum",
           "window_max", "as_planes", "over_planes", "plane_geometry", "window_counts",
           "workspace_planes"]


def channel_first_view(arr, last: bool):
    """(N, *spatial, C) viewed as (N, C, *spatial) when ``last``; ``arr`` otherwise."""
    if not last:
        return arr
    return arr.transpose(0, arr.ndim - 1, *range(1, arr.ndim - 1))


def windows(xp, a, kernel: tuple, stride: tuple, dilate: tuple, out_sp: tuple):
    """A read-only strided view (N, C, *kernel, *out_sp) of every window of ``a``."""
    st = a.strides
    nd = len(kernel)
    shape = (*a.shape[:2], *kernel, *out_sp)
    strides = (*st[:2], *(st[2 + i] * dilate[i] for i in range(nd)),
               *(st[2 + i] * stride[i] for i in range(nd)))
    return xp.lib.stride_tricks.as_strided(a, shape=shape, strides=strides)


class Scratch:
    """Named scratch arrays in the executor's shared workspace (MXNet's TempSpace): reserved
    when the kernel is made, taken as fresh views each time it runs. Kernels run one at a
    time, so the arrays hold until the kernel returns; take them all with one ``take()``."""

    def __init__(self, call, **specs: tuple):
        self._ws = call.workspace
        self._names = list(specs)
        self._specs = list(specs.values())
        if self._specs:
            self._ws.reserve(*self._specs)

    def take(self) -> dict:
        """Name -> array, for this run of the kernel."""
        return dict(zip(self._names, self._ws.arrays(*self._specs))) if self._specs else {}


def padded_shape(shape: tuple, pads: tuple, start: int = 2) -> tuple:
    """``shape`` grown by ``pads`` ((left, right) per spatial axis, from axis ``start``)."""
    grown = [n + l + r for n, (l, r) in zip(shape[start:], pads)]
    return (*shape[:start], *grown, *shape[start + len(pads):])


def pad_into(xp, src, buf, pads: tuple, fill, start: int = 2):
    """Write ``src`` into ``buf`` inside a border of ``fill`` (``pads`` as for
    ``padded_shape``) and return ``buf``."""
    inner = [slice(None)] * buf.ndim
    for i, (l, r) in enumerate(pads):
        ax, n = start + i, buf.shape[start + i]
        for edge in (slice(0, l), slice(n - r, n)):
            if edge.start < edge.stop:
                buf[(slice(None),) * ax + (edge,)] = fill
        inner[ax] = slice(l, n - r)
    xp.copyto(buf[tuple(inner)], src, casting="unsafe")
    return buf


def _has_pad(pads: tuple) -> bool:
    return any(l or r for l, r in pads)


def offset_slices(kernel: tuple, stride: tuple, dilate: tuple, count: tuple) -> list[tuple]:
    """For every kernel offset, the strided slices picking its element of each window."""
    out = []
    for off in itertools.product(*(range(k) for k in kernel)):
        out.append((slice(None), slice(None), *(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(off, dilate, stride, count))))
    return out


def _bias_adder(xp, call, out, last: bool, relu: bool = False):
    """out += bias over the channel axis, then with ``relu`` max(., 0) (the relu after the
    convolution, ``base.NATIVE_RELU_FUSED``): one pass of a compiled loop where it applies
    (channel-first host data of the bias's dtype; the same numbers as numpy's), else
    numpy's."""
    bias = None if call.params.no_bias else call.inputs[2]
    if bias is None and not relu:
        return nothing
    if not last and (bias is None or bias.dtype == out.dtype):
        shift = shift_runner(xp, out, 1, relu)
        if shift is not None:
            b = np.zeros(out.shape[1], out.dtype) if bias is None else bias
            return lambda: shift(b)
    steps = []
    if bias is not None:
        b = bias if last else bias.reshape(-1, *([1] * (out.ndim - 2)))
        steps.append(lambda: xp.add(out, b, out=out))
    if relu:
        steps.append(lambda: xp.maximum(out, 0, out=out))
    return sequence(steps)


# -- Convolution --------------------------------------------------------------------------
def _im2col_specs(x, geo, out_sp: tuple) -> dict:
    """Scratch for the columns (N, C, *kernel, *out_sp) and, with padding, the padded data;
    none for a 1x1 stride-1 unpadded kernel, whose columns are the data itself."""
    if all(k == 1 for k in geo.kernel) and all(s == 1 for s in geo.stride) and not any(geo.pad):
        return {}
    specs = {"cols": ((*x.shape[:2], *geo.kernel, *out_sp), x.dtype)}
    if any(geo.pad):
        specs["padded"] = (padded_shape(x.shape, tuple((q, q) for q in geo.pad)), x.dtype)
    return specs


def _im2col(xp, x, geo, out_sp: tuple, bufs: dict):
    """The columns (N, C, *kernel, *out_sp) of ``x`` (``x`` itself for a 1x1 kernel)."""
    if "cols" not in bufs:
        return x
    src = x
    if "padded" in bufs:
        src = pad_into(xp, x, bufs["padded"], tuple((q, q) for q in geo.pad), 0)
    xp.copyto(bufs["cols"], windows(xp, src, geo.kernel, geo.stride, geo.dilate, out_sp))
    return bufs["cols"]


@kernel_variant("Convolution", OPENMP)
@kernel("Convolution")
def convolution(call):
    """out[n, f] = sum over c, window of weight[f, c] * data[n, c, window] (+ bias).
    Also the ``openmp`` variant: the name a strategy picks for depthwise layers over
    channels-last data, which run compiled loops on numba's threads."""
    return _convolution(call, relu=False)


@kernel_variant("Convolution", NATIVE_RELU_FUSED)
def convolution_relu(call):
    """The convolution, then the relu that is its output's only reader in the bias's pass
    (``base.NATIVE_RELU_FUSED``, ``backends/default/fusion.py``)."""
    return _convolution(call, relu=True)


def _convolution(call, relu: bool):
    xp, p = call.xp, call.params
    geo = conv_geometry(p)
    x = channel_first_view(call.inputs[0], geo.last)
    out = channel_first_view(call.outputs[0], geo.last)
    n, c = x.shape[:2]
    g, f = p.num_group, p.num_filter
    out_sp = out.shape[2:]
    cols_shape = (n, g, c // g * math.prod(geo.kernel), math.prod(out_sp))
    weight = reshaper(channel_first_view(call.inputs[1], geo.last),
                      (g, f // g, c // g * math.prod(geo.kernel)))
    result_shape = (n, g, f // g, math.prod(out_sp))
    add_bias = _bias_adder(xp, call, call.outputs[0], geo.last, relu)
    if is_depthwise(p, geo, c, out.dtype):
        rows = rows_depthwise_runner(x, call.inputs[1], None if p.no_bias else call.inputs[2],
                                     out, geo)
        if rows is not None:  # the bias in its loops
            y = call.outputs[0]
            return sequence([rows, lambda: xp.maximum(y, 0, out=y)] if relu else [rows])
        return sequence([_depthwise(call, x, out, geo, out_sp), add_bias])
    if offsets_applicable(p, geo, c, out.dtype, xp):
        specs = {k: (shape, out.dtype)
                 for k, shape in offsets_layout(x.shape, geo, out_sp, f, xp).items()}
        return sequence([offsets_runner(xp, x, channel_first_view(call.inputs[1], False), out,
                                        geo, Scratch(call, **specs)), add_bias])
    specs = _im2col_specs(x, geo, out_sp)
    if geo.last:
        specs["result"] = (result_shape, out.dtype)
    scratch = Scratch(call, **specs)

    def run():
        bufs = scratch.take()
        cols = _im2col(xp, x, geo, out_sp, bufs).reshape(cols_shape)
        result = bufs["result"] if geo.last else out.reshape(result_shape)
        if not grouped_matmul(xp, weight(), cols, result):
            matmul_into(xp, weight(), cols, result)
        if geo.last:
            xp.copyto(out, result.reshape(out.shape))
        add_bias()
    return run


def _depthwise(call, x, out, geo, out_sp: tuple):
    """A depthwise Convolution without columns (:mod:`.conv_fast`)."""
    xp = call.xp
    compiled = compiled_depthwise_runner(xp, x, call.inputs[1], out, geo)
    if compiled is not None:
        return compiled
    pads = tuple((q, q) for q in geo.pad)
    specs = {"tmp": (out.shape, out.dtype)}
    if any(geo.pad):
        specs["padded"] = (padded_shape(x.shape, pads), x.dtype)

    def source(bufs):
        return pad_into(xp, x, bufs["padded"], pads, 0) if "padded" in bufs else x
    return depthwise_runner(xp, call.inputs[1], out, offset_slices(
        geo.kernel, geo.stride, geo.dilate, out_sp), source, Scratch(call, **specs))


# -- Deconvolution ------------------------------------------------------------------------
@kernel("Deconvolution")
def deconvolution(call):
    """The transpose of Convolution: columns = weight^T @ data, scattered back (col2im) into
    an uncropped output, then cropped by the padding (or to target_shape)."""
    xp, p = call.xp, call.params
    geo = conv_geometry(p, "deconvolution")
    adj, target = deconv_adjustments(p, len(geo.kernel))
    x = channel_first_view(call.inputs[0], geo.last)
    out = channel_first_view(call.outputs[0], geo.last)
    n, c, *sp_in = x.shape
    g, f = p.num_group, p.num_filter
    kprod = math.prod(geo.kernel)
    weight = reshaper(channel_first_view(call.inputs[1], geo.last), (g, c // g, f // g * kprod))
    data = reshaper(x, (n, g, c // g, math.prod(sp_in)))
    pads = [deconv_pads(v, i, geo, adj, target)[0] for i, v in enumerate(sp_in)]
    extent = [max(s * (v - 1) + d * (k - 1) + 1, pd + o) for v, k, s, d, pd, o in
              zip(sp_in, geo.kernel, geo.stride, geo.dilate, pads, out.shape[2:])]
    slices = offset_slices(geo.kernel, geo.stride, geo.dilate, sp_in)
    crop = (slice(None), slice(None), *(slice(pd, pd + o) for pd, o in zip(pads, out.shape[2:])))
    scratch = Scratch(call, cols=((n, g, f // g * kprod, math.prod(sp_in)), x.dtype),
                      full=((n, f, *extent), work_dtype(x.dtype)))
    add_bias = _bias_adder(xp, call, call.outputs[0], geo.last)

    def run():
        bufs = scratch.take()
        cols, full = bufs["cols"], bufs["full"]
        matmul_into(xp, weight().transpose(0, 2, 1), data(), cols)
        per_offset = cols.reshape(n, f, kprod, *sp_in)
        full.fill(0)
        for k, sl in enumerate(slices):
            t = full[sl]
            xp.add(t, per_offset[:, :, k], out=t)
        xp.copyto(out, full[crop], casting="unsafe")
        add_bias()
    return run


# -- Pooling ------------------------------------------------------------------------------
def avg_divisor(xp, p, sp_in: tuple, geo, out_sp: tuple):
    """The number of counted positions in every window: a scalar when all windows count
    prod(kernel), else an array of out_sp's shape (never 0: empty windows give 0 / 1)."""
    per_axis = []
    for x, k, s, pads, o in zip(sp_in, geo.kernel, geo.stride, geo.pad, out_sp):
        lo, hi = pool_count_region(p, x, pads)
        start = np.arange(o) * s - pads[0]
        per_axis.append(np.clip(np.minimum(start + k, hi) - np.maximum(start, lo), 0, None))
    counts = np.ones((), dtype=np.int64)
    for a in per_axis:
        counts = np.multiply.outer(counts, a)
    if (counts == math.prod(geo.kernel)).all():
        return math.prod(geo.kernel)
    return xp.asarray(np.maximum(counts, 1))


def window_max(xp, a, axes: tuple, out, keepdims: bool = False):
    """The maximum over ``axes`` of ``a`` into ``out`` skipping NaN (a slice of NaN only
    gives NaN, which the max pooling kernels then raise to the dtype's lowest value)."""
    if xp is np:
        np.fmax.reduce(a, axis=axes, out=out, keepdims=keepdims)
    else:
        xp.nanmax(a, axis=axes, out=out, keepdims=keepdims)


def first_maximum(flat, peak):
    """The index along the last axis of ``flat`` of the first element equal to ``peak``
    (``flat``'s shape but the last axis 1): 0 where none is (a window of NaN or values at
    or below the dtype's lowest, whose maximum is that lowest value)."""
    return (flat == peak).argmax(axis=-1)


def _lowest_floor(xp, out):
    """``f()`` raising ``out`` to at least its dtype's lowest value in place (NaN too): max
    pooling's result, as MXNet's running maximum from that value."""
    return bound_by_scalar(xp, "fmax", out, lowest(out.dtype), out)


def _global_pool(call, x, out, ws):
    xp, p = call.xp, call.params
    axes = tuple(range(2, x.ndim))
    if p.pool_type == "max":
        floor = _lowest_floor(xp, out)
        planes = x.shape[:2]

        def run():
            window_max(xp, x, axes, out, keepdims=True)
            floor()
            if ws is not None and call.is_train:
                flat = first_maximum(x.reshape(*planes, -1), out.reshape(*planes, 1))
                xp.copyto(ws.reshape(flat.shape), flat, casting="unsafe")
        return run
    if p.pool_type in ("avg", "sum"):
        fn = xp.mean if p.pool_type == "avg" else xp.sum
        return lambda: fn(x, axis=axes, keepdims=True, out=out,
                          dtype=work_dtype(x.dtype))
    pv = p.p_value
    return lambda: xp.copyto(out, lp_root(xp, (x.astype(work_dtype(x.dtype)) ** pv).sum(
        axis=axes, keepdims=True), pv), casting="unsafe")


def lp_root(xp, a, pv: int):
    """``a ** (1 / pv)``, the real root for odd ``pv`` (a negative sum of cubes keeps its
    sign, as MXNet's lp pooling gives)."""
    return xp.copysign(xp.abs(a) ** (1.0 / pv), a)


def _axis_passes(call, geo, src_shape: tuple, out_sp: tuple, dtype, combine: str):
    """(scratch specs, ``f(src, out, bufs)``): the windows of ``src`` (shaped
    ``src_shape``) reduced one spatial axis at a time (``combine`` "fmax", which skips NaN,
    or "add"), each pass one ufunc call per kernel offset along its axis into a scratch
    array in ``dtype`` (the last pass into ``out``; ``bufs`` the specs' arrays). A k x k
    window so costs 2k calls where all its offsets cost k*k: per pooling (batch 1) 0.54x
    the offsets' time for 3x3 stride-1 windows (Inception v3), 0.70-0.84x for 3x3 and 2x2
    stride-2 ones. The
    last axis goes first, unless its stride is above 1: then the first axis goes first, so
    that the first pass reads whole contiguous rows and only the smaller partial result is
    read with the stride (3x3 stride-2 max pooling 0.78-0.86x the time of the other order,
    SqueezeNet's and ResNet's; benchmarks/README.md). The same numbers for max; sums in
    another order (within rounding)."""
    xp = call.xp
    nd = len(out_sp)
    head = src_shape[:2]
    order = list(range(nd)) if geo.stride[-1] > 1 else list(reversed(range(nd)))
    shape = list(src_shape[2:])
    specs, passes = {}, []
    for step, d in enumerate(order):
        shape[d] = out_sp[d]
        # the scratch this pass writes (None: ``out``) and its kernel offsets' slices
        name = f"pass{step}" if step < nd - 1 else None
        if name:
            specs[name] = ((*head, *shape), dtype)
        stride, dil, span = geo.stride[d], geo.dilate[d], geo.stride[d] * (out_sp[d] - 1) + 1
        passes.append((name, [(slice(None),) * (2 + d) + (slice(b * dil, b * dil + span, stride),)
                              for b in range(geo.kernel[d])]))
    fold = getattr(xp, combine)

    def run(src, out, bufs):
        for name, slices in passes:
            dst = bufs[name] if name else out
            xp.copyto(dst, src[slices[0]], casting="unsafe")
            for sl in slices[1:]:
                fold(dst, src[sl], out=dst)
            src = dst
    return specs, run


def _max_pool(call, source, out, whole, passes, floor):
    """Max pooling by one reduction over the windows (``whole``) or axis by axis
    (``passes``), skipping NaN, then ``floor``: the maximum is at least the dtype's lowest
    value (MXNet starts each window there and takes an element only when greater: a window
    of NaN or -inf gives the lowest value)."""
    xp = call.xp
    if whole is not None:
        view, axes = whole

        def reduce():
            window_max(xp, view(source()[0]), axes, out)
            floor()
        return reduce

    def run():
        src, bufs = source()
        passes(src, out, bufs)
        floor()
    return run


def _tracked_max_pool(call, source, out, ws, slices, floor):
    """Max pooling in training: one kernel offset at a time, the workspace ``ws`` receiving
    each window's first maximum's offset (read by the backward): MXNet's running maximum
    from the dtype's lowest value, taking an element only when greater (NaN never is; a
    window with none gives the lowest value and offset 0)."""
    xp = call.xp
    first, rest = slices[0], slices[1:]
    better = xp.empty(out.shape, dtype=bool)
    step = xp.empty(out.shape, dtype=ws.dtype)

    def tracked():
        src = source()[0]
        xp.copyto(out, src[first])
        floor()
        ws.fill(0)
        for k, sl in enumerate(rest, 1):
            # offsets come in increasing order, so max(ws, k * better) records the latest
            # strictly greater element: arithmetic instead of a (much slower) masked copy
            xp.greater(src[sl], out, out=better)
            xp.multiply(better, k, out=step)
            xp.maximum(ws, step, out=ws)
            xp.fmax(out, src[sl], out=out)
    return tracked


def _sum_pool(call, source, out, divisor, whole, passes):
    """sum / avg / lp: accumulate (powers of) the window elements, float32 for float16, by
    one reduction over the windows (``whole``) or axis by axis (``passes``)."""
    xp, p = call.xp, call.params
    wdt = work_dtype(out.dtype)
    acc = out if out.dtype == wdt else xp.empty(out.shape, wdt)
    pv = p.p_value if p.pool_type == "lp" else 1

    def run():
        src, bufs = source()
        if pv != 1:
            xp.power(src, pv, out=src)
        if whole is not None:
            view, axes = whole
            xp.sum(view(src), axis=axes, out=acc, dtype=wdt)
        else:
            passes(src, acc, bufs)
        if divisor is not None:
            xp.divide(acc, divisor, out=acc)
        if pv != 1:
            xp.copyto(acc, lp_root(xp, acc, pv))
        if acc is not out:
            xp.copyto(out, acc, casting="unsafe")
    return run


def padded_source(call, x, pads: tuple, fill, dtype=None, copy: bool = False,
                  extra: dict | None = None):
    """A callable giving (``x`` inside a border of ``fill`` (a scratch copy in ``dtype``),
    or ``x`` itself when there is no padding, the dtype is x's and no ``copy`` is needed;
    the scratch arrays of the ``extra`` specs, taken with it so that none overlaps)."""
    dtype = np.dtype(dtype or x.dtype)
    specs = dict(extra or {})
    padded = _has_pad(pads) or copy or dtype != x.dtype
    if padded:
        specs["padded"] = (padded_shape(x.shape, pads), dtype)
    scratch = Scratch(call, **specs)

    def source():
        bufs = scratch.take()
        return (pad_into(call.xp, x, bufs["padded"], pads, fill) if padded else x), bufs
    return source


@kernel("Pooling")
def pooling(call):
    """max / avg / sum / lp pooling. Max, as MXNet's, is a running maximum from the dtype's
    lowest value that takes an element only when greater: NaN never wins, a window of NaN
    or -inf (or over padding only) gives the lowest value. In training the hidden
    ``workspace`` output receives, for each window, the kernel offset of its first maximum
    (row-major within the window; for global pooling the index in the plane; 0 where no
    element is above the lowest value, as MXNet's oneDNN kernels give), from which the
    gradient routes back. lp raises a float32 (float16 data) scratch copy to the power in
    place."""
    xp, p = call.xp, call.params
    geo, out_sp = pool_geometry(p, call.inputs[0].shape)
    x = channel_first_view(call.inputs[0], geo.last)
    out = channel_first_view(call.outputs[0], geo.last)
    ws = call.outputs[1] if len(call.outputs) > 1 else None
    # max pooling in training records each window's first maximum: one offset at a time
    tracked = p.pool_type == "max" and ws is not None and call.is_train
    compiled = _compiled_pooling(call, x, out, ws if tracked else None, geo)
    if compiled is not None:
        return compiled
    if p.global_pool:
        return _global_pool(call, x, out, ws)
    whole = None if tracked else _window_reduction(xp, geo, out_sp)
    specs, passes = {}, None
    if whole is None and not tracked:
        src_shape = padded_shape(x.shape, geo.pad) if _has_pad(geo.pad) else x.shape
        dtype = x.dtype if p.pool_type == "max" else work_dtype(x.dtype)
        specs, passes = _axis_passes(call, geo, src_shape, out_sp, dtype,
                                     "fmax" if p.pool_type == "max" else "add")
    if p.pool_type == "max":
        source = padded_source(call, x, geo.pad, lowest(x.dtype), extra=specs)
        floor = _lowest_floor(xp, out)
        if tracked:
            return _tracked_max_pool(call, source, out, ws,
                                     offset_slices(geo.kernel, geo.stride, geo.dilate, out_sp),
                                     floor)
        return _max_pool(call, source, out, whole, passes, floor)
    lp = p.pool_type == "lp" and p.p_value != 1
    source = padded_source(call, x, geo.pad, 0, work_dtype(x.dtype) if lp else None, copy=lp,
                           extra=specs)
    divisor = avg_divisor(xp, p, x.shape[2:], geo, out_sp) if p.pool_type == "avg" else None
    return _sum_pool(call, source, out, divisor, whole, passes)


#: the fewest input elements a part of a pooling's planes that the host's threads share
MIN_POOL_PART = 1 << 16


def as_planes(*arrays) -> list | None:
    """1-D or 2-D channel-first pooling data ((N, C, W) or (N, C, H, W)) as the compiled
    loops' planes (N*C, 1, W) or (N*C, H, W), or None where the loops do not apply (not
    C-contiguous float32/float64 host arrays of one dtype and rank, or empty)."""
    first = arrays[0]
    if (not all(isinstance(a, np.ndarray) and a.ndim == first.ndim and a.flags.c_contiguous
                for a in arrays)
            or first.ndim not in (3, 4) or first.dtype not in (np.float32, np.float64)
            or not first.size or any(a.dtype != first.dtype for a in arrays)):
        return None
    return [a.reshape(-1, *(1,) * (4 - a.ndim), *a.shape[2:]) for a in arrays]


def plane_geometry(geo) -> tuple:
    """(kh, kw, sh, sw, ph, pw): a 1-D or 2-D pooling's windows over the loops' planes (a
    1-D pooling as rows of height 1), the pads the left/top ones."""
    (kh, kw), (sh, sw) = ((1,) * (2 - len(geo.kernel)) + tuple(geo.kernel),
                          (1,) * (2 - len(geo.stride)) + tuple(geo.stride))
    pads = ((0, 0),) * (2 - len(geo.pad)) + tuple(geo.pad)
    return kh, kw, sh, sw, pads[0][0], pads[1][0]


def workspace_planes(ws, out_planes):
    """Max pooling's workspace (each window's first maximum's offset) shaped as the output
    planes, or None where the compiled loops cannot take it (not a C-contiguous int32 host
    array)."""
    if (not isinstance(ws, np.ndarray) or ws.dtype != np.int32
            or not ws.flags.c_contiguous):
        return None
    return ws.reshape(out_planes.shape)


def window_counts(p, geo, data_planes, out_planes, data_shape: tuple, out_shape: tuple):
    """The (OH, OW) counts the compiled avg loops divide by (:func:`avg_divisor` for the
    pooling of ``data_shape`` into ``out_shape``, the planes' dtype; ones for sum)."""
    counts = np.ones(out_planes.shape[1:], data_planes.dtype)
    if p.pool_type == "avg":
        counts.reshape(out_shape[2:])[...] = avg_divisor(np, p, data_shape[2:], geo,
                                                         out_shape[2:])
    return counts


def _onednn_average(p, shape: tuple, geo, dtype) -> bool:
    """Whether MXNet 1.9.1 takes this avg pooling to oneDNN (which divides each window's
    sum once) rather than to its own CPU pooling (which divides each element before adding
    it): float32 data, and for the 'full' convention only windows that end where the padded
    data does on every axis (oneDNN's padding would be asymmetric otherwise)."""
    if np.dtype(dtype) != np.float32:
        return False
    if p.pooling_convention != "full":
        return True
    return all((x + 2 * left - k) % s == 0 for x, k, s, (left, _) in
               zip(shape, geo.kernel, geo.stride, geo.pad))


def over_planes(name: str, planes, *args):
    """``f()`` running the compiled pooling loop ``name`` over ``planes`` (its first
    argument: the planes, or the images of the channels-last rows loops; their range last),
    split along that first axis across the host's threads from MIN_POOL_PART elements a
    part; None without numba."""
    loop = compiled_for(name, planes, *args, 0, 1)
    if loop is None:
        return None
    count = len(planes)
    parts = split(np, count, -(-MIN_POOL_PART // max(planes[0].size, 1)))
    if len(parts) == 1:
        return lambda: loop(planes, *args, 0, count)
    return lambda: run_parts(np, parts, lambda j, p0, p1, sync: loop(planes, *args, p0, p1),
                             one_blas_thread=False)


def _compiled_pooling(call, x, out, ws, geo):
    """The run function of a 1-D or 2-D max, sum or avg pooling (global too, but global max
    in training) through the compiled plane loops (:mod:`.pool_loops`; avg and sum then give
    MXNet's numbers bit for bit; max in training records each window's first maximum's
    offset in ``ws``, else None), or None where they do not apply (:func:`as_planes`, lp
    pooling, channels-last). Per pooling at batch 1 with cold caches: 0.35-0.55x the numpy
    passes' time on 35x35 to 224x224 maps (Inception v3's, ResNet's, VGG's, SqueezeNet's),
    0.8-1.1x on 17x17 and 8x8 ones; in ResNet-18's native train step (batch 16) the first
    max pooling 87 -> 8 ms forward, 60 -> 6 ms backward (benchmarks/README.md)."""
    p = call.params
    found = None if geo.last or p.pool_type == "lp" else as_planes(x, out)
    if found is None:
        return _compiled_max_rows(p, x, out, ws, geo)
    planes, out_planes = found
    args = plane_geometry(geo)
    if ws is not None:
        where = None if p.global_pool else workspace_planes(ws, out_planes)
        return None if where is None else over_planes(
            "max_planes_tracked", planes, out_planes, where, *args, lowest(x.dtype))
    if p.pool_type == "max":
        return over_planes("max_planes", planes, out_planes, *args, lowest(x.dtype))
    counts = window_counts(p, geo, planes, out_planes, x.shape, out.shape)
    mode = SUMMED
    if p.pool_type == "avg":
        mode = AVERAGE if _onednn_average(p, x.shape[2:], geo, x.dtype) else EACH_AVERAGED
    return over_planes("sum_planes", planes, out_planes, *args, counts, mode)


def as_rows(*arrays) -> list | None:
    """2-D channel-first max pooling arrays whose data are stored channels-last (N x H x W x
    C in memory, :mod:`graphexec.core.runtime.layout`) as the compiled rows loops' (N, H, W,
    C) views (the others' strides as they are), or None where those loops do not apply (not
    float32/float64 host arrays of one dtype, the first not stored channels-last, or
    empty)."""
    first = arrays[0]
    if (not all(isinstance(a, np.ndarray) and a.ndim == 4 for a in arrays)
            or first.dtype not in (np.float32, np.float64) or not first.size
            or any(a.dtype != first.dtype for a in arrays) or not stored_channels_last(first)):
        return None
    return [a.transpose(0, 2, 3, 1) for a in arrays]


def rows_workspace(ws, out_rows):
    """Max pooling's workspace as the rows loops' (N, OH, OW, C) view, an unwritten stand-in
    without one (inference), or None where the loops cannot take it (not an int32 host array
    of the output's shape)."""
    if ws is None:
        return np.lib.stride_tricks.as_strided(np.zeros(1, np.int32), out_rows.shape,
                                               (0,) * out_rows.ndim)
    if not isinstance(ws, np.ndarray) or ws.dtype != np.int32 or ws.ndim != 4:
        return None
    rows = ws.transpose(0, 2, 3, 1)
    return rows if rows.shape == out_rows.shape else None


def _compiled_max_rows(p, x, out, ws, geo):
    """The run function of a 2-D max pooling over channels-last data through the compiled
    rows loop (:func:`.pool_loops._max_rows`: each output pixel's channels at once; the
    maxima and first-maximum offsets of the plane loops, MXNet's), or None where it does not
    apply. ResNet-18 v1's first max pooling in the ``torch`` strategy's train step (batch
    16, 64 channels at 56x56): 5.9 ms forward and 5.3 ms backward against PyTorch's 6.1 and
    5.4 (benchmarks/README.md)."""
    found = max_rows_views(p, geo, x, out, ws)
    if found is None:
        return None
    return over_planes("max_rows", *found, ws is not None, *plane_geometry(geo),
                       lowest(x.dtype))


def max_rows_views(p, geo, data, pooled, ws):
    """(data, pooled, workspace) as the max rows loops' (N, H, W, C) views, for a 2-D max
    pooling (not global, channel-first ``layout``) whose ``data`` (or data gradient) are
    stored channels-last (:func:`as_rows`, :func:`rows_workspace`); None where the loops do
    not apply."""
    found = None if (p.pool_type != "max" or p.global_pool or geo.last
                     or len(geo.kernel) != 2) else as_rows(data, pooled)
    if found is None:
        return None
    where = rows_workspace(ws, found[1])
    return None if where is None else (*found, where)


def _window_reduction(xp, geo, out_sp: tuple):
    """(view(src), axes): the windows of the (padded) source as a strided view whose kernel
    axes one reduction takes, for poolings with more kernel offsets than windows (a last
    pooling over the whole map, SqueezeNet's 13x13 average: 0.72 ms as 169 ufunc calls
    over 1000 channels at batch 1, one call's worth as a reduction); None otherwise (the
    offsets' strided slices, one vectorised call each over all the windows)."""
    if math.prod(geo.kernel) <= math.prod(out_sp):
        return None
    axes = tuple(range(2, 2 + len(geo.kernel)))
    return (lambda src: windows(xp, src, geo.kernel, geo.stride, geo.dilate, out_sp)), axes
