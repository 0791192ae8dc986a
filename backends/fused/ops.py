"""What the fused kernels compute for each forward operator: one lowering per op, turning the
names of its input values into a scalar expression (numba source) with MXNet's semantics
(the native kernels in backends/default/kernels are the reference).

A lowering is ``fn(e, p, *args) -> str`` with ``e`` the :class:`~.codegen.Emit` of the node
(``e.t``: compute type suffix ``f4``/``f8``; ``e.k(v)``: a constant cast to the node's dtype
first, as MXNet casts scalar operands; ``e.one``, ``e.zero``; ``e.let(expr)``: a variable
holding ``expr``, for expressions used more than once) and ``p`` the node's params.
Each :class:`Lowering` also has a cost class for the selector's cost model: ``cheap``
(vectorised arithmetic), ``poly`` (the vectorised polynomials of :mod:`.vmath` in float32,
libm in float64) or ``libm`` (a scalar libm call in every dtype).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from graphexec.core.ops.elemwise import BINARY, BROADCAST, SCALAR, base_name
from graphexec.core.ops.misc import smooth_l1_constants
from graphexec.core.ops.nn import SELU_ALPHA, SELU_LAMBDA

__all__ = ["Lowering", "FORWARD", "select", "nan_max", "nan_min", "mod", "sign", "leaky_supports"]


@dataclass(frozen=True)
class Lowering:
    """``fn`` builds the expression; ``cost`` is a cost class or a function of the params
    giving one; ``supports(params)`` returns why the attributes are not covered, or None."""

    fn: Callable[..., str]
    cost: str | Callable[[object], str] = "cheap"
    supports: Callable[[object], str | None] = lambda p: None

    def cost_of(self, params) -> str:
        return self.cost(params) if callable(self.cost) else self.cost


def select(e, cond: str) -> str:
    """1 where ``cond`` holds, else 0, in the node's type (MXNet's comparison results)."""
    return f"sel({cond}, {e.one}, {e.zero})"


def nan_max(a: str, b: str) -> str:
    """numpy.maximum: a nan in either operand propagates."""
    return f"sel(({b} > {a}) | ({b} != {b}), {b}, {a})"


def nan_min(a: str, b: str) -> str:
    return f"sel(({b} < {a}) | ({b} != {b}), {b}, {a})"


def mod(e, a: str, b: str) -> str:
    """Python-style modulo (the divisor's sign) and x % 0 == 0, as MXNet's mod."""
    return f"sel({b} == {e.zero}, {e.zero}, np.remainder({a}, {b}))"


def sign(e, x: str) -> str:
    """MXNet's sign: 1, -1, else 0 (NaN and -0 included)."""
    return f"sel({x} > {e.zero}, {e.one}, sel({x} < {e.zero}, -{e.one}, {e.zero}))"


def round_half_away(e, x: str) -> str:
    """trunc(x), one further from zero where |x - trunc(x)| >= 1/2 (exact, where
    floor(|x| + 1/2) rounds 0.49999997 up in float32)."""
    whole = e.let(f"np.trunc({x})")
    return (f"({whole} + np.copysign(sel(abs({x} - {whole}) >= {e.k(0.5)}, {e.one}, "
            f"{e.zero}), {x}))")


def rint(e, x: str) -> str:
    """MXNet's rint: floor(x), or ceil(x) where nearer (ties down), a zero with x's sign."""
    low = e.let(f"np.floor({x})")
    return f"np.copysign({low} + sel({x} - {low} > {e.k(0.5)}, {e.one}, {e.zero}), {x})"


def _call(name: str) -> Callable[..., str]:
    return lambda e, p, x: f"{name}_{e.t}({x})"


def _np(name: str) -> Callable[..., str]:
    return lambda e, p, x: f"np.{name}({x})"


# -- unary ---------------------------------------------------------------------------------
UNARY = {
    "abs": Lowering(lambda e, p, x: f"abs({x})"),
    "sign": Lowering(lambda e, p, x: sign(e, x)),
    "negative": Lowering(lambda e, p, x: f"(-{x})"),
    "reciprocal": Lowering(lambda e, p, x: f"({e.one} / {x})"),
    "square": Lowering(lambda e, p, x: f"({x} * {x})"),
    "sqrt": Lowering(_np("sqrt")),
    "rsqrt": Lowering(lambda e, p, x: f"({e.one} / np.sqrt({x}))"),
    "cbrt": Lowering(_np("cbrt"), "libm"),
    "rcbrt": Lowering(lambda e, p, x: f"({e.one} / np.cbrt({x}))", "libm"),
    "degrees": Lowering(lambda e, p, x: f"({x} * {e.k(180 / math.pi)})"),
    "radians": Lowering(lambda e, p, x: f"({x} * {e.k(math.pi / 180)})"),
    "floor": Lowering(_np("floor")),
    "ceil": Lowering(_np("ceil")),
    "rint": Lowering(lambda e, p, x: rint(e, x)),
    "trunc": Lowering(_np("trunc")),
    "fix": Lowering(_np("trunc")),
    # MXNet rounds halves away from zero (the native kernel's exact form)
    "round": Lowering(lambda e, p, x: round_half_away(e, x)),
    "relu": Lowering(lambda e, p, x: f"sel({x} < {e.zero}, {e.zero}, {x})"),
    "softsign": Lowering(lambda e, p, x: f"({x} / (abs({x}) + {e.one}))"),
    "logical_not": Lowering(lambda e, p, x: select(e, f"{x} == {e.zero}")),
    "_copy": Lowering(lambda e, p, x: x),
    "BlockGrad": Lowering(lambda e, p, x: x),
    "zeros_like": Lowering(lambda e, p, x: e.zero),
    "ones_like": Lowering(lambda e, p, x: e.one),
    # MXNet's order of the tests (it decides when a_min > a_max)
    "clip": Lowering(lambda e, p, x: f"sel({x} > {e.k(p.a_max)}, {e.k(p.a_max)}, "
                                     f"sel({x} < {e.k(p.a_min)}, {e.k(p.a_min)}, {x}))"),
    "hard_sigmoid": Lowering(lambda e, p, x: _unit_clip(
        e, e.let(f"{x} * {e.k(p.alpha)} + {e.k(p.beta)}"))),
}
for _name in ("exp", "expm1", "log", "log10", "log2", "log1p", "tanh", "sigmoid", "erf"):
    UNARY[_name] = Lowering(_call(_name), "poly")
for _name in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
              "arccosh", "arctanh"):
    UNARY[_name] = Lowering(_np(_name), "libm")


