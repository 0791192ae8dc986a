"""Cases for the Custom operator (core/ops/custom.py): a two-input, two-output Python
operator registered here, checked forward against numpy and by finite differences like any
other op (its backward runs the user's ``backward``)."""
from __future__ import annotations

import graphexec as gx
import numpy as np

from . import OpCase


class _MulExp(gx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * b)
        self.assign(out_data[1], req[1], np.exp(a))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        self.assign(in_grad[0], req[0], out_grad[0] * b + out_grad[1] * out_data[1])
        self.assign(in_grad[1], req[1], out_grad[0] * a)


@gx.operator.register("opcase_mulexp")
class _MulExpProp(gx.operator.CustomOpProp):
    def __init__(self, scale="1"):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["prod", "exp"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _MulExp()


CASES: list[OpCase] = [
    OpCase("Custom", [(3, 4), (3, 4)], lambda a, b, **kw: [a * b, np.exp(a)],
           attrs={"op_type": "opcase_mulexp", "scale": "2"}, dtypes=("float32", "float64"),
           low=-1.0, high=1.0),
]
