"""Gradients of the shape-manipulation ops (core/ops/tensor.py), and the helpers the tensor,
slicing, matrix, reduce and indexing families use to declare their backward operators.

Every ``_backward_*`` operator here (and ``_broadcast_backward``) reads the output gradient
as input 0 and writes the gradient of the forward node's input k as output k; its shapes and
dtypes come from the forward inputs (``backward`` trait, no rules of its own). Names, inputs
and copied attributes follow MXNet 1.9.1's backward graphs (``exe.debug_str()``).
"""
from __future__ import annotations

from typing import Callable

from ..ir.graph import Entry
from .common import Bool, OpDef, OptInt, register_op
from .registry import get_op
from .tensor import transpose_axes

__all__ = ["backward_op", "zero_grad", "forward_params", "one_backward"]


def backward_op(name: str, inputs=("ograd",), outputs=1, params: dict | None = None,
                inplace=()) -> OpDef:
    """Declare a backward operator. ``outputs`` is a count, or a function of the params giving
    the output names (one per forward input)."""
    if not callable(outputs):
        outputs = [f"output{k}" for k in range(outputs)] if outputs > 1 else ["output"]
    return register_op(OpDef(name, inputs=inputs, outputs=outputs, params=params,
                             traits=("backward",), inplace=inplace))


def forward_params(op_name: str) -> dict:
    """The attribute schema of a forward operator, for a backward op that needs it."""
    return dict(get_op(op_name).schema.fields)


def zero_grad(g, node, k: int, name: str) -> Entry:
    """MXNet's zero gradient of input ``k``: ``zeros_like`` of it, run after the forward node
    (dropped from gradient sums)."""
    return Entry(g.make("zeros_like", name, [node.inputs[k]], control_deps=[node]), 0)


def one_backward(op_name: str, every_ograd: bool = False) -> Callable:
    """Rule: a single ``op_name`` node reading the output gradient (every output's gradient
    with ``every_ograd``) gives each input's gradient as its output k."""
    def rule(g, node, ograds):
        bw = g.backward_node(node, op_name, list(ograds) if every_ograd else [ograds[0]])
        return g.outputs(bw)
    return rule


def _transpose(g, node, ograds):
    """The gradient of transpose is the transpose by the inverse permutation."""
    attrs = {}
    if node.params.axes:
        perm = transpose_axes(node.params, len(node.params.axes))
        inverse = [0] * len(perm)
        for i, a in enumerate(perm):
            inverse[a] = i
        attrs["axes"] = str(tuple(inverse))
    return [Entry(g.make("transpose", f"{node.name}_backward", [ograds[0]], attrs, [node]), 0)]


def _broadcast(g, node, ograds):
    """Sum over the broadcast axes back to the input's shape; broadcast_like's rhs only
    supplies a shape (zero gradient)."""
    bw = g.make("_broadcast_backward", f"{node.name}_backward", [ograds[0]],
                {"keepdims": "true"}, [node])
    grads = [Entry(bw, 0)]
    if len(node.inputs) > 1:
        grads.append(zero_grad(g, node, 1, f"{node.name}_rhs_backward"))
    return grads


def _declare() -> None:
    # the gradient of a reshape is the output gradient seen with the input's shape (Flatten's
    # is MXNet's _backward_copy); like MXNet's, the nodes carry the forward attributes
    reshape_params = {**forward_params("Reshape"), "axis": OptInt(None)}   # + expand_dims'
    for name, ops, params in (("_backward_copy", ("Flatten",), {}),
                              ("_backward_reshape", ("Reshape", "expand_dims"), reshape_params),
                              ("_backward_squeeze", ("squeeze",), forward_params("squeeze"))):
        backward_op(name, params=params, inplace=((0, 0),))
        for op in ops:
            get_op(op).gradient = one_backward(name)
    for name in ("SwapAxis", "tile", "repeat", "reverse"):
        backward_op(f"_backward_{name}", params=forward_params(name))
        get_op(name).gradient = one_backward(f"_backward_{name}")
    get_op("transpose").gradient = _transpose
    backward_op("_broadcast_backward", params={"keepdims": Bool(False)})
    for name in ("broadcast_to", "broadcast_axis", "broadcast_like"):
        get_op(name).gradient = _broadcast


_declare()
