"""ONNX activation importers: Relu family, LeakyRelu / Elu / Selu / Celu, PRelu, HardSigmoid,
HardSwish, Gelu, Mish, Swish, ThresholdedRelu, Shrink (see :mod:`.importer`)."""
from __future__ import annotations

import math

import numpy as np

from graphexec.core.symbol.symbol import create_op_symbol

from ..importing import importer, node_attrs, op

_ACT = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu",
        "Softsign": "softsign"}
_SELU = (1.67326319217681884765625, 1.05070102214813232421875)


@importer(*_ACT)
def _activation(ctx, node):
    return [op(ctx, node, "Activation", [ctx.sym(node.input[0])], act_type=_ACT[node.op_type])]


@importer("LeakyRelu")
def _leaky(ctx, node):
    return [op(ctx, node, "LeakyReLU", [ctx.sym(node.input[0])], act_type="leaky",
               slope=node_attrs(node).get("alpha", 0.01))]


@importer("Elu")
def _elu(ctx, node):
    return [op(ctx, node, "LeakyReLU", [ctx.sym(node.input[0])], act_type="elu",
               slope=node_attrs(node).get("alpha", 1.0))]


@importer("Selu")
def _selu(ctx, node):
    """graphexec's selu has the fixed SELU constants; other ones are gamma * elu(x, alpha)."""
    attrs, x = node_attrs(node), ctx.sym(node.input[0])
    alpha, gamma = attrs.get("alpha", _SELU[0]), attrs.get("gamma", _SELU[1])
    if np.allclose((alpha, gamma), _SELU):
        return [op(ctx, node, "LeakyReLU", [x], act_type="selu")]
    elu = op(ctx, node, "LeakyReLU", [x], act_type="elu", slope=alpha, suffix="elu")
    return [op(ctx, node, "_mul_scalar", [elu], scalar=gamma)]


@importer("Celu")
def _celu(ctx, node):
    """celu(x) = alpha * elu(x / alpha) with elu's alpha 1."""
    alpha = node_attrs(node).get("alpha", 1.0)
    scaled = op(ctx, node, "_div_scalar", [ctx.sym(node.input[0])], scalar=alpha, suffix="in")
    elu = op(ctx, node, "LeakyReLU", [scaled], act_type="elu", slope=1.0, suffix="elu")
    return [op(ctx, node, "_mul_scalar", [elu], scalar=alpha)]


@importer("HardSigmoid")
def _hard_sigmoid(ctx, node):
    attrs = node_attrs(node)
    return [op(ctx, node, "hard_sigmoid", [ctx.sym(node.input[0])],
               alpha=attrs.get("alpha", 0.2), beta=attrs.get("beta", 0.5))]


@importer("HardSwish")
def _hard_swish(ctx, node):
    x = ctx.sym(node.input[0])
    gate = op(ctx, node, "hard_sigmoid", [x], alpha=1.0 / 6, beta=0.5, suffix="gate")
    return [op(ctx, node, "elemwise_mul", [x, gate])]


@importer("Gelu")
def _gelu(ctx, node):
    """The erf form is graphexec's gelu; the tanh approximation is built from its formula."""
    x = ctx.sym(node.input[0])
    if node_attrs(node).get("approximate", b"none") == b"none":
        return [op(ctx, node, "LeakyReLU", [x], act_type="gelu")]
    cube = op(ctx, node, "_power_scalar", [x], scalar=3.0, suffix="cube")
    inner = op(ctx, node, "elemwise_add", [x, op(ctx, node, "_mul_scalar", [cube],
                                                 scalar=0.044715, suffix="c")], suffix="inner")
    t = op(ctx, node, "tanh", [op(ctx, node, "_mul_scalar", [inner],
                                  scalar=math.sqrt(2 / math.pi), suffix="k")], suffix="tanh")
    half = op(ctx, node, "_mul_scalar", [op(ctx, node, "_plus_scalar", [t], scalar=1.0,
                                            suffix="one")], scalar=0.5, suffix="half")
    return [op(ctx, node, "elemwise_mul", [x, half])]


@importer("Mish")
def _mish(ctx, node):
    x = ctx.sym(node.input[0])
    sp = op(ctx, node, "Activation", [x], act_type="softrelu", suffix="softplus")
    return [op(ctx, node, "elemwise_mul", [x, op(ctx, node, "tanh", [sp], suffix="tanh")])]


@importer("Swish")
def _swish(ctx, node):
    x = ctx.sym(node.input[0])
    scaled = op(ctx, node, "_mul_scalar", [x], scalar=node_attrs(node).get("alpha", 1.0),
                suffix="scaled")
    return [op(ctx, node, "elemwise_mul", [x, op(ctx, node, "sigmoid", [scaled],
                                                 suffix="gate")])]


@importer("ThresholdedRelu")
def _thresholded_relu(ctx, node):
    x = ctx.sym(node.input[0])
    keep = op(ctx, node, "_greater_scalar", [x], scalar=node_attrs(node).get("alpha", 1.0),
              suffix="keep")
    return [op(ctx, node, "where", [keep, x, op(ctx, node, "zeros_like", [x], suffix="zero")])]


@importer("Shrink")
def _shrink(ctx, node):
    attrs, x = node_attrs(node), ctx.sym(node.input[0])
    lambd, bias = attrs.get("lambd", 0.5), attrs.get("bias", 0.0)
    up = op(ctx, node, "_greater_scalar", [x], scalar=lambd, suffix="up")
    down = op(ctx, node, "_lesser_scalar", [x], scalar=-lambd, suffix="down")
    minus = op(ctx, node, "_minus_scalar", [x], scalar=bias, suffix="minus")
    plus = op(ctx, node, "_plus_scalar", [x], scalar=bias, suffix="plus")
    zero = op(ctx, node, "zeros_like", [x], suffix="zero")
    low = op(ctx, node, "where", [down, plus, zero], suffix="low")
    return [op(ctx, node, "where", [up, minus, low])]


def _channel_slope(ctx, node) -> np.ndarray | None:
    """A constant PRelu slope as MXNet's gamma ((C,) over axis 1, or one value), else None."""
    slope, rank = ctx.consts.get(node.input[1]), ctx.rank(node.input[0])
    if slope is None:
        return None
    if slope.size == 1:
        return slope.reshape(1)
    big = [i + (rank or 0) - slope.ndim for i, d in enumerate(slope.shape) if d != 1]
    return slope.reshape(-1) if rank is not None and rank > 1 and big == [1] else None


@importer("PRelu")
def _prelu(ctx, node):
    x, gamma = ctx.sym(node.input[0]), _channel_slope(ctx, node)
    if gamma is not None:
        name = ctx.name(node)
        ctx.arg_params[f"{name}_gamma"] = gamma
        return [create_op_symbol("LeakyReLU", [x, ctx.variable(f"{name}_gamma")],
                                 {"name": name, "act_type": "prelu"})]
    slope = ctx.sym(node.input[1])
    pos = op(ctx, node, "_maximum_scalar", [x], scalar=0.0, suffix="pos")
    neg = op(ctx, node, "_minimum_scalar", [x], scalar=0.0, suffix="neg")
    return [op(ctx, node, "broadcast_add",
               [pos, op(ctx, node, "broadcast_mul", [neg, slope], suffix="scaled")])]

