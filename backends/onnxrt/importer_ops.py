"""ONNX op importers: one ONNX node -> graphexec symbols (see :mod:`.importer`)."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from ...core.symbol import create_op_symbol
from .importer import _attrs, _node_error, importer, op

_UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative",
          "Sin": "sin", "Cos": "cos", "Tan": "tan", "Floor": "floor", "Ceil": "ceil",
          "Reciprocal": "reciprocal", "Erf": "erf", "Sign": "sign", "Asin": "arcsin",
          "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh"}
_ACT = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu",
        "Softsign": "softsign"}
# ONNX op -> (broadcast op, scalar op with the scalar on the right, on the left)
_BINARY = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
           "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
           "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
           "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
           "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
           "Max": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
           "Min": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar")}
_COMPARE = {"Equal": "broadcast_equal", "Greater": "broadcast_greater",
            "Less": "broadcast_lesser"}
_SELU = (1.67326319217681884765625, 1.05070102214813232421875)


def _unary(mx: str):
    def convert(ctx, node):
        return [op(ctx, node, mx, [ctx.sym(node.input[0])])]
    return convert


for _t, _mx in _UNARY.items():
    importer(_t)(_unary(_mx))


@importer(*_ACT)
def _activation(ctx, node):
    return [op(ctx, node, "Activation", [ctx.sym(node.input[0])], act_type=_ACT[node.op_type])]


@importer("Identity", "Dropout")
def _identity(ctx, node):
    if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1]:
        raise _node_error(node, "the Dropout mask output is not imported (inference only)")
    return [ctx.sym(node.input[0])]


@importer("Constant")
def _constant(ctx, node):
    attrs = _attrs(node)
    if "value" not in attrs:
        raise _node_error(node, f"only a tensor 'value' is imported, got {sorted(attrs)}")
    ctx.consts[node.output[0]] = numpy_helper.to_array(attrs["value"])
    return []


def _scalar(ctx, name):
    """The Python float of a one-element constant, else None."""
    value = ctx.consts.get(name)
    if value is None or value.size != 1 or value.dtype.kind not in "fiu":
        return None
    return float(value.reshape(()))


def _binary(ctx, node, a: str, b: str, suffix: str = ""):
    bcast, right, left = _BINARY[node.op_type]
    sa, sb = _scalar(ctx, a), _scalar(ctx, b)
    if sb is not None and a not in ctx.consts:
        return op(ctx, node, right, [ctx.sym(a)], scalar=sb, suffix=suffix)
    if sa is not None and b not in ctx.consts:
        return op(ctx, node, left, [ctx.sym(b)], scalar=sa, suffix=suffix)
    return op(ctx, node, bcast, [ctx.sym(a), ctx.sym(b)], suffix=suffix)


@importer(*_BINARY)
def _arith(ctx, node):
    names = list(node.input)
    if len(names) == 1:
        return [ctx.sym(names[0])]
    acc = names[0]
    for k, nxt in enumerate(names[1:-1]):
        ctx.values[f"{node.output[0]}__{k}"] = _binary(ctx, node, acc, nxt, suffix=f"part{k}")
        acc = f"{node.output[0]}__{k}"
    return [_binary(ctx, node, acc, names[-1])]


@importer(*_COMPARE)
def _compare(ctx, node):
    res = op(ctx, node, _COMPARE[node.op_type], [ctx.sym(n) for n in node.input], suffix="cmp")
    return [op(ctx, node, "Cast", [res], dtype="bool")]


@importer("Sum")
def _sum(ctx, node):
    ins = [ctx.sym(n) for n in node.input]
    return [ins[0] if len(ins) == 1 else op(ctx, node, "add_n", ins)]


@importer("Where")
def _where(ctx, node):
    return [op(ctx, node, "where", [ctx.sym(n) for n in node.input])]


@importer("Cast")
def _cast(ctx, node):
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(_attrs(node)["to"]))
    return [op(ctx, node, "Cast", [ctx.sym(node.input[0])], dtype=dtype.name)]


@importer("Clip")
def _clip(ctx, node):
    attrs = _attrs(node)
    lo, hi = ctx.const(node, 1, "min"), ctx.const(node, 2, "max")
    lo = float(lo.reshape(-1)[0]) if lo is not None else attrs.get("min", -np.inf)
    hi = float(hi.reshape(-1)[0]) if hi is not None else attrs.get("max", np.inf)
    return [op(ctx, node, "clip", [ctx.sym(node.input[0])], a_min=lo, a_max=hi)]


@importer("LeakyRelu", "Elu", "Selu")
def _leaky(ctx, node):
    attrs, x = _attrs(node), ctx.sym(node.input[0])
    if node.op_type == "Selu":
        got = (attrs.get("alpha", _SELU[0]), attrs.get("gamma", _SELU[1]))
        if not np.allclose(got, _SELU):
            raise _node_error(node, f"Selu alpha/gamma {got} differ from the fixed SELU "
                              f"constants {_SELU}")
        return [op(ctx, node, "LeakyReLU", [x], act_type="selu")]
    if node.op_type == "Elu":
        return [op(ctx, node, "LeakyReLU", [x], act_type="elu", slope=attrs.get("alpha", 1.0))]
    return [op(ctx, node, "LeakyReLU", [x], act_type="leaky", slope=attrs.get("alpha", 0.01))]


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


def _window(node, nd: int, pool: bool) -> dict:
    attrs = _attrs(node)
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
        raise _node_error(node, f"auto_pad {attrs['auto_pad'].decode()} is not imported; "
                          "give explicit pads")
    pads = list(attrs.get("pads", [0] * 2 * nd))
    if pads[:nd] != pads[nd:]:
        raise _node_error(node, f"pads {pads} are not symmetric (begin {pads[:nd]} != end "
                          f"{pads[nd:]}); graphexec pads both sides equally")
    dil = list(attrs.get("dilations", [1] * nd))
    if pool and dil != [1] * nd:
        raise _node_error(node, f"pooling dilations {dil} are not imported")
    out = {"stride": tuple(attrs.get("strides", [1] * nd)), "pad": tuple(pads[:nd])}
    if not pool:
        out["dilate"] = tuple(dil)
    return out


@importer("Conv")
def _conv(ctx, node):
    w = ctx.const(node, 1, "weight")
    attrs = _attrs(node)
    kernel = tuple(attrs.get("kernel_shape", w.shape[2:]))
    ins = [ctx.sym(n) for n in node.input if n]
    return [op(ctx, node, "Convolution", ins, kernel=kernel, num_filter=w.shape[0],
               num_group=attrs.get("group", 1), no_bias=len(ins) < 3,
               **_window(node, len(kernel), False))]


@importer("MaxPool", "AveragePool")
def _pool(ctx, node):
    if len(node.output) > 1 and node.output[1]:
        raise _node_error(node, "the MaxPool Indices output is not imported")
    attrs = _attrs(node)
    kernel = tuple(attrs["kernel_shape"])
    extra = {}
    if node.op_type == "AveragePool":
        extra["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
    if attrs.get("storage_order", 0):
        raise _node_error(node, "storage_order=1 (column-major indices) is not imported")
    conv = "full" if attrs.get("ceil_mode", 0) else "valid"
    kind = "max" if node.op_type == "MaxPool" else "avg"
    return [op(ctx, node, "Pooling", [ctx.sym(node.input[0])], kernel=kernel, pool_type=kind,
               pooling_convention=conv, **extra, **_window(node, len(kernel), True))]


@importer("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx, node):
    kind = "max" if node.op_type == "GlobalMaxPool" else "avg"
    return [op(ctx, node, "Pooling", [ctx.sym(node.input[0])], global_pool=True,
               pool_type=kind)]


@importer("BatchNormalization")
def _batchnorm(ctx, node):
    attrs = _attrs(node)
    if attrs.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise _node_error(node, "training-mode BatchNormalization is not imported")
    mean, var = ctx.const(node, 3, "mean"), ctx.const(node, 4, "var")
    ins = [ctx.sym(n) for n in node.input[:3]]
    sym = op(ctx, node, "BatchNorm", ins, eps=attrs.get("epsilon", 1e-5), fix_gamma=False,
             use_global_stats=True, momentum=attrs.get("momentum", 0.9))
    for name, value in zip(sym.list_auxiliary_states(), (mean, var)):
        ctx.used.add(name)
        ctx.aux_params[name] = value
    return [sym]


@importer("Gemm")
def _gemm(ctx, node):
    attrs = _attrs(node)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    ta, tb = attrs.get("transA", 0), attrs.get("transB", 0)
    has_c = len(node.input) > 2 and bool(node.input[2])
    w = ctx.consts.get(node.input[1])
    bias = ctx.consts.get(node.input[2]) if has_c else None
    fc_bias = not has_c or (bias is not None and w is not None and bias.shape == w.shape[:1])
    if (tb, ta, alpha, beta) == (1, 0, 1.0, 1.0) and w is not None and fc_bias:
        ins = [ctx.sym(n) for n in node.input if n]
        return [op(ctx, node, "FullyConnected", ins, num_hidden=w.shape[0],
                   no_bias=not has_c)]
    out = op(ctx, node, "dot", [ctx.sym(node.input[0]), ctx.sym(node.input[1])],
             transpose_a=bool(ta), transpose_b=bool(tb), suffix="dot" if has_c else "")
    if alpha != 1.0:
        out = op(ctx, node, "_mul_scalar", [out], scalar=alpha, suffix="alpha")
    if not has_c:
        return [out]
    c = ctx.sym(node.input[2])
    if beta != 1.0:
        c = op(ctx, node, "_mul_scalar", [c], scalar=beta, suffix="beta")
    return [op(ctx, node, "broadcast_add", [out, c])]


@importer("MatMul")
def _matmul(ctx, node):
    a, b = node.input
    ra, rb = ctx.rank(a), ctx.rank(b)
    if ra is not None and ra >= 2 and rb == 2:
        return [op(ctx, node, "dot", [ctx.sym(a), ctx.sym(b)])]
    if ra == rb == 3:
        return [op(ctx, node, "batch_dot", [ctx.sym(a), ctx.sym(b)])]
    raise _node_error(node, f"MatMul of rank {ra} by rank {rb} operands is not imported "
                      "(N-D by 2-D, or 3-D by 3-D)")


from . import importer_tensor  # noqa: E402,F401  (registers the tensor importers)
