"""Kernels of the legacy and single-device layers (core/ops/legacy.py) and of bilinear
UpSampling: each runs the modern operator's kernel (``delegate``) with the mapped
parameters, plus what the variant does differently:

- ``BatchNorm_v1`` and ``_contrib_SyncBatchNorm`` output the variance (not BatchNorm's
  inverse standard deviation) as ``var``, and their inference ``mean``/``var`` outputs are
  the moving statistics (MXNet's SyncBatchNorm leaves them unwritten in inference);
- ``_contrib_BatchNormWithReLU`` applies relu to the output, and its backward masks the
  output gradient where the output is not positive.
"""
from __future__ import annotations

import math

from graphexec.core.ops import get_op
from graphexec.core.ops.legacy import LEGACY, as_op
from graphexec.core.ops.resample import upsampling_deconv_attrs
from graphexec.core.runtime.kernels import KernelCall

from . import conv, conv_grad, nn, nn_grad  # noqa: F401 - the kernels delegated to
from .base import KERNELS, cast_scalar, kernel, sequence

__all__ = ["delegate"]


def delegate(call, op_name: str, params, inputs=None, outputs=None, req=None):
    """The kernel of ``op_name`` run with ``params`` on ``call``'s arrays (or the given
    ones)."""
    sub = KernelCall(call.node_name, op_name, params,
                     call.inputs if inputs is None else inputs,
                     call.outputs if outputs is None else outputs,
                     call.req if req is None else req, call.xp, call.ctx, call.is_train,
                     call.state, call.rng, call.attrs, call.input_grad_reqs, call.workspace,
                     call.input_is_var)
    return KERNELS[op_name](sub)


def _modern(call, backward: bool = False, **overrides):
    name = call.op_name.replace("_backward_", "", 1) if backward else call.op_name
    target = LEGACY[name]
    op = f"_backward_{target}" if backward else target
    return op, as_op(target, call.params, **overrides)


@kernel("Convolution_v1")
def convolution_v1(call):
    op, params = _modern(call)
    return delegate(call, op, params)


@kernel("_backward_Convolution_v1")
def convolution_v1_backward(call):
    op, params = _modern(call, backward=True)
    return delegate(call, op, params)


# -- Pooling_v1 ------------------------------------------------------------------------------
def _window_size(call) -> int:
    p, x = call.params, call.inputs[1 if call.op_name.startswith("_backward_") else 0]
    return math.prod(x.shape[2:] if p.global_pool else p.kernel)


def _zero_padded(call, x):
    """(pads, a scratch array holding ``x`` inside a zero border) for max pooling with pad:
    Pooling_v1 pads max windows with zeros, not the lowest value."""
    p = call.params
    pads = tuple(p.pad) if p.pad and not p.global_pool else ()
    if not any(pads):
        return (), None
    shape = x.shape[:2] + tuple(n + 2 * q for n, q in zip(x.shape[2:], pads))
    return pads, call.xp.zeros(shape, x.dtype)


def _interior(pads: tuple) -> tuple:
    return (slice(None), slice(None), *(slice(q, -q if q else None) for q in pads))


@kernel("Pooling_v1")
def pooling_v1(call):
    """avg divides every window by the kernel's area (windows past the input included);
    max pads with zeros."""
    xp, p = call.xp, call.params
    if p.pool_type == "avg":
        run_sum = delegate(call, "Pooling", as_op("Pooling", p, pool_type="sum"))
        area, out = cast_scalar(_window_size(call), call.outputs[0]), call.outputs[0]
        return sequence([run_sum, lambda: xp.divide(out, area, out=out)])
    pads, padded = _zero_padded(call, call.inputs[0])
    if padded is None:
        return delegate(call, "Pooling", as_op("Pooling", p))
    x, inner = call.inputs[0], _interior(pads)
    run = delegate(call, "Pooling", as_op("Pooling", p, pad=()), inputs=[padded])
    return sequence([lambda: xp.copyto(padded[inner], x), run])


@kernel("_backward_Pooling_v1")
def pooling_v1_backward(call):
    xp, p = call.xp, call.params
    dx = call.outputs[0]
    if p.pool_type == "avg":
        run_sum = delegate(call, "_backward_Pooling", as_op("Pooling", p, pool_type="sum"))
        area = cast_scalar(_window_size(call), dx)
        return sequence([run_sum, lambda: xp.divide(dx, area, out=dx)])
    og, x, y = call.inputs
    pads, padded = _zero_padded(call, x)
    if padded is None:
        return delegate(call, "_backward_Pooling", as_op("Pooling", p))
    inner, dpadded = _interior(pads), xp.empty_like(padded)
    run = delegate(call, "_backward_Pooling", as_op("Pooling", p, pad=()),
                   inputs=[og, padded, y], outputs=[dpadded])
    return sequence([lambda: xp.copyto(padded[inner], x), run,
                     lambda: xp.copyto(dx, dpadded[inner])])


# -- BatchNorm variants ----------------------------------------------------------------------
_RAW_VAR = ("BatchNorm_v1", "_contrib_SyncBatchNorm")


@kernel("BatchNorm_v1", "_contrib_SyncBatchNorm", "_contrib_BatchNormWithReLU")
def batch_norm_variant(call):
    xp, p = call.xp, call.params
    op, params = _modern(call, axis=1)
    steps = [delegate(call, op, params)]
    out, mean, var = call.outputs
    if call.op_name == "_contrib_BatchNormWithReLU":
        steps.append(lambda: xp.maximum(out, 0, out=out))
    elif not call.is_train or p.use_global_stats:
        moving_mean, moving_var = call.inputs[3:5]
        steps.append(lambda: (xp.copyto(mean, moving_mean), xp.copyto(var, moving_var)))
    else:
        eps = cast_scalar(p.eps, var)
        steps.append(lambda: xp.subtract(1 / (var * var), eps, out=var))
    return sequence(steps)


@kernel("_backward_BatchNorm_v1", "_backward__contrib_SyncBatchNorm",
        "_backward__contrib_BatchNormWithReLU")
def batch_norm_variant_backward(call):
    """BatchNorm's backward on inputs it expects: the inverse standard deviation for a raw
    variance (training), the output gradient masked by the relu."""
    xp, p = call.xp, call.params
    op, params = _modern(call, backward=True, axis=1)
    ins = list(call.inputs[:8])
    steps = []
    if call.op_name == "_backward__contrib_BatchNormWithReLU":
        og, out = call.inputs[0], call.inputs[8]
        masked = xp.empty_like(og)
        steps.append(lambda: xp.multiply(og, out > 0, out=masked))
        ins[0] = masked
    elif call.is_train and not p.use_global_stats:
        var = call.inputs[2]
        invstd = xp.empty_like(var)
        eps = cast_scalar(p.eps, var)
        steps.append(lambda: xp.reciprocal(xp.sqrt(var + eps), out=invstd))
        ins[2] = invstd
    steps.append(delegate(call, op, params, inputs=ins))
    return sequence(steps)


# -- bilinear UpSampling -----------------------------------------------------------------------
def upsampling_bilinear(call):
    """Bilinear UpSampling: the grouped Deconvolution of data by the weight input."""
    return delegate(call, "Deconvolution", _deconv_params(call))


def upsampling_bilinear_backward(call):
    """Inputs (ograd, data, weight); outputs the gradients of data and weight."""
    return delegate(call, "_backward_Deconvolution", _deconv_params(call))


def _deconv_params(call):
    return get_op("Deconvolution").parse(upsampling_deconv_attrs(call.params))
