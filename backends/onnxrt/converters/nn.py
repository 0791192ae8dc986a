"""Neural-network converters: FullyConnected, Convolution, Pooling, BatchNorm, activations,
Dropout, softmax family, SoftmaxOutput, Embedding."""
from __future__ import annotations

import math

import numpy as np

from . import ConvertCall, converter, onnx_dtype


@converter("FullyConnected")
def _fully_connected(c: ConvertCall) -> None:
    x, w = c.inputs[0], c.inputs[1]
    bias = [] if c.p.no_bias else [c.inputs[2]]
    if c.p.flatten:
        flat = c.b.one("Flatten", [x], hint=c.hint("flat"), axis=1)
        c.b.one("Gemm", [flat, w] + bias, c.out, transB=1)
        return
    wt = c.b.one("Transpose", [w], hint=c.hint("wT"), perm=[1, 0])
    if not bias:
        c.b.one("MatMul", [x, wt], c.out)
        return
    c.b.one("Add", [c.b.one("MatMul", [x, wt], hint=c.hint("mm")), bias[0]], c.out)


def _spatial_layout(node, shapes) -> "bool | str":
    layout = node.params.layout
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        return f"layout {layout} is not converted (only channel-first layouts)"
    return True


def _window_attrs(p, nd: int) -> dict:
    stride = list(p.stride) or [1] * nd
    pad = list(p.pad) or [0] * nd
    return {"strides": stride, "pads": pad + pad}


@converter("Convolution", supports=_spatial_layout)
def _convolution(c: ConvertCall) -> None:
    p = c.p
    nd = len(p.kernel)
    attrs = _window_attrs(p, nd)
    attrs["dilations"] = list(p.dilate) or [1] * nd
    ins = c.inputs[:2] if p.no_bias else c.inputs[:3]
    c.b.one("Conv", ins, c.out, kernel_shape=list(p.kernel), group=p.num_group, **attrs)


def _pooling_supports(node, shapes) -> "bool | str":
    p = node.params
    if p.pool_type not in ("max", "avg"):
        return f"pool_type {p.pool_type} is not converted (only max and avg)"
    if p.pooling_convention not in ("valid", "full"):
        return f"pooling_convention {p.pooling_convention} is not converted"
    return _spatial_layout(node, shapes)


@converter("Pooling", supports=_pooling_supports)
def _pooling(c: ConvertCall) -> None:
    p = c.p
    kind = "Max" if p.pool_type == "max" else "Average"
    if p.global_pool:
        c.b.one(f"Global{kind}Pool", [c.x], c.out)
        return
    attrs = _window_attrs(p, len(p.kernel))
    attrs["ceil_mode"] = int(p.pooling_convention == "full")
    if kind == "Average":
        attrs["count_include_pad"] = int(p.count_include_pad in (None, True))
    c.b.one(f"{kind}Pool", [c.x], c.out, kernel_shape=list(p.kernel), **attrs)


def _batchnorm_supports(node, shapes) -> "bool | str":
    p = node.params
    if p.output_mean_var:
        return "BatchNorm with output_mean_var=True is not converted"
    ndim = len(shapes[0]) if shapes and shapes[0] is not None else 4
    if p.axis % ndim != 1:
        return f"BatchNorm over axis {p.axis} is not converted (only the channel axis 1)"
    return True


@converter("BatchNorm", supports=_batchnorm_supports)
def _batchnorm(c: ConvertCall) -> None:
    """Inference: always the moving statistics; ``fix_gamma`` feeds ones as the scale."""
    x, gamma, beta, mean, var = c.inputs[:5]
    if c.p.fix_gamma:
        gamma = c.b.const(np.ones(c.in_shapes[1]), c.in_dtypes[1], c.hint("ones_gamma"))
    c.b.one("BatchNormalization", [x, gamma, beta, mean, var], c.out, epsilon=c.p.eps)


_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
                "softsign": "Softsign"}


def _activation_supports(node, shapes) -> "bool | str":
    act = node.params.act_type
    return True if act in _ACTIVATIONS else f"act_type {act} is not converted"


@converter("Activation", supports=_activation_supports)
def _activation(c: ConvertCall) -> None:
    c.b.one(_ACTIVATIONS[c.p.act_type], [c.x], c.out)


