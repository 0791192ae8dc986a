"""Converters of the legacy and single-device layers (core/ops/legacy.py) and of bilinear
UpSampling: each runs the modern operator's converter (``delegate``) with the mapped
parameters, plus what the variant does differently (see backends/default/kernels/legacy.py):
Pooling_v1 pads max windows with zeros and divides avg windows by the kernel's area;
BatchNorm_v1 and SyncBatchNorm output the moving statistics as mean and var in inference;
BatchNormWithReLU ends in a Relu."""
from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

from graphexec.core.ops import get_op
from graphexec.core.ops.legacy import as_op
from graphexec.core.ops.resample import upsampling_deconv_attrs

from ..convert import CONVERTERS, ConvertCall, converter
from . import conv, nn  # noqa: F401 - the converters delegated to

__all__ = ["delegate", "bilinear_upsampling"]


def _proxy(node, target: str, params):
    return SimpleNamespace(name=node.name, op=get_op(target), params=params,
                           attrs=getattr(node, "attrs", {}))


def delegate(c: ConvertCall, target: str, params, **fields) -> None:
    """Run ``target``'s converter on ``c`` with ``params`` (and ConvertCall ``fields``)."""
    CONVERTERS[target].convert(replace(c, node=_proxy(c.node, target, params), **fields))


def _supports_as(target: str, **overrides):
    def supports(node, shapes):
        params = as_op(target, node.params, **overrides)
        return CONVERTERS[target].supports(_proxy(node, target, params), shapes)
    return supports


@converter("Convolution_v1", supports=_supports_as("Convolution"))
def _convolution_v1(c: ConvertCall) -> None:
    delegate(c, "Convolution", as_op("Convolution", c.p))


def _pooling_v1_supports(node, shapes) -> "bool | str":
    p = node.params
    if p.pool_type == "avg":
        return _supports_as("Pooling", pool_type="sum")(node, shapes)
    return _supports_as("Pooling", pad=())(node, shapes)


@converter("Pooling_v1", supports=_pooling_v1_supports)
def _pooling_v1(c: ConvertCall) -> None:
    p, b = c.p, c.b
    if p.pool_type == "avg":
        total = b.fresh(c.hint("sum"))
        delegate(c, "Pooling", as_op("Pooling", p, pool_type="sum"), outputs=[total])
        area = math.prod(c.in_shapes[0][2:] if p.global_pool else p.kernel)
        b.one("Div", [total, b.const(area, c.in_dtypes[0], c.hint("area"))], c.out)
        return
    x = c.x
    if p.pad and not p.global_pool and any(p.pad):
        pads = [0, 0, *p.pad, 0, 0, *p.pad]
        x = b.one("Pad", [x, b.ints(pads, c.hint("pads"))], hint=c.hint("zero_padded"))
    delegate(c, "Pooling", as_op("Pooling", p, pad=()), inputs=[x])


# -- BatchNorm variants ----------------------------------------------------------------------
@converter("BatchNorm_v1", "_contrib_SyncBatchNorm",
           supports=_supports_as("BatchNorm", axis=1, output_mean_var=False))
def _batch_norm_raw_var(c: ConvertCall) -> None:
    delegate(c, "BatchNorm", as_op("BatchNorm", c.p, axis=1, output_mean_var=False),
             outputs=c.outputs[:1])
    if c.p.output_mean_var:
        c.b.one("Identity", [c.inputs[3]], c.outputs[1])
        c.b.one("Identity", [c.inputs[4]], c.outputs[2])


@converter("_contrib_BatchNormWithReLU", supports=_supports_as("BatchNorm", axis=1))
def _batch_norm_relu(c: ConvertCall) -> None:
    y = c.b.fresh(c.hint("bn"))
    delegate(c, "BatchNorm", as_op("BatchNorm", c.p, axis=1), outputs=[y, *c.outputs[1:]])
    c.b.one("Relu", [y], c.out)


# -- bilinear UpSampling -----------------------------------------------------------------------
def bilinear_upsampling(c: ConvertCall) -> None:
    """The grouped ConvTranspose MXNet's bilinear UpSampling is."""
    params = get_op("Deconvolution").parse(upsampling_deconv_attrs(c.p))
    delegate(c, "Deconvolution", params)
