"""Native kernels of the nn family's backward operators (declared in core/ops/nn_grad.py).

Inputs are what MXNet's backward node reads (output gradient first); output k is the gradient
of the forward input k. Outputs whose request is 'null' are not computed. float16 data is
worked in float32 where a sum is involved, as MXNet accumulates.
"""
from __future__ import annotations

import math

import numpy as np

from graphexec.core.ops.nn import SELU_ALPHA, SELU_LAMBDA

from .base import (BATCHNORM_RELU, OPENMP, cast_scalar, kernel, kernel_variant, nothing,
                   same_array, sequence, special)
from .compiled import channel_range, channel_rows, compiled_for, over_channels, over_rows
from .nn import matmul_into, prelu_gamma_shape, relu_affine, reshaper, work_dtype

__all__ = ["target", "sum_into", "nothing", "sequence"]


def target(xp, arr, shape):
    """(view, commit): ``arr`` seen with ``shape`` to be written, and a function to call after
    writing; a non-contiguous ``arr`` (a strided user buffer) is written through a buffer."""
    if arr.flags.c_contiguous:
        return arr.reshape(shape), (lambda: None)
    buf = xp.empty(shape, arr.dtype)
    return buf, (lambda: xp.copyto(arr, buf.reshape(arr.shape)))


def sum_into(xp, a, axis, out, wide: bool = False) -> None:
    """``out = a.sum(axis)`` accumulated in float32 for float16; ``wide``: in float64 for
    float32 too (a sum over thousands of rows along a strided axis adds row by row, and
    its float32 rounding exceeds MXNet's own on cancelling terms)."""
    wdt = np.dtype("float64") if wide and a.dtype == np.float32 else work_dtype(a.dtype)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if wdt == a.dtype == out.dtype and out.ndim == a.ndim - len(axes):
        xp.add.reduce(a, axis=axis, out=out)   # the ufunc itself: np.sum's wrapper costs 2 us
    else:
        xp.copyto(out, xp.sum(a, axis=axis, dtype=wdt).reshape(out.shape), casting="unsafe")



# -- FullyConnected -------------------------------------------------------------------------
@kernel("_backward_FullyConnected")
def fully_connected_backward(call):
    """dX = dY @ W, dW = dY^T @ X, db = sum of dY over rows: one matmul per gradient, each
    written in place."""
    xp, p = call.xp, call.params
    og, x, w = call.inputs
    rows = x.shape[0] if p.flatten else math.prod(x.shape[:-1])
    og2, x2 = reshaper(og, (rows, p.num_hidden)), reshaper(x, (rows, w.shape[1]))
    steps = []
    if call.req[0] != "null":
        dx2, commit = target(xp, call.outputs[0], (rows, w.shape[1]))

        def data_grad():
            matmul_into(xp, og2(), w, dx2)
            commit()
        steps.append(data_grad)
    if call.req[1] != "null":
        dw = call.outputs[1]
        steps.append(lambda: matmul_into(xp, og2().T, x2(), dw))
    if not p.no_bias and call.req[2] != "null":
        db = call.outputs[2]
        steps.append(lambda: sum_into(xp, og2(), 0, db))
    return sequence(steps)


# -- Activation -----------------------------------------------------------------------------
_ACTIVATION_GRAD = {
    "sigmoid": lambda xp, y, x: y * (1 - y),
    "tanh": lambda xp, y, x: 1 - y * y,
    "softrelu": lambda xp, y, x: -xp.expm1(-y),
    "softsign": lambda xp, y, x: 1 / ((1 + xp.abs(x)) ** 2),
}


@kernel("_backward_Activation", inplace=True)
def activation_backward(call):
    """From the output y (relu, sigmoid, tanh, softrelu) or the input (softsign)."""
    xp, og, y = call.xp, call.inputs[0], call.inputs[1]
    out = call.outputs[0]
    if call.params.act_type == "relu":
        positive = xp.empty(y.shape, dtype=bool)

        def relu():
            xp.greater(y, 0, out=positive)
            xp.multiply(og, positive, out=out)
        return relu
    fn, x = _ACTIVATION_GRAD[call.params.act_type], call.inputs[-1]
    return lambda: xp.multiply(og, fn(xp, y, x), out=out, casting="unsafe")


