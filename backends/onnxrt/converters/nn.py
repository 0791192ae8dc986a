"""Neural-network converters: FullyConnected, activations, Dropout, BatchNorm, LayerNorm, the
softmax family and the loss heads (their inference outputs). Convolution, Deconvolution and
Pooling are in ``conv``."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from graphexec.core.ops.nn import SELU_ALPHA, SELU_LAMBDA

from ..convert import ConvertCall, converter, onnx_dtype


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


@converter("BatchNorm")
def _batchnorm(c: ConvertCall) -> None:
    """Inference: always the moving statistics; ``fix_gamma`` feeds ones as the scale. The
    channel axis 1 without output_mean_var is ONNX's BatchNormalization (which ONNX Runtime
    fuses into a preceding Conv); other axes, or the mean and inverse-std outputs, are
    composed as the kernel computes them."""
    ndim = len(c.in_shapes[0])
    if c.p.axis % ndim != 1 or c.p.output_mean_var:
        _batchnorm_composed(c)
        return
    x, gamma, beta, mean, var = c.inputs[:5]
    if c.p.fix_gamma:
        gamma = c.b.const(np.ones(c.in_shapes[1]), c.in_dtypes[1], c.hint("ones_gamma"))
    c.b.one("BatchNormalization", [x, gamma, beta, mean, var], c.out, epsilon=c.p.eps)


def _batchnorm_composed(c: ConvertCall) -> None:
    """invstd = 1 / sqrt(var + eps), scale = invstd (* gamma), shift = beta - mean * scale;
    out = x * scale + shift in the parameters' dtype (float32 for float16 data)."""
    b, shape, pdt = c.b, c.in_shapes[0], c.in_dtypes[1]
    x, gamma, beta, mean, var = c.inputs[:5]
    axis = c.p.axis % len(shape)
    eps = b.const(c.p.eps, pdt, c.hint("eps"))
    std = b.one("Sqrt", [b.one("Add", [var, eps], hint=c.hint("var_eps"))], hint=c.hint("std"))
    invstd = b.one("Reciprocal", [std], c.outputs[2])
    scale = invstd if c.p.fix_gamma else b.one("Mul", [invstd, gamma], hint=c.hint("scale"))
    shift = b.one("Sub", [beta, b.one("Mul", [mean, scale], hint=c.hint("ms"))],
                  hint=c.hint("shift"))
    bshape = b.ints([n if i == axis else 1 for i, n in enumerate(shape)], c.hint("bshape"))
    scale, shift = (b.one("Reshape", [v, bshape], hint=c.hint("per_channel"))
                    for v in (scale, shift))
    y = b.one("Mul", [_cast(c, x, c.in_dtypes[0], pdt), scale], hint=c.hint("scaled"))
    _cast(c, b.one("Add", [y, shift], hint=c.hint("y")), pdt, c.out_dtypes[0], c.out)
    b.one("Identity", [mean], c.outputs[1])


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
    return True if act in _LEAKY else f"LeakyReLU act_type {act} is not converted"


@converter("LeakyReLU", supports=_leaky_supports)
def _leaky_relu(c: ConvertCall) -> None:
    """Composed as the kernel computes it, constants in the data's dtype (ONNX's float
    attributes would round them to float32)."""
    _LEAKY[c.p.act_type](c)


def _leaky(c: ConvertCall) -> None:
    """slope * x for x <= 0; rrelu in inference uses the mean slope (lower + upper) / 2 and
    also fills its mask output with it."""
    p, dt = c.p, c.in_dtypes[0]
    slope = p.slope if p.act_type == "leaky" else (p.lower_bound + p.upper_bound) / 2
    k = c.b.const(slope, dt, c.hint("slope"))
    _negative_part(c, lambda t: c.b.one("Mul", [t, k], hint=c.hint("scaled")), c.out)
    if p.act_type == "rrelu":
        c.b.one("Expand", [k, c.b.ints(c.out_shapes[1], c.hint("shape"))], c.outputs[1])


def _elu(c: ConvertCall) -> None:
    """elu: alpha (exp(x) - 1) for x <= 0 (alpha = slope); selu: lambda * elu with SELU's
    alpha."""
    dt, selu = c.in_dtypes[0], c.p.act_type == "selu"
    alpha = SELU_ALPHA if selu else c.p.slope
    y = _negative_part(c, lambda t: _scaled_expm1(c, t, alpha), None if selu else c.out)
    if selu:
        c.b.one("Mul", [y, c.b.const(SELU_LAMBDA, dt, c.hint("lambda"))], c.out)


