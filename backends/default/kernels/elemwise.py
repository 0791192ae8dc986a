"""Native kernels of the elementwise family (unary math, binary, scalar, broadcast, where,
add_n, Cast, clip). Written against ``call.xp`` so numpy and CuPy share the code."""
from __future__ import annotations

from functools import partial

import numpy as np

from graphexec.core.ops.elemwise import BINARY, BROADCAST, SCALAR, base_name

from .base import (bound_by_scalar, cast_like_c, cast_scalar, float_math, kernel,
                   scalar_operand, special)

# unary ops that are a single ufunc of the array module
_UFUNC = {name: name for name in (
    "abs", "negative", "reciprocal", "square", "sqrt", "cbrt", "exp", "expm1", "log",
    "log10", "log2", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "degrees", "radians", "floor", "ceil",
    "trunc")}
_UFUNC["fix"] = "trunc"
_SPECIAL = {"erf": "erf", "erfinv": "erfinv", "gamma": "gamma"}


def _unary_ufunc(name):
    def factory(call):
        return partial(getattr(call.xp, name), call.inputs[0], out=call.outputs[0])
    return factory


def _special_ufunc(name):
    def factory(call):
        return partial(getattr(special(call.xp), name), call.inputs[0], out=call.outputs[0])
    return factory


_INTEGER_SAFE = frozenset(("abs", "negative", "square", "floor", "ceil", "trunc", "fix"))
for _op, _fn in _UFUNC.items():
    _factory = _unary_ufunc(_fn)
    kernel(_op, inplace=True)(_factory if _op in _INTEGER_SAFE else float_math(_factory))
for _op, _fn in _SPECIAL.items():
    kernel(_op, inplace=True)(float_math(_special_ufunc(_fn), np.float64))


@kernel("round")
def round_half_away(call):
    """MXNet rounds halves away from zero (numpy's rint rounds them to even): trunc(x), one
    further from zero where |x - trunc(x)| (exact) is at least 1/2; floor(|x| + 1/2) would
    give 1 for 0.49999997 (the sum rounds to 1 in float32; C's roundf gives 0)."""
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]
    if x.dtype.kind != "f":
        return partial(xp.copyto, y, x)
    whole = xp.empty(x.shape, x.dtype)
    half = scalar_operand(xp, 0.5, y)

    def run():
        xp.trunc(x, out=whole)
        with _quiet(xp):
            xp.subtract(x, whole, out=y)  # NaN for +-inf, whose step below is then 0
        xp.abs(y, out=y)
        xp.greater_equal(y, half, out=y)
        xp.copysign(y, x, out=y)
        xp.add(y, whole, out=y)
    return run


def mxnet_sign(xp, x, out=None):
    """-1, 0 or 1 as MXNet's sign (x < 0 ? -1 : x > 0 ? 1 : 0): NaN gives 0 (numpy's sign
    gives NaN)."""
    out = xp.sign(x, out=out)
    return xp.nan_to_num(out, copy=False, nan=0.0)


@kernel("sign", inplace=True)
def sign(call):
    return partial(mxnet_sign, call.xp, call.inputs[0], call.outputs[0])


@kernel("rint")
def rint_half_down(call):
    """MXNet's rint: the nearer of floor(x) and ceil(x), floor(x) on a tie (1.5 -> 1, -2.5 ->
    -3, -0.5 -> -1; numpy's rint rounds ties to even); a zero result keeps x's sign (ceil
    of -0.3 is -0). Not in place: x is read after the output is first written."""
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]
    if x.dtype.kind != "f":
        return partial(xp.copyto, y, x)  # integers are their own nearest integer
    low = xp.empty(x.shape, x.dtype)
    half = scalar_operand(xp, 0.5, y)

    def run():
        xp.floor(x, out=low)
        with _quiet(xp):
            xp.subtract(x, low, out=y)   # x - floor(x), exact; NaN for +-inf and NaN
        xp.greater(y, half, out=y)       # 1 where ceil(x) is nearer
        xp.add(y, low, out=y)
        xp.copysign(y, x, out=y)
    return run


