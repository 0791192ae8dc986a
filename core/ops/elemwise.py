"""Elementwise operators: unary math, binary elemwise_*, _*_scalar, broadcast_*, comparisons,
logical ops, clip, Cast, where, add_n, zeros_like/ones_like, identity, BlockGrad."""
from __future__ import annotations

from .common import (Bool, DType, Float, InferError, Int, OpDef, ShapeConflict, Str, assign,
                     assign_dtype, merge, register_op, same_shape, same_type)

UNARY_MATH = (
    "abs", "sign", "negative", "reciprocal", "square", "sqrt", "rsqrt", "cbrt", "rcbrt", "exp",
    "expm1", "log", "log10", "log2", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "degrees", "radians", "floor",
    "ceil", "round", "rint", "fix", "trunc", "relu", "sigmoid", "softsign", "erf", "erfinv",
    "gamma", "gammaln", "logical_not",
)

# canonical name, aliases (the Python operators use the CamelCase ones)
BINARY = {
    "elemwise_add": ("_add", "_plus", "_Plus"),
    "elemwise_sub": ("_sub", "_minus", "_Minus"),
    "elemwise_mul": ("_mul", "_Mul"),
    "elemwise_div": ("_div", "_Div"),
    "_mod": ("_Mod",),
    "_power": ("_Power",),
    "_maximum": ("_Maximum",),
    "_minimum": ("_Minimum",),
    "_hypot": ("_Hypot",),
    # MXNet 1.9.1's legacy CamelCase aliases of the comparisons
    "_equal": ("_Equal",), "_not_equal": ("_Not_Equal",), "_greater": ("_Greater",),
    "_greater_equal": ("_Greater_Equal",), "_lesser": ("_Lesser",),
    "_lesser_equal": ("_Lesser_Equal",), "_logical_and": ("_Logical_And",),
    "_logical_or": ("_Logical_Or",), "_logical_xor": ("_Logical_Xor",),
}

SCALAR = {
    "_plus_scalar": ("_PlusScalar",), "_minus_scalar": ("_MinusScalar",),
    "_rminus_scalar": ("_RMinusScalar",), "_mul_scalar": ("_MulScalar",),
    "_div_scalar": ("_DivScalar",), "_rdiv_scalar": ("_RDivScalar",),
    "_mod_scalar": ("_ModScalar",), "_rmod_scalar": ("_RModScalar",),
    "_power_scalar": ("_PowerScalar",), "_rpower_scalar": ("_RPowerScalar",),
    "_maximum_scalar": ("_MaximumScalar",), "_minimum_scalar": ("_MinimumScalar",),
    "_hypot_scalar": ("_HypotScalar",), "_equal_scalar": ("_EqualScalar",),
    "_not_equal_scalar": ("_NotEqualScalar",), "_greater_scalar": ("_GreaterScalar",),
    "_greater_equal_scalar": ("_GreaterEqualScalar",), "_lesser_scalar": ("_LesserScalar",),
    "_lesser_equal_scalar": ("_LesserEqualScalar",), "_logical_and_scalar": ("_LogicalAndScalar",),
    "_logical_or_scalar": ("_LogicalOrScalar",), "_logical_xor_scalar": ("_LogicalXorScalar",),
}

BROADCAST = {
    "broadcast_add": ("broadcast_plus",), "broadcast_sub": ("broadcast_minus",),
    "broadcast_mul": (), "broadcast_div": (), "broadcast_mod": (), "broadcast_power": (),
    "broadcast_maximum": (), "broadcast_minimum": (), "broadcast_hypot": (),
    "broadcast_equal": (), "broadcast_not_equal": (), "broadcast_greater": (),
    "broadcast_greater_equal": (), "broadcast_lesser": (), "broadcast_lesser_equal": (),
    "broadcast_logical_and": (), "broadcast_logical_or": (), "broadcast_logical_xor": (),
}

COMPARISONS = frozenset(("equal", "not_equal", "greater", "greater_equal", "lesser",
                         "lesser_equal", "logical_and", "logical_or", "logical_xor"))


