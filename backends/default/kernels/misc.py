"""Kernels of core/ops/misc.py: smooth_l1, softmin, softmax_cross_entropy, moments, diag,
khatri_rao, scatter_nd, ravel/unravel, _split_v2, fill_element_0index, slice assignment,
all_finite / multi_all_finite and the AMP casts, with their backward operators.

Reductions of float16 data run in float32 (as MXNet's kernels accumulate)."""
from __future__ import annotations

from functools import partial

import numpy as np

from graphexec.core.ops.misc import smooth_l1_constants, split_v2_indices
from graphexec.core.ops.slicing import slice_bounds

from .base import float_math, kernel, sequence
from .nn import softmax_fn, work_dtype
from .nn_grad import softmax_grad_fn
from .tensor import copy_plan


def _store(xp, out, value) -> None:
    xp.copyto(out, value, casting="unsafe")


# -- smooth_l1 ----------------------------------------------------------------------------------
@kernel("smooth_l1", inplace=True)
@partial(float_math, half=True, integers=False)
def smooth_l1(call):
    """0.5 (sigma x)^2 where |x| < 1 / sigma^2, else |x| - 0.5 / sigma^2; on float16 data in
    float32, rounded once (MXNet's numbers)."""
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    s2, bound, shift = smooth_l1_constants(call.params.scalar)

    def run():
        a = xp.abs(x)
        with np.errstate(invalid="ignore"):  # sigma 0: inf - inf in the branch not taken
            _store(xp, out, xp.where(a < bound, 0.5 * s2 * x * x, a - shift))
    return run


@kernel("_backward_smooth_l1", inplace=True)
def smooth_l1_backward(call):
    xp, (og, x), dx = call.xp, call.inputs, call.outputs[0]
    s2, bound, _ = smooth_l1_constants(call.params.scalar)

    def run():  # MXNet's: 1 above the bound, -1 below minus it, sigma^2 x between
        with np.errstate(invalid="ignore"):  # sigma 0 at +-inf: 0 * inf, NaN as MXNet's
            _store(xp, dx, og * xp.where(x > bound, 1, xp.where(x < -bound, -1, s2 * x)))
    return run


# -- softmin / softmax_cross_entropy ------------------------------------------------------------
@kernel("softmin")
def softmin(call):
    """softmax(-x / T): the softmax of the negated input."""
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    neg = xp.empty(x.shape, x.dtype)
    inner = softmax_fn(xp, neg, out, p.axis % x.ndim, p.temperature)

    def run():
        xp.negative(x, out=neg)
        inner()
    return run


@kernel("_backward_softmin", inplace=True)
def softmin_backward(call):
    xp, (og, y), dx, p = call.xp, call.inputs, call.outputs[0], call.params
    inner = softmax_grad_fn(xp, og, y, dx, p.axis % y.ndim, p.temperature)

    def run():
        inner()
        xp.negative(dx, out=dx)
    return run


def _log_softmax_rows(xp, x):
    w = x.astype(work_dtype(x.dtype))
    w = w - w.max(axis=1, keepdims=True)
    return w - xp.log(xp.exp(w).sum(axis=1, keepdims=True))


def _label_index(xp, label, classes: int):
    # MXNet reads the label as an integer class (truncated toward zero)
    return xp.clip(label.astype(np.int64), 0, classes - 1)


@kernel("softmax_cross_entropy")
def softmax_cross_entropy(call):
    """-sum over rows of log softmax(data)[row, label[row]], a (1,) array."""
    xp, (x, label), out = call.xp, call.inputs, call.outputs[0]
    rows = xp.arange(x.shape[0])

    def run():
        logp = _log_softmax_rows(xp, x)
        _store(xp, out, -logp[rows, _label_index(xp, label, x.shape[1])].sum().reshape(1))
    return run


@kernel("_backward_softmax_cross_entropy")
def softmax_cross_entropy_backward(call):
    """(softmax(data) - one_hot(label)) * ograd; the label's gradient is zero."""
    xp, (og, x, label) = call.xp, call.inputs
    dx, dlabel = call.outputs
    rows = xp.arange(x.shape[0])

    def run():
        grad = xp.exp(_log_softmax_rows(xp, x))
        grad[rows, _label_index(xp, label, x.shape[1])] -= 1
        _store(xp, dx, grad * og.astype(grad.dtype).reshape(()))
        if call.req[1] != "null":
            dlabel.fill(0)
    return run