@kernel_variant("_backward_Activation", BATCHNORM_RELU)
def relu_backward_in_batch_norm(call):
    """The gradient of a relu after a BatchNorm of variant ``BATCHNORM_RELU``, whose backward
    (this gradient's only reader) masks it: nothing to do where the output is dY's array,
    else the relu's gradient (masking twice gives the same numbers)."""
    if call.req[0] == "null" or same_array(call.inputs[0], call.outputs[0]):
        return nothing
    return activation_backward(call)


# -- LeakyReLU ------------------------------------------------------------------------------
def _gelu_grad(xp, x):
    """d/dx of 0.5 x (1 + erf(x / sqrt 2)) = Phi(x) + x phi(x)."""
    cdf = 0.5 * (1 + special(xp).erf(x * (1 / math.sqrt(2))))
    return cdf + x * xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))


def _negative_slope(xp, p, x, y):
    """The derivative where x <= 0 (x > 0 gives 1, selu lambda) as MXNet 1.9.1 computes it:
    for selu that is lambda * (y + alpha) with y the selu output (already scaled by lambda),
    not the true lambda * alpha * exp(x); reproduced as is."""
    kind = p.act_type
    if kind == "leaky":
        return cast_scalar(p.slope, x)
    if kind == "elu":
        return y + cast_scalar(p.slope, y)
    return (y + cast_scalar(SELU_ALPHA, y)) * cast_scalar(SELU_LAMBDA, y)


@kernel("_backward_LeakyReLU", inplace=True)
def leaky_relu_backward(call):
    """leaky / elu / selu / gelu from (x, y); prelu also gives gamma's gradient (summed over
    every axis but the channel axis 1, or over all for a single gamma); rrelu uses the slopes
    its training forward drew (the mask output)."""
    xp, p, og = call.xp, call.params, call.inputs[0]
    dx = call.outputs[0]
    kind = p.act_type
    if kind == "prelu":
        return _prelu_backward(call)
    if kind == "rrelu":
        x, mask = call.inputs[2], call.inputs[4]
        return lambda: xp.multiply(og, xp.where(x > 0, 1, mask), out=dx, casting="unsafe")
    x, y = call.inputs[1], call.inputs[2]
    if kind == "gelu":
        return lambda: xp.multiply(og, _gelu_grad(xp, x), out=dx, casting="unsafe")
    positive = cast_scalar(SELU_LAMBDA if kind == "selu" else 1.0, x)

    def run():
        slope = xp.where(x > 0, positive, _negative_slope(xp, p, x, y))
        xp.multiply(og, slope, out=dx, casting="unsafe")
    return run


def _prelu_backward(call):
    xp = call.xp
    og, x, gamma = call.inputs[:3]
    dx, dgamma = call.outputs
    shape = prelu_gamma_shape(gamma.shape, x.ndim)
    g = gamma.reshape(shape)
    # gamma's gradient sums over the axes gamma broadcasts along
    axes = tuple(i for i in range(x.ndim) if shape[i] == 1)
    want_x, want_g = call.req[0] != "null", call.req[1] != "null"

    def run():
        negative = x <= 0
        if want_g:  # first: dx may overwrite og (in place)
            sum_into(xp, og * x * negative, axes, dgamma)
        if want_x:
            xp.multiply(og, xp.where(negative, g, 1), out=dx, casting="unsafe")
    return run


# -- Dropout --------------------------------------------------------------------------------
@kernel("_backward_Dropout", inplace=True)
def dropout_backward(call):
    """dY * mask (the mask broadcasts over ``axes``) where the forward dropped; a backward
    with is_train=False passes dY through (mode 'training'), as MXNet does."""
    xp, (og, mask), dx = call.xp, call.inputs, call.outputs[0]
    if call.is_train or call.params.mode == "always":
        return lambda: xp.multiply(og, mask, out=dx)
    return lambda: xp.copyto(dx, og)


