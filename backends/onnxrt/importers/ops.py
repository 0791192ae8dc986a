"""ONNX elementwise importers: unary math, arithmetic, comparisons and logic, Where, Cast,
Clip, Constant, Identity / Dropout (see :mod:`.importer`)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ..checks import tensor_value
from ..importing import importer, node_attrs, node_error, op
from .common import broadcast_inputs, same_shapes

_UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative",
          "Sin": "sin", "Cos": "cos", "Tan": "tan", "Floor": "floor", "Ceil": "ceil",
          "Reciprocal": "reciprocal", "Erf": "erf", "Asin": "arcsin",
          "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh",
          "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh", "Not": "logical_not"}
# ONNX op -> (broadcast op, scalar op with the scalar on the right, on the left)
_BINARY = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
           "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
           "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
           "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
           "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
           "Max": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
           "Min": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar")}
_COMPARE = {"Equal": "broadcast_equal", "Greater": "broadcast_greater",
            "Less": "broadcast_lesser", "GreaterOrEqual": "broadcast_greater_equal",
            "LessOrEqual": "broadcast_lesser_equal"}
_LOGIC = {"And": "broadcast_logical_and", "Or": "broadcast_logical_or",
          "Xor": "broadcast_logical_xor"}
_SATURATING = {TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
               TensorProto.FLOAT8E5M2FNUZ}


def _unary(mx: str):
    def convert(ctx, node):
        return [op(ctx, node, mx, [ctx.sym(node.input[0])])]
    return convert


for _t, _mx in _UNARY.items():
    importer(_t)(_unary(_mx))


def _nan_kept(ctx, node, x, res):
    """``res`` where ``x`` is a number, ``x`` (NaN) where it is NaN."""
    nan = op(ctx, node, "_not_equal", [x, x], suffix="isnan")
    return op(ctx, node, "where", [nan, x, res])


@importer("Sign")
def _sign(ctx, node):
    """graphexec's sign (MXNet's) gives 0 for NaN, ONNX's (numpy's) NaN."""
    x = ctx.sym(node.input[0])
    res = op(ctx, node, "sign", [x], suffix="sign")
    dtype = ctx.dtype(node.input[0])
    return [res if dtype is not None and dtype.kind != "f" else _nan_kept(ctx, node, x, res)]


@importer("Round")
def _round(ctx, node):
    """Halves to even (ONNX, numpy's rint; MXNet's round goes away from zero, its rint down):
    floor(x) + [frac > 1/2] + [frac == 1/2 and floor(x) odd], a zero result with x's sign."""
    x = ctx.sym(node.input[0])
    low = op(ctx, node, "floor", [x], suffix="floor")
    frac = op(ctx, node, "elemwise_sub", [x, low], suffix="frac")
    up = op(ctx, node, "_greater_scalar", [frac], scalar=0.5, suffix="up")
    tie = op(ctx, node, "_equal_scalar", [frac], scalar=0.5, suffix="tie")
    odd = op(ctx, node, "_mod_scalar", [low], scalar=2.0, suffix="odd")
    even_up = op(ctx, node, "where", [tie, odd, op(ctx, node, "zeros_like", [odd],
                                                   suffix="zero")], suffix="even_up")
    res = op(ctx, node, "add_n", [low, up, even_up], num_args=3, suffix="sum")
    zero = op(ctx, node, "_equal_scalar", [res], scalar=0.0, suffix="is_zero")
    return [op(ctx, node, "where", [zero, op(ctx, node, "_mul_scalar", [x], scalar=0.0,
                                             suffix="signed_zero"), res])]


@importer("Identity")
def _identity(ctx, node):
    return [ctx.sym(node.input[0])]


@importer("Dropout")
def _dropout(ctx, node):
    """Inference Dropout is the identity with an all-true mask. Training mode is imported
    only with ratio 0 (no element dropped): a random mask cannot match another runtime's."""
    training = ctx.const(node, 2, "training_mode")
    if training is not None and bool(training.reshape(-1)[0]):
        ratio = ctx.const(node, 1, "ratio")
        ratio = 0.5 if ratio is None else float(ratio.reshape(-1)[0])
        if ratio != 0.0:
            raise node_error(node, f"training_mode=True with ratio {ratio} draws a random "
                              "mask; only inference (or ratio 0) Dropout is imported")
    x = ctx.sym(node.input[0])
    if len(node.output) < 2 or not node.output[1]:
        return [x]
    ones = op(ctx, node, "ones_like", [x], suffix="mask_ones")
    return [x, op(ctx, node, "Cast", [ones], dtype="bool", suffix="mask")]


