"""Operators whose output shape depends on the data: ``_contrib_boolean_mask`` (alias
``_npi_boolean_mask``).

They carry the trait ``dynamic_shape``: shape inference leaves the data-dependent dimension
unknown (-1), and the op's ``settle_shape`` gives the output shape from the input values at
run time, before the kernel runs (MXNet 1.9.1's executor runs such graphs "dynamically":
shapes settle during the forward and the nodes after them are planned again, see
``core/runtime/dynamic.py``). Backends that need static shapes (ONNX Runtime, fused kernels)
never claim them.

``boolean_mask(data, index)`` keeps the rows ``i`` of ``data`` (axis 0, the only axis
MXNet 1.9.1 supports) where ``index[i]`` is non-zero, in order. Its gradient
(``_backward_contrib_boolean_mask``, reading the output gradient, the data and the index)
scatters the output gradient back to the kept rows, zeros elsewhere; the index gets a zero
gradient (MXNet leaves that buffer unwritten).
"""
from __future__ import annotations

from .common import InferError, Int, OpDef, assign, assign_dtype, fmt, register_op
from .tensor_grad import backward_op, forward_params

__all__ = ["DYNAMIC", "mask_count"]

#: the trait of ops whose output shape depends on the data
DYNAMIC = "dynamic_shape"


def _mask_shape(p, ins, outs):
    data, index = ins
    if p.axis != 0:
        raise InferError(f"axis={p.axis} is not supported: MXNet 1.9.1 masks along axis 0 only")
    if index is not None and len(index) != 1:
        raise InferError(f"index must be 1-D (one flag per row of data), got {fmt(index)}")
    if data is None:
        return
    if not data:
        raise InferError("data must have at least one dimension, got a scalar")
    if index is not None and min(index[0], data[0]) >= 0 and index[0] != data[0]:
        raise InferError(f"index {fmt(index)} must hold one flag per row of data {fmt(data)}")
    # the number of rows kept is only known from the index values: -1 until run time
    assign(outs, 0, (-1,) + tuple(data[1:]), "out")


def _mask_type(p, ins, outs):
    assign_dtype(outs, 0, ins[0], "out")
    assign_dtype(ins, 0, outs[0])


def mask_count(index) -> int:
    """How many flags of ``index`` are non-zero (a numpy or CuPy array)."""
    return int((index != 0).sum())


def _mask_settle(p, arrays: list) -> list[tuple]:
    data, index = arrays
    return [(mask_count(index),) + tuple(data.shape[1:])]


def _mask_grad(g, node, ograds):
    bw = g.backward_node(node, "_backward_contrib_boolean_mask",
                         [ograds[0], node.inputs[0], node.inputs[1]])
    return g.outputs(bw)


def _declare() -> None:
    register_op(OpDef("_contrib_boolean_mask", aliases=("_npi_boolean_mask",),
                      params={"axis": Int(0)}, inputs=("data", "index"),
                      infer_shape=_mask_shape, infer_type=_mask_type, gradient=_mask_grad,
                      traits=(DYNAMIC,), settle_shape=_mask_settle))
    backward_op("_backward_contrib_boolean_mask", inputs=("ograd", "data", "index"),
                outputs=2, params=forward_params("_contrib_boolean_mask"))


_declare()