# -- softmax family -------------------------------------------------------------------------
def softmax_grad_fn(xp, og, y, dx, axis, temperature=None, log: bool = False):
    """A callable writing the input gradient of softmax (or log-softmax) output ``y`` along
    ``axis``: y * (dY - sum(dY * y)) / T, or (dY - exp(y) * sum(dY)) / T."""
    wdt = np.result_type(work_dtype(dx.dtype), y.dtype)
    t = None if temperature in (None, 1.0) else wdt.type(temperature)

    def run():
        g, yw = og.astype(wdt, copy=False), y.astype(wdt, copy=False)
        if log:
            res = g - xp.exp(yw) * g.sum(axis=axis, keepdims=True)
        else:
            res = yw * (g - (g * yw).sum(axis=axis, keepdims=True))
        if t is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                res /= t
        xp.copyto(dx, res, casting="unsafe")
    return run


@kernel("_backward_softmax", "_backward_log_softmax", inplace=True)
def softmax_backward(call):
    """Inputs (dY, y), or (dY, data, length, y) with use_length (the length's gradient is
    written as zeros, as MXNet writes it)."""
    xp, p = call.xp, call.params
    og, y = call.inputs[0], call.inputs[-1]
    run = softmax_grad_fn(xp, og, y, call.outputs[0], p.axis % y.ndim, p.temperature,
                          log=call.op_name == "_backward_log_softmax")
    if len(call.outputs) == 1 or call.req[1] == "null":
        return run
    dlen = call.outputs[1]
    return sequence([run, lambda: dlen.fill(0)])


@kernel("_backward_SoftmaxActivation", inplace=True)
def softmax_activation_backward(call):
    og, y = call.inputs
    axis = 1 if call.params.mode == "channel" else y.ndim - 1
    return softmax_grad_fn(call.xp, og, y, call.outputs[0], axis)


# -- normalisation --------------------------------------------------------------------------
def _bn_layout(x, axis: int):
    bshape = [1] * x.ndim
    bshape[axis] = x.shape[axis]
    return tuple(i for i in range(x.ndim) if i != axis), bshape


def _moving_update(xp, p, mean, invstd, moving_mean, moving_var):
    """moving = momentum * moving + (1 - momentum) * batch statistic, for the mean and the
    biased variance (recovered from the forward's inverse standard deviation)."""
    mom = cast_scalar(p.momentum, moving_mean)
    eps = cast_scalar(p.eps, invstd)

    def run():
        var = 1 / (invstd * invstd) - eps
        for moving, stat in ((moving_mean, mean), (moving_var, var)):
            xp.multiply(moving, mom, out=moving)
            xp.add(moving, (1 - mom) * stat, out=moving, casting="unsafe")
    return run


def _bn_param_grads(xp, p, call, sum_g, sum_gx) -> None:
    dgamma, dbeta = call.outputs[1:]
    if call.req[2] != "null":
        xp.copyto(dbeta, sum_g, casting="unsafe")
    if call.req[1] != "null":
        if p.fix_gamma:
            dgamma.fill(0)
        else:
            xp.copyto(dgamma, sum_gx, casting="unsafe")


@kernel("_backward_BatchNorm", inplace=True)
def batch_norm_backward(call):
    """BatchNorm's backward (see :func:`_batch_norm_backward`), large data's compiled loop on
    Python threads."""
    return _batch_norm_backward(call, openmp=False)


@kernel_variant("_backward_BatchNorm", OPENMP)
def batch_norm_backward_openmp(call):
    """BatchNorm's backward with the compiled loop on numba's threads (``base.OPENMP``)."""
    return _batch_norm_backward(call, openmp=True)


