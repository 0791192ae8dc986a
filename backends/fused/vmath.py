"""Math for the generated CPU kernels (numba): float32 functions that LLVM vectorises inside
the fused loop, float64 functions that call libm, and float16 load/store conversions.

numba's own float32 ``exp``/``tanh``/``erf`` call scalar libm, which keeps the loop around them
scalar (the issue measured 206 ms for a transcendental chain numpy runs in 177 ms). The
``*_f4`` functions below are branch-free: range reduction with integer bit manipulation and
polynomials, so the whole fused loop vectorises. Accuracy (checked by
tests/test_fused_backend.py against float64 references): at most a few float32 ulps of
relative error in normal range; inf, -inf and nan give what numpy gives (exp(-inf) = 0,
log(0) = -inf, log(-1) = nan, tanh(inf) = 1...). Results below the smallest normal float32
flush to zero where numpy returns a denormal (sigmoid(x < -87)).

Polynomial coefficients: Taylor series where the series converges fast enough (expm1 below
ln2/2, log through atanh), elsewhere least-squares fits refined toward minimax (Lawson) on
Chebyshev nodes in float64, rounded to float32 (exp on [-ln2/2, ln2/2], tanh on [0, 0.625],
erf on [0, 0.9], erfc(x) exp(x^2) in t = 1/(1+x) on [0.9, 4]).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["exp_f4", "expm1_f4", "log_f4", "log1p_f4", "log2_f4", "log10_f4", "tanh_f4",
           "sigmoid_f4", "erf_f4", "softrelu_f4", "exp_f8", "expm1_f8", "log_f8", "log1p_f8",
           "log2_f8", "log10_f8", "tanh_f8", "sigmoid_f8", "erf_f8", "softrelu_f8",
           "h2f", "f2h", "round_f16", "sel"]

F = np.float32
_jit = njit(error_model="numpy")


# -- bit casts (LLVM instructions, so they vectorise) --------------------------------------
@intrinsic
def _as_int(typingctx, x):
    """The bits of a float32 as an int32."""
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(x), codegen


@intrinsic
def _as_float(typingctx, x):
    """An integer's low 32 bits as a float32."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        value = args[0]
        if x.bitwidth > 32:
            value = builder.trunc(value, ir.IntType(32))
        elif x.bitwidth < 32:
            value = builder.sext(value, ir.IntType(32))
        return builder.bitcast(value, ir.FloatType())
    return types.float32(x), codegen


@intrinsic
def _pow2(typingctx, t):
    """2**k for t = k + 1.5 * 2**23 (k an integer in [-126, 127] held in t's low mantissa
    bits): shifting t's bits by 23 drops everything but k, then the exponent bias is added
    (in 32-bit integers: numba would widen the arithmetic to 64 bits)."""
    if t != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        bits = builder.shl(builder.bitcast(args[0], i32), ir.Constant(i32, 23))
        return builder.bitcast(builder.add(bits, ir.Constant(i32, 127 << 23)), ir.FloatType())
    return types.float32(t), codegen


@intrinsic
def _split(typingctx, x):
    """(mantissa in [1, 2), unbiased exponent as a float32) of a positive normal float32."""
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32, f32 = ir.IntType(32), ir.FloatType()
        bits = builder.bitcast(args[0], i32)
        mant = builder.or_(builder.and_(bits, ir.Constant(i32, 0x7FFFFF)),
                           ir.Constant(i32, 0x3F800000))
        expo = builder.sub(builder.and_(builder.lshr(bits, ir.Constant(i32, 23)),
                                        ir.Constant(i32, 0xFF)), ir.Constant(i32, 127))
        return context.make_tuple(builder, sig.return_type,
                                  [builder.bitcast(mant, f32), builder.sitofp(expo, f32)])
    return types.UniTuple(types.float32, 2)(x), codegen


@intrinsic
def sel(typingctx, cond, a, b):
    """``a`` where ``cond`` else ``b``: one LLVM select (both sides already computed), where a
    Python conditional expression would add branches to numba's IR."""
    if not isinstance(cond, types.Boolean):
        return None
    common = a if a == b else typingctx.unify_pairs(a, b)
    if common is None:
        return None

    def codegen(context, builder, sig, args):
        c, x, y = args
        x = context.cast(builder, x, sig.args[1], common)
        y = context.cast(builder, y, sig.args[2], common)
        return builder.select(c, x, y)
    return common(cond, a, b), codegen


