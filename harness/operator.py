"""``gx.operator``: Python custom operators with MXNet 1.9.1's API.

>>> class Sqr(gx.operator.CustomOp):
...     def forward(self, is_train, req, in_data, out_data, aux):
...         self.assign(out_data[0], req[0], in_data[0] * in_data[0])
...     def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
...         self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])
>>> @gx.operator.register("sqr")
... class SqrProp(gx.operator.CustomOpProp):
...     def create_operator(self, ctx, shapes, dtypes):
...         return Sqr()
>>> y = gx.sym.Custom(gx.sym.var("x"), op_type="sqr")

The ``Custom`` operator (``core/ops/custom.py``) asks the property for its inputs, outputs,
auxiliary states, shapes, dtypes and backward dependencies, and runs the operator object on
NDArray views of the executor's arrays. A property's constructor receives the node's other
attributes as strings, as in MXNet.
"""
from __future__ import annotations

from typing import Any, Callable

from graphexec.core.ir.errors import ArgumentTypeError
from graphexec.core.ops.custom import CustomOpError, register_prop
from graphexec.harness.opdoc import (OperatorArguments, describe,
                                     get_all_registered_operators, get_operator_arguments)

__all__ = ["CustomOp", "CustomOpProp", "register", "CustomOpError", "OperatorArguments",
           "get_all_registered_operators", "get_operator_arguments", "describe"]


class CustomOp:
    """Base class of a custom operator's computation."""

    def __init__(self) -> None:
        pass

    def forward(self, is_train: bool, req: list, in_data: list, out_data: list,
                aux: list) -> None:
        """Write the outputs (use :meth:`assign` to honour ``req``)."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, req: list, out_grad: list, in_data: list, out_data: list,
                 in_grad: list, aux: list) -> None:
        """Write the input gradients (use :meth:`assign` to honour ``req``)."""
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def assign(self, dst: Any, req: str, src: Any) -> None:
        """``dst`` per ``req``: 'null' leaves it, 'write'/'inplace' overwrites, 'add' adds."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise ArgumentTypeError(f"assign: unknown req {req!r} (expected 'null', 'write', "
                                    f"'inplace' or 'add')")


class CustomOpProp:
    """Base class of a custom operator's declaration (MXNet's defaults: one argument
    ``data``, one output ``output``, no auxiliary states, output shape and dtype of the
    first input)."""

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: list) -> tuple:
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype: list) -> tuple:
        return (in_stype, ["default"] * len(self.list_outputs()),
                ["default"] * len(self.list_auxiliary_states()))

    def list_outputs(self) -> list[str]:
        return ["output"]

    def list_arguments(self) -> list[str]:
        return ["data"]

    def list_auxiliary_states(self) -> list[str]:
        return []

    def declare_backward_dependency(self, out_grad: list, in_data: list,
                                    out_data: list) -> list:
        """Which of the output gradients, inputs and outputs backward reads (default: all,
        the output gradients only when ``need_top_grad``)."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> CustomOp:
        return CustomOp()


def register(reg_name: str) -> Callable[[type], type]:
    """Class decorator registering a :class:`CustomOpProp` subclass as ``op_type``
    ``reg_name`` (usable at once as ``gx.sym.Custom(..., op_type=reg_name)``)."""
    def do_register(prop_cls: type) -> type:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise ArgumentTypeError(f"operator.register({reg_name!r}) expects a CustomOpProp "
                                    f"subclass, got {prop_cls!r:.60}")
        register_prop(reg_name, prop_cls)
        return prop_cls
    return do_register