@kernel_variant("_backward_BatchNorm", BATCHNORM_RELU)
def batch_norm_relu_backward(call):
    """The backward of ``nn.batch_norm_relu``: dY, the relu's output gradient, masked where
    the forward's x * scale + shift (its scale and shift from the node's state, computed as
    the forward computed it) was not positive, as the relu's backward would have; in the
    rows loops' passes where they apply, else by numpy first."""
    return _batch_norm_backward(call, openmp=True, relu=True)


def _batch_norm_backward(call, openmp: bool, relu: bool = False):
    """A training backward (is_train without use_global_stats) differentiates through the
    batch statistics of the forward (outputs mean and inverse std) and then moves the moving
    statistics, each time it runs. Otherwise the gradient is that of the moving statistics
    (MXNet's rule, even after a training forward). fix_gamma: gamma counts as 1, its gradient
    is 0. With ``relu``: dY masked by the relu after the forward (see
    :func:`batch_norm_relu_backward`)."""
    xp, p = call.xp, call.params
    og, mean, invstd, x, gamma, _, moving_mean, moving_var = call.inputs
    dx = call.outputs[0]
    axis = p.axis % x.ndim
    reduce, bshape = _bn_layout(x, axis)
    count = x.size // x.shape[axis]
    batch = call.is_train and not p.use_global_stats
    eps = cast_scalar(p.eps, moving_var)
    affine = relu_affine(call, x.shape[axis], mean.dtype) if relu else None
    loop = _compiled_backward(call, axis, batch, openmp, affine)
    finish = _compiled_finish(call, batch) if loop is not None else None
    update = _moving_update(xp, p, mean, invstd, moving_mean, moving_var) \
        if batch and finish is None else None

    def run():
        mu, inv = (mean, invstd) if batch else (moving_mean, 1 / xp.sqrt(moving_var + eps))
        scale = inv if p.fix_gamma else inv * gamma
        if loop is not None:
            sum_g, sum_gx = loop(mu, inv, scale)
        else:
            g = og.astype(mean.dtype, copy=False)
            if affine is not None:
                pre = xp.multiply(x, affine[0].reshape(bshape), casting="unsafe")
                xp.add(pre, affine[1].reshape(bshape), out=pre, casting="unsafe")
                g = xp.where(pre > 0, g, g.dtype.type(0))
            xhat = (x.astype(mean.dtype, copy=False) - mu.reshape(bshape)) * inv.reshape(bshape)
            sum_g, sum_gx = g.sum(axis=reduce), (g * xhat).sum(axis=reduce)
            if call.req[0] != "null":
                if batch:
                    g = g - (sum_g.reshape(bshape) + xhat * sum_gx.reshape(bshape)) / count
                xp.multiply(g, scale.reshape(bshape), out=dx, casting="unsafe")
        if finish is not None:
            finish(sum_g, sum_gx)
            return
        _bn_param_grads(xp, p, call, sum_g, sum_gx)
        if update is not None:
            update()
    return run


def _compiled_finish(call, batch: bool):
    """``f(sum_g, sum_gx)`` writing the parameter gradients and (training) moving the moving
    statistics in one compiled call (:mod:`.compiled`; 2 of ResNet-18's 15 ms of BatchNorm
    backward went to the dozen numpy calls it replaces), or None where the arrays are not all
    of the statistics' type or not all writable."""
    p = call.params
    _, mean, invstd = call.inputs[:3]
    moving_mean, moving_var = call.inputs[6:8]
    dgamma, dbeta = call.outputs[1:3]
    dtype = mean.dtype
    if any(a.dtype != dtype for a in (invstd, moving_mean, moving_var, dgamma, dbeta)):
        return None
    if not all(a.flags.writeable for a in (moving_mean, moving_var, dgamma, dbeta)):
        return None  # frozen (shared with a frozen region): numpy's path names the error
    mode = 0 if call.req[1] == "null" else (2 if p.fix_gamma else 1)
    want_beta = call.req[2] != "null"
    momentum, eps = cast_scalar(p.momentum, moving_mean), cast_scalar(p.eps, invstd)
    probe = np.zeros((mean.size, 2))
    args = (mean, invstd, moving_mean, moving_var, momentum, eps, dgamma, dbeta, mode,
            want_beta, batch)
    loop = compiled_for("batch_norm_finish", probe[:, 0], probe[:, 1], *args)
    if loop is None:
        return None
    return lambda sum_g, sum_gx: loop(sum_g, sum_gx, *args)


