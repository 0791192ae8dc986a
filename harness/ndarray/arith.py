"""``mx.nd``'s binary functions (``add``, ``subtract``, ..., ``logical_xor``): an array and
an array broadcast (``broadcast_<op>``), an array and a scalar use the scalar operator (the
reversed one when the scalar comes first), two scalars give a Python number."""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .imperative import invoke

__all__ = ["add", "subtract", "multiply", "divide", "true_divide", "modulo", "power",
           "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal", "lesser",
           "lesser_equal", "logical_and", "logical_or", "logical_xor"]

# name -> (array op, scalar op, reversed scalar op, Python function for two scalars)
_TABLE: dict[str, tuple[str, str, str, Callable]] = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar", operator.add),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul),
    "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar",
              lambda a, b: float(a == b)),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar",
                  lambda a, b: float(a != b)),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar",
                lambda a, b: float(a > b)),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar", lambda a, b: float(a >= b)),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar",
               lambda a, b: float(a < b)),
    "lesser_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar",
                     "_greater_equal_scalar", lambda a, b: float(a <= b)),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
                    lambda a, b: float(bool(a) and bool(b))),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
                   lambda a, b: float(bool(a) or bool(b))),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
                    lambda a, b: float(bool(a) != bool(b))),
}


def _binary(name: str) -> Callable[[Any, Any], Any]:
    array_op, scalar_op, reversed_op, scalars = _TABLE[name]

    def fn(lhs: Any, rhs: Any) -> Any:
        lhs_array, rhs_array = isinstance(lhs, np.ndarray), isinstance(rhs, np.ndarray)
        if lhs_array and rhs_array:
            return invoke(array_op, (lhs, rhs), {})
        if lhs_array:
            return invoke(scalar_op, (lhs,), {"scalar": float(rhs)})
        if rhs_array:
            return invoke(reversed_op, (rhs,), {"scalar": float(lhs)})
        return scalars(lhs, rhs)
    fn.__name__ = name
    fn.__doc__ = (f"``lhs`` {name} ``rhs`` with broadcasting ({array_op}; {scalar_op} with a "
                  f"scalar operand).")
    return fn


add, subtract, multiply, divide, modulo, power = (
    _binary(n) for n in ("add", "subtract", "multiply", "divide", "modulo", "power"))
true_divide = divide
maximum, minimum, equal, not_equal, greater, greater_equal, lesser, lesser_equal = (
    _binary(n) for n in ("maximum", "minimum", "equal", "not_equal", "greater",
                         "greater_equal", "lesser", "lesser_equal"))
logical_and, logical_or, logical_xor = (
    _binary(n) for n in ("logical_and", "logical_or", "logical_xor"))