def base_name(op_name: str) -> str:
    """'broadcast_add' / 'elemwise_add' / '_plus_scalar' -> the arithmetic it performs."""
    name = op_name
    for prefix in ("broadcast_", "elemwise_", "_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    if name.endswith("_scalar"):
        name = name[: -len("_scalar")]
    return {"plus": "add", "minus": "sub"}.get(name, name)


def broadcast_shape(p, ins: list, outs: list) -> None:
    """numpy/MXNet broadcasting of lhs and rhs (shorter shapes are padded with leading 1s)."""
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return
    n = max(len(lhs), len(rhs))
    lp = (1,) * (n - len(lhs)) + tuple(lhs)
    rp = (1,) * (n - len(rhs)) + tuple(rhs)
    out = []
    for l, r in zip(lp, rp):
        if l == r or r == 1:
            out.append(l)
        elif l == 1 or l < 0:
            out.append(r)
        elif r < 0:
            out.append(l)
        else:
            raise InferError(f"operands could not be broadcast together with shapes "
                             f"{tuple(lhs)} {tuple(rhs)}")
    assign(outs, 0, tuple(out), "out")


def _where_shape(p, ins, outs):
    cond, x, y = ins
    s = None
    for i in (1, 2):
        try:
            s = merge(s, ins[i])
        except ValueError:
            raise ShapeConflict("in", i, ins[i], s) from None
    try:
        s = merge(s, outs[0])
    except ValueError:
        raise ShapeConflict("out", 0, outs[0], s) from None
    if s is None:
        return
    ins[1] = ins[2] = outs[0] = s
    if cond is not None and len(cond) != len(s):
        if not (len(cond) == 1 and (cond[0] == s[0] or cond[0] < 0)):
            raise InferError(f"condition shape {cond} must equal the data shape {s} or be "
                             f"({s[0]},) to select rows")
    elif cond is None:
        ins[0] = s


def _where_type(p, ins, outs):
    same_type(p, ins[1:], outs)


def _cast_type(p, ins, outs):
    assign_dtype(outs, 0, p.dtype, "out")


def _unary(name: str, aliases=(), **extra) -> OpDef:
    return register_op(OpDef(name, aliases=aliases, infer_shape=same_shape, infer_type=same_type,
                             traits=("elementwise", "unary"), inplace=((0, 0),),
                             named_inputs=False, **extra))


def _declare() -> None:
    for name in UNARY_MATH:
        _unary(name)
    _unary("_copy", aliases=("identity", "_identity"))
    _unary("BlockGrad", aliases=("stop_gradient",))
    # MXNet 1.9.1 registers no attribute parser for these: attributes are kept and ignored
    # (GluonCV's CenterNet decoder passes dtype; the output keeps the input's dtype)
    _unary("zeros_like", params={"dtype": Str("None")})
    _unary("ones_like", params={"dtype": Str("None")})
    _unary("clip", params={"a_min": Float(), "a_max": Float()})
    _unary("hard_sigmoid", params={"alpha": Float(0.2), "beta": Float(0.5)})
    register_op(OpDef("Cast", aliases=("cast",), params={"dtype": DType()},
                      infer_shape=same_shape, infer_type=_cast_type,
                      traits=("elementwise", "unary"), named_inputs=False))
    for name, aliases in BINARY.items():
        register_op(OpDef(name, aliases=aliases, inputs=("lhs", "rhs"), infer_shape=same_shape,
                          infer_type=same_type, traits=("elementwise", "binary"),
                          inplace=((0, 0), (1, 0))))
    for name, aliases in SCALAR.items():
        register_op(OpDef(name, aliases=aliases, params={"scalar": Float(1.0),
                                                         "is_int": Bool(True)},
                          infer_shape=same_shape, infer_type=same_type,
                          traits=("elementwise", "scalar"), inplace=((0, 0),),
                          named_inputs=False))
    for name, aliases in BROADCAST.items():
        register_op(OpDef(name, aliases=aliases, inputs=("lhs", "rhs"),
                          infer_shape=broadcast_shape, infer_type=same_type,
                          traits=("elementwise", "broadcast")))
    register_op(OpDef("where", inputs=("condition", "x", "y"), infer_shape=_where_shape,
                      infer_type=_where_type, traits=("elementwise",)))
    register_op(OpDef("add_n", aliases=("ElementWiseSum", "_sparse_ElementWiseSum"),
                      params={"num_args": Int()}, variadic="num_args",
                      inputs=lambda p: [f"arg{i}" for i in range(p.num_args)],
                      infer_shape=same_shape, infer_type=same_type,
                      traits=("elementwise",), inplace=((0, 0),)))


_declare()

__all__ = ["UNARY_MATH", "BINARY", "SCALAR", "BROADCAST", "COMPARISONS", "base_name",
           "broadcast_shape", "same_shape", "same_type"]
