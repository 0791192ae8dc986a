"""Element-wise converters: arithmetic, comparisons, scalar ops, unary math, clip, Cast,
identities, where, zeros_like / ones_like, add_n."""
from __future__ import annotations

import math

import numpy as np
from onnx import numpy_helper

from . import ConvertCall, converter, onnx_dtype

_ARITH = {"Add": ("elemwise_add", "broadcast_add", "_grad_add"),
          "Sub": ("elemwise_sub", "broadcast_sub"),
          "Mul": ("elemwise_mul", "broadcast_mul"),
          "Div": ("elemwise_div", "broadcast_div"),
          "Pow": ("_power", "broadcast_power"),
          "Max": ("_maximum", "broadcast_maximum"),
          "Min": ("_minimum", "broadcast_minimum")}
_COMPARE = {"Equal": ("_equal", "broadcast_equal"),
            "Greater": ("_greater", "broadcast_greater"),
            "Less": ("_lesser", "broadcast_lesser"),
            "GreaterOrEqual": ("_greater_equal", "broadcast_greater_equal"),
            "LessOrEqual": ("_lesser_equal", "broadcast_lesser_equal"),
            "NotEqual": ("_not_equal", "broadcast_not_equal")}
_LOGICAL = {"And": ("_logical_and", "broadcast_logical_and"),
            "Or": ("_logical_or", "broadcast_logical_or"),
            "Xor": ("_logical_xor", "broadcast_logical_xor")}
# scalar op -> (ONNX op, scalar on the left)
_SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
           "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
           "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
           "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
           "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False),
           "_equal_scalar": ("Equal", False), "_not_equal_scalar": ("NotEqual", False),
           "_greater_scalar": ("Greater", False), "_lesser_scalar": ("Less", False),
           "_greater_equal_scalar": ("GreaterOrEqual", False),
           "_lesser_equal_scalar": ("LessOrEqual", False),
           "_logical_and_scalar": ("And", False), "_logical_or_scalar": ("Or", False),
           "_logical_xor_scalar": ("Xor", False)}
_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg",
          "sin": "Sin", "cos": "Cos", "tan": "Tan", "tanh": "Tanh", "sigmoid": "Sigmoid",
          "relu": "Relu", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "sign": "Sign",
          "reciprocal": "Reciprocal", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan",
          "sinh": "Sinh", "cosh": "Cosh", "arcsinh": "Asinh", "arccosh": "Acosh",
          "arctanh": "Atanh", "softsign": "Softsign", "rint": "Round"}
_IDENTITY = ("_copy", "BlockGrad", "MakeLoss", "make_loss", "_CrossDeviceCopy")


def _to_bool(c: ConvertCall, name: str) -> str:
    return c.b.one("Cast", [name], hint=c.hint("bool"), to=onnx_dtype(np.bool_))


def _emit(c: ConvertCall, op: str, a: str, b: str) -> None:
    """``op(a, b)`` into the node's output; boolean results cast back to the output dtype,
    as MXNet's comparisons and logical ops give 0/1 in the input dtype."""
    to = onnx_dtype(c.out_dtypes[0])
    if op in ("And", "Or", "Xor"):
        a, b = _to_bool(c, a), _to_bool(c, b)
    if op == "NotEqual":
        eq = c.b.one("Equal", [a, b], hint=c.hint("eq"))
        res = c.b.one("Not", [eq], hint=c.hint("ne"))
    elif op in _COMPARE or op in _LOGICAL:
        res = c.b.one(op, [a, b], hint=c.hint(op.lower()))
    else:
        c.b.one(op, [a, b], c.out)
        return
    c.b.one("Cast", [res], c.out, to=to)


def _binary(onnx_op: str):
    def convert(c: ConvertCall) -> None:
        _emit(c, onnx_op, c.inputs[0], c.inputs[1])
    return convert


for _op, _names in {**_ARITH, **_COMPARE, **_LOGICAL}.items():
    converter(*_names)(_binary(_op))


def _scalar(onnx_op: str, left: bool):
    def convert(c: ConvertCall) -> None:
        s = c.b.const(c.p.scalar, c.in_dtypes[0], c.hint("scalar"))
        _emit(c, onnx_op, *((s, c.x) if left else (c.x, s)))
    return convert


for _name, (_op, _left) in _SCALAR.items():
    converter(_name)(_scalar(_op, _left))


def _unary(onnx_op: str):
    def convert(c: ConvertCall) -> None:
        c.b.one(onnx_op, [c.x], c.out)
    return convert


for _name, _op in _UNARY.items():
    converter(_name)(_unary(_op))
for _name in _IDENTITY:
    converter(_name)(_unary("Identity"))


@converter("square")
def _square(c: ConvertCall) -> None:
    c.b.one("Mul", [c.x, c.x], c.out)


@converter("rsqrt")
def _rsqrt(c: ConvertCall) -> None:
    c.b.one("Reciprocal", [c.b.one("Sqrt", [c.x], hint=c.hint("sqrt"))], c.out)


@converter("log1p")
def _log1p(c: ConvertCall) -> None:
    one = c.b.const(1, c.in_dtypes[0], c.hint("one"))
    c.b.one("Log", [c.b.one("Add", [c.x, one], hint=c.hint("xp1"))], c.out)


@converter("expm1")
def _expm1(c: ConvertCall) -> None:
    one = c.b.const(1, c.in_dtypes[0], c.hint("one"))
    c.b.one("Sub", [c.b.one("Exp", [c.x], hint=c.hint("exp")), one], c.out)


def _log_base(base: float):
    def convert(c: ConvertCall) -> None:
        k = c.b.const(1.0 / math.log(base), c.in_dtypes[0], c.hint("inv_ln"))
        c.b.one("Mul", [c.b.one("Log", [c.x], hint=c.hint("ln")), k], c.out)
    return convert


converter("log2")(_log_base(2.0))
converter("log10")(_log_base(10.0))


@converter("logical_not")
def _logical_not(c: ConvertCall) -> None:
    res = c.b.one("Not", [_to_bool(c, c.x)], hint=c.hint("not"))
    c.b.one("Cast", [res], c.out, to=onnx_dtype(c.out_dtypes[0]))


@converter("clip")
def _clip(c: ConvertCall) -> None:
    dt = c.in_dtypes[0]
    lo, hi = c.b.const(c.p.a_min, dt, c.hint("min")), c.b.const(c.p.a_max, dt, c.hint("max"))
    c.b.one("Clip", [c.x, lo, hi], c.out)


@converter("Cast")
def _cast(c: ConvertCall) -> None:
    c.b.one("Cast", [c.x], c.out, to=onnx_dtype(c.out_dtypes[0]))


def _where_supports(node, shapes) -> "bool | str":
    if shapes[0] is not None and shapes[1] is not None and tuple(shapes[0]) != tuple(shapes[1]):
        return "where with a 1-D condition over the first axis is not converted"
    return True


@converter("where", supports=_where_supports)
def _where(c: ConvertCall) -> None:
    c.b.one("Where", [_to_bool(c, c.inputs[0]), c.inputs[1], c.inputs[2]], c.out)


def _fill(value: int):
    def convert(c: ConvertCall) -> None:
        shape = c.b.ints(c.out_shapes[0], c.hint("shape"))
        fill = np.asarray([value], dtype=c.out_dtypes[0])
        c.b.one("ConstantOfShape", [shape], c.out, value=numpy_helper.from_array(fill))
    return convert


converter("zeros_like")(_fill(0))
converter("ones_like")(_fill(1))


@converter("add_n")
def _add_n(c: ConvertCall) -> None:
    c.b.one("Sum", list(c.inputs), c.out)
