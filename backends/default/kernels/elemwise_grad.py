"""Kernels of the elementwise backward operators (``_backward_*``): output k is the gradient
of the forward node's input k, reduced over broadcast axes to that input's shape."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from graphexec.core.ops.elemwise import BINARY, BROADCAST, SCALAR, base_name
from graphexec.core.ops.elemwise_grad import SCALAR_OGRAD_ONLY, ZERO_GRAD

from .base import cast_scalar, kernel, special
from .elemwise import mxnet_sign
from .reduce_loops import SUM
from .reducers import reduction_into


def _writer(xp, full: tuple, dtype, out):
    """``f(value)``: ``value`` (of shape ``full``) summed over the axes that broadcasting
    expanded, straight into ``out``, as MXNet's gradients of broadcasting sum
    (:func:`~.reducers.reduction_into`; numpy's sum where its loops do not apply)."""
    if tuple(full) == out.shape:
        return lambda value: xp.copyto(out, value, casting="unsafe")
    lead = len(full) - out.ndim
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(out.shape)
                                      if s == 1 and full[i + lead] != 1)
    write = reduction_into(xp, tuple(full), dtype, axes, out, SUM)
    if write is not None:
        return write
    return lambda value: xp.copyto(out, value.sum(axis=axes).reshape(out.shape),
                                   casting="unsafe")


def _over(x, single: float, double: float):
    """MXNet's log10/log2 derivative: a constant over x, the float literal for float32 and
    float16 data (in float32, rounded once into the data's type), the double one for
    float64."""
    if x.dtype == np.float64:
        return double / x
    return (np.float32(single) / x.astype(np.float32, copy=False)).astype(x.dtype, copy=False)


# derivative of each unary op from its source (x, or y for ops in UNARY_FROM_OUTPUT), as
# MXNet writes it (cbrt_grad 1 / (3 y^2), degrees_grad 180.0f / PI in float32, ...)
_DERIV = {
    "abs": mxnet_sign,
    "reciprocal": lambda xp, x: -1 / (x * x),
    "square": lambda xp, x: 2 * x,
    "sqrt": lambda xp, y: 0.5 / y,
    "rsqrt": lambda xp, x: -0.5 / (x * xp.sqrt(x)),
    "cbrt": lambda xp, y: 1 / (3 * (y * y)),
    "rcbrt": lambda xp, x: -1 / (3 * xp.cbrt(x) * x),
    "exp": lambda xp, y: y,
    "expm1": lambda xp, y: y + 1,
    "log": lambda xp, x: 1 / x,
    "log10": lambda xp, x: _over(x, 0.4342944819, 0.43429448190325182765),
    "log2": lambda xp, x: _over(x, 1.442695041, 1.44269504088896340737),
    "log1p": lambda xp, x: 1 / (1 + x),
    "sin": lambda xp, x: xp.cos(x),
    "cos": lambda xp, x: -xp.sin(x),
    "tan": lambda xp, y: 1 + y * y,
    "arcsin": lambda xp, x: 1 / xp.sqrt(1 - x * x),
    "arccos": lambda xp, x: -1 / xp.sqrt(1 - x * x),
    "arctan": lambda xp, x: 1 / (1 + x * x),
    "sinh": lambda xp, x: xp.cosh(x),
    "cosh": lambda xp, x: xp.sinh(x),
    "tanh": lambda xp, y: 1 - y * y,
    "arcsinh": lambda xp, x: 1 / xp.hypot(x, 1),
    "arccosh": lambda xp, x: 1 / xp.sqrt(x * x - 1),
    "arctanh": lambda xp, x: 1 / (1 - x * x),
    "degrees": lambda xp, x: xp.full_like(x, np.float32(180) / np.float32(math.pi)),
    "radians": lambda xp, x: xp.full_like(x, np.float32(math.pi) / np.float32(180)),
    # MXNet's relu_grad: NaN stays NaN (Activation's relu backward, nn_grad, gives 0 as
    # MXNet's default oneDNN kernel does)
    "relu": lambda xp, y: xp.where(y != y, y, y > 0).astype(y.dtype),
    "sigmoid": lambda xp, y: y * (1 - y),
    "softsign": lambda xp, x: 1 / ((1 + xp.abs(x)) ** 2),
    "erf": lambda xp, x: 2 / math.sqrt(math.pi) * xp.exp(-x * x),
    "erfinv": lambda xp, y: math.sqrt(math.pi) / 2 * xp.exp(y * y),
    "gamma": lambda xp, x: special(xp).gamma(x) * special(xp).digamma(x),
    "gammaln": lambda xp, x: special(xp).digamma(x),
}


def _unary_backward(deriv):
    def factory(call):
        xp, (og, src), out = call.xp, call.inputs, call.outputs[0]

        def run():
            xp.multiply(og, deriv(xp, src), out=out, casting="unsafe")
        return run
    return factory


for _name, _fn in _DERIV.items():
    kernel(f"_backward_{_name}")(_unary_backward(_fn))


@kernel("_backward_clip")
def clip_backward(call):
    xp, (og, x), out, p = call.xp, call.inputs, call.outputs[0], call.params

    def run():  # MXNet's: 0 where x is outside [a_min, a_max], else (NaN too) the gradient
        xp.multiply(og, ~((x < p.a_min) | (x > p.a_max)), out=out, casting="unsafe")
    return run


@kernel("_backward_hard_sigmoid")
def hard_sigmoid_backward(call):
    xp, (og, x), out, p = call.xp, call.inputs, call.outputs[0], call.params

    def run():
        y = p.alpha * x + p.beta
        xp.multiply(og, ((y > 0) & (y < 1)) * p.alpha, out=out, casting="unsafe")
    return run


