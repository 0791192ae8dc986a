"""Element-wise converters: arithmetic, comparisons, scalar ops, unary math (with the ones ONNX
lacks composed exactly: cbrt, trunc, MXNet's round, hypot, Python-style mod), clip,
hard_sigmoid, Cast, identities, where, fills (zeros_like, _full, ...), add_n."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from onnx import numpy_helper

from ..convert import ConvertCall, converter, onnx_dtype

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
          "relu": "Relu", "erf": "Erf", "floor": "Floor", "ceil": "Ceil",
          "reciprocal": "Reciprocal", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan",
          "sinh": "Sinh", "cosh": "Cosh", "arcsinh": "Asinh", "arccosh": "Acosh",
          "arctanh": "Atanh", "softsign": "Softsign"}
_IDENTITY = ("_copy", "BlockGrad", "MakeLoss", "make_loss", "_CrossDeviceCopy",
             "_identity_with_attr_like_rhs")


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
    """Clip; with a_min > a_max MXNet's x > a_max ? a_max : x < a_min ? a_min : x (ONNX
    Runtime's Clip gives a_max everywhere there)."""
    dt = c.in_dtypes[0]
    lo, hi = c.b.const(c.p.a_min, dt, c.hint("min")), c.b.const(c.p.a_max, dt, c.hint("max"))
    if not c.p.a_min > c.p.a_max:
        c.b.one("Clip", [c.x, lo, hi], c.out)
        return
    low = c.b.one("Where", [c.b.one("Less", [c.x, lo], hint=c.hint("below")), lo, c.x],
                  hint=c.hint("low"))
    c.b.one("Where", [c.b.one("Greater", [c.x, hi], hint=c.hint("above")), hi, low], c.out)


@converter("Cast")
def _cast(c: ConvertCall) -> None:
    c.b.one("Cast", [c.x], c.out, to=onnx_dtype(c.out_dtypes[0]))


@converter("where")
def _where(c: ConvertCall) -> None:
    """A (n,) condition selecting whole rows is reshaped to (n, 1, ...) to broadcast."""
    cond, ndim = c.inputs[0], len(c.in_shapes[1])
    if len(c.in_shapes[0]) != ndim:
        shape = c.b.ints(tuple(c.in_shapes[0]) + (1,) * (ndim - 1), c.hint("rows"))
        cond = c.b.one("Reshape", [cond, shape], hint=c.hint("cond"))
    c.b.one("Where", [_to_bool(c, cond), c.inputs[1], c.inputs[2]], c.out)


def _fill(value: Callable[[Any], float]):
    """ConstantOfShape of the output shape holding ``value(params)`` in the output dtype."""
    def convert(c: ConvertCall) -> None:
        shape = c.b.ints(c.out_shapes[0], c.hint("shape"))
        fill = np.asarray([value(c.p)], dtype=c.out_dtypes[0])
        c.b.one("ConstantOfShape", [shape], c.out, value=numpy_helper.from_array(fill))
    return convert


converter("zeros_like", "_zeros")(_fill(lambda p: 0))
converter("ones_like", "_ones")(_fill(lambda p: 1))
converter("_full")(_fill(lambda p: p.value))


@converter("add_n")
def _add_n(c: ConvertCall) -> None:
    c.b.one("Sum", list(c.inputs), c.out)


# -- what ONNX lacks, composed to give graphexec's kernels' results ---------------------------
def _trunc_of(c: ConvertCall, sign: str | None, out: str | None) -> str:
    """x toward zero, sign(x) * floor(|x|), into ``out`` (``sign``: Sign(x) when already
    made)."""
    sign = sign or c.b.one("Sign", [c.x], hint=c.hint("sign"))
    whole = c.b.one("Floor", [c.b.one("Abs", [c.x], hint=c.hint("abs"))], hint=c.hint("floor"))
    return c.b.one("Mul", [sign, whole], out, hint=c.hint("trunc"))


@converter("round")
def _round(c: ConvertCall) -> None:
    """Halves away from zero (ONNX Round goes to even), the native kernel's exact form:
    t = sign(x) * floor(|x|), then t + sign(x) * [|x - t| >= 0.5]."""
    dt = c.in_dtypes[0]
    if dt.kind != "f":
        c.b.one("Identity", [c.x], c.out)
        return
    sign = c.b.one("Sign", [c.x], hint=c.hint("sign"))
    whole = _trunc_of(c, sign, None)
    frac = c.b.one("Abs", [c.b.one("Sub", [c.x, whole], hint=c.hint("diff"))],
                   hint=c.hint("frac"))
    up = c.b.one("GreaterOrEqual", [frac, c.b.const(0.5, dt, c.hint("half"))],
                 hint=c.hint("up"))
    step = c.b.one("Mul", [sign, c.b.one("Cast", [up], hint=c.hint("up_f"), to=onnx_dtype(dt))],
                   hint=c.hint("step"))
    c.b.one("Add", [whole, step], c.out)


@converter("sign")
def _sign(c: ConvertCall) -> None:
    """MXNet's sign gives 0 for NaN (ONNX Runtime's Sign gives NaN)."""
    dt = c.in_dtypes[0]
    if dt.kind != "f":
        c.b.one("Sign", [c.x], c.out)
        return
    sign = c.b.one("Sign", [c.x], hint=c.hint("sign"))
    zero = c.b.const(0, dt, c.hint("zero"))
    c.b.one("Where", [c.b.one("IsNaN", [c.x], hint=c.hint("isnan")), zero, sign], c.out)


