"""Gradients of the elementwise family: the backward operators (``_backward_<op>``) and the
gradient table (one rule per forward operator, a graph rewrite each).

Convention for every ``_backward_*`` operator: input 0 is the output gradient, output k is the
gradient of the forward node's input k (its shape and dtype are the forward input's, which
the inference pass reads through the control dependency on the forward node).
"""
from __future__ import annotations

from ..ir.graph import Entry
from .common import Bool, Float, OpDef, register_op
from .elemwise import BINARY, BROADCAST, SCALAR, UNARY_MATH, base_name, same_shape, same_type
from .registry import get_op

# unary ops whose derivative is computed from the output y instead of the input x
UNARY_FROM_OUTPUT = frozenset(("exp", "expm1", "sqrt", "cbrt", "tan", "tanh", "sigmoid", "relu",
                               "erfinv"))
# ops whose gradient is zero everywhere (MXNet: zeros_like contributions, dropped from sums)
ZERO_GRAD = frozenset(("sign", "floor", "ceil", "round", "rint", "fix", "trunc", "logical_not",
                       "zeros_like", "ones_like", "BlockGrad"))
# scalar ops whose backward needs only the output gradient (and the scalar)
SCALAR_OGRAD_ONLY = frozenset(("_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar",
                               "_div_scalar", "_mod_scalar"))
_COMPARE = ("equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
            "logical_and", "logical_or", "logical_xor")


def _backward(name: str, inputs, num_out: int, params=None, named: bool = False) -> OpDef:
    return register_op(OpDef(name, inputs=inputs, outputs=[f"output{k}" for k in range(num_out)]
                             if num_out > 1 else ["output"], params=params,
                             traits=("elementwise", "backward"), named_inputs=named))


# -- rules -------------------------------------------------------------------------------------
def _zero(g, node, ograds):
    return [g.zeros_like(node, e, k) for k, e in enumerate(node.inputs)]


def _pass_through(g, node, ograds):
    return [ograds[0]] * len(node.inputs)


def _unary(g, node, ograds):
    src = Entry(node, 0) if node.op.name in UNARY_FROM_OUTPUT else node.inputs[0]
    bw = g.backward_node(node, f"_backward_{node.op.name}", [ograds[0], src])
    return [Entry(bw, 0)]


def _negate(g, node, ograds):
    return [Entry(g.make("negative", f"{node.name}_backward", [ograds[0]], control_deps=[node]), 0)]


def _scalar(g, node, ograds):
    name = node.op.name
    if name in ("_plus_scalar", "_minus_scalar"):
        return [ograds[0]]
    if name == "_mod_scalar":   # MXNet's node: the gradient is zero on integer dtypes
        return [Entry(g.backward_node(node, "_backward_mod_scalar", [ograds[0]]), 0)]
    if name == "_rminus_scalar":
        return _negate(g, node, ograds)
    if name in SCALAR_OGRAD_ONLY:
        return [Entry(g.backward_node(node, f"_backward{name}", [ograds[0]]), 0)]
    src = Entry(node, 0) if name == "_rpower_scalar" else node.inputs[0]
    return [Entry(g.backward_node(node, f"_backward{name}", [ograds[0], src]), 0)]


def _binary(g, node, ograds):
    base = base_name(node.op.name)
    if base == "add":
        if node.op.name.startswith("broadcast_"):
            bw = g.backward_node(node, "_backward_broadcast_add", [ograds[0], *node.inputs])
            return g.outputs(bw)
        return _pass_through(g, node, ograds)
    prefix = "_backward_broadcast_" if node.op.name.startswith("broadcast_") else "_backward_"
    bw = g.backward_node(node, f"{prefix}{base}", [ograds[0], *node.inputs, Entry(node, 0)])
    return g.outputs(bw)


def _cast(g, node, ograds):
    return [Entry(g.backward_node(node, "_backward_Cast", [ograds[0]]), 0)]


def _where(g, node, ograds):
    return g.outputs(g.backward_node(node, "_backward_where", [ograds[0], node.inputs[0]]))


def _identity_like_rhs(g, node, ograds):
    return [ograds[0], g.zeros_like(node, node.inputs[1], 1)]


# -- declarations ---------------------------------------------------------------------------
def _declare() -> None:
    scalar_params = {"scalar": Float(1.0), "is_int": Bool(True)}
    for name in UNARY_MATH:
        if name in ZERO_GRAD:
            get_op(name).gradient = _zero
        elif name == "negative":
            get_op(name).gradient = _negate
        else:
            _backward(f"_backward_{name}", ("ograd", "data"), 1)
            get_op(name).gradient = _unary
    for name in ("zeros_like", "ones_like", "BlockGrad"):
        get_op(name).gradient = _zero
    get_op("_copy").gradient = _pass_through
    for name in ("clip", "hard_sigmoid"):
        _backward(f"_backward_{name}", ("ograd", "data"), 1, params=get_op(name).schema.fields)
        get_op(name).gradient = _unary
    _backward("_backward_Cast", ("ograd",), 1)
    get_op("Cast").gradient = _cast
    for name in SCALAR:
        base = name[1:-len("_scalar")]
        if base in _COMPARE or base.startswith("logical"):
            get_op(name).gradient = _zero
            continue
        if name not in ("_plus_scalar", "_minus_scalar", "_rminus_scalar"):
            inputs = ("ograd",) if name in SCALAR_OGRAD_ONLY or name == "_mod_scalar" \
                else ("ograd", "data")
            _backward(f"_backward{name}", inputs, 1, params=scalar_params)
        get_op(name).gradient = _scalar
    for name in (*BINARY, *BROADCAST):
        base = base_name(name)
        if base in _COMPARE:
            get_op(name).gradient = _zero
            continue
        get_op(name).gradient = _binary
        prefix = "_backward_broadcast_" if name.startswith("broadcast_") else "_backward_"
        if base == "add" and prefix == "_backward_":
            continue
        ins = ("ograd", "lhs", "rhs") if base == "add" else ("ograd", "lhs", "rhs", "out")
        _backward(f"{prefix}{base}", ins, 2)
    _backward("_backward_where", ("ograd", "condition"), 3)
    get_op("where").gradient = _where
    get_op("add_n").gradient = _pass_through
    register_op(OpDef("_identity_with_attr_like_rhs", inputs=("lhs", "rhs"),
                      infer_shape=_like_rhs_shape, infer_type=_like_rhs_type,
                      gradient=_identity_like_rhs, traits=("elementwise",)))
    register_op(OpDef("_grad_add", inputs=("lhs", "rhs"), infer_shape=same_shape,
                      infer_type=same_type, gradient=_pass_through,
                      traits=("elementwise", "binary"), inplace=((0, 0), (1, 0))))


def _like_rhs_shape(p, ins, outs):
    """Output (and lhs) take the shape of rhs: head gradients shaped like their output."""
    same_shape(p, [ins[0]], outs)
    if ins[1] is not None or outs[0] is not None:   # all three alike, as MXNet's rule
        same_shape(p, ins, outs)


def _like_rhs_type(p, ins, outs):
    same_type(p, ins, outs)


_declare()

__all__ = ["UNARY_FROM_OUTPUT", "ZERO_GRAD"]
