"""Random sampling operators, drawn from graphexec's seeded generator (``gx.random.seed``):

- ``_random_<distr>`` (aliases ``random_<distr>``; ``uniform`` and ``normal`` too): no inputs,
  scalar parameters as attributes, the output shape from ``shape`` (or from consumers);
- ``_random_<distr>_like``: the output takes the shape and dtype of its input ``data``;
- ``_sample_<distr>`` (alias ``sample_<distr>``): parameters as arrays, one distribution per
  entry; output shape = parameter shape + ``shape``;
- ``_sample_multinomial`` (with ``get_prob`` and its gradient), ``_shuffle`` and
  ``_sample_unique_zipfian``.

Parameters follow MXNet 1.9.1: gamma's ``beta`` is a scale, exponential's ``lam`` a rate,
negative_binomial counts failures before ``k`` successes of probability ``p``,
generalized_negative_binomial has mean ``mu`` and variance ``mu + alpha mu^2``. MXNet's exact
random streams are not reproduced (README). Invalid scalar parameters are rejected at shape
inference, naming the attribute; invalid parameter arrays when the kernel runs.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import (Bool, DType, Float, InferError, Int, OpDef, Shape, Str, assign,
                     assign_dtype, known, register_op)
from .tensor_grad import backward_op, zero_grad

__all__ = ["DISTRIBUTIONS", "SCALAR_CHECKS"]

F32, I32, I64 = np.dtype("float32"), np.dtype("int32"), np.dtype("int64")
FLOATS = ("float16", "float32", "float64")

#: distribution -> its parameters (names of ``_random_*`` attributes / ``_sample_*`` inputs)
DISTRIBUTIONS = {
    "uniform": (("low", 0.0), ("high", 1.0)),
    "normal": (("loc", 0.0), ("scale", 1.0)),
    "gamma": (("alpha", 1.0), ("beta", 1.0)),
    "exponential": (("lam", 1.0),),
    "poisson": (("lam", 1.0),),
    "negative_binomial": (("k", 1), ("p", 1.0)),
    "generalized_negative_binomial": (("mu", 1.0), ("alpha", 1.0)),
}
#: ``_sample_*`` input names where they differ from the attribute names
SAMPLE_INPUTS = {"normal": ("mu", "sigma")}


def _positive(v):
    return v > 0


def _non_negative(v):
    return v >= 0


#: distribution -> (parameter, test, expectation) checks MXNet makes on scalar parameters
SCALAR_CHECKS = {
    "normal": (("scale", _positive, "positive"),),
    "gamma": (("alpha", _positive, "positive"), ("beta", _positive, "positive")),
    "exponential": (("lam", _positive, "positive"),),
    "poisson": (("lam", _non_negative, "non-negative"),),
    "negative_binomial": (("k", _non_negative, "non-negative"),
                          ("p", lambda v: 0 <= v <= 1, "in [0, 1]")),
    "generalized_negative_binomial": (("mu", _non_negative, "non-negative"),
                                      ("alpha", _non_negative, "non-negative")),
}


def _check_scalars(distr: str, p) -> None:
    if distr in ("uniform", "randint") and p.low > p.high:
        raise InferError(f"low {p.low} must be less than or equal to high {p.high}")
    for name, test, want in SCALAR_CHECKS.get(distr, ()):
        value = getattr(p, name)
        if not test(value):
            raise InferError(f"attribute {name}={value} must be {want} for the {distr} "
                             f"distribution")


def _out_dtype(p, outs, default, allowed) -> None:
    want = p.dtype if p.dtype is not None else (outs[0] or default)
    if want.name not in allowed:
        raise InferError(f"attribute dtype={want} is not allowed: the output must be one of "
                         f"{', '.join(allowed)}")
    assign_dtype(outs, 0, want, "out")


def _no_input_shape(distr):
    def rule(p, ins, outs):
        _check_scalars(distr, p)
        if p.shape:
            assign(outs, 0, tuple(-1 if d == 0 else d for d in p.shape), "out")
    return rule


def _like_shape(distr):
    def rule(p, ins, outs):
        _check_scalars(distr, p)
        assign(outs, 0, ins[0], "out")
        assign(ins, 0, outs[0])
    return rule


def _like_type(p, ins, outs):
    assign_dtype(outs, 0, ins[0], "out")
    assign_dtype(ins, 0, outs[0])


def _sample_shape(p, ins, outs):
    """Every parameter array has one shape P; the output is P + shape."""
    if any(d <= 0 for d in p.shape):
        raise InferError(f"attribute shape={p.shape} must have positive dimensions")
    base = None
    out = outs[0]
    if known(out) and len(out) > len(p.shape):
        base = out[:len(out) - len(p.shape)]
    for i in range(len(ins)):
        assign(ins, i, base)
        base = ins[i] if ins[i] is not None else base
    for i in range(len(ins)):
        assign(ins, i, base)
    if base is not None:
        assign(outs, 0, tuple(base) + tuple(p.shape), "out")


def _sample_type(p, ins, outs):
    t = next((v for v in ins if v is not None), None)
    for i in range(len(ins)):
        assign_dtype(ins, i, t)
    _out_dtype(p, outs, F32, FLOATS)


def _zero_grads(g, node, ograds):
    return [zero_grad(g, node, k, f"{node.name}_in{k}_backward") for k in
            range(len(node.inputs))]


def _declare_distributions() -> None:
    base = {"shape": Shape(()), "ctx": Str(""), "dtype": DType(None)}
    for distr, params in DISTRIBUTIONS.items():
        fields = {n: (Int(d) if isinstance(d, int) else Float(d)) for n, d in params}
        aliases = (f"random_{distr}",) + ((distr,) if distr in ("uniform", "normal") else ())
        register_op(OpDef(
            f"_random_{distr}", aliases=aliases, params={**fields, **base}, inputs=(),
            infer_shape=_no_input_shape(distr), random=True, gradient=_zero_grads,
            infer_type=lambda p, i, o: _out_dtype(p, o, F32, FLOATS)))
        register_op(OpDef(
            f"_random_{distr}_like", params=fields, inputs=("data",), random=True,
            infer_shape=_like_shape(distr), infer_type=_like_type, gradient=_zero_grads))
        names = SAMPLE_INPUTS.get(distr, tuple(n for n, _ in params))
        register_op(OpDef(
            f"_sample_{distr}", aliases=(f"sample_{distr}",), inputs=names, random=True,
            params={"shape": Shape(()), "dtype": DType(None)}, infer_shape=_sample_shape,
            infer_type=_sample_type, gradient=_zero_grads))
    register_op(OpDef(
        "_random_randint", aliases=("random_randint",), inputs=(), random=True,
        params={"low": Int(), "high": Int(), **base}, infer_shape=_no_input_shape("randint"),
        infer_type=lambda p, i, o: _out_dtype(p, o, I32, ("int32", "int64")),
        gradient=_zero_grads))


# -- multinomial, shuffle, unique zipfian --------------------------------------------------------
def _multinomial_outputs(p):
    return ["output0", "output1"] if p.get_prob else ["output"]


def _multinomial_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if not data:
        raise InferError("data must have at least one axis (the probabilities)")
    if len(data) == 1:
        out = tuple(p.shape) or (1,)
    else:
        out = tuple(data[:-1]) + tuple(p.shape)
    for k in range(len(outs)):
        assign(outs, k, out, "out")


def _multinomial_type(p, ins, outs):
    if ins[0] is not None and ins[0].kind != "f":
        raise InferError(f"data holds probabilities and must be floating-point, got {ins[0]}")
    assign_dtype(outs, 0, p.dtype, "out")
    if len(outs) > 1:
        assign_dtype(outs, 1, ins[0], "out")


def _multinomial_grad(g, node, ograds):
    """With get_prob, MXNet's _backward_sample_multinomial: the log-probability output's
    gradient divided by the drawn class's probability; otherwise zero."""
    if not node.params.get_prob:
        return _zero_grads(g, node, ograds)
    bw = g.backward_node(node, "_backward_sample_multinomial",
                         [ograds[1], node.inputs[0], Entry(node, 0)])
    return g.outputs(bw)


