"""What the fused kernels compute for the backward operators that the gradient of a fused
region contains (``_backward_*`` of every claimed forward op, gradient sums, head-gradient
identities), mirroring backends/default/kernels/elemwise_grad.py and nn_grad.py.

A lowering returns one expression per output. Outputs of the broadcast backward operators
are written over the whole loop domain; the code generator sums them down to the input's
shape (see :mod:`.codegen`).
"""
from __future__ import annotations

import math

from graphexec.core.ops.elemwise import BINARY, BROADCAST, base_name
from graphexec.core.ops.misc import smooth_l1_constants
from graphexec.core.ops.nn import SELU_ALPHA, SELU_LAMBDA

from .ops import FORWARD, Lowering, leaky_supports, select, sign

__all__ = ["BACKWARD"]


def _from(src_fn, cost: str = "cheap") -> Lowering:
    """``_backward_<unary>(ograd, src)``: ograd times the derivative at ``src``."""
    return Lowering(lambda e, p, og, s: f"({og} * {src_fn(e, s)})", cost)


# derivative of each unary op from its source (x, or y for exp/expm1/sqrt/cbrt/tan/tanh/
# sigmoid/relu, as the gradient rule passes it)
_UNARY = {
    "abs": (lambda e, x: sign(e, x), "cheap"),
    "reciprocal": (lambda e, x: f"(-{e.one} / ({x} * {x}))", "cheap"),
    "square": (lambda e, x: f"({e.k(2)} * {x})", "cheap"),
    "sqrt": (lambda e, y: f"({e.k(0.5)} / {y})", "cheap"),
    "rsqrt": (lambda e, x: f"({e.k(-0.5)} / ({x} * np.sqrt({x})))", "cheap"),
    "cbrt": (lambda e, y: f"({e.one} / (({e.k(3)} * {y}) * {y}))", "cheap"),
    "rcbrt": (lambda e, x: f"({e.k(-1)} / (({e.k(3)} * {x}) * np.cbrt({x})))", "libm"),
    "exp": (lambda e, y: y, "cheap"),
    "expm1": (lambda e, y: f"({y} + {e.one})", "cheap"),
    "log": (lambda e, x: f"({e.one} / {x})", "cheap"),
    "log10": (lambda e, x: f"({e.one} / ({x} * {e.k(math.log(10))}))", "cheap"),
    "log2": (lambda e, x: f"({e.one} / ({x} * {e.k(math.log(2))}))", "cheap"),
    "log1p": (lambda e, x: f"({e.one} / ({e.one} + {x}))", "cheap"),
    "sin": (lambda e, x: f"np.cos({x})", "libm"),
    "cos": (lambda e, x: f"(-np.sin({x}))", "libm"),
    "tan": (lambda e, y: f"({e.one} + {y} * {y})", "cheap"),
    "arcsin": (lambda e, x: f"({e.one} / np.sqrt({e.one} - {x} * {x}))", "cheap"),
    "arccos": (lambda e, x: f"({e.k(-1)} / np.sqrt({e.one} - {x} * {x}))", "cheap"),
    "arctan": (lambda e, x: f"({e.one} / ({e.one} + {x} * {x}))", "cheap"),
    "sinh": (lambda e, x: f"np.cosh({x})", "libm"),
    "cosh": (lambda e, x: f"np.sinh({x})", "libm"),
    "tanh": (lambda e, y: f"({e.one} - {y} * {y})", "cheap"),
    "arcsinh": (lambda e, x: f"({e.one} / np.sqrt({x} * {x} + {e.one}))", "cheap"),
    "arccosh": (lambda e, x: f"({e.one} / np.sqrt({x} * {x} - {e.one}))", "cheap"),
    "arctanh": (lambda e, x: f"({e.one} / ({e.one} - {x} * {x}))", "cheap"),
    "degrees": (lambda e, x: e.k(180 / math.pi), "cheap"),
    "radians": (lambda e, x: e.k(math.pi / 180), "cheap"),
    # MXNet's relu_grad: NaN stays NaN
    "relu": (lambda e, y: f"sel({y} != {y}, {y}, {select(e, f'{y} > {e.zero}')})", "cheap"),
    "sigmoid": (lambda e, y: f"({y} * ({e.one} - {y}))", "cheap"),
    "softsign": (lambda e, x: _softsign_grad(e, x), "cheap"),
    "erf": (lambda e, x: f"({e.k(2 / math.sqrt(math.pi))} * exp_{e.t}((-{x}) * {x}))", "poly"),
}