def _unit_clip(e, y: str) -> str:
    return f"sel({y} < {e.zero}, {e.zero}, sel({y} > {e.one}, {e.one}, {y}))"


# -- binary, scalar, broadcast ---------------------------------------------------------------
_ARITH = {
    "add": (lambda e, a, b: f"({a} + {b})", "cheap"),
    "sub": (lambda e, a, b: f"({a} - {b})", "cheap"),
    "mul": (lambda e, a, b: f"({a} * {b})", "cheap"),
    "div": (lambda e, a, b: f"({a} / {b})", "cheap"),
    "mod": (mod, "libm"),
    "power": (lambda e, a, b: f"np.power({a}, {b})", "libm"),
    "maximum": (lambda e, a, b: nan_max(a, b), "cheap"),
    "minimum": (lambda e, a, b: nan_min(a, b), "cheap"),
    "hypot": (lambda e, a, b: f"np.hypot({a}, {b})", "libm"),
    "equal": (lambda e, a, b: select(e, f"{a} == {b}"), "cheap"),
    "not_equal": (lambda e, a, b: select(e, f"{a} != {b}"), "cheap"),
    "greater": (lambda e, a, b: select(e, f"{a} > {b}"), "cheap"),
    "greater_equal": (lambda e, a, b: select(e, f"{a} >= {b}"), "cheap"),
    "lesser": (lambda e, a, b: select(e, f"{a} < {b}"), "cheap"),
    "lesser_equal": (lambda e, a, b: select(e, f"{a} <= {b}"), "cheap"),
    "logical_and": (lambda e, a, b: select(e, f"(({a} != {e.zero}) & ({b} != {e.zero}))"),
                    "cheap"),
    "logical_or": (lambda e, a, b: select(e, f"(({a} != {e.zero}) | ({b} != {e.zero}))"),
                   "cheap"),
    "logical_xor": (lambda e, a, b: select(e, f"(({a} != {e.zero}) != ({b} != {e.zero}))"),
                    "cheap"),
}
_REVERSED = {"_rminus_scalar": "sub", "_rdiv_scalar": "div", "_rmod_scalar": "mod",
             "_rpower_scalar": "power"}


def _binary(base: str) -> Lowering:
    fn, cost = _ARITH[base]
    return Lowering(lambda e, p, a, b: fn(e, a, b), cost)


def _scalar(name: str) -> Lowering:
    if name in _REVERSED:
        fn, cost = _ARITH[_REVERSED[name]]
        return Lowering(lambda e, p, x: fn(e, e.k(p.scalar), x), cost)
    fn, cost = _ARITH[base_name(name)]
    if name == "_power_scalar":
        return Lowering(_power_scalar, cost)
    return Lowering(lambda e, p, x: fn(e, x, e.k(p.scalar)), cost)