def _compiled_backward(call, axis: int, batch: bool, openmp: bool = False, affine=None):
    """``f(mean, invstd, scale)`` running BatchNorm's backward loop (:mod:`.compiled`: the
    sums and the data gradient in two passes per channel, written in place) and returning
    (sum dY, sum dY * xhat); None where it does not apply (no numba, not the host, dtypes
    other than the statistics', strided arrays). Split across threads for large data (numba's
    with ``openmp``). ``affine`` (the relu variant's forward scale and shift): only the rows
    loops mask dY by it; elsewhere None (numpy's path masks)."""
    og, mean, _, x = call.inputs[:4]
    dx = call.outputs[0]
    dtype = mean.dtype
    found = channel_rows(call.xp, dtype, axis, og, x, dx)
    if found is None:
        return None
    (g3, x3, dx3), rows = found
    sums = np.empty((x3.shape[1], 2), np.float64)
    want = call.req[0] != "null"
    stat = np.empty(x3.shape[1], dtype)
    if rows:  # channels-last data as rows (N*H*W, C), on numba's threads
        # the relu's mask: the forward's scale and shift (unused without ``affine``)
        extra = (np.zeros((2, x3.shape[1]), dtype) if affine is None else affine,
                 affine is not None)
        loop = compiled_for("batch_norm_rows_backward", g3, x3, stat, stat, stat, sums, dx3,
                            batch, want, *extra, np.zeros(2, np.int64))
        loop = None if loop is None else over_rows(loop, x3.shape)
    elif affine is not None:
        return None
    else:
        extra = ()
        loop = compiled_for("batch_norm_backward_parts" if openmp else "batch_norm_backward",
                            g3, x3, stat, stat, stat, sums, dx3, batch, want,
                            *channel_range(x3.shape[1], openmp))
        loop = None if loop is None else over_channels(loop, x3.shape, openmp)
    if loop is None:
        return None

    def run(mu, inv, scale):
        # the moving statistics (global stats) may come in another float type
        loop(g3, x3, mu.astype(dtype, copy=False), inv.astype(dtype, copy=False),
             scale.astype(dtype, copy=False), sums, dx3, batch, want, *extra)
        return sums[:, 0], sums[:, 1]
    return run


@kernel("_backward_LayerNorm", inplace=True)
def layer_norm_backward(call):
    """With xhat = (x - mean) / std along ``axis``: dbeta = sum dY, dgamma = sum dY * xhat
    (over the other axes), dx = (g - mean(g) - xhat * mean(g * xhat)) / std, g = dY * gamma."""
    xp, p = call.xp, call.params
    og, x, gamma, mean, std = call.inputs
    dx, dgamma, dbeta = call.outputs
    axis = p.axis % x.ndim
    others, bshape = _bn_layout(x, axis)
    wdt = work_dtype(x.dtype)
    want = [r != "null" for r in call.req]

    def run():
        g = og.astype(wdt, copy=False)
        xhat = (x.astype(wdt, copy=False) - mean) / std
        if want[2]:
            sum_into(xp, g, others, dbeta, wide=True)
        if want[1]:
            sum_into(xp, g * xhat, others, dgamma, wide=True)
        if want[0]:
            gg = g * gamma.reshape(bshape)
            res = (gg - gg.mean(axis=axis, keepdims=True)
                   - xhat * (gg * xhat).mean(axis=axis, keepdims=True)) / std
            xp.copyto(dx, res, casting="unsafe")
    return run