def _tensor_attr(node, attrs: dict) -> np.ndarray:
    if "value" in attrs:
        return tensor_value(attrs["value"], "value of Constant")
    for key, dtype in (("value_float", "f4"), ("value_floats", "f4"), ("value_int", "i8"),
                       ("value_ints", "i8")):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    raise node_error(node, f"only numeric values are imported, got attributes {sorted(attrs)}"
                      " (graphexec has no string or sparse tensors)")


@importer("Constant")
def _constant(ctx, node):
    ctx.consts[node.output[0]] = _tensor_attr(node, node_attrs(node))
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


@importer("Add", "Sub", "Mul", "Div", "Max", "Min")
def _arith(ctx, node):
    names = list(node.input)
    if len(names) == 1:
        return [ctx.sym(names[0])]
    acc = names[0]
    for k, nxt in enumerate(names[1:-1]):
        ctx.values[f"{node.output[0]}__{k}"] = _binary(ctx, node, acc, nxt, suffix=f"part{k}")
        acc = f"{node.output[0]}__{k}"
    return [_binary(ctx, node, acc, names[-1])]


@importer("Pow")
def _pow(ctx, node):
    """The result has the base's dtype: an exponent of another dtype is cast to it, except
    a float exponent of an integer base, computed in float and cast back."""
    base, exp = node.input
    tb, te = ctx.dtype(base), ctx.dtype(exp)
    if tb is None or te is None or tb == te or base in ctx.consts or exp in ctx.consts:
        return [_binary(ctx, node, base, exp)]
    if tb.kind in "iu" and te.kind == "f":
        fb = op(ctx, node, "Cast", [ctx.sym(base)], dtype=te.name, suffix="base")
        res = op(ctx, node, "broadcast_power", [fb, ctx.sym(exp)], suffix="float")
        return [op(ctx, node, "Cast", [res], dtype=tb.name)]
    fe = op(ctx, node, "Cast", [ctx.sym(exp)], dtype=tb.name, suffix="exp")
    return [op(ctx, node, "broadcast_power", [ctx.sym(base), fe])]


@importer("Mod")
def _mod(ctx, node):
    """fmod=0 is graphexec's (Python-style) mod; fmod=1, C's fmod, is sign(a) * (|a| mod |b|)
    (both operands non-negative, where the two agree). graphexec's x mod 0 is 0; ONNX's
    float result is NaN, added as 0 / (1 - [b == 0])."""
    a, b = (ctx.sym(n) for n in node.input)
    fmod = node_attrs(node).get("fmod", 0)
    if fmod not in (0, 1):
        raise node_error(node, f"fmod={fmod}: 0 or 1 is expected")
    if not fmod:
        res = op(ctx, node, "broadcast_mod", [a, b], suffix="mod")
    else:
        rem = op(ctx, node, "broadcast_mod", [op(ctx, node, "abs", [a], suffix="abs_a"),
                                              op(ctx, node, "abs", [b], suffix="abs_b")],
                 suffix="rem")
        res = op(ctx, node, "broadcast_mul", [op(ctx, node, "sign", [a], suffix="sign"), rem],
                 suffix="mod")
    dtype = ctx.dtype(node.input[0])
    if dtype is None or dtype.kind != "f":
        return [res]
    zero = op(ctx, node, "_equal_scalar", [b], scalar=0.0, suffix="zero_divisor")
    nan = op(ctx, node, "_rdiv_scalar", [op(ctx, node, "_rminus_scalar", [zero], scalar=1.0,
                                            suffix="nonzero")], scalar=0.0, suffix="nan")
    return [op(ctx, node, "broadcast_add", [res, nan])]


@importer(*_COMPARE)
def _compare(ctx, node):
    res = op(ctx, node, _COMPARE[node.op_type], [ctx.sym(n) for n in node.input], suffix="cmp")
    return [op(ctx, node, "Cast", [res], dtype="bool")]


@importer(*_LOGIC)
def _logic(ctx, node):
    return [op(ctx, node, _LOGIC[node.op_type], [ctx.sym(n) for n in node.input])]


@importer("Sum", "Mean")
def _sum(ctx, node):
    names = list(node.input)
    if len(names) == 1:
        total = ctx.sym(names[0])
    elif same_shapes(ctx, names):
        total = op(ctx, node, "add_n", [ctx.sym(n) for n in names], suffix="sum")
    else:
        total = op(ctx, node, "broadcast_add", [ctx.sym(names[0]), ctx.sym(names[1])],
                   suffix="sum1")
        for k, n in enumerate(names[2:], 2):
            total = op(ctx, node, "broadcast_add", [total, ctx.sym(n)], suffix=f"sum{k}")
    if node.op_type == "Sum":
        return [total]
    return [op(ctx, node, "_div_scalar", [total], scalar=float(len(names)))]


@importer("Where")
def _where(ctx, node):
    """graphexec's where needs equal shapes (or a row condition): inputs of other shapes are
    broadcast first, which needs their static shapes."""
    ins = broadcast_inputs(ctx, node, list(node.input), "Where with broadcasting")
    return [op(ctx, node, "where", ins)]


