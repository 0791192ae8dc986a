"""Winograd's F(2x2, 3x3) convolution: the ``winograd`` kernel variant of Convolution and its
backward, for 3x3 convolutions of stride 1 (``core.ops.conv.winograd_tiles``).

Per call: the filters and the input windows are transformed (compiled loops,
:mod:`.winograd_loops`: on numba's threads beside PyTorch's products, on the calling thread
beside numpy's), 16 matrix products over channels replace the 36 of a
direct 3x3 convolution per 2x2 output tile (2.25x fewer multiplications), and the products'
tiles are transformed back. The backward is the adjoint of the same maps (the products
transposed), written into the gradient arrays. The products run on the batched product the
node names (``PRODUCT_ATTR``, numpy's by default; the ``torch`` strategy registers
PyTorch's), the transforms' arrays live in the executor's workspace (4x the input and the
output of a chunk of samples, at most CHUNK_BYTES for any batch but a single large sample).
A pass chooses the variant for a node by naming it. The transforms need numba: without it
the plain native kernel runs (the ``torch`` strategy then does not choose the variant), and
a loop numba cannot compile is reported once in a RuntimeWarning before the plain kernel
runs (same numbers within rounding).
"""
from __future__ import annotations

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ops.conv import winograd_tiles
from graphexec.core.runtime.blas_threads import PRODUCT_ATTR, batched_product, on_numba_threads
from graphexec.core.runtime.blas_threads import split as thread_split
from graphexec.core.runtime.staging import Staging

from .base import KERNELS, kernel_variant
from .compiled import compiled_for
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
    if call.xp is not np or data.dtype != out_dtype or weight.dtype != out_dtype or \
            out_dtype not in (np.float32, np.float64):
        raise GraphexecError(f"the winograd kernel takes float32 or float64 host arrays of one "
                             f"dtype, got data {data.dtype} and weight {weight.dtype} "
                             f"({call.xp.__name__})")
    return tiles


#: floats between the 16 planes of an array the transforms write beyond their size: planes
#: of a multiple of 4 KiB (every layer of ResNet's) share cache sets, and the transforms
#: touch all 16 at one offset at once: the gradient's tiles took 4x longer (0.8 against 3.3
#: ms for 64 channels of 28x28 at batch 16). Arrays the products write stay contiguous
#: (PyTorch's products write a strided output through a copy).
PLANE_PAD = 16


#: the most bytes the transformed inputs and outputs of one chunk of samples take (V and M):
#: larger batches run in chunks of samples (at least one), so the scratch stays bounded
#: where im2col or oneDNN would need none (ResNet-50's first layers at batch 64, 224x224:
#: 0.4 GB unchunked)
CHUNK_BYTES = 64 << 20


