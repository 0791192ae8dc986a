"""Winograd's F(2x2, 3x3) convolution: the ``winograd`` kernel variant of Convolution and its
backward, for 3x3 convolutions of stride 1 (``core.ops.conv.winograd_tiles``).

Per call: the filters and the input windows are transformed (compiled loops on numba's
threads, :mod:`.winograd_loops`), 16 matrix products over channels replace the 36 of a
direct 3x3 convolution per 2x2 output tile (2.25x fewer multiplications), and the products'
tiles are transformed back. The backward is the adjoint of the same maps (the products
transposed), written into the gradient arrays. The products run on the batched product the
node names (``PRODUCT_ATTR``, numpy's by default; the ``torch`` strategy registers
PyTorch's), the transforms' arrays live in the executor's workspace (4x the input and the
output, one at a time). A pass chooses the variant for a node by naming it; the transforms
need numba (without it, or when numba cannot compile them, the kernel warns once and runs the
plain native kernel, same numbers within rounding).
"""
from __future__ import annotations

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ops.conv import winograd_tiles
from graphexec.core.runtime.blas_threads import PRODUCT_ATTR, batched_product, on_numba_threads
from graphexec.core.runtime.blas_threads import split as thread_split

from .base import KERNELS, kernel_variant
from .compiled import compiled_for, loops_apply
from .conv import Scratch
from .conv_grad import bias_grad, wanted_grads

__all__ = ["WINOGRAD", "convolution_winograd", "convolution_backward_winograd"]

#: the variant's name (the ``torch`` strategy names it as a string: backends do not import
#: each other)
WINOGRAD = "winograd"


def _tiling(call, data, weight, out_dtype):
    """The tiling, or an error naming why the node cannot run the variant."""
    tiles = winograd_tiles(call.params, data.shape)
    if tiles is None:
        raise GraphexecError("the winograd kernel takes 2-D channel-first 3x3 convolutions of "
                             "stride 1, no dilation, one group and padding <= 2")
    if not loops_apply(call.xp, out_dtype, data, weight):
        raise GraphexecError("the winograd kernel takes C-contiguous float32 or float64 host "
                             "arrays")
    return tiles


#: floats between the 16 planes of an array the transforms write beyond their size: planes
#: of a multiple of 4 KiB (every layer of ResNet's) share cache sets, and the transforms
#: touch all 16 at one offset at once: the gradient's tiles took 4x longer (0.8 against 3.3
#: ms for 64 channels of 28x28 at batch 16). Arrays the products write stay contiguous
#: (PyTorch's products write a strided output through a copy).
PLANE_PAD = 16


def _specs(dtype, k: int, c: int, tiles: int) -> dict:
    return {name: ((16 * rows * cols + PLANE_PAD * 15,), dtype)
            for name, rows, cols in (("U", k, c), ("V", c, tiles), ("M", k, tiles))}


def _planes(buf, rows: int, cols: int, padded: bool):
    """The 16 planes (rows, cols), each C-contiguous, in the scratch array ``buf``: PLANE_PAD
    apart (``padded``, for the transforms to write) or contiguous (for the products)."""
    if not padded:
        return buf[:16 * rows * cols].reshape(16, rows, cols)
    step = rows * cols + PLANE_PAD
    return np.lib.stride_tricks.as_strided(buf, (16, rows, cols), (
        step * buf.itemsize, cols * buf.itemsize, buf.itemsize), writeable=True)


def _probes(dtype) -> tuple:
    """Small arrays typed as the padded and the contiguous views (numba compiles for dtype,
    rank and layout)."""
    buf = np.empty(16 + 15 * PLANE_PAD, dtype)
    return _planes(buf, 1, 1, True), _planes(buf, 1, 1, False)


def _loops(names: dict, *plane_counts: int):
    """name -> the compiled loop on as many of numba's threads as there are BLAS threads
    (one part per thread over the loop's planes), or None when a loop did not compile."""
    threads = len(thread_split(np, max(plane_counts), 1))
    loops = {}
    for key, args in names.items():
        loop = compiled_for(key, *args)
        if loop is None:
            return None
        loops[key] = on_numba_threads(loop, threads)
    return loops