@converter("rint")
def _rint(c: ConvertCall) -> None:
    """MXNet's rint (ties down; ONNX Round goes to even): floor(x) + [x - floor(x) > 1/2].
    A zero result is +0 where MXNet's keeps x's sign (-0.3 gives -0 there): ONNX Runtime's
    Where drops the sign of a zero it selects, so no composition here restores it."""
    if c.in_dtypes[0].kind != "f":
        c.b.one("Identity", [c.x], c.out)
        return
    dt = c.in_dtypes[0]
    low = c.b.one("Floor", [c.x], hint=c.hint("floor"))
    frac = c.b.one("Sub", [c.x, low], hint=c.hint("frac"))
    up = c.b.one("Greater", [frac, c.b.const(0.5, dt, c.hint("half"))], hint=c.hint("up"))
    c.b.one("Add", [low, c.b.one("Cast", [up], hint=c.hint("up_f"), to=onnx_dtype(dt))], c.out)


@converter("trunc", "fix")
def _trunc(c: ConvertCall) -> None:
    """Toward zero: sign(x) * floor(|x|)."""
    _trunc_of(c, None, c.out)


def _cbrt_of(c: ConvertCall, out: str | None) -> str:
    """sign(x) * |x| ** (1/3) (a real cube root also for negative x)."""
    third = c.b.const(1 / 3, c.in_dtypes[0], c.hint("third"))
    root = c.b.one("Pow", [c.b.one("Abs", [c.x], hint=c.hint("abs")), third],
                   hint=c.hint("root"))
    return c.b.one("Mul", [c.b.one("Sign", [c.x], hint=c.hint("sign")), root], out,
                   hint=c.hint("cbrt"))


@converter("cbrt")
def _cbrt(c: ConvertCall) -> None:
    _cbrt_of(c, c.out)


@converter("rcbrt")
def _rcbrt(c: ConvertCall) -> None:
    c.b.one("Reciprocal", [_cbrt_of(c, None)], c.out)


def _scaled(factor: float):
    def convert(c: ConvertCall) -> None:
        c.b.one("Mul", [c.x, c.b.const(factor, c.in_dtypes[0], c.hint("factor"))], c.out)
    return convert


converter("degrees")(_scaled(180 / math.pi))
converter("radians")(_scaled(math.pi / 180))


@converter("hard_sigmoid")
def _hard_sigmoid(c: ConvertCall) -> None:
    """clip(alpha x + beta, 0, 1) with the constants in the data's dtype, as the kernel."""
    dt, b = c.in_dtypes[0], c.b
    ax = b.one("Mul", [c.x, b.const(c.p.alpha, dt, c.hint("alpha"))], hint=c.hint("ax"))
    y = b.one("Add", [ax, b.const(c.p.beta, dt, c.hint("beta"))], hint=c.hint("axb"))
    b.one("Clip", [y, b.const(0, dt, c.hint("zero")), b.const(1, dt, c.hint("one"))], c.out)


def _hypot_of(c: ConvertCall, a: str, b: str) -> None:
    """sqrt(a * a + b * b)."""
    squares = [c.b.one("Mul", [v, v], hint=c.hint("sq")) for v in (a, b)]
    c.b.one("Sqrt", [c.b.one("Add", squares, hint=c.hint("sum"))], c.out)


def _mod_of(c: ConvertCall, a: str, b: str) -> None:
    """MXNet's mod: the divisor's sign, and x mod 0 == 0 (a divisor of 0 is replaced by 1,
    the result masked)."""
    dt, bld = c.out_dtypes[0], c.b
    zero, one = bld.const(0, dt, c.hint("zero")), bld.const(1, dt, c.hint("one"))
    by_zero = bld.one("Equal", [b, zero], hint=c.hint("by_zero"))
    b = bld.one("Where", [by_zero, one, b], hint=c.hint("divisor"))
    r = bld.one("Mod", [a, b], hint=c.hint("fmod"), fmod=1)
    bld.one("Where", [by_zero, zero, _floored(c, r, b, zero)], c.out)


def _floored(c: ConvertCall, r: str, b: str, zero: str) -> str:
    """The C fmod remainder ``r`` given the divisor's sign: r + b where r is nonzero and its
    sign differs from b's."""
    bld = c.b
    signs = bld.one("Xor", [bld.one("Less", [r, zero], hint=c.hint("r_neg")),
                            bld.one("Less", [b, zero], hint=c.hint("b_neg"))],
                    hint=c.hint("signs"))
    nonzero = bld.one("Not", [bld.one("Equal", [r, zero], hint=c.hint("r_zero"))],
                      hint=c.hint("r_nonzero"))
    fix = bld.one("And", [signs, nonzero], hint=c.hint("fix"))
    return bld.one("Where", [fix, bld.one("Add", [r, b], hint=c.hint("rb")), r],
                   hint=c.hint("mod"))


def _pair(compose: Callable, scalar: str | None = None):
    """A converter applying ``compose(c, a, b)`` to the two inputs, or to the input and the
    scalar (``scalar`` 'right' or 'left': where the scalar goes)."""
    def convert(c: ConvertCall) -> None:
        if scalar is None:
            compose(c, c.inputs[0], c.inputs[1])
            return
        s = c.b.const(c.p.scalar, c.in_dtypes[0], c.hint("scalar"))
        compose(c, *((c.x, s) if scalar == "right" else (s, c.x)))
    return convert


converter("_hypot", "broadcast_hypot")(_pair(_hypot_of))
converter("_hypot_scalar")(_pair(_hypot_of, "right"))
converter("_mod", "broadcast_mod")(_pair(_mod_of))
converter("_mod_scalar")(_pair(_mod_of, "right"))
converter("_rmod_scalar")(_pair(_mod_of, "left"))