def _cast_dtype(node, to: int) -> np.dtype:
    if to in (TensorProto.STRING, TensorProto.UNDEFINED):
        raise node_error(node, f"cast to {TensorProto.DataType.Name(to)}: graphexec has no "
                          "string tensors")
    if to == TensorProto.FLOAT8E8M0:
        raise node_error(node, "cast to FLOAT8E8M0 rounds by round_mode; graphexec's Cast "
                          "rounds to nearest only")
    return np.dtype(helper.tensor_dtype_to_np_dtype(to))


def _cast_to(ctx, node, x, to: int):
    """Cast ``x`` to ONNX type ``to``; a saturating float8 cast clips to the type's largest
    finite value first (inf too), which is what saturation means."""
    dtype = _cast_dtype(node, to)
    if node_attrs(node).get("saturate", 1) != 1 and to not in _SATURATING:
        raise node_error(node, "saturate=0 is meaningful only for a cast to a float8 type")
    if to in _SATURATING and node_attrs(node).get("saturate", 1):
        big = float(_finfo_max(dtype))
        x = op(ctx, node, "clip", [x], a_min=-big, a_max=big, suffix="saturate")
    return op(ctx, node, "Cast", [x], dtype=dtype.name)


def _finfo_max(dtype: np.dtype):
    import ml_dtypes  # float8 types come from ml_dtypes, which onnx depends on
    return ml_dtypes.finfo(dtype).max


@importer("Cast")
def _cast(ctx, node):
    return [_cast_to(ctx, node, ctx.sym(node.input[0]), node_attrs(node)["to"])]


@importer("CastLike")
def _cast_like(ctx, node):
    dtype = ctx.dtype(node.input[1])
    if dtype is None:
        raise node_error(node, f"the dtype of target_type input {node.input[1]!r} is unknown")
    to = helper.np_dtype_to_tensor_dtype(dtype)
    return [_cast_to(ctx, node, ctx.sym(node.input[0]), to)]


@importer("Clip")
def _clip(ctx, node):
    """Constant bounds become ``clip`` (or a one-sided maximum / minimum); computed ones
    broadcast ``minimum(maximum(x, min), max)``, ONNX's result even when min > max."""
    x = ctx.sym(node.input[0])
    lo, hi = _bound(ctx, node, 1, "min"), _bound(ctx, node, 2, "max")
    attrs, big = node_attrs(node), float(np.finfo(np.float32).max)  # ONNX's defaults
    if ("min" in attrs or "max" in attrs) and not attrs.get("min", -big) <= attrs.get("max", big):
        raise node_error(node, f"attributes min={attrs.get('min')} and max={attrs.get('max')}: "
                          "min must not exceed max (nor be NaN)")
    if isinstance(lo, float) and isinstance(hi, float):
        return [op(ctx, node, "clip", [x], a_min=lo, a_max=hi)]
    if lo is not None:
        x = _one_side(ctx, node, x, lo, "maximum", "min" if hi is not None else "")
    if hi is not None:
        x = _one_side(ctx, node, x, hi, "minimum", "")
    return [x]


def _bound(ctx, node, index: int, key: str) -> float | str | None:
    """A Clip bound: its float when constant (input or old-opset attribute), else the name of
    the value computing it; None when absent."""
    attrs = node_attrs(node)
    if key in attrs:
        return float(attrs[key])
    if index >= len(node.input) or not node.input[index]:
        return None
    name = node.input[index]
    return float(ctx.consts[name].reshape(-1)[0]) if name in ctx.consts else name


def _one_side(ctx, node, x, bound: float | str, kind: str, suffix: str):
    if isinstance(bound, float):
        return op(ctx, node, f"_{kind}_scalar", [x], scalar=bound, suffix=suffix)
    return op(ctx, node, f"broadcast_{kind}", [x, ctx.sym(bound)], suffix=suffix)


@importer("IsNaN")
def _isnan(ctx, node):
    x = ctx.sym(node.input[0])
    return [op(ctx, node, "Cast", [op(ctx, node, "_not_equal", [x, x], suffix="ne")],
               dtype="bool")]


@importer("IsInf")
def _isinf(ctx, node):
    attrs, x = node_attrs(node), ctx.sym(node.input[0])
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    if pos and neg:
        hit = op(ctx, node, "_equal_scalar", [op(ctx, node, "abs", [x], suffix="abs")],
                 scalar=float("inf"), suffix="eq")
    elif pos or neg:
        hit = op(ctx, node, "_equal_scalar", [x], scalar=float("inf") if pos else -float("inf"),
                 suffix="eq")
    else:
        hit = op(ctx, node, "zeros_like", [x], suffix="none")
    return [op(ctx, node, "Cast", [hit], dtype="bool")]