def _same_shape_type(p, ins, outs):
    assign(outs, 0, ins[0], "out")
    assign(ins, 0, outs[0])


def _zipfian_shape(p, ins, outs):
    if len(p.shape) != 2:
        raise InferError(f"attribute shape={p.shape} must be 2-D: (batch size, samples per "
                         f"batch)")
    if p.shape[1] > p.range_max:
        raise InferError(f"cannot draw {p.shape[1]} distinct classes out of range_max="
                         f"{p.range_max}")
    assign(outs, 0, tuple(p.shape), "out")
    assign(outs, 1, (p.shape[0],), "out")


def _declare_others() -> None:
    register_op(OpDef(
        "_sample_multinomial", aliases=("sample_multinomial",), inputs=("data",),
        outputs=_multinomial_outputs, random=True, gradient=_multinomial_grad,
        params={"shape": Shape(()), "get_prob": Bool(False),
                "dtype": DType(I32)}, infer_shape=_multinomial_shape,
        infer_type=_multinomial_type))
    backward_op("_backward_sample_multinomial", inputs=("ograd", "data", "sample"))
    register_op(OpDef(
        "_shuffle", aliases=("shuffle",), inputs=("data",), random=True,
        infer_shape=_same_shape_type, infer_type=_like_type, gradient=_zero_grads))
    register_op(OpDef(
        "_sample_unique_zipfian", inputs=(), outputs=("output0", "output1"), random=True,
        params={"range_max": Int(), "shape": Shape(())}, infer_shape=_zipfian_shape,
        infer_type=lambda p, i, o: [assign_dtype(o, k, I64, "out") for k in (0, 1)],
        gradient=_zero_grads))


_declare_distributions()
_declare_others()
