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
from graphexec.harness.opdoc import (
    OperatorArguments,
    describe,
    get_all_registered_operators,
    get_operator_arguments,
)

__all__ = ["CustomOp", "CustomOpProp", "register", "CustomOpError", "OperatorArguments",
           "PythonOp", "NumpyOp", "NDArrayOp",
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


class PythonOp:
    """MXNet's legacy Python operator (``NumpyOp`` and ``NDArrayOp`` derive from it): an
    object whose ``forward(in_data, out_data)`` / ``backward(out_grad, in_data, out_data,
    in_grad)`` write the arrays; ``get_symbol(*inputs, name=...)`` (or calling it) makes its
    node, run here as a ``Custom`` operator registered for this object."""

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def __call__(self, *args: Any, **kwargs: Any):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args: Any, **kwargs: Any):
        from graphexec.core.symbol.symbol import create_op_symbol
        op_type = f"_python_op_{id(self):x}"
        legacy = self

        class _Run(CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                legacy.forward(in_data=in_data, out_data=out_data)

            def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
                legacy.backward(out_grad=out_grad, in_data=in_data, out_data=out_data,
                                in_grad=in_grad)

        class _Prop(CustomOpProp):
            def __init__(self) -> None:
                super().__init__(need_top_grad=legacy.need_top_grad())

            def list_arguments(self):
                return legacy.list_arguments()

            def list_outputs(self):
                return legacy.list_outputs()

            def infer_shape(self, in_shape):
                return legacy.infer_shape(in_shape)

            def create_operator(self, ctx, in_shapes, in_dtypes):
                return _Run()
        register_prop(op_type, _Prop)
        return create_op_symbol("Custom", args, {**kwargs, "op_type": op_type})

    def forward(self, in_data: list, out_data: list) -> None:
        out_data[0][:] = in_data[0]

    def backward(self, out_grad: list, in_data: list, out_data: list, in_grad: list) -> None:
        in_grad[0][:] = 1.0   # MXNet's default

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, [in_shape[0]]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def list_arguments(self) -> list[str]:
        return ["data"]

    def need_top_grad(self) -> bool:
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """MXNet's ``NumpyOp``: a :class:`PythonOp` on numpy arrays (the NDArrays here are
    numpy arrays)."""


class NDArrayOp(PythonOp):
    """MXNet's ``NDArrayOp``: a :class:`PythonOp` on NDArrays."""