def _negative_part(c: ConvertCall, fn: Callable[[str], str], out: str | None) -> str:
    """x where x > 0, fn(min(x, 0)) elsewhere; into ``out`` (a fresh name when None)."""
    zero = c.b.const(0, c.in_dtypes[0], c.hint("zero"))
    neg = fn(c.b.one("Min", [c.x, zero], hint=c.hint("neg")))
    positive = c.b.one("Greater", [c.x, zero], hint=c.hint("pos"))
    return c.b.one("Where", [positive, c.x, neg], out, hint=c.hint("lrelu"))


def _scaled_expm1(c: ConvertCall, t: str, alpha: float) -> str:
    dt = c.in_dtypes[0]
    one = c.b.const(1, dt, c.hint("one"))
    em1 = c.b.one("Sub", [c.b.one("Exp", [t], hint=c.hint("exp")), one], hint=c.hint("expm1"))
    return c.b.one("Mul", [em1, c.b.const(alpha, dt, c.hint("alpha"))], hint=c.hint("elu"))


def _prelu(c: ConvertCall) -> None:
    """gamma (C,) broadcast over axis 1 (a single value broadcasts everywhere); a gamma of
    several dimensions covers the leading axes of data."""
    gamma = c.inputs[1]
    ndim, gshape = len(c.in_shapes[0]), c.in_shapes[1]
    if len(gshape) > 1 and ndim > len(gshape):
        tail = c.b.ints(range(len(gshape), ndim), c.hint("axes"))
        gamma = c.b.one("Unsqueeze", [gamma, tail], hint=c.hint("gamma"))
    elif len(gshape) == 1 and ndim > 2 and gshape[0] != 1:
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


_LEAKY = {"leaky": _leaky, "rrelu": _leaky, "elu": _elu, "selu": _elu, "prelu": _prelu,
          "gelu": _gelu}


def _dropout_supports(node, shapes) -> "bool | str":
    p = node.params
    if p.mode == "always" and p.p > 0:
        return "Dropout with mode='always' drops in inference too; not converted"
    return True


@converter("Dropout", supports=_dropout_supports)
def _dropout(c: ConvertCall) -> None:
    c.b.one("Identity", [c.x], c.out)


def _work_dtype(c: ConvertCall) -> np.dtype:
    """float32 for float16 data, or the output dtype where it is wider (the kernels')."""
    dt = np.dtype(c.in_dtypes[0])
    return np.result_type(np.float32 if dt == np.float16 else dt, c.out_dtypes[0])


def _cast(c: ConvertCall, name: str, src, dst, out: str | None = None) -> str:
    """``name`` (of dtype ``src``) as ``dst``, into ``out`` when given (else ``name`` itself
    when the dtypes agree)."""
    if np.dtype(src) == np.dtype(dst):
        return name if out is None else c.b.one("Identity", [name], out)
    return c.b.one("Cast", [name], out, hint=c.hint("cast"), to=onnx_dtype(dst))


def _softmax_into(c: ConvertCall, x: str, onnx_op: str, axis: int, out: str,
                  temperature: float | None = None) -> None:
    """``onnx_op`` (Softmax / LogSoftmax) of ``x`` / temperature over ``axis``, in the work
    dtype."""
    work = _work_dtype(c)
    x = _cast(c, x, c.in_dtypes[0], work)
    if temperature not in (None, 1.0):
        t = c.b.const(temperature, work, c.hint("temperature"))
        x = c.b.one("Div", [x, t], hint=c.hint("scaled"))
    y = c.b.one(onnx_op, [x], hint=c.hint("soft"), axis=axis)
    _cast(c, y, work, c.out_dtypes[0], out)


def _softmax_family(onnx_op: str):
    def convert(c: ConvertCall) -> None:
        """``use_length`` masks the positions at or past the length (softmax only)."""
        if c.p.use_length:
            _length_softmax(c)
        else:
            _softmax_into(c, c.x, onnx_op, c.p.axis, c.out, c.p.temperature)
    return convert


converter("softmax")(_softmax_family("Softmax"))
converter("log_softmax")(_softmax_family("LogSoftmax"))


def _length_softmax(c: ConvertCall) -> None:
    """Softmax over the first ``length`` entries along the axis; the others, and rows of
    length 0, are 0 (as the kernel: masked with -inf, an all-masked row's max taken as 0,
    a zero total as 1)."""
    b, work = c.b, _work_dtype(c)
    axis = c.p.axis % len(c.in_shapes[0])
    axes = b.ints([axis], c.hint("axis"))
    zero, one = b.const(0, work, c.hint("zero")), b.const(1, work, c.hint("one"))
    masked = _masked_scores(c, work, axis, axes)
    top = b.one("ReduceMax", [masked], hint=c.hint("top"), axes=[axis], keepdims=1)
    top = b.one("Where", [b.one("IsInf", [top], hint=c.hint("empty")), zero, top],
                hint=c.hint("top0"))
    e = b.one("Exp", [b.one("Sub", [masked, top], hint=c.hint("shifted"))], hint=c.hint("e"))
    total = b.one("ReduceSum", [e, axes], hint=c.hint("total"), keepdims=1)
    total = b.one("Where", [b.one("Equal", [total, zero], hint=c.hint("none")), one, total],
                  hint=c.hint("total1"))
    _cast(c, b.one("Div", [e, total], hint=c.hint("soft")), work, c.out_dtypes[0], c.out)