@intrinsic
def h2f(typingctx, x):
    """float16 bits (uint16) to float32 (exact; F16C's vcvtph2ps where available)."""
    if not isinstance(x, types.Integer) or x.bitwidth != 16:
        return None

    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(x), codegen


@intrinsic
def f2h(typingctx, x):
    """float32 to float16 bits (uint16), rounding to nearest even as numpy's astype."""
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(x), codegen


@_jit
def _to_f32_odd(x):
    """float64 (or float32) to float32 rounding to odd: a float16 rounding of the result is
    then the correctly rounded float16 of ``x`` (LLVM's direct float64 -> half conversion
    needs a runtime helper that numba's JIT does not link)."""
    y = np.float32(x)
    wide = np.float64(y)
    exact = wide == x
    bits = _as_int(y)
    bits = sel((~exact) & (abs(wide) > abs(x)), bits - 1, bits)
    return sel(exact, y, _as_float(bits | 1))


@_jit
def round_f16(x):
    """``x`` rounded to float16 (once, as numpy's astype), as a float32."""
    return h2f(f2h(_to_f32_odd(x)))


# -- float32 ------------------------------------------------------------------------------
_LOG2E, _LN2_HI, _LN2_LO = F(1.4426950408889634), F(0.693145751953125), F(1.4286068203094173e-06)
# e**r on [-ln2/2, ln2/2], degree 6, relative error 1.9e-9
_EXP_P = (F(1.0000000005585956), F(1.0000000365391153), F(0.4999999203230584),
          F(0.16666419190352716), F(0.04166823180431905), F(0.008374898362660584),
          F(0.0013836741869068059))
_ONE, _HALF, _ZERO, _TWO = F(1.0), F(0.5), F(0.0), F(2.0)
_EXP_HI, _EXP_LO = F(89.0), F(-104.0)
# adding 1.5 * 2**23 rounds to an integer, which the float's low mantissa bits then hold
_MAGIC = F(12582912.0)


@_jit
def exp_f4(x):
    """e**x: x = n ln2 + r, |r| <= ln2/2; 2**n applied in two halves so that results in
    the denormal range and overflow to inf come out as numpy's."""
    x = sel(x > _EXP_HI, _EXP_HI, x)
    x = sel(x < _EXP_LO, _EXP_LO, x)
    n = (x * _LOG2E + _MAGIC) - _MAGIC
    h = n * _HALF + _MAGIC  # n = h + g, each half a normal power of two
    g = (n - (h - _MAGIC)) + _MAGIC
    r = x - n * _LN2_HI
    r = r - n * _LN2_LO
    c = _EXP_P
    p = ((((((c[6] * r + c[5]) * r + c[4]) * r + c[3]) * r + c[2]) * r + c[1]) * r + c[0])
    return p * _pow2(h) * _pow2(g)  # a nan x gives some scale: the result is nan all the same


_EXPM1_SMALL = F(0.34657359)
_EXPM1_C = tuple(F(1.0 / math.factorial(k)) for k in range(8))


@_jit
def expm1_f4(x):
    """e**x - 1, by its Taylor series where |x| < ln2/2 (no cancellation), else exp - 1."""
    c = _EXPM1_C
    p = c[7] * x + c[6]
    p = p * x + c[5]
    p = p * x + c[4]
    p = p * x + c[3]
    p = p * x + c[2]
    p = p * x + c[1]
    small = p * x
    large = exp_f4(x) - _ONE
    return sel(abs(x) < _EXPM1_SMALL, small, large)


_SQRT2 = F(1.4142135623730951)
_LN2 = F(0.6931471805599453)
_LOG_C = (F(2.0 / 3), F(2.0 / 5), F(2.0 / 7), F(2.0 / 9))
_MIN_NORMAL, _TWO23, _TWENTY_THREE = F(1.1754943508222875e-38), F(8388608.0), F(23.0)
_INF, _NAN = F(np.inf), F(np.nan)


@_jit
def log_f4(x):
    """ln x: x = m 2**e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m-1)/(m+1)."""
    tiny = x < _MIN_NORMAL
    y = sel(tiny, x * _TWO23, x)
    m, e = _split(y)
    big = m > _SQRT2
    m = sel(big, m * _HALF, m)
    e = sel(big, e + _ONE, e)
    e = sel(tiny, e - _TWENTY_THREE, e)
    s = (m - _ONE) / (m + _ONE)
    z = s * s
    c = _LOG_C
    p = ((c[3] * z + c[2]) * z + c[1]) * z + c[0]
    r = (s + s) + s * z * p + e * _LN2
    r = sel(x == _ZERO, -_INF, r)
    r = sel(x == _INF, _INF, r)
    r = sel(x < _ZERO, _NAN, r)
    return sel(x == x, r, x)


