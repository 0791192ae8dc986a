"""Matrix products: dot (MXNet's flattening N-D dot) and batch_dot, with their gradients."""
from __future__ import annotations

from ..ir.graph import Entry
from .common import Bool, Enum, InferError, OpDef, assign, fmt, register_op, same_type
from .registry import get_op
from .tensor_grad import backward_op, forward_params

_STYPES = ("None", "default", "csr", "row_sparse")


def dot_axes(p, lhs: tuple, rhs: tuple) -> tuple[int, int]:
    """The contracted axes of dot: lhs's last (first with transpose_a), rhs's first (last
    with transpose_b). Both inputs 1-D cannot be transposed."""
    if len(lhs) == 1 and len(rhs) == 1 and (p.transpose_a or p.transpose_b):
        raise InferError(f"dot shape error: {fmt(lhs)} X {fmt(rhs)}: cannot transpose vectors")
    if not lhs or not rhs:
        raise InferError(f"dot shape error: {fmt(lhs)} X {fmt(rhs)}: scalars cannot be multiplied")
    return (0 if p.transpose_a else len(lhs) - 1), (len(rhs) - 1 if p.transpose_b else 0)


def _dot_shape(p, ins, outs):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return
    la, ra = dot_axes(p, lhs, rhs)
    if lhs[la] >= 0 and rhs[ra] >= 0 and lhs[la] != rhs[ra]:
        raise InferError(f"dot shape error: {fmt(lhs)} X {fmt(rhs)} (transpose_a="
                         f"{p.transpose_a}, transpose_b={p.transpose_b}): the contracted "
                         f"dimensions {lhs[la]} and {rhs[ra]} differ")
    out = lhs[:la] + lhs[la + 1:] + rhs[:ra] + rhs[ra + 1:]
    assign(outs, 0, out or (1,), "out")


def _batch_dot_shape(p, ins, outs):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return
    where = (f"{fmt(lhs)} X {fmt(rhs)} (transpose_a={p.transpose_a}, "
             f"transpose_b={p.transpose_b})")
    if len(lhs) < 3 or len(lhs) != len(rhs):
        raise InferError(f"batch_dot shape error: {where}: both inputs must have the same "
                         f"number of dimensions, at least 3")
    batch = []
    for a, b in zip(lhs[:-2], rhs[:-2]):
        if a >= 0 and b >= 0 and a != b:
            raise InferError(f"batch_dot shape error: {where}: the leading batch dimensions "
                             f"must be equal")
        batch.append(max(a, b))
    m, k = (lhs[-1], lhs[-2]) if p.transpose_a else (lhs[-2], lhs[-1])
    k2, n = (rhs[-1], rhs[-2]) if p.transpose_b else (rhs[-2], rhs[-1])
    if k >= 0 and k2 >= 0 and k != k2:
        raise InferError(f"batch_dot shape error: {where}: the contracted dimensions {k} and "
                         f"{k2} differ")
    assign(outs, 0, tuple(batch) + (m, n), "out")


def _declare() -> None:
    params = {"transpose_a": Bool(False), "transpose_b": Bool(False),
              "forward_stype": Enum(_STYPES, "None")}
    register_op(OpDef("dot", inputs=("lhs", "rhs"), params=params, infer_shape=_dot_shape,
                      infer_type=same_type))
    register_op(OpDef("batch_dot", inputs=("lhs", "rhs"), params=params,
                      infer_shape=_batch_dot_shape, infer_type=same_type))


def _dot_grad(g, node, ograds):
    return g.outputs(g.backward_node(node, "_backward_dot", [ograds[0], *node.inputs]))


def _batch_dot_grad(g, node, ograds):
    """Two batch_dot nodes, arranged as MXNet arranges them for each transpose flag pair:
    for C = A B, dA = G B^T and dB = A^T G."""
    a, b = node.inputs
    og = ograds[0]
    ta, tb = node.params.transpose_a, node.params.transpose_b
    lhs = (b, og, tb, True) if ta else (og, b, False, not tb)
    rhs = (og, a, True, ta) if tb else (a, og, not ta, False)
    out = []
    for side, (x, y, fa, fb) in (("lhs", lhs), ("rhs", rhs)):
        attrs = {"transpose_a": str(fa), "transpose_b": str(fb)}
        out.append(Entry(g.make("batch_dot", f"{node.name}_backward_{side}", [x, y], attrs,
                                [node]), 0))
    return out


def _declare_gradients() -> None:
    backward_op("_backward_dot", inputs=("ograd", "lhs", "rhs"), outputs=2,
                params=forward_params("dot"))
    get_op("dot").gradient = _dot_grad
    get_op("batch_dot").gradient = _batch_dot_grad


_declare()
_declare_gradients()

__all__ = ["dot_axes"]