# -- moments --------------------------------------------------------------------------------------
def _moment_axes(p, ndim: int) -> tuple:
    return tuple(a % ndim for a in p.axes)


@kernel("moments")
def moments(call):
    xp, x, (mean, var), p = call.xp, call.inputs[0], call.outputs, call.params
    axes = _moment_axes(p, x.ndim)

    def run():
        w = x.astype(work_dtype(x.dtype))
        m = w.mean(axis=axes, keepdims=True)
        _store(xp, mean, m.reshape(mean.shape))
        _store(xp, var, ((w - m) ** 2).mean(axis=axes).reshape(var.shape))
    return run


@kernel("_backward_moments")
def moments_backward(call):
    """d/dx = og_mean / N + og_var * 2 (x - mean) / N."""
    xp, (og_m, og_v, x, mean, _var), dx = call.xp, call.inputs, call.outputs[0]
    axes = _moment_axes(call.params, x.ndim)
    keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))

    def run():
        wdt = work_dtype(x.dtype)
        m, gm, gv = (a.astype(wdt).reshape(keep) for a in (mean, og_m, og_v))
        _store(xp, dx, (gm + 2.0 * gv * (x.astype(wdt) - m)) / n)
    return run


# -- diag -----------------------------------------------------------------------------------------
def _diag_axes(p, ndim: int) -> tuple[int, int]:
    return p.axis1 % ndim, p.axis2 % ndim


@kernel("diag")
def diag(call):
    xp, x, out, p = call.xp, call.inputs[0], call.outputs[0], call.params
    if x.ndim == 1:
        return lambda: _store(xp, out, xp.diag(x, p.k))
    a1, a2 = _diag_axes(p, x.ndim)
    return copy_plan(xp, [(out, xp.diagonal(x, p.k, a1, a2))])


@kernel("_backward_diag")
def diag_backward(call):
    """The output gradient put back on the diagonal it came from (zeros elsewhere)."""
    xp, og, dx, p = call.xp, call.inputs[0], call.outputs[0], call.params
    if dx.ndim == 1:
        return copy_plan(xp, [(dx, xp.diagonal(og, p.k))])
    a1, a2 = _diag_axes(p, dx.ndim)
    n = og.shape[-1]
    rows, cols = (xp.arange(n) + max(0, -p.k)), (xp.arange(n) + max(0, p.k))
    planes = xp.moveaxis(dx, (a1, a2), (-2, -1))  # a view: writes land in dx

    def run():
        dx.fill(0)
        planes[..., rows, cols] = og
    return run


# -- khatri_rao / scatter_nd / ravel --------------------------------------------------------------
@kernel("khatri_rao")
def khatri_rao(call):
    """Column-wise Kronecker product: column k is A1[:, k] (x) ... (x) An[:, k]."""
    xp, mats, out = call.xp, call.inputs, call.outputs[0]

    def run():
        acc = mats[0]
        for m in mats[1:]:
            acc = (acc[:, None, :] * m[None, :, :]).reshape(-1, m.shape[1])
        _store(xp, out, acc)
    return run


@kernel("scatter_nd")
def scatter_nd(call):
    """Zeros of ``shape`` with data written at the index columns (the last write of a
    repeated index wins, as MXNet's sequential CPU kernel)."""
    (data, ind), out = call.inputs, call.outputs[0]
    m = ind.shape[0]

    def run():
        out.fill(0)
        idx = tuple(ind.astype(np.int64).reshape(m, -1))
        flat = data.reshape((-1,) + out.shape[m:])
        out[idx] = flat
    return run


@kernel("_ravel_multi_index")
def ravel_multi_index(call):
    xp, x, out, shape = call.xp, call.inputs[0], call.outputs[0], call.params.shape
    strides = np.array([int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))])
    strides = xp.asarray(strides.reshape((-1,) + (1,) * (x.ndim - 1)))

    def run():
        _store(xp, out, (x.astype(np.int64) * strides).sum(axis=0))
    return run


