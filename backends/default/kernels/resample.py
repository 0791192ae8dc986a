"""Native kernels of the resampling family (core/ops/resample.py): BilinearResize2D,
AdaptiveAvgPooling2D, depth_to_space and space_to_depth, and their backward ops.

BilinearResize2D gathers the two taps of each output column, then interpolates each run of
output rows between its two input rows, with MXNet's float32 weights.
The backward passes and AdaptiveAvgPooling2D apply the per-axis matrices of
``core.ops.resample`` (two matmuls over the batch of channels). Float16 data is computed in
float32, as MXNet accumulates it."""
from __future__ import annotations

from graphexec.core.ops.resample import adaptive_weights, resize_taps, resize_weights

from .base import kernel, sequence
from .nn import work_dtype

__all__ = ["separable"]


def _as_work(xp, a, dtype):
    return xp.asarray(a, dtype=dtype)


def separable(xp, x, ry, rx, out) -> None:
    """out[n, c] = ry @ x[n, c] @ rx.T (ry, rx in the working dtype)."""
    wdt = ry.dtype
    t = xp.matmul(x.astype(wdt, copy=False), rx.T)
    xp.copyto(out, xp.matmul(ry, t), casting="unsafe")


def _taps(xp, n_in: int, n_out: int, align: bool, dtype):
    lo, hi, w_lo, w_hi = resize_taps(n_in, n_out, align)
    return (xp.asarray(lo), xp.asarray(hi), _as_work(xp, w_lo, dtype), _as_work(xp, w_hi, dtype))


def _row_groups(lo, hi, w_hi) -> list:
    """Runs of consecutive output rows reading the same two input rows: (first, end, low row,
    high row, their high weights as a column)."""
    n = len(lo)
    cuts = [0] + [i for i in range(1, n) if (lo[i], hi[i]) != (lo[i - 1], hi[i - 1])] + [n]
    return [(a, b, int(lo[a]), int(hi[a]), w_hi[a:b].reshape(-1, 1))
            for a, b in zip(cuts, cuts[1:])]


@kernel("_contrib_BilinearResize2D")
def bilinear_resize(call):
    """Columns first (two taps on the small input), then each run of output rows sharing its
    two input rows as low + w (high - low): two passes over the output, which dominates (the
    result differs from MXNet's h0 low + h1 high by rounding only)."""
    xp, p, x, out = call.xp, call.params, call.inputs[0], call.outputs[0]
    (h, w), (oh, ow) = x.shape[2:], out.shape[2:]
    if (h, w) == (oh, ow):
        return lambda: xp.copyto(out, x)
    wdt = work_dtype(x.dtype)
    ylo, yhi, _, y1 = resize_taps(h, oh, p.align_corners)
    xlo, xhi, x0, x1 = _taps(xp, w, ow, p.align_corners, wdt)
    groups = [(a, b, lo, hi, _as_work(xp, wt, wdt)) for a, b, lo, hi, wt in
              _row_groups(ylo, yhi, y1)]
    scratch = None if out.dtype == wdt else xp.empty(out.shape, wdt)

    def run():
        a = x.astype(wdt, copy=False)
        cols = x0 * a[..., xlo] + x1 * a[..., xhi]
        dst = out if scratch is None else scratch
        for first, end, lo, hi, wt in groups:
            low = cols[:, :, lo:lo + 1]
            block = dst[:, :, first:end]
            xp.multiply(wt, cols[:, :, hi:hi + 1] - low, out=block)
            xp.add(block, low, out=block)
        if scratch is not None:
            xp.copyto(out, scratch, casting="unsafe")
    return run


def _matrices(xp, shape_in: tuple, shape_out: tuple, build, dtype):
    (h, w), (oh, ow) = shape_in, shape_out
    return _as_work(xp, build(h, oh), dtype), _as_work(xp, build(w, ow), dtype)


@kernel("_backward_contrib_BilinearResize2D")
def bilinear_resize_backward(call):
    """d data = Ry.T @ og @ Rx; the ``like`` input's gradient is zero."""
    xp, p, og = call.xp, call.params, call.inputs[0]
    dx = call.outputs[0]
    ry, rx = _matrices(xp, dx.shape[2:], og.shape[2:],
                       lambda i, o: resize_weights(i, o, p.align_corners), work_dtype(dx.dtype))
    steps = [lambda: separable(xp, og, ry.T, rx.T, dx)]
    if len(call.outputs) > 1:
        steps.append(lambda: call.outputs[1].fill(0))
    return sequence(steps)


@kernel("_contrib_AdaptiveAvgPooling2D")
def adaptive_avg_pooling(call):
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    ry, rx = _matrices(xp, x.shape[2:], out.shape[2:], adaptive_weights, work_dtype(x.dtype))
    return lambda: separable(xp, x, ry, rx, out)


@kernel("_backward_contrib_AdaptiveAvgPooling2D")
def adaptive_avg_pooling_backward(call):
    xp, og, dx = call.xp, call.inputs[0], call.outputs[0]
    ry, rx = _matrices(xp, dx.shape[2:], og.shape[2:], adaptive_weights, work_dtype(dx.dtype))
    return lambda: separable(xp, og, ry.T, rx.T, dx)


# -- depth_to_space / space_to_depth ------------------------------------------------------------
@kernel("depth_to_space")
def depth_to_space(call):
    """(N, C, H, W) -> (N, C / b^2, H b, W b): channel (i b + j) C / b^2 + c goes to
    position (y b + i, x b + j) of channel c (ONNX's DCR order)."""
    xp, b, x, out = call.xp, call.params.block_size, call.inputs[0], call.outputs[0]
    n, c, h, w = x.shape
    dst = out.reshape(n, c // (b * b), h, b, w, b)

    def run():
        xp.copyto(dst, x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2))
    return run


@kernel("space_to_depth")
def space_to_depth(call):
    """The inverse of depth_to_space."""
    xp, b, x, out = call.xp, call.params.block_size, call.inputs[0], call.outputs[0]
    n, c, h, w = x.shape
    dst = out.reshape(n, b, b, c, h // b, w // b)

    def run():
        xp.copyto(dst, x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4))
    return run