def _chunk(n: int, c: int, k: int, sample_tiles: int, itemsize: int) -> int:
    """Samples per chunk."""
    per_sample = 16 * (c + k) * sample_tiles * itemsize
    return max(1, min(n, CHUNK_BYTES // max(per_sample, 1)))


def _specs(dtype, k: int, c: int, tiles: int, extra: tuple = ()) -> dict:
    """Scratch rows for U (16, K, C), V (16, C, tiles), M (16, K, tiles) and the ``extra``
    (16, K, C) arrays, each with room for PLANE_PAD between planes."""
    shapes = [("U", k, c), ("V", c, tiles), ("M", k, tiles)] + [(e, k, c) for e in extra]
    return {name: ((16 * rows * cols + PLANE_PAD * 15,), dtype) for name, rows, cols in shapes}


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


def _loops(names: dict, product: str | None, *plane_counts: int):
    """name -> the compiled loop, or None when a loop did not compile. With a registered
    product (``product`` named: PyTorch's, under the ``torch`` strategy) the loops run on as
    many of numba's threads as there are BLAS threads (one part per thread over the loop's
    planes); with numpy's (None) on the calling thread: OpenBLAS's workers spin after each
    product and take the cores numba's threads would need (VGG-11 at batch 1 took 1.16x the
    plain kernels' time with the loops on two threads, 0.87x on one; benchmarks/README.md)."""
    threads = len(thread_split(np, max(plane_counts), 1)) if product is not None else 1
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
    by F(2x2, 3x3), in chunks of samples (CHUNK_BYTES)."""
    x, w = call.inputs[:2]
    out = call.outputs[0]
    th, tw, ph, pw = _tiling(call, x, w, out.dtype)
    n, c = x.shape[:2]
    k, dt = w.shape[0], out.dtype
    chunk = _chunk(n, c, k, th * tw, dt.itemsize)
    stage = Staging()
    x, w, out = stage.read(x), stage.read(w), stage.write(out)
    bias = stage.read(call.inputs[2]) if not call.params.no_bias else np.zeros(k, dt)
    padded, flat = _probes(dt)
    product_name = call.attrs.get(PRODUCT_ATTR)
    loops = _loops({"winograd_filters": (w, padded),
                    "winograd_input": (x, padded, ph, pw, th, tw),
                    "winograd_output": (flat, out, bias, th, tw)}, product_name, c, k)
    if loops is None:
        return KERNELS["Convolution"](call)
    product = batched_product(product_name)
    scratch = Scratch(call, **_specs(dt, k, c, chunk * th * tw))
    filters, inputs, outputs = (loops["winograd_filters"], loops["winograd_input"],
                                loops["winograd_output"])

    def run():
        bufs = scratch.take()
        u = _planes(bufs["U"], k, c, True)
        filters(w, u)
        for n0 in range(0, n, chunk):
            n1 = min(n, n0 + chunk)
            tiles = (n1 - n0) * th * tw
            v, m = _planes(bufs["V"], c, tiles, True), _planes(bufs["M"], k, tiles, False)
            inputs(x[n0:n1], v, ph, pw, th, tw)
            product(u, v, m)
            outputs(m, out[n0:n1], bias, th, tw)
    return stage.around(run)


@kernel_variant("_backward_Convolution", WINOGRAD)
def convolution_backward_winograd(call):
    """Inputs (dY, data, weight[, bias]); outputs (dX, dW[, db]): the adjoint transforms,
    dV = U^T @ dM for the data gradient and dU = dM @ V^T for the weight gradient (summed
    over the chunks of samples)."""
    xp = call.xp
    og, x, w = call.inputs[:3]
    dx, dw = call.outputs[:2]
    th, tw, ph, pw = _tiling(call, x, w, og.dtype)
    want_x, want_w, want_b = wanted_grads(call)
    if not (want_x or want_w):
        return lambda: bias_grad(xp, call, og)
    n, c = x.shape[:2]
    k, dt = w.shape[0], og.dtype
    chunk = _chunk(n, c, k, th * tw, dt.itemsize)
    stage = Staging()
    og, x, w = stage.read(og), stage.read(x), stage.read(w)
    dx = stage.write(dx) if want_x else dx
    dw = stage.write(dw) if want_w else dw
    padded, flat = _probes(dt)
    names = {"winograd_output_adjoint": (og, padded, th, tw)}
    if want_x:
        names["winograd_filters"] = (w, padded)
        names["winograd_input_adjoint"] = (flat, dx, ph, pw, th, tw)
    if want_w:
        names["winograd_input"] = (x, padded, ph, pw, th, tw)
        names["winograd_filters_adjoint"] = (flat, dw)
    product_name = call.attrs.get(PRODUCT_ATTR)
    loops = _loops(names, product_name, c, k)
    if loops is None:
        return KERNELS["_backward_Convolution"](call)
    product = batched_product(product_name)
    # one chunk: dU goes into U's buffer once dV is done; several: dU is summed in D, each
    # chunk's part made in T
    extra = ("D", "T") if want_w and chunk < n else ()
    scratch = Scratch(call, **_specs(dt, k, c, chunk * th * tw, extra))

    def run():
        bufs = scratch.take()
        u = _planes(bufs["U"], k, c, True)
        if want_x:
            loops["winograd_filters"](w, u)
        for n0 in range(0, n, chunk):
            n1 = min(n, n0 + chunk)
            tiles = (n1 - n0) * th * tw
            m = _planes(bufs["M"], k, tiles, True)
            loops["winograd_output_adjoint"](og[n0:n1], m, th, tw)
            if want_x:  # dV = U^T dM into V's buffer, then its windows added up into dX
                dv = _planes(bufs["V"], c, tiles, False)
                product(u.transpose(0, 2, 1), m, dv)
                loops["winograd_input_adjoint"](dv, dx[n0:n1], ph, pw, th, tw)
            if want_w:  # dU = dM V^T, then (after the last chunk) back to 3x3 filters
                v = _planes(bufs["V"], c, tiles, True)
                loops["winograd_input"](x[n0:n1], v, ph, pw, th, tw)
                du = _planes(bufs["D" if extra else "U"], k, c, False)
                part = du if n0 == 0 else _planes(bufs["T"], k, c, False)
                product(m, v.transpose(0, 2, 1), part)
                if part is not du:
                    xp.add(du, part, out=du)
        if want_w:
            loops["winograd_filters_adjoint"](du, dw)
        if want_b:
            bias_grad(xp, call, og)
    return stage.around(run)
