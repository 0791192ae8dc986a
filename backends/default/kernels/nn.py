"""Native kernels of the nn family: FullyConnected, Activation, LeakyReLU, Dropout, softmax,
log_softmax, SoftmaxActivation, BatchNorm and LayerNorm. Written against ``call.xp`` so numpy
and CuPy share the code; float16 data is computed in float32 where MXNet accumulates in
float32 (softmax, normalisation statistics)."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from graphexec.core.ops.nn import SELU_ALPHA, SELU_LAMBDA

from .base import (BATCHNORM_RELU, NATIVE_RELU_FUSED, OPENMP, bound_by_scalar, cast_scalar,
                   float_math, kernel, kernel_variant, nothing, same_array, special)
from .compiled import (affine_runner, channel_range, channel_rows, compiled_for, over_channels,
                       over_rows)

__all__ = ["reshaper", "work_dtype", "matmul_into", "softmax_fn"]

def reshaper(arr, shape):
    """A zero-argument function returning ``arr`` reshaped to ``shape``: one view made now
    when ``arr`` is contiguous, else a reshape per call (a bound user array may be strided)."""
    if arr.flags.c_contiguous:
        view = arr.reshape(shape)
        return lambda: view
    return lambda: arr.reshape(shape)


def work_dtype(dtype) -> np.dtype:
    """float32 for float16 (MXNet's accumulation type), the dtype itself otherwise."""
    dtype = np.dtype(dtype)
    return np.dtype("float32") if dtype == np.float16 else dtype


def matmul_into(xp, a, b, out) -> None:
    """out = a @ b (broadcast over leading axes); float16 goes through float32, as numpy has
    no accumulating float16 matmul (cuBLAS/MXNet accumulate float16 products in float32)."""
    if out.dtype == np.float16:
        xp.copyto(out, xp.matmul(a.astype(np.float32), b.astype(np.float32)),
                  casting="unsafe")
    else:
        xp.matmul(a, b, out=out)


# -- FullyConnected -----------------------------------------------------------------------
@kernel("FullyConnected")
def fully_connected(call):
    """out = data (flattened to 2-D, or over its last axis) @ weight.T + bias."""
    xp, p, x, w = call.xp, call.params, call.inputs[0], call.inputs[1]
    out = call.outputs[0]
    rows = x.shape[0] if p.flatten else math.prod(x.shape[:-1])
    data = reshaper(x, (rows, w.shape[1]))  # not -1: a batch of 0 rows has no inferable width
    out2 = out.reshape(rows, p.num_hidden)
    bias = None if p.no_bias else call.inputs[2]

    def run():
        matmul_into(xp, data(), w.T, out2)
        if bias is not None:
            xp.add(out2, bias, out=out2)
    return run


# -- activations --------------------------------------------------------------------------
def _softsign(xp, x, y):
    # a temporary keeps this right when the planner runs it in place (y is x)
    xp.divide(x, xp.abs(x) + 1, out=y)


_ACTIVATIONS = {
    "sigmoid": lambda xp, x, y: special(xp).expit(x, out=y),
    "tanh": lambda xp, x, y: xp.tanh(x, out=y),
    "softrelu": lambda xp, x, y: xp.logaddexp(x, 0, out=y),
    "softsign": _softsign,
}


def _activation(call):
    return partial(_ACTIVATIONS[call.params.act_type], call.xp, call.inputs[0],
                   call.outputs[0])


@kernel("Activation", inplace=True)
def activation(call):
    """relu, sigmoid, tanh, softrelu, softsign; the last four on float16 data computed in
    float32 and rounded once, as MXNet's."""
    x, y = call.inputs[0], call.outputs[0]
    if call.params.act_type == "relu":
        return bound_by_scalar(call.xp, "maximum", x, cast_scalar(0, y), y)
    return float_math(_activation, half=True, integers=False)(call)


@kernel_variant("Activation", NATIVE_RELU_FUSED)
@kernel_variant("Activation", BATCHNORM_RELU)
def relu_already_applied(call):
    """A relu whose input's producer (a BatchNorm of variant ``BATCHNORM_RELU``, a BatchNorm
    or Convolution of ``NATIVE_RELU_FUSED``; the relu its only reader) wrote max(., 0)
    already: nothing to do where the output is the input's array (the memory plan ran it
    in place), else the relu (of values already non-negative: the same numbers)."""
    return nothing if same_array(call.inputs[0], call.outputs[0]) else activation(call)


def _negative_part(xp, x, y, fn):
    """y = x where x > 0, fn(min(x, 0)) elsewhere (min keeps exp from overflowing)."""
    xp.minimum(x, 0, out=y)
    fn(y)
    xp.copyto(y, x, where=x > 0)


def _scaled_expm1(xp, y, alpha, scale=1.0):
    xp.expm1(y, out=y)
    xp.multiply(y, cast_scalar(alpha * scale, y), out=y)


@kernel("LeakyReLU")
def leaky_relu(call):
    """leaky / elu / selu / gelu (erf form) / prelu (gamma per channel or scalar) / rrelu;
    elu and gelu on float16 data computed in float32 and rounded once, as MXNet's (its selu
    takes lambda and alpha in the data's dtype)."""
    if call.params.act_type in ("elu", "gelu"):
        return float_math(_leaky_relu, half=True, integers=False)(call)
    return _leaky_relu(call)


def _leaky_relu(call):
    xp, p, x, y = call.xp, call.params, call.inputs[0], call.outputs[0]
    kind = p.act_type
    if kind == "leaky":
        return partial(_negative_part, xp, x, y,
                       lambda t: xp.multiply(t, cast_scalar(p.slope, t), out=t))
    if kind == "elu":
        return partial(_negative_part, xp, x, y, lambda t: _scaled_expm1(xp, t, p.slope))
    if kind == "selu":
        lam = cast_scalar(SELU_LAMBDA, y)

        def selu():
            _negative_part(xp, x, y, lambda t: _scaled_expm1(xp, t, SELU_ALPHA))
            xp.multiply(y, lam, out=y)
        return selu
    if kind == "gelu":
        return partial(_gelu, xp, x, y)
    if kind == "prelu":
        return _prelu(call)
    return _rrelu(call)


def _gelu(xp, x, y):
    """The erf form 0.5 * x * (1 + erf(x / sqrt(2)))."""
    xp.multiply(x, cast_scalar(1 / math.sqrt(2), y), out=y)
    special(xp).erf(y, out=y)
    xp.add(y, 1, out=y)
    xp.multiply(y, x, out=y)
    xp.multiply(y, cast_scalar(0.5, y), out=y)


def prelu_gamma_shape(gshape: tuple, ndim: int) -> tuple:
    """gamma broadcast against data: a scalar, one value per channel (axis 1), or, with
    several dimensions, the leading axes of data (MXNet 1.9.1)."""
    if len(gshape) > 1:
        return tuple(gshape) + (1,) * (ndim - len(gshape))
    shape = [1] * ndim
    if gshape[0] != 1:
        shape[1] = gshape[0]
    return tuple(shape)


def _prelu(call):
    xp, x, gamma, y = call.xp, call.inputs[0], call.inputs[1], call.outputs[0]
    g = gamma.reshape(prelu_gamma_shape(gamma.shape, x.ndim))
    return partial(_negative_part, xp, x, y, lambda t: xp.multiply(t, g, out=t))


def _rrelu(call):
    """Training draws one slope per element from U(lower, upper) into ``mask``; inference
    uses their mean (lower + upper) / 2 (MXNet leaves the mask unwritten there)."""
    xp, p, x = call.xp, call.params, call.inputs[0]
    y, mask = call.outputs

    def run():
        if call.is_train:
            draw = call.rng.uniform(p.lower_bound, p.upper_bound, size=mask.shape)
            xp.copyto(mask, xp.asarray(draw), casting="unsafe")
        else:
            mask.fill((p.lower_bound + p.upper_bound) / 2)
        _negative_part(xp, x, y, lambda t: xp.multiply(t, mask, out=t))
    return run


# -- Dropout ------------------------------------------------------------------------------
@kernel("Dropout")
def dropout(call):
    """Training (or mode='always'): mask = Bernoulli(1 - p) / (1 - p), drawn from
    ``call.rng`` in the mask's shape (size 1 along ``axes``), output = data * mask."""
    xp, p, x = call.xp, call.params, call.inputs[0]
    out, mask = call.outputs
    if not (call.is_train or p.mode == "always"):
        def identity():
            # an inference pass keeps a mask of ones, so that a backward after it passes the
            # gradient through unchanged, as MXNet 1.9.1's does
            xp.copyto(out, x)
            mask.fill(1)
        return identity
    keep = 1.0 - p.p
    scale = 1.0 / keep if keep > 0 else 0.0

    def run():
        draw = call.rng.random(mask.shape, dtype=np.float32) < keep
        xp.copyto(mask, xp.asarray(draw * np.float32(scale)), casting="unsafe")
        xp.multiply(x, mask, out=out)
    return run


# -- softmax family -----------------------------------------------------------------------
def softmax_fn(xp, x, out, axis: int | tuple, temperature: float | None = None,
               log: bool = False):
    """A zero-argument callable writing softmax (or log-softmax) of ``x`` along ``axis`` (an
    int or a tuple of axes taken together) into ``out``, stable (the max is subtracted
    first); float16 goes through float32."""
    wdt = np.result_type(work_dtype(x.dtype), out.dtype)
    work = out if out.dtype == wdt else xp.empty(out.shape, wdt)
    # MXNet divides by the temperature (0 gives NaN rows, as there)
    t = None if temperature in (None, 1.0) else wdt.type(temperature)

    def run():
        xp.subtract(x, x.max(axis=axis, keepdims=True), out=work)
        if t is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                xp.divide(work, t, out=work)
        if log:
            xp.subtract(work, xp.log(xp.exp(work).sum(axis=axis, keepdims=True)), out=work)
        else:
            xp.exp(work, out=work)
            xp.divide(work, work.sum(axis=axis, keepdims=True), out=work)
        if work is not out:
            xp.copyto(out, work, casting="unsafe")
    return run


def _softmax_length_fn(xp, x, length, out, axis: int, temperature: float | None):
    """softmax over the first ``length`` entries along ``axis``; the rest (and rows of length
    0) are 0."""
    wdt = np.result_type(work_dtype(x.dtype), out.dtype)
    pos = xp.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    t = 1.0 if temperature is None else temperature

    def run():
        valid = pos < xp.expand_dims(length, axis)
        work = xp.where(valid, x.astype(wdt) / t, -xp.inf)
        top = work.max(axis=axis, keepdims=True)
        top = xp.where(xp.isfinite(top), top, 0)
        e = xp.exp(work - top)
        total = e.sum(axis=axis, keepdims=True)
        xp.copyto(out, e / xp.where(total == 0, 1, total), casting="unsafe")
    return run


@kernel("softmax")
def softmax(call):
    p, x = call.params, call.inputs[0]
    axis = p.axis % x.ndim
    if p.use_length:
        return _softmax_length_fn(call.xp, x, call.inputs[1], call.outputs[0], axis,
                                  p.temperature)
    return softmax_fn(call.xp, x, call.outputs[0], axis, p.temperature)


@kernel("log_softmax")
def log_softmax(call):
    p, x = call.params, call.inputs[0]
    return softmax_fn(call.xp, x, call.outputs[0], p.axis % x.ndim, p.temperature, log=True)


@kernel("SoftmaxActivation")
def softmax_activation(call):
    """mode 'instance': over the last axis; 'channel': over axis 1 (as MXNet computes)."""
    x = call.inputs[0]
    axis = 1 if call.params.mode == "channel" else x.ndim - 1
    return softmax_fn(call.xp, x, call.outputs[0], axis)


# -- normalisation ------------------------------------------------------------------------
@kernel("BatchNorm")
def batch_norm(call):
    """BatchNorm (see :func:`_batch_norm`), large data's compiled loops on Python threads."""
    return _batch_norm(call, openmp=False)


@kernel_variant("BatchNorm", OPENMP)
def batch_norm_openmp(call):
    """BatchNorm with the compiled loops on numba's threads (``base.OPENMP``)."""
    return _batch_norm(call, openmp=True)


#: the key of the (2, C) array in a BatchNorm node's kernel state (shared with its backward)
#: holding the scale and shift its last forward normalised with, for the relu's mask
RELU_AFFINE = "relu_affine"


@kernel_variant("BatchNorm", BATCHNORM_RELU)
def batch_norm_relu(call):
    """BatchNorm followed by the relu that is its output's only reader, in one pass where
    the compiled loops allow (channels-last rows; the normalisation with given statistics
    over channel planes; otherwise max(., 0) after): the ``torch`` strategy's fusion
    (``base.BATCHNORM_RELU``). The scale and shift it normalised with go to the node's
    state, where its backward finds them to mask the relu's gradient exactly as the relu
    would have."""
    return _batch_norm(call, openmp=True, relu=True)


@kernel_variant("BatchNorm", NATIVE_RELU_FUSED)
def batch_norm_relu_native(call):
    """The plain kernel's BatchNorm (its loops on the calling and Python threads) with the
    relu after it in the same pass where the loops allow: the native fusion
    (``base.NATIVE_RELU_FUSED``, ``backends/default/fusion.py``)."""
    return _batch_norm(call, openmp=False, relu=True)


def relu_affine(call, channels: int, dtype) -> np.ndarray:
    """The (2, C) array of :data:`RELU_AFFINE` in the BatchNorm node's state (made by
    whichever of its forward and backward kernels is created first)."""
    return call.state.setdefault(RELU_AFFINE, np.zeros((2, channels), dtype))


def _batch_norm(call, openmp: bool, relu: bool = False):
    """Batch statistics (biased variance) when training without use_global_stats, else the
    moving ones. Outputs mean and var hold the mean and the inverse standard deviation; the
    moving statistics are left alone (MXNet updates them in backward). With fix_gamma, gamma
    counts as 1, and MXNet overwrites the array with ones when the node is differentiated;
    here: when data, gamma or beta is an argument with a gradient (a node fed by a layer
    whose parameters alone are trained is not seen). With ``relu``, out = max(BatchNorm,
    0). With ``openmp`` (both variants) the scale and shift go to :func:`relu_affine`: a
    BATCHNORM_RELU backward after a forward of the plain choice (a monitor watched it)
    still masks by what the relu saw."""
    xp, p = call.xp, call.params
    x, gamma, beta, moving_mean, moving_var = call.inputs
    out, mean, invstd = call.outputs
    axis = p.axis % x.ndim
    reduce = tuple(i for i in range(x.ndim) if i != axis)
    bshape = [1] * x.ndim
    bshape[axis] = x.shape[axis]
    batch = call.is_train and not p.use_global_stats
    var = xp.empty(mean.shape, mean.dtype)
    eps = cast_scalar(p.eps, var)
    reset_gamma = p.fix_gamma and any(r != "null" for r in call.input_grad_reqs[:3])
    store = relu_affine(call, x.shape[axis], mean.dtype) if openmp else None
    found = _compiled_batch_norm(xp, x, out, axis, mean.dtype, batch, openmp, store, relu)
    train, affine, fused = found or (None, None, False)
    # the relu where the loops do not apply it (other layouts, the numpy path)
    after = (lambda: xp.maximum(out, 0, out=out)) if relu and not fused else nothing

    def run():
        if reset_gamma:
            gamma.fill(1)
        if train is not None:
            train(gamma, beta, eps, p.fix_gamma, mean, var, invstd)
            after()
            return
        if batch:
            xw = x if x.dtype == mean.dtype else x.astype(mean.dtype)
            xp.mean(xw, axis=reduce, out=mean)
            xp.var(xw, axis=reduce, out=var)
        else:
            xp.copyto(mean, moving_mean, casting="unsafe")
            xp.copyto(var, moving_var, casting="unsafe")
        xp.add(var, eps, out=invstd)
        xp.sqrt(invstd, out=invstd)
        xp.reciprocal(invstd, out=invstd)
        scale = invstd if p.fix_gamma else invstd * gamma
        shift = beta - mean * scale
        if store is not None:
            store[0], store[1] = scale, shift
        if affine is not None:
            affine(scale, shift)
            after()
            return
        xp.multiply(x, scale.reshape(bshape), out=out, casting="unsafe")
        xp.add(out, shift.reshape(bshape), out=out, casting="unsafe")
        after()
    return run


def _compiled_batch_norm(xp, x, out, axis: int, dtype, batch: bool, openmp: bool = False,
                         store=None, relu: bool = False):
    """BatchNorm's compiled loops over ``axis`` (:mod:`.compiled`) as (train(gamma, beta,
    eps, fix_gamma, mean, var, invstd), affine(scale, shift), fused): with batch statistics
    the whole forward (statistics and normalisation, a few channels at a time), else out = x
    * scale + shift per channel; None where they do not apply (no numba, not the host, the
    statistics in another dtype than the data, strided arrays). The channels are split
    across the host's threads for large data (:func:`~.compiled.over_channels`; numba's
    with ``openmp``, for the training forward). Inception v3's 94 BatchNorm nodes at batch
    1 took 9.5 ms with numpy's two passes (benchmarks/README.md). ``store`` (a (2, C)
    array): the training forward's scale and shift are written there; ``fused`` says
    whether the loops also apply the relu ``relu`` asks for (the rows loops and the
    affine loop do, not the channel loops' training forward)."""
    found = channel_rows(xp, dtype, axis, x, out)
    if found is None:
        return None
    (x3, out3), rows = found
    if rows:
        return _compiled_rows(x3, out3, dtype, batch, store, relu)
    if batch:
        c = x3.shape[1]
        stat = np.empty(c, dtype)  # gamma, beta, the statistics: this type and layout
        scale, shift = (np.empty(c, dtype), np.empty(c, dtype)) if store is None else store
        loop = compiled_for("batch_norm_train_parts" if openmp else "batch_norm_train", x3,
                            stat, stat, dtype.type(0), True, stat, stat, stat, stat, stat,
                            out3, *channel_range(c, openmp))
        if loop is None:
            return None
        train = over_channels(loop, x3.shape, openmp)
        return (lambda gamma, beta, eps, fix_gamma, mean, var, invstd:
                train(x3, gamma, beta, eps, fix_gamma, mean, var, invstd, scale, shift, out3),
                None, False)
    affine = affine_runner(xp, x, out, axis, relu)
    return None if affine is None else (None, affine, relu)


def _compiled_rows(x2, out2, dtype, batch: bool, store=None, relu: bool = False):
    """:func:`_compiled_batch_norm` for channels-last data as rows (N*H*W, C): the loops
    over rows on numba's threads (:func:`~.compiled.over_rows`), with the relu in their
    normalising pass with ``relu``."""
    c = x2.shape[1]
    stat = np.empty(c, dtype)
    if batch:
        scale, shift = (np.empty(c, dtype), np.empty(c, dtype)) if store is None else store
        loop = compiled_for("batch_norm_rows_train", x2, stat, stat, dtype.type(0), True, stat,
                            stat, stat, stat, stat, out2, relu, np.zeros(2, np.int64))
        if loop is None:
            return None
        train = over_rows(loop, x2.shape)
        return (lambda gamma, beta, eps, fix_gamma, mean, var, invstd:
                train(x2, gamma, beta, eps, fix_gamma, mean, var, invstd, scale, shift, out2,
                      relu), None, relu)
    loop = compiled_for("batch_norm_rows_affine", x2, stat, stat, out2, relu,
                        np.zeros(2, np.int64))
    if loop is None:
        return None
    affine = over_rows(loop, x2.shape)
    return None, lambda scale, shift: affine(x2, scale, shift, out2, relu), relu


@kernel("LayerNorm")
def layer_norm(call):
    """(x - mean) / sqrt(var + eps) * gamma + beta along ``axis``; outputs mean and std keep
    the reduced axis with size 1."""
    xp, p = call.xp, call.params
    x, gamma, beta = call.inputs
    out, mean, std = call.outputs
    axis = p.axis % x.ndim
    bshape = [1] * x.ndim
    bshape[axis] = x.shape[axis]
    wdt = work_dtype(x.dtype)

    def run():
        xw = x if x.dtype == wdt else x.astype(wdt)
        mu = xw.mean(axis=axis, keepdims=True)
        sd = xp.sqrt(xw.var(axis=axis, keepdims=True) + p.eps)
        y = (xw - mu) / sd * gamma.reshape(bshape) + beta.reshape(bshape)
        xp.copyto(out, y, casting="unsafe")
        xp.copyto(mean, mu, casting="unsafe")
        xp.copyto(std, sd, casting="unsafe")
    return run