@kernel("_unravel_index")
def unravel_index(call):
    xp, x, out, shape = call.xp, call.inputs[0], call.outputs[0], call.params.shape

    def run():
        # as MXNet's kernel: C's remainder and quotient (toward zero: -1 in (2, 4) gives
        # (0, -1)), the leading axis taking the whole quotient (no wrapping)
        rest = x.astype(np.int64)
        for k in range(len(shape) - 1, 0, -1):
            remainder = xp.fmod(rest, shape[k])
            _store(xp, out[k], remainder)
            rest = (rest - remainder) // shape[k]
        _store(xp, out[0], rest)
    return run


# -- _split_v2 ------------------------------------------------------------------------------------
def _split_v2_parts(x, p) -> list:
    axis = p.axis % x.ndim
    starts = split_v2_indices(p, x.shape[axis])
    ends = starts[1:] + [x.shape[axis]]
    parts = []
    for s, e in zip(starts, ends):
        index = (slice(None),) * axis + ((s,) if p.squeeze_axis else (slice(s, e),))
        parts.append(x[index])
    return parts


@kernel("_split_v2")
def split_v2(call):
    return copy_plan(call.xp, list(zip(call.outputs, _split_v2_parts(call.inputs[0],
                                                                      call.params))))


@kernel("_split_v2_backward")
def split_v2_backward(call):
    return copy_plan(call.xp, list(zip(_split_v2_parts(call.outputs[0], call.params),
                                       call.inputs)))


# -- fill_element_0index / slice assignment -------------------------------------------------------
@kernel("fill_element_0index", inplace=True)
def fill_element_0index(call):
    """out = lhs; out[i, rhs[i]] = mhs[i]. An index outside [0, columns) is an error (MXNet
    1.9.1 writes outside the row there)."""
    xp, (lhs, mhs, rhs), out = call.xp, call.inputs, call.outputs[0]
    rows = xp.arange(lhs.shape[0])
    columns = lhs.shape[1]

    def run():
        cols = rhs.astype(np.int64)
        if cols.size and (int(cols.min()) < 0 or int(cols.max()) >= columns):
            raise ValueError(f"fill_element_0index: indices must lie in [0, {columns}) (the "
                             f"columns of lhs), got {rhs.tolist()}")
        if out is not lhs:
            xp.copyto(out, lhs)
        out[rows, cols] = mhs
    return run


@kernel("_slice_assign", inplace=True)
def slice_assign(call):
    xp, (lhs, rhs), out = call.xp, call.inputs, call.outputs[0]
    index = tuple(slice_bounds(call.params, lhs.shape))
    steps = [] if out is lhs else [lambda: xp.copyto(out, lhs)]
    return sequence(steps + [lambda: xp.copyto(out[index], rhs)])


@kernel("_slice_assign_scalar", inplace=True)
def slice_assign_scalar(call):
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    index = tuple(slice_bounds(call.params, x.shape))
    value = out.dtype.type(call.params.scalar)
    steps = [] if out is x else [lambda: xp.copyto(out, x)]
    return sequence(steps + [lambda: out[index].fill(value)])


# -- finiteness and AMP casts ---------------------------------------------------------------------
def _finite_flag(call, arrays):
    """1.0 where every element of ``arrays`` is finite, else 0 (with init_output=False the
    flag is only ever cleared: MXNet leaves a 1 from a previous step untouched)."""
    xp, out, init = call.xp, call.outputs[0], call.params.init_output

    def run():
        ok = all(bool(xp.isfinite(a).all()) for a in arrays)
        if init or not ok:
            out.fill(1.0 if ok else 0.0)
    return run


@kernel("all_finite")
def all_finite(call):
    return _finite_flag(call, call.inputs)


@kernel("multi_all_finite")
def multi_all_finite(call):
    return _finite_flag(call, call.inputs)


@kernel("amp_cast", "_backward_amp_cast", "amp_multicast", "_backward_amp_multicast")
def amp_cast(call):
    """Each output is its input cast to the output's dtype."""
    xp, pairs = call.xp, list(zip(call.outputs, call.inputs))

    def run():
        for out, x in pairs:
            _store(xp, out, x)
    return run