@kernel("gammaln", inplace=True)
@partial(float_math, work=np.float64)
def gammaln(call):
    """log |gamma(x)|, +inf at -inf as C's lgamma (MXNet's; scipy's gammaln gives -inf)."""
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]
    fn = special(xp).gammaln
    minus_inf = xp.empty(x.shape, bool)
    inf = scalar_operand(xp, float("inf"), y)

    def run():
        xp.isneginf(x, out=minus_inf)
        fn(x, out=y)
        xp.copyto(y, inf, where=minus_inf)
    return run


@kernel("rsqrt", inplace=True)
@partial(float_math, half=True)
def rsqrt(call):
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]

    def run():
        xp.sqrt(x, out=y)
        xp.reciprocal(y, out=y)
    return run


@kernel("rcbrt", inplace=True)
@partial(float_math, half=True)
def rcbrt(call):
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]

    def run():
        xp.cbrt(x, out=y)
        xp.reciprocal(y, out=y)
    return run


@kernel("relu", inplace=True)
def relu(call):
    y = call.outputs[0]
    return bound_by_scalar(call.xp, "maximum", call.inputs[0], cast_scalar(0, y), y)


@kernel("sigmoid", inplace=True)
@partial(float_math, half=True)
def sigmoid(call):
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]

    def run():
        xp.negative(x, out=y)
        xp.exp(y, out=y)
        xp.add(y, 1, out=y)
        xp.reciprocal(y, out=y)
    return run


@kernel("softsign")
@partial(float_math, half=True)
def softsign(call):
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]

    def run():
        xp.abs(x, out=y)
        xp.add(y, 1, out=y)
        xp.divide(x, y, out=y)
    return run


@kernel("hard_sigmoid", inplace=True)
def hard_sigmoid(call):
    xp, x, y, p = call.xp, call.inputs[0], call.outputs[0], call.params
    alpha, beta = cast_scalar(p.alpha, y), cast_scalar(p.beta, y)

    def run():
        xp.multiply(x, alpha, out=y)
        xp.add(y, beta, out=y)
        xp.clip(y, 0, 1, out=y)
    return run


@kernel("logical_not", inplace=True)
def logical_not(call):
    return partial(call.xp.equal, call.inputs[0], 0, out=call.outputs[0])


@kernel("_copy", "BlockGrad", inplace=True)
def copy(call):
    return partial(call.xp.copyto, call.outputs[0], call.inputs[0])


@kernel("zeros_like", inplace=True)
def zeros_like(call):
    return partial(call.outputs[0].fill, 0)


@kernel("ones_like", inplace=True)
def ones_like(call):
    return partial(call.outputs[0].fill, 1)


@kernel("clip", inplace=True)
def clip(call):
    """MXNet's rule, x > a_max ? a_max : x < a_min ? a_min : x (numpy's clip where a_min <=
    a_max; with a_min > a_max numpy gives a_max everywhere, MXNet a_min where x <= a_max)."""
    xp, x, y = call.xp, call.inputs[0], call.outputs[0]
    lo, hi = cast_scalar(call.params.a_min, y), cast_scalar(call.params.a_max, y)
    if not lo > hi:
        return partial(xp.clip, x, lo, hi, out=y)

    def crossed():
        low = xp.where(x < lo, lo, x) if x.dtype.kind == "f" else lo  # NaN stays NaN
        xp.copyto(y, xp.where(x > hi, hi, low), casting="unsafe")
    return crossed


@kernel("Cast")
def cast(call):
    return partial(call.xp.copyto, call.outputs[0], call.inputs[0], casting="unsafe")


# -- binary arithmetic (elemwise_*, broadcast_*, _*_scalar share one table) ---------------
_ARITH = {"add": "add", "sub": "subtract", "mul": "multiply", "power": "power",
          "maximum": "maximum", "minimum": "minimum", "hypot": "hypot", "equal": "equal",
          "not_equal": "not_equal", "greater": "greater", "greater_equal": "greater_equal",
          "lesser": "less", "lesser_equal": "less_equal", "logical_and": "logical_and",
          "logical_or": "logical_or", "logical_xor": "logical_xor"}