@kernel_variant("Convolution", WINOGRAD)
def convolution_winograd(call):
    """out = the convolution of data (N, C, H, W) with the 3x3 weight (K, C, 3, 3) (+ bias)
    by F(2x2, 3x3)."""
    x, w = call.inputs[:2]
    out = call.outputs[0]
    th, tw, ph, pw = _tiling(call, x, w, out.dtype)
    n, c = x.shape[:2]
    k, dt = w.shape[0], out.dtype
    tiles = n * th * tw
    bias = call.inputs[2] if not call.params.no_bias else np.zeros(k, dt)
    padded, flat = _probes(dt)
    loops = _loops({"winograd_filters": (w, padded),
                    "winograd_input": (x, padded, ph, pw, th, tw),
                    "winograd_output": (flat, out, bias, th, tw)}, c, k)
    if loops is None:
        return KERNELS["Convolution"](call)
    product = batched_product(call.attrs.get(PRODUCT_ATTR))
    scratch = Scratch(call, **_specs(dt, k, c, tiles))
    filters, inputs, outputs = (loops["winograd_filters"], loops["winograd_input"],
                                loops["winograd_output"])

    def run():
        bufs = scratch.take()
        u, v = _planes(bufs["U"], k, c, True), _planes(bufs["V"], c, tiles, True)
        m = _planes(bufs["M"], k, tiles, False)
        filters(w, u)
        inputs(x, v, ph, pw, th, tw)
        product(u, v, m)
        outputs(m, out, bias, th, tw)
    return run


@kernel_variant("_backward_Convolution", WINOGRAD)
def convolution_backward_winograd(call):
    """Inputs (dY, data, weight[, bias]); outputs (dX, dW[, db]): the adjoint transforms,
    dV = U^T @ dM for the data gradient and dU = dM @ V^T for the weight gradient."""
    xp = call.xp
    og, x, w = call.inputs[:3]
    dx, dw = call.outputs[:2]
    th, tw, ph, pw = _tiling(call, x, w, og.dtype)
    want_x, want_w, want_b = wanted_grads(call)
    if not (want_x or want_w):
        return lambda: bias_grad(xp, call, og)
    n, c = x.shape[:2]
    k, dt = w.shape[0], og.dtype
    tiles = n * th * tw
    padded, flat = _probes(dt)
    names = {"winograd_output_adjoint": (og, padded, th, tw)}
    if want_x:
        names["winograd_filters"] = (w, padded)
        names["winograd_input_adjoint"] = (flat, dx, ph, pw, th, tw)
    if want_w:
        names["winograd_input"] = (x, padded, ph, pw, th, tw)
        names["winograd_filters_adjoint"] = (flat, dw)
    loops = _loops(names, c, k)
    if loops is None:
        return KERNELS["_backward_Convolution"](call)
    product = batched_product(call.attrs.get(PRODUCT_ATTR))
    scratch = Scratch(call, **_specs(dt, k, c, tiles))

    def run():
        bufs = scratch.take()
        m = _planes(bufs["M"], k, tiles, True)
        loops["winograd_output_adjoint"](og, m, th, tw)
        if want_x:  # dV = U^T dM into V's buffer, then its windows added up into dX
            u = _planes(bufs["U"], k, c, True)
            loops["winograd_filters"](w, u)
            dv = _planes(bufs["V"], c, tiles, False)
            product(u.transpose(0, 2, 1), m, dv)
            loops["winograd_input_adjoint"](dv, dx, ph, pw, th, tw)
        if want_w:  # dU = dM V^T into U's buffer, then back to 3x3 filters
            v = _planes(bufs["V"], c, tiles, True)
            loops["winograd_input"](x, v, ph, pw, th, tw)
            du = _planes(bufs["U"], k, c, False)
            product(m, v.transpose(0, 2, 1), du)
            loops["winograd_filters_adjoint"](du, dw)
        if want_b:
            bias_grad(xp, call, og)
    return run
