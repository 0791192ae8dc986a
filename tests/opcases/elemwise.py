"""Cases for the elementwise family."""
from __future__ import annotations

import math

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
S = (3, 4)
POS = dict(low=0.2, high=3.0)
UNIT = dict(low=-0.9, high=0.9)


def _f64(fn):
    return lambda *xs, **kw: fn(*[np.asarray(x, np.float64) for x in xs], **kw)


_unary = {
    "abs": (np.abs, {}), "sign": (np.sign, {}), "negative": (np.negative, {}),
    "reciprocal": (lambda x: 1 / x, POS), "square": (np.square, {}), "sqrt": (np.sqrt, POS),
    "rsqrt": (lambda x: 1 / np.sqrt(x), POS), "cbrt": (np.cbrt, {}),
    "rcbrt": (lambda x: 1 / np.cbrt(x), POS), "exp": (np.exp, {}), "expm1": (np.expm1, {}),
    "log": (np.log, POS), "log10": (np.log10, POS), "log2": (np.log2, POS),
    "log1p": (np.log1p, POS), "sin": (np.sin, {}), "cos": (np.cos, {}), "tan": (np.tan, UNIT),
    "arcsin": (np.arcsin, UNIT), "arccos": (np.arccos, UNIT), "arctan": (np.arctan, {}),
    "sinh": (np.sinh, {}), "cosh": (np.cosh, {}), "tanh": (np.tanh, {}),
    "arcsinh": (np.arcsinh, {}), "arccosh": (np.arccosh, dict(low=1.1, high=3.0)),
    "arctanh": (np.arctanh, UNIT), "degrees": (np.degrees, {}), "radians": (np.radians, {}),
    "floor": (np.floor, {}), "ceil": (np.ceil, {}), "rint": (np.rint, {}),
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), {}), "fix": (np.fix, {}),
    "trunc": (np.trunc, {}), "relu": (lambda x: np.maximum(x, 0), {}),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), {}), "softsign": (lambda x: x / (1 + np.abs(x)), {}),
    "erf": (np.vectorize(math.erf), {}), "erfinv": (None, UNIT),
    "gamma": (np.vectorize(math.gamma), POS), "gammaln": (np.vectorize(math.lgamma), POS),
    "logical_not": (lambda x: (x == 0).astype(x.dtype), dict(low=-1, high=2)),
    "_copy": (lambda x: x, {}), "BlockGrad": (lambda x: x, {}),
    "zeros_like": (np.zeros_like, {}), "ones_like": (np.ones_like, {}),
}


def _erfinv(y):
    # invert math.erf by Newton steps (an independent twin of scipy.special.erfinv)
    x = np.zeros_like(y)
    for _ in range(60):
        x = x - (np.vectorize(math.erf)(x) - y) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    return x


for name, (fn, rng_kw) in _unary.items():
    twin = _erfinv if name == "erfinv" else fn
    # BlockGrad's gradient is zero by definition (checked in test_gradient_rules.py)
    extra = {"grad_inputs": ()} if name == "BlockGrad" else {}
    CASES.append(OpCase(name, [S], _f64(twin), **rng_kw, **extra))

CASES += [
    OpCase("clip", [S], _f64(lambda x, a_min, a_max: np.clip(x, a_min, a_max)),
           attrs={"a_min": -0.5, "a_max": 0.7}),
    OpCase("hard_sigmoid", [S], _f64(lambda x, alpha=0.2, beta=0.5: np.clip(alpha * x + beta, 0, 1))),
    OpCase("Cast", [S], lambda x, dtype: x.astype(dtype), attrs={"dtype": "float64"}),
]
for op, int_ok in (("abs", True), ("negative", True), ("square", True), ("sign", True)):
    CASES.append(OpCase(op, [S], lambda x, _f=_unary[op][0]: _f(x), dtypes=("int32",),
                        id="int", gen=lambda r, s, d, i: r.integers(-5, 5, size=s).astype(d)))

_bin = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "hypot": np.hypot,
    "mod": np.mod,
}
_cmp = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
        "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal,
        "logical_and": np.logical_and, "logical_or": np.logical_or,
        "logical_xor": np.logical_xor}
_elem_name = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
              "div": "elemwise_div"}


def _cmp_twin(fn):
    return lambda a, b, **kw: fn(a, b).astype(np.asarray(a).dtype)


def _ints(r, s, d, i):
    return r.integers(-3, 4, size=s).astype(d)


for base, fn in {**_bin, **{k: None for k in _cmp}}.items():
    twin = _f64(fn) if fn is not None else _cmp_twin(_cmp[base])
    kw = dict(low=0.5, high=2.0) if base in ("power", "mod", "div") else {}
    if base in _cmp:  # integer ties: finite differences are meaningless (zero gradient rule)
        kw = dict(gen=_ints, grad_inputs=())
    CASES.append(OpCase(_elem_name.get(base, f"_{base}"), [S, S], twin, **kw))
    CASES.append(OpCase(f"broadcast_{base}", [(2, 3, 4), (2, 1, 4)], twin, **kw))
    CASES.append(OpCase(f"broadcast_{base}", [(3, 1), (1, 4)], twin, id="outer", **kw))
    sc = 1.5 if base not in _cmp else 1.0
    scalar_op = {"add": "_plus_scalar", "sub": "_minus_scalar"}.get(base, f"_{base}_scalar")
    CASES.append(OpCase(scalar_op, [S],
                        (lambda x, scalar, _t=twin: _t(x, np.full_like(x, scalar))), **kw,
                        attrs={"scalar": sc}))
for name, base in (("_rminus_scalar", np.subtract), ("_rdiv_scalar", np.divide),
                   ("_rpower_scalar", np.power), ("_rmod_scalar", np.mod)):
    CASES.append(OpCase(name, [S], _f64(lambda x, scalar, _b=base: _b(scalar, x)),
                        attrs={"scalar": 2.5}, low=0.5, high=2.0))
for op in ("elemwise_add", "elemwise_mul", "elemwise_sub", "_maximum", "broadcast_add"):
    CASES.append(OpCase(op, [S, S], _f64({"elemwise_add": np.add, "elemwise_mul": np.multiply,
                                          "elemwise_sub": np.subtract, "_maximum": np.maximum,
                                          "broadcast_add": np.add}[op]),
                        dtypes=("int32",), gen=_ints, id="int"))
CASES += [
    OpCase("where", [S, S, S], lambda c, x, y: np.where(c != 0, x, y),
           gen=lambda r, s, d, i: (r.integers(0, 2, size=s).astype(d) if i == 0 else None)),
    OpCase("where", [(3,), S, S], lambda c, x, y: np.where((c != 0)[:, None], x, y), id="rows",
           gen=lambda r, s, d, i: (r.integers(0, 2, size=s).astype(d) if i == 0 else None)),
    OpCase("add_n", [S, S, S], _f64(lambda a, b, c: a + b + c)),
]
CASES += [
    OpCase("_grad_add", [S, S], _f64(np.add)),
    OpCase("_identity_with_attr_like_rhs", [S, S], lambda a, b: a, grad_inputs=(0,)),
]
CASES.append(OpCase("_CrossDeviceCopy", [S], lambda x: x))