def _masked_scores(c: ConvertCall, work, axis: int, axes: str) -> str:
    """x / temperature (in ``work``) where the position along ``axis`` is below the
    length, -inf elsewhere."""
    b, shape = c.b, c.in_shapes[0]
    t = 1.0 if c.p.temperature is None else c.p.temperature
    x = b.one("Div", [_cast(c, c.x, c.in_dtypes[0], work), b.const(t, work, c.hint("t"))],
              hint=c.hint("scaled"))
    pos = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    length = b.one("Cast", [c.inputs[1]], hint=c.hint("length"), to=onnx_dtype(np.int64))
    length = b.one("Unsqueeze", [length, axes], hint=c.hint("len"))
    valid = b.one("Less", [b.const(pos, np.int64, c.hint("pos")), length], hint=c.hint("valid"))
    return b.one("Where", [valid, x, b.const(-np.inf, work, c.hint("ninf"))],
                 hint=c.hint("masked"))


@converter("SoftmaxActivation")
def _softmax_activation(c: ConvertCall) -> None:
    """mode 'channel': over axis 1; 'instance': over the last axis."""
    _softmax_into(c, c.x, "Softmax", 1 if c.p.mode == "channel" else -1, c.out)


@converter("SoftmaxOutput")
def _softmax_output(c: ConvertCall) -> None:
    """multi_output: over axis 1; preserve_shape: over the last axis; else over all but the
    first axis (data flattened to 2-D), output in the data's shape. The label is unused."""
    p, ndim = c.p, len(c.in_shapes[0])
    if p.multi_output:
        _softmax_into(c, c.x, "Softmax", 1, c.out)
    elif p.preserve_shape or ndim <= 2:
        _softmax_into(c, c.x, "Softmax", -1, c.out)
    else:
        flat = c.b.one("Flatten", [c.x], hint=c.hint("flat"), axis=1)
        soft = c.b.fresh(c.hint("soft"))
        _softmax_into(c, flat, "Softmax", 1, soft)
        c.b.one("Reshape", [soft, c.b.ints(c.out_shapes[0], c.hint("shape"))], c.out)


@converter("LinearRegressionOutput", "MAERegressionOutput")
def _identity_head(c: ConvertCall) -> None:
    """Inference: the data itself (the label only matters to the gradient)."""
    c.b.one("Identity", [c.x], c.out)


@converter("LogisticRegressionOutput")
def _logistic_head(c: ConvertCall) -> None:
    c.b.one("Sigmoid", [c.x], c.out)


@converter("LayerNorm")
def _layer_norm(c: ConvertCall) -> None:
    """(x - mean) / sqrt(var + eps) * gamma + beta along ``axis``, float16 in float32 as the
    kernel; the mean and std outputs keep the axis with size 1."""
    shape, work, b = c.in_shapes[0], _work_dtype(c), c.b
    axis = c.p.axis % len(shape)
    x, gamma, beta = (_cast(c, v, vdt, work) for v, vdt in zip(c.inputs[:3], c.in_dtypes))
    mean = b.one("ReduceMean", [x], hint=c.hint("mean"), axes=[axis], keepdims=1)
    d = b.one("Sub", [x, mean], hint=c.hint("centred"))
    var = b.one("ReduceMean", [b.one("Mul", [d, d], hint=c.hint("sq"))], hint=c.hint("var"),
                axes=[axis], keepdims=1)
    std = b.one("Sqrt", [b.one("Add", [var, b.const(c.p.eps, work, c.hint("eps"))],
                               hint=c.hint("var_eps"))], hint=c.hint("std"))
    bshape = b.ints([n if i == axis else 1 for i, n in enumerate(shape)], c.hint("bshape"))
    scale, shift = (b.one("Reshape", [v, bshape], hint=c.hint("param")) for v in (gamma, beta))
    y = b.one("Add", [b.one("Mul", [b.one("Div", [d, std], hint=c.hint("norm")), scale],
                            hint=c.hint("scaled")), shift], hint=c.hint("y"))
    for value, out, odt in zip((y, mean, std), c.outputs, c.out_dtypes):
        _cast(c, value, work, odt, out)