@_jit
def log1p_f4(x):
    """ln(1 + x) with the correction u = 1 + x, ln(u) * x / (u - 1) (exact where u == 1)."""
    u = x + _ONE
    d = u - _ONE
    r = log_f4(u) * (x / d)
    r = sel(d == _ZERO, x, r)
    return sel(x == _INF, x, r)


_LOG2_E, _LOG10_E = F(1.4426950408889634), F(0.4342944819032518)


@_jit
def log2_f4(x):
    return log_f4(x) * _LOG2_E


@_jit
def log10_f4(x):
    return log_f4(x) * _LOG10_E


_TANH_C = (F(-0.3333332982727989), F(0.13332814662261647), F(-0.053855944433038955),
           F(0.021016527851242705), F(-0.006120565211621355))
_TANH_SMALL = F(0.625)


@_jit
def tanh_f4(x):
    """An odd polynomial below |x| = 0.625, 1 - 2 / (e**2|x| + 1) above (sign restored)."""
    z = x * x
    c = _TANH_C
    p = (((c[4] * z + c[3]) * z + c[2]) * z + c[1]) * z + c[0]
    small = x + x * z * p
    a = abs(x)
    large = _ONE - _TWO / (exp_f4(a + a) + _ONE)
    large = sel(x < _ZERO, -large, large)
    return sel(a < _TANH_SMALL, small, large)


@_jit
def sigmoid_f4(x):
    return _ONE / (_ONE + exp_f4(-x))


_ERF_C = (F(1.1283791553327174), F(-0.37612532479512906), F(0.1128223020358641),
          F(-0.026781963839775106), F(0.0050162370183619446), F(-0.0006111331180226575))
_ERFC_C = (F(1.4808401305448988e-05), F(0.5635824225361209), F(0.5745460712838192),
           F(0.18389383969745784), F(0.29085045532241527), F(-2.8144861319225156),
           F(4.529796023708832), F(-3.2736999109444413), F(0.9540005470245874))
_ERF_SMALL, _ERF_ONE = F(0.9), F(4.0)


@_jit
def erf_f4(x):
    """x P(x^2) below |x| = 0.9; 1 - e**(-x^2) R(1/(1+|x|)) up to 4; 1 beyond."""
    z = x * x
    c = _ERF_C
    small = x * (((((c[5] * z + c[4]) * z + c[3]) * z + c[2]) * z + c[1]) * z + c[0])
    a = abs(x)
    t = _ONE / (_ONE + a)
    d = _ERFC_C
    r = (((((((d[8] * t + d[7]) * t + d[6]) * t + d[5]) * t + d[4]) * t + d[3]) * t + d[2])
         * t + d[1]) * t + d[0]
    large = _ONE - exp_f4(-z) * r
    large = sel(a > _ERF_ONE, _ONE, large)
    large = sel(x < _ZERO, -large, large)
    return sel(a < _ERF_SMALL, small, large)


@njit(inline="always", error_model="numpy")  # two calls deep: LLVM alone does not inline
def softrelu_f4(x):
    """ln(1 + e**x) = max(x, 0) + ln(1 + e**-|x|), as numpy's logaddexp(x, 0)."""
    m = sel(x < _ZERO, _ZERO, x)
    return m + log1p_f4(exp_f4(-abs(x)))


# -- float64: libm ------------------------------------------------------------------------
@_jit
def exp_f8(x):
    return math.exp(x)


@_jit
def expm1_f8(x):
    return math.expm1(x)


@_jit
def log_f8(x):
    return np.log(x)


@_jit
def log1p_f8(x):
    return np.log1p(x)


@_jit
def log2_f8(x):
    return np.log2(x)


@_jit
def log10_f8(x):
    return np.log10(x)


@_jit
def tanh_f8(x):
    return math.tanh(x)


@_jit
def sigmoid_f8(x):
    return 1.0 / (1.0 + math.exp(-x))


@_jit
def erf_f8(x):
    return math.erf(x)


@_jit
def softrelu_f8(x):
    m = sel(x < 0.0, 0.0, x)
    return m + math.log1p(math.exp(-abs(x)))