def _power_scalar(e, p, x: str) -> str:
    # pow(x, 2) is x * x exactly (correct rounding): no libm call for the common square
    return f"({x} * {x})" if p.scalar == 2.0 else f"np.power({x}, {e.k(p.scalar)})"


# -- activations -----------------------------------------------------------------------------
_ACTIVATION = {
    "relu": UNARY["relu"].fn,
    "sigmoid": _call("sigmoid"),
    "tanh": _call("tanh"),
    "softrelu": _call("softrelu"),
    "softsign": UNARY["softsign"].fn,
}


def _leaky(e, p, x: str) -> str:
    kind = p.act_type
    if kind == "gelu":
        return f"(((erf_{e.t}({x} * {e.k(1 / math.sqrt(2))}) + {e.one}) * {x}) * {e.k(0.5)})"
    if kind == "leaky":
        negative = f"({x} * {e.k(p.slope)})"
    elif kind == "elu":
        negative = f"(expm1_{e.t}({x}) * {e.k(p.slope)})"
    else:
        negative = f"(expm1_{e.t}({x}) * {e.k(SELU_ALPHA)})"
    y = f"sel({x} > {e.zero}, {x}, {negative})"
    return f"({y} * {e.k(SELU_LAMBDA)})" if kind == "selu" else y


def leaky_supports(p) -> str | None:
    """Why LeakyReLU (and its backward) with params ``p`` is not fused, or None."""
    if p.act_type in ("prelu", "rrelu"):
        return f"LeakyReLU act_type={p.act_type} is not pointwise-fused (a learned or random slope)"
    return None


def _cast(e, p, x: str) -> str:
    """Convert to the target's compute type; float16 rounds through its bits."""
    size = p.dtype.itemsize
    return f"round_f16({x})" if size == 2 else f"np.float{8 * size}({x})"


def _cast_supports(p) -> str | None:
    if p.dtype.kind != "f":
        return f"Cast to {p.dtype} (fused kernels compute floating-point data only)"
    return None


def _build() -> dict[str, Lowering]:
    table = dict(UNARY)
    for name in BINARY:
        table[name] = _binary(base_name(name))
    for name in BROADCAST:
        table[name] = _binary(base_name(name))
    for name in SCALAR:
        table[name] = _scalar(name)
    table["where"] = Lowering(lambda e, p, c, x, y: f"sel({c} != {e.zero}, {x}, {y})")
    table["add_n"] = Lowering(lambda e, p, *xs: "(" + " + ".join(xs) + ")")
    table["Activation"] = Lowering(
        lambda e, p, x: _ACTIVATION[p.act_type](e, p, x),
        lambda p: "cheap" if p.act_type in ("relu", "softsign") else "poly")
    table["LeakyReLU"] = Lowering(_leaky, lambda p: "cheap" if p.act_type == "leaky" else "poly",
                                  leaky_supports)
    table["Cast"] = Lowering(_cast, "cheap", _cast_supports)
    # x / sqrt(last dim) as the native kernel computes it: times the dtype's 1 / sqrt(d)
    table["_contrib_div_sqrt_dim"] = Lowering(
        lambda e, p, x: f"({x} * {e.k(1 / math.sqrt(e.in_shapes[0][-1]))})")
    table.update(_MISC)
    return table


def _smooth_l1(e, p, x: str) -> str:
    """0.5 (sigma x)^2 where |x| < 1 / sigma^2, else |x| - 0.5 / sigma^2 (the native order)."""
    s2, bound, shift = smooth_l1_constants(p.scalar)
    a = e.let(f"abs({x})")
    return (f"sel({a} < {e.k(bound)}, (({e.k(0.5 * s2)} * {x}) * {x}), "
            f"({a} - {e.k(shift)}))")


#: core/ops/misc.py and contrib.py's pointwise operators
_MISC = {
    "smooth_l1": Lowering(_smooth_l1),
    "_contrib_quadratic": Lowering(
        lambda e, p, x: f"((({e.k(p.a)} * {x}) + {e.k(p.b)}) * {x} + {e.k(p.c)})"),
    "_contrib_gradientmultiplier": Lowering(lambda e, p, x: x),
    "_contrib_round_ste": UNARY["round"],
    "_contrib_sign_ste": UNARY["sign"],
}


#: forward operator name -> lowering
FORWARD: dict[str, Lowering] = _build()