def _softsign_grad(e, x: str) -> str:
    d = e.let(f"{e.one} + abs({x})")
    return f"({e.one} / ({d} * {d}))"


def _cast_to(e, x: str) -> str:
    size = e.dtype.itemsize
    return f"round_f16({x})" if size == 2 else f"np.float{8 * size}({x})"


def _clip(e, p, og, x):
    """MXNet's: 0 where x is outside [a_min, a_max], else (NaN too) the gradient."""
    outside = f"(({x} < {e.k(p.a_min)}) | ({x} > {e.k(p.a_max)}))"
    return f"({og} * sel({outside}, {e.zero}, {e.one}))"


def _hard_sigmoid(e, p, og, x):
    y = e.let(f"{e.k(p.alpha)} * {x} + {e.k(p.beta)}")
    return f"({og} * ({select(e, f'(({y} > {e.zero}) & ({y} < {e.one}))')} * {e.k(p.alpha)}))"


# -- scalar ops: (ograd[, x or y]) ----------------------------------------------------------
def _power_scalar(e, p, og, x):
    s = e.dtype.type(p.scalar)
    n = float(s - e.dtype.type(1))
    power = x if n == 1.0 else f"np.power({x}, {e.k(n)})"
    return f"(({og} * {e.k(float(s))}) * {power})"


_SCALAR = {
    "_mul_scalar": (lambda e, p, og: f"({og} * {e.k(p.scalar)})", "cheap"),
    "_div_scalar": (lambda e, p, og: f"({og} / {e.k(p.scalar)})", "cheap"),
    "_rdiv_scalar": (lambda e, p, og, x: f"(((-{og}) * {e.k(p.scalar)}) / ({x} * {x}))",
                     "cheap"),
    "_power_scalar": (_power_scalar, "libm"),
    "_rpower_scalar": (lambda e, p, og, y: f"(({og} * {y}) * "
                                           f"{e.k(math.log(float(e.dtype.type(p.scalar))))})",
                       "cheap"),
    "_rmod_scalar": (lambda e, p, og, x: f"((-{og}) * np.floor({e.k(p.scalar)} / {x}))",
                     "cheap"),
    "_maximum_scalar": (lambda e, p, og, x: f"({og} * {select(e, f'{x} >= {e.k(p.scalar)}')})",
                        "cheap"),
    "_minimum_scalar": (lambda e, p, og, x: f"({og} * {select(e, f'{x} <= {e.k(p.scalar)}')})",
                        "cheap"),
    "_hypot_scalar": (lambda e, p, og, x: f"(({og} * {x}) / np.hypot({x}, {e.k(p.scalar)}))",
                      "libm"),
}


# -- binary ops: (ograd, lhs, rhs[, out]) -> (d lhs, d rhs) ---------------------------------
def _power(e, og, l, r, y):
    positive = e.let(f"sel({l} > {e.zero}, {l}, {e.one})")
    return (f"(({og} * {r}) * np.power({l}, {r} - {e.one}))",
            f"(({og} * {y}) * log_{e.t}({positive}))")


_BINARY = {
    "add": (lambda e, og, l, r, y=None: (og, og), "cheap"),
    "sub": (lambda e, og, l, r, y: (og, f"(-{og})"), "cheap"),
    "mul": (lambda e, og, l, r, y: (f"({og} * {r})", f"({og} * {l})"), "cheap"),
    "div": (lambda e, og, l, r, y: (f"({og} / {r})", f"(((-{og}) * {l}) / ({r} * {r}))"),
            "cheap"),
    "mod": (lambda e, og, l, r, y: (f"({og} + {e.zero} * {r})",
                                    f"((-{og}) * np.floor({l} / {r}))"), "cheap"),
    "power": (_power, "libm"),
    "maximum": (lambda e, og, l, r, y: (f"({og} * {select(e, f'{l} >= {r}')})",
                                        f"({og} * {select(e, f'{l} < {r}')})"), "cheap"),
    "minimum": (lambda e, og, l, r, y: (f"({og} * {select(e, f'{l} <= {r}')})",
                                        f"({og} * {select(e, f'{l} > {r}')})"), "cheap"),
    "hypot": (lambda e, og, l, r, y: (f"(({og} * {l}) / {y})", f"(({og} * {r}) / {y})"),
              "cheap"),
}


