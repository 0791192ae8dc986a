"""Factorizations and reductions of batches of square (or wide) matrices: potrf (Cholesky),
potri (inverse from a Cholesky factor), gelqf (LQ), syevd (symmetric eigendecomposition),
inverse, det, slogdet and sumlogdiag, as MXNet 1.9.1 declares them.

det and slogdet keep MXNet's hidden outputs: after the visible det (sign, logabsdet) come
``LU`` (shape of A) and ``pivot`` (int32, A's shape less the last axis), which their
backward nodes read. graphexec's kernels store in them what its own backward needs (see
backends/default/kernels/linalg_factor.py); nothing outside the node can see them.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import Bool, InferError, OpDef, assign, fmt, known, register_op
from .linalg import la_gradient, la_type, square
from .tensor_grad import backward_op

_INT32 = np.dtype("int32")


def _square_same(p, ins, outs):
    """potrf, potri, inverse: square matrices in, the same shape out."""
    for s in (ins[0], outs[0]):
        if known(s):
            square(s)
            assign(ins, 0, s)
            assign(outs, 0, s, "out")


def _batch_scalar(a: tuple) -> tuple:
    """MXNet's reduction of the two matrix axes: the batch axes, or (1,) for one matrix."""
    return a[:-2] or (1,)


def _sumlogdiag_shape(p, ins, outs):
    if known(ins[0]):
        square(ins[0])
        assign(outs, 0, _batch_scalar(ins[0]), "out")


def _gelqf_shape(p, ins, outs):
    a = ins[0]
    if not known(a):
        return
    if len(a) < 2 or a[-2] > a[-1]:
        raise InferError(f"input A {fmt(a)} must hold matrices with at least as many columns "
                         f"as rows (LQ factorization of x by y matrices needs x <= y)")
    assign(outs, 0, a, "out")
    assign(outs, 1, a[:-1] + (a[-2],), "out")


def _syevd_shape(p, ins, outs):
    a = ins[0]
    if known(a):
        square(a)
        assign(outs, 0, a, "out")
        assign(outs, 1, a[:-1], "out")


def _det_shape(n_values: int):
    def rule(p, ins, outs):
        a = ins[0]
        if not known(a):
            return
        square(a)
        for k in range(n_values):
            assign(outs, k, _batch_scalar(a), "out")
        assign(outs, n_values, a, "out")
        assign(outs, n_values + 1, a[:-1], "out")
    return rule


def _det_gradient(short: str, n_values: int):
    """MXNet's ReduceDetGrad: the gradient of the last visible output (det, or logabsdet),
    then every output of the forward node (values, LU, pivot)."""
    def rule(g, node, og):
        heads = [og[n_values - 1]] + [Entry(node, i) for i in range(node.num_outputs)]
        return g.outputs(g.backward_node(node, f"_backward_linalg_{short}", heads))
    return rule


def _declare() -> None:
    lower = {"lower": Bool(True)}
    simple = [("potrf", lower, _square_same, ("A",), "out"),
              ("potri", lower, _square_same, ("A",), "inout"),
              ("inverse", {}, _square_same, ("A",), "out"),
              ("sumlogdiag", {}, _sumlogdiag_shape, ("A",), "in")]
    for short, params, shape, inputs, use in simple:
        bw = f"_backward_linalg_{short}"
        register_op(OpDef(f"_linalg_{short}", aliases=(f"linalg_{short}",), params=params,
                          inputs=inputs, infer_shape=shape, infer_type=la_type(),
                          gradient=la_gradient(bw, use != "out", use != "in")))
        bw_in = ("ograd",) + (("A",) if use != "out" else ()) + \
            (("output",) if use != "in" else ())
        backward_op(bw, inputs=bw_in, outputs=1, params=params)
    for short, aliases, outs, shape in (("gelqf", ("linalg_gelqf",), ("Q", "L"), _gelqf_shape),
                                        ("syevd", (), ("U", "L"), _syevd_shape)):
        # MXNet names multi-output heads output0, output1 (no FListOutputNames)
        register_op(OpDef(f"_linalg_{short}", aliases=aliases, inputs=("A",),
                          outputs=("output0", "output1"), infer_shape=shape,
                          infer_type=la_type(),
                          gradient=la_gradient(f"_backward_linalg_{short}", False, True)))
        backward_op(f"_backward_linalg_{short}", inputs=(f"d{outs[0]}", f"d{outs[1]}", *outs))
    for short, n_values, bw_in in (("det", 1, ("ddet", "det", "LU", "pivot")),
                                   ("slogdet", 2, ("dlogabsdet", "sign", "logabsdet", "LU",
                                                   "pivot"))):
        register_op(OpDef(f"_linalg_{short}", aliases=(f"linalg_{short}",), inputs=("A",),
                          outputs=tuple(f"output{k}" for k in range(n_values + 2)),
                          num_visible=n_values, infer_shape=_det_shape(n_values),
                          infer_type=la_type([None] * (n_values + 1) + [_INT32]),
                          gradient=_det_gradient(short, n_values)))
        backward_op(f"_backward_linalg_{short}", inputs=bw_in)


_declare()
