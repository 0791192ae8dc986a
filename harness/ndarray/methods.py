"""MXNet's NDArray methods that numpy's ndarray lacks, installed on
:class:`~graphexec.core.ir.ndarray.NDArray`: the operator methods (``x.exp()``,
``x.softmax(axis=1)``, ``x.one_hot(10)``, ...) run the registered operators imperatively, and
``reshape`` / ``transpose`` accept MXNet's forms.

Methods numpy's ndarray already has (``sum``, ``mean``, ``max``, ``argmax``, ``flatten``,
``take``, ``round``, ``sort``, ...) keep numpy's behaviour: kernels receive NDArrays bound by
users and rely on it. Where MXNet differs (``flatten`` keeps the first axis, ``argmax``
returns floats, ``take`` indexes axis 0, ``round`` rounds halves away from zero), the
operators give MXNet's results: ``gx.nd.flatten(x)``, ``gx.nd.argmax(x, axis=1)``,
``gx.nd.take(x, i)``, ``gx.nd.round(x)``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from graphexec.core.ir.attrs import to_attr_string
from graphexec.core.ir.ndarray import ArrayValueError, NDArray, ndarray_method
from graphexec.core.ops.registry import InferError, get_op
from graphexec.core.ops.tensor import reshape_target

from .imperative import invoke

__all__ = ["OPERATOR_METHODS"]

#: method name -> operator name (MXNet's fluent methods whose name numpy does not use)
OPERATOR_METHODS = {name: name for name in (
    "zeros_like", "ones_like", "pad", "slice", "slice_axis", "slice_like", "one_hot", "pick",
    "topk", "argmax_channel", "abs", "sign", "expand_dims", "tile", "nansum", "nanprod", "norm",
    "rint", "fix", "floor", "ceil", "trunc", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "degrees", "radians", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "exp",
    "expm1", "log", "log10", "log2", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt", "square",
    "reciprocal", "relu", "sigmoid", "softmax", "log_softmax", "softmin", "broadcast_like",
    "reshape_like", "shape_array", "size_array", "depth_to_space", "space_to_depth", "diag")}
OPERATOR_METHODS.update(flip="reverse", broadcast_axes="broadcast_axis", split="SliceChannel")


def _operator_method(name: str, op_name: str) -> Callable:
    def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:
        return invoke(op_name, (self, *args), kwargs)
    method.__name__ = name
    method.__doc__ = f"``gx.nd.{op_name}(self, ...)``: MXNet's fluent ``{name}``."
    return method


for _name, _op in OPERATOR_METHODS.items():
    ndarray_method(_operator_method(_name, _op))


def _split(self: NDArray, num_outputs: int, axis: int = 1, squeeze_axis: bool = False,
           **kwargs: Any) -> Any:
    """MXNet's ``split`` (the SliceChannel operator)."""
    return invoke("SliceChannel", (self,), dict(kwargs, num_outputs=num_outputs, axis=axis,
                                                squeeze_axis=squeeze_axis))


_split.__name__ = "split"
ndarray_method(_split)


@ndarray_method
def broadcast_to(self: NDArray, shape: Any) -> NDArray:
    """This array broadcast to ``shape`` (a copy, as MXNet's)."""
    return invoke("broadcast_to", (self,), {"shape": tuple(shape)})


_NUMPY_RESHAPE = np.ndarray.reshape
_NUMPY_TRANSPOSE = np.ndarray.transpose


@ndarray_method
def reshape(self: NDArray, *shape: Any, **kwargs: Any) -> NDArray:
    """A view with a new shape. Besides numpy's forms, MXNet's special values (0 copies a
    dimension, -2 copies the rest, -3 merges two, -4 splits one) and ``reverse=True`` are
    understood where numpy would reject the shape (so numpy callers are unaffected)."""
    if "shape" in kwargs and not shape:
        shape = (kwargs.pop("shape"),)
    reverse = kwargs.pop("reverse", False)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if reverse or (not kwargs and self.size and any(
            isinstance(d, (int, np.integer)) and (d == 0 or d < -1) for d in shape)):
        shape = _mxnet_shape(self.shape, tuple(int(d) for d in shape), bool(reverse))
    return _NUMPY_RESHAPE(self, shape, **kwargs)


@ndarray_method
def transpose(self: NDArray, *axes: Any, **kwargs: Any) -> NDArray:
    """numpy's ``transpose``, also with MXNet's ``axes=`` keyword."""
    if "axes" in kwargs:
        axes = (kwargs.pop("axes"),)
    if kwargs:
        raise TypeError(f"transpose() got unexpected keyword arguments {sorted(kwargs)}")
    return _NUMPY_TRANSPOSE(self, *axes)


def _mxnet_shape(dshape: tuple, codes: tuple, reverse: bool) -> tuple:
    """The shape Reshape's ``shape`` codes give for ``dshape`` (the operator's own rule)."""
    params = get_op("Reshape").parse({"shape": to_attr_string(codes), "reverse": str(reverse)})
    try:
        return tuple(reshape_target(params, dshape))
    except InferError as exc:
        raise ArrayValueError(f"reshape{codes} of an array of shape {dshape}: {exc}") from None