@kernel("_backward_Cast")
def cast_backward(call):
    xp, og, out = call.xp, call.inputs[0], call.outputs[0]
    return lambda: xp.copyto(out, og, casting="unsafe")


# -- scalar ops --------------------------------------------------------------------------------
def _log_of(s):
    """log(s) of a scalar of the data's dtype, rounded once into a float dtype."""
    return s.dtype.type(math.log(s)) if s.dtype.kind == "f" else math.log(s)


# the output gradient times MXNet's derivative, rounded as MXNet rounds it (rdiv_grad
# -s / x^2, power_grad x^(s-1) * s, rpower_grad y * log(s), hypot_grad_left x / hypot)
_SCALAR_DERIV = {
    "_mul_scalar": lambda xp, og, s: og * s,
    "_div_scalar": lambda xp, og, s: og / s,
    "_rdiv_scalar": lambda xp, og, x, s: og * (-s / (x * x)),
    "_power_scalar": lambda xp, og, x, s: og * (x ** (s - 1) * s),
    "_rpower_scalar": lambda xp, og, y, s: og * (y * _log_of(s)),
    "_rmod_scalar": lambda xp, og, x, s: -og * xp.floor(s / x),
    "_maximum_scalar": lambda xp, og, x, s: og * (x >= s),
    "_minimum_scalar": lambda xp, og, x, s: og * (x <= s),
    "_hypot_scalar": lambda xp, og, x, s: og * (x / xp.hypot(x, s)),
}


def _scalar_backward(call):
    xp, out = call.xp, call.outputs[0]
    s = cast_scalar(call.params.scalar, out)
    fn = _SCALAR_DERIV[call.op_name[len("_backward"):]]
    ins = call.inputs
    if "mod" in call.op_name and out.dtype.kind in "iub":
        return partial(out.fill, 0)   # MXNet: no gradient through integer modulo
    return lambda: xp.copyto(out, fn(xp, *ins, s), casting="unsafe")


@kernel("_backward_mod_scalar")
def mod_scalar_backward(call):
    xp, og, out = call.xp, call.inputs[0], call.outputs[0]
    if out.dtype.kind in "iub":
        return partial(out.fill, 0)   # MXNet: no gradient through integer modulo
    return partial(xp.copyto, out, og, casting="unsafe")


for _name in _SCALAR_DERIV:
    assert _name in SCALAR and (_name in SCALAR_OGRAD_ONLY) == (_name in ("_mul_scalar", "_div_scalar"))
    kernel(f"_backward{_name}")(_scalar_backward)


# -- binary ops (elemwise and broadcast): inputs ograd, lhs, rhs[, out] ------------------------
# the output gradient times MXNet's partial derivative, each rounded as MXNet rounds it
# (div_grad 1 / b, div_rgrad -a / b^2, power_grad a^(b-1) * b, hypot_grad a / hypot)
_BINARY_DERIV = {
    "add": lambda xp, og, l, r, y: (og, og),
    "sub": lambda xp, og, l, r, y: (og, -og),
    "mul": lambda xp, og, l, r, y: (og * r, og * l),
    "div": lambda xp, og, l, r, y: (og * (1 / r), og * (-l / (r * r))),
    "mod": lambda xp, og, l, r, y: (og + 0 * r, -og * xp.floor(l / r)),
    "power": lambda xp, og, l, r, y: (og * (l ** (r - 1) * r),
                                      og * (y * xp.log(xp.where(l > 0, l, 1)))),
    "maximum": lambda xp, og, l, r, y: (og * (l >= r), og * (l < r)),
    "minimum": lambda xp, og, l, r, y: (og * (l <= r), og * (l > r)),
    "hypot": lambda xp, og, l, r, y: (og * (l / y), og * (r / y)),
}


def _zero_mod(xp, og, lhs, rhs, y):
    return xp.zeros_like(og), xp.zeros_like(og)


def _binary_backward(call):
    xp, outs = call.xp, call.outputs
    og, lhs, rhs = call.inputs[:3]
    y = call.inputs[3] if len(call.inputs) > 3 else None
    base = base_name(call.op_name.replace("_backward_", ""))
    fn = _BINARY_DERIV[base]
    if base == "mod" and og.dtype.kind in "iub":
        fn = _zero_mod   # MXNet: no gradient through integer modulo
    writers = [_writer(xp, og.shape, og.dtype, out) if r != "null" else None
               for out, r in zip(outs, call.req)]

    def run():
        for write, grad in zip(writers, fn(xp, og, lhs, rhs, y)):
            if write is not None:
                write(xp.broadcast_to(grad, og.shape))
    return run


for _name in (*BINARY, *BROADCAST):
    _base = base_name(_name)
    if _base in _BINARY_DERIV and not (_base == "add" and not _name.startswith("broadcast_")):
        _prefix = "_backward_broadcast_" if _name.startswith("broadcast_") else "_backward_"
        kernel(f"{_prefix}{_base}")(_binary_backward)


@kernel("_backward_where")
def where_backward(call):
    xp, (og, cond), (dcond, dx, dy) = call.xp, call.inputs, call.outputs
    mask = cond if cond.ndim == og.ndim else cond.reshape(cond.shape + (1,) * (og.ndim - 1))

    def run():
        dcond.fill(0)
        sel = mask != 0
        xp.multiply(og, sel, out=dx, casting="unsafe")
        xp.multiply(og, ~sel, out=dy, casting="unsafe")
    return run


@kernel("_identity_with_attr_like_rhs")
def identity_like_rhs(call):
    return lambda: call.xp.copyto(call.outputs[0], call.inputs[0])


@kernel("_grad_add")
def grad_add(call):
    xp, (a, b), out = call.xp, call.inputs, call.outputs[0]
    return lambda: xp.add(a, b, out=out)


assert not (ZERO_GRAD & set(_DERIV))