def _binary_fn(xp, base: str, dtype):
    """``fn(a, b, out)`` computing ``base`` with MXNet's semantics for ``dtype``."""
    if base == "div":
        if dtype.kind == "f":
            return partial(xp.divide)
        return partial(xp.divide, casting="unsafe")  # C integer division truncates
    if base == "mod":
        return partial(_mxnet_mod, xp)
    if base == "power" and dtype.kind in "iu":
        return partial(_integer_power, xp)
    return getattr(xp, _ARITH[base])


def _mxnet_mod(xp, a, b, out):
    """Python-style modulo (sign of the divisor) with x % 0 == 0, as mshadow's mod; a zero
    result of float data signed as MXNet's branches leave it: -0 where b > 0 and a is -0,
    or b < 0 and a < 0, else +0 (numpy's takes the divisor's sign)."""
    with _quiet(xp):
        xp.remainder(a, b, out=out, casting="unsafe")
    xp.copyto(out, 0, where=xp.broadcast_to(b, out.shape) == 0)
    if out.dtype.kind == "f":
        negative = xp.where(b > 0, xp.signbit(a), (b < 0) & (a < 0))
        xp.copyto(out, xp.where(negative, -0.0, 0.0), where=out == 0)


def _integer_power(xp, a, b, out):
    """MXNet's power on integer data: powf on float32 copies truncated into the dtype (7^9
    gives 40353608, 3^-2 gives 0; inf, NaN and values beyond the dtype give its lowest
    value, as a C cast on x86 does); numpy's integer power refuses negative exponents. The
    power of the float32 copies is taken in float64 and rounded to float32, as glibc's
    powf rounds: numpy's own float32 power runs SVML's approximation on AVX-512 CPUs
    (40353604 for 7^9)."""
    with _quiet(xp):
        y = xp.power(xp.asarray(a, dtype=np.float32).astype(np.float64),
                     xp.asarray(b, dtype=np.float32).astype(np.float64))
        y = xp.asarray(y.astype(np.float32))
    cast_like_c(xp, out, y)


class _quiet:
    def __init__(self, xp):
        self.np = xp.__name__ == "numpy"

    def __enter__(self):
        if self.np:
            import numpy
            self.state = numpy.seterr(divide="ignore", invalid="ignore")

    def __exit__(self, *exc):
        if self.np:
            import numpy
            numpy.seterr(**self.state)


def _binary_factory(call):
    base = base_name(call.op_name)
    fn = _binary_fn(call.xp, base, call.outputs[0].dtype)
    return partial(fn, call.inputs[0], call.inputs[1], out=call.outputs[0])


for _name in (*BINARY, *BROADCAST):
    kernel(_name, inplace=base_name(_name) != "mod")(_binary_factory)


_REVERSED = {"_rminus_scalar": "sub", "_rdiv_scalar": "div", "_rmod_scalar": "mod",
             "_rpower_scalar": "power"}


_BOUNDS = {"_maximum_scalar": "maximum", "_minimum_scalar": "minimum"}


def _scalar_factory(call):
    name, x, y = call.op_name, call.inputs[0], call.outputs[0]
    if name in _BOUNDS:
        return bound_by_scalar(call.xp, _BOUNDS[name], x, cast_scalar(call.params.scalar, y), y)
    s = scalar_operand(call.xp, call.params.scalar, y)
    if name in _REVERSED:
        return partial(_binary_fn(call.xp, _REVERSED[name], y.dtype), s, x, out=y)
    return partial(_binary_fn(call.xp, base_name(name), y.dtype), x, s, out=y)


for _name in SCALAR:
    kernel(_name, inplace=base_name(_name) != "mod")(_scalar_factory)


@kernel("where", inplace=True)
def where(call):
    xp = call.xp
    cond, x, y = call.inputs
    out = call.outputs[0]
    if cond.ndim != x.ndim:  # a (n,) condition selects whole rows
        cond = cond.reshape(cond.shape + (1,) * (x.ndim - 1))

    def run():
        xp.copyto(out, xp.where(cond != 0, x, y))
    return run


@kernel("add_n", inplace=True)
def add_n(call):
    xp, ins, out = call.xp, call.inputs, call.outputs[0]
    if len(ins) == 1:
        return partial(xp.copyto, out, ins[0])
    rest = ins[2:]

    def run():
        xp.add(ins[0], ins[1], out=out)
        for a in rest:
            xp.add(out, a, out=out)
    return run