def _leaky_supports(node, shapes) -> "bool | str":
    act = node.params.act_type
    ok = ("leaky", "elu", "prelu", "selu", "gelu")
    return True if act in ok else f"LeakyReLU act_type {act} is not converted"


@converter("LeakyReLU", supports=_leaky_supports)
def _leaky_relu(c: ConvertCall) -> None:
    p, b = c.p, c.b
    act = p.act_type
    if act == "leaky":
        b.one("LeakyRelu", [c.x], c.out, alpha=p.slope)
    elif act == "elu":
        b.one("Elu", [c.x], c.out, alpha=p.slope)
    elif act == "selu":
        b.one("Selu", [c.x], c.out)
    elif act == "prelu":
        _prelu(c)
    else:
        _gelu(c)


def _prelu(c: ConvertCall) -> None:
    """gamma (C,) broadcast over axis 1 (a single value broadcasts everywhere)."""
    gamma = c.inputs[1]
    ndim, gshape = len(c.in_shapes[0]), c.in_shapes[1]
    if ndim > 2 and gshape[0] != 1:
        tail = c.b.ints(range(1, ndim - 1), c.hint("axes"))
        gamma = c.b.one("Unsqueeze", [gamma, tail], hint=c.hint("gamma"))
    c.b.one("PRelu", [c.x, gamma], c.out)


def _gelu(c: ConvertCall) -> None:
    """0.5 x (1 + erf(x / sqrt 2))."""
    dt = c.in_dtypes[0]
    b = c.b
    scaled = b.one("Mul", [c.x, b.const(1 / math.sqrt(2), dt, c.hint("rsqrt2"))],
                   hint=c.hint("xs"))
    erf1 = b.one("Add", [b.one("Erf", [scaled], hint=c.hint("erf")),
                         b.const(1, dt, c.hint("one"))], hint=c.hint("erf1"))
    half = b.one("Mul", [c.x, b.const(0.5, dt, c.hint("half"))], hint=c.hint("hx"))
    b.one("Mul", [half, erf1], c.out)


def _dropout_supports(node, shapes) -> "bool | str":
    p = node.params
    if p.mode == "always" and p.p > 0:
        return "Dropout with mode='always' drops in inference too; not converted"
    return True


@converter("Dropout", supports=_dropout_supports)
def _dropout(c: ConvertCall) -> None:
    c.b.one("Identity", [c.x], c.out)


def _softmax_supports(node, shapes) -> "bool | str":
    p = node.params
    if p.use_length:
        return "softmax with use_length=True is not converted"
    if p.dtype is not None:
        return "softmax with an output dtype is not converted"
    return True


def _softmax_family(onnx_op: str):
    def convert(c: ConvertCall) -> None:
        x = c.x
        if c.p.temperature not in (None, 1.0):
            t = c.b.const(c.p.temperature, c.in_dtypes[0], c.hint("temperature"))
            x = c.b.one("Div", [x, t], hint=c.hint("scaled"))
        c.b.one(onnx_op, [x], c.out, axis=c.p.axis)
    return convert


converter("softmax", supports=_softmax_supports)(_softmax_family("Softmax"))
converter("log_softmax", supports=_softmax_supports)(_softmax_family("LogSoftmax"))


@converter("SoftmaxOutput")
def _softmax_output(c: ConvertCall) -> None:
    """multi_output: over axis 1; preserve_shape: over the last axis; else over all but the
    first axis (data flattened to 2-D), output in the data's shape. The label is unused."""
    p, ndim = c.p, len(c.in_shapes[0])
    if p.multi_output:
        c.b.one("Softmax", [c.x], c.out, axis=1)
    elif p.preserve_shape or ndim <= 2:
        c.b.one("Softmax", [c.x], c.out, axis=-1)
    else:
        flat = c.b.one("Flatten", [c.x], hint=c.hint("flat"), axis=1)
        soft = c.b.one("Softmax", [flat], hint=c.hint("soft"), axis=1)
        c.b.one("Reshape", [soft, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


@converter("Embedding")
def _embedding(c: ConvertCall) -> None:
    idx = c.b.one("Cast", [c.x], hint=c.hint("idx"), to=onnx_dtype(np.int64))
    c.b.one("Gather", [c.inputs[1], idx], c.out, axis=0)