# -- nn activations --------------------------------------------------------------------------
def _activation(e, p, og, y, x=None):
    kind = p.act_type
    if kind == "relu":
        return f"({og} * {select(e, f'{y} > {e.zero}')})"
    grad = {"sigmoid": lambda: f"({y} * ({e.one} - {y}))",
            "tanh": lambda: f"({e.one} - {y} * {y})",
            "softrelu": lambda: f"(-expm1_{e.t}(-{y}))",
            "softsign": lambda: _softsign_grad(e, x)}[kind]()
    return f"({og} * {grad})"


def _leaky(e, p, og, x, y):
    kind = p.act_type
    if kind == "gelu":
        cdf = f"({e.k(0.5)} * ({e.one} + erf_{e.t}({x} * {e.k(1 / math.sqrt(2))})))"
        pdf = f"(({x} * exp_{e.t}(({e.k(-0.5)} * {x}) * {x})) * {e.k(1 / math.sqrt(2 * math.pi))})"
        return f"({og} * ({cdf} + {pdf}))"
    if kind == "leaky":
        positive, negative = e.one, e.k(p.slope)
    elif kind == "elu":
        positive, negative = e.one, f"({y} + {e.k(p.slope)})"
    else:
        positive = e.k(SELU_LAMBDA)
        negative = f"(({y} + {e.k(SELU_ALPHA)}) * {e.k(SELU_LAMBDA)})"
    return f"({og} * sel({x} > {e.zero}, {positive}, {negative}))"


def _smooth_l1(e, p, og: str, x: str) -> str:
    """MXNet's: 1 above the bound, -1 below minus it, sigma^2 x between (NaN stays NaN)."""
    s2, bound, _ = smooth_l1_constants(p.scalar)
    return (f"({og} * sel({x} > {e.k(bound)}, {e.one}, sel({x} < {e.k(-bound)}, -{e.one}, "
            f"({e.k(s2)} * {x}))))")


def _build() -> dict[str, Lowering]:
    table: dict[str, Lowering] = {}
    for name, (fn, cost) in _UNARY.items():
        if name in FORWARD:
            table[f"_backward_{name}"] = _from(fn, cost)
    table["_backward_clip"] = Lowering(_clip)
    table["_backward_hard_sigmoid"] = Lowering(_hard_sigmoid)
    table["_backward_Cast"] = Lowering(lambda e, p, og: _cast_to(e, og))
    # fused regions are floating point only: modulo's gradient passes through there
    table["_backward_mod_scalar"] = Lowering(lambda e, p, og: og)
    for name, (fn, cost) in _SCALAR.items():
        table[f"_backward{name}"] = Lowering(fn, cost)
    for name in (*BINARY, *BROADCAST):
        base = base_name(name)
        if base in _BINARY and not (base == "add" and not name.startswith("broadcast_")):
            prefix = "_backward_broadcast_" if name.startswith("broadcast_") else "_backward_"
            fn, cost = _BINARY[base]
            table[f"{prefix}{base}"] = Lowering(lambda e, p, *ins, fn=fn: fn(e, *ins), cost)
    table["_backward_where"] = Lowering(
        lambda e, p, og, c: (e.zero, f"({og} * {select(e, f'{c} != {e.zero}')})",
                             f"({og} * {select(e, f'{c} == {e.zero}')})"))
    table["_backward_Activation"] = Lowering(
        _activation, lambda p: "poly" if p.act_type == "softrelu" else "cheap")
    table["_backward_LeakyReLU"] = Lowering(
        _leaky, lambda p: "poly" if p.act_type == "gelu" else "cheap", leaky_supports)
    table["_grad_add"] = Lowering(lambda e, p, a, b: f"({a} + {b})")
    table["_backward_smooth_l1"] = Lowering(_smooth_l1)
    table["_contrib_backward_quadratic"] = Lowering(
        lambda e, p, og, x: f"({og} * (({e.k(2 * p.a)} * {x}) + {e.k(p.b)}))")
    table["_contrib_backward_gradientmultiplier"] = Lowering(
        lambda e, p, og: f"({og} * {e.k(p.scalar)})")
    table["_identity_with_attr_like_rhs"] = Lowering(lambda e, p, a, b: a)
    return table


#: backward operator name -> lowering (its outputs, in order)
BACKWARD: dict[str, Lowering] = _build()
