"""Linear algebra on batches of matrices (MXNet's ``_linalg_*``, aliases ``linalg_*``): the
products gemm, gemm2, trmm, trsm, syrk and the diagonal/triangle copies extractdiag, makediag,
extracttrian, maketrian. The factorizations live in ``linalg_factor``.

Every operator works on the trailing two axes (gemm/gemm2: the ``axis`` given and the last);
leading axes are batch axes that must agree. Like MXNet 1.9.1 they take float32 and float64
only. Each gradient is one ``_backward_linalg_<op>`` node reading what MXNet's reads (the
output gradients, then the inputs and/or outputs), so backward graphs match MXNet's.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import Bool, Float, InferError, Int, OpDef, assign, fmt, known, register_op
from .tensor_grad import backward_op

__all__ = ["la_type", "square", "batch_of", "la_gradient", "gemm_axis"]


def la_type(out_dtypes=None):
    """A dtype rule: every input one float32/float64 dtype; outputs that dtype, or
    ``out_dtypes[k]`` where that is given (det's integer pivot)."""
    def rule(p, ins, outs):
        t = next((v for v in (*ins, *outs[:1]) if v is not None), None)
        if t is None:
            return
        if t.name not in ("float32", "float64"):
            raise InferError(f"linear algebra operators take float32 or float64 data, got {t}")
        for i, v in enumerate(ins):
            if v is not None and v != t:
                raise InferError(f"input {i} is {v} but input 0 is {t}: every input must "
                                 f"have one dtype")
            ins[i] = t
        for k in range(len(outs)):
            fixed = out_dtypes[k] if out_dtypes and out_dtypes[k] is not None else t
            want = np.dtype(fixed)
            if outs[k] is not None and outs[k] != want:
                raise InferError(f"output {k} is {outs[k]}, expected {want}")
            outs[k] = want
    return rule


def square(shape: tuple, what: str = "A") -> int:
    """The order of the square matrices ``shape`` holds; InferError otherwise."""
    if len(shape) < 2:
        raise InferError(f"input {what} {fmt(shape)} must be a tensor of matrices (at least "
                         f"2 dimensions)")
    if shape[-1] != shape[-2]:
        raise InferError(f"input {what} {fmt(shape)} must hold square matrices: its last two "
                         f"dimensions {shape[-2]} and {shape[-1]} differ")
    return shape[-1]


def batch_of(a: tuple, b: tuple, skip: tuple, names=("A", "B")) -> None:
    """Check that ``a`` and ``b`` agree on every axis but those in ``skip``."""
    if len(a) != len(b):
        raise InferError(f"inputs {names[0]} {fmt(a)} and {names[1]} {fmt(b)} must have the "
                         f"same number of dimensions")
    for i, (x, y) in enumerate(zip(a, b)):
        if i not in skip and x != y:
            raise InferError(f"inputs {names[0]} {fmt(a)} and {names[1]} {fmt(b)} must have "
                             f"the same shape except on the matrix axes; axis {i} differs")


def la_gradient(bw_name: str, use_in: bool = True, use_out: bool = False,
                ograds: int | None = None):
    """MXNet's ElemwiseGradUse{In,Out,InOut,None}: one backward node reading the output
    gradients (the first ``ograds`` of them), then the inputs and/or the outputs."""
    def rule(g, node, og):
        heads = list(og[:ograds] if ograds else og)
        if use_in:
            heads += list(node.inputs)
        if use_out:
            heads += [Entry(node, i) for i in range(node.num_outputs)]
        return g.outputs(g.backward_node(node, bw_name, heads))
    return rule


# -- gemm / gemm2 ------------------------------------------------------------------------------
def gemm_axis(p, ndim: int) -> int:
    """The row axis of gemm/gemm2 as a non-negative index (the columns are the last axis)."""
    axis = p.axis + ndim if p.axis < 0 else p.axis
    if not 0 <= axis < ndim - 1:
        raise InferError(f"axis {p.axis} is not a valid row axis for inputs of {ndim} "
                         f"dimensions: it must lie in [{-ndim}, {ndim - 2}] and not be the "
                         f"last axis")
    return axis


def _gemm_shape(p, ins, outs):
    a, b = ins[0], ins[1]
    if not (known(a) and known(b)) or len(a) < 2:
        return
    where = f"A {fmt(a)} and B {fmt(b)} (transpose_a={p.transpose_a}, " \
            f"transpose_b={p.transpose_b}, axis={p.axis})"
    if len(a) != len(b):
        raise InferError(f"{where}: A and B must have the same number of dimensions")
    ax, last = gemm_axis(p, len(a)), len(a) - 1
    batch_of(a, b, (ax, last))
    k1 = a[ax] if p.transpose_a else a[last]
    k2 = b[last] if p.transpose_b else b[ax]
    if k1 != k2:
        raise InferError(f"{where}: incompatible matrix dimensions for multiplication "
                         f"({k1} != {k2})")
    out = list(a)
    out[ax] = a[last] if p.transpose_a else a[ax]
    out[last] = b[ax] if p.transpose_b else b[last]
    assign(outs, 0, tuple(out), "out")
    if len(ins) > 2:
        assign(ins, 2, tuple(out))


# -- trmm / trsm -------------------------------------------------------------------------------
def _triang_shape(p, ins, outs):
    a, b = ins
    if known(a) and known(b) and len(a) >= 2:
        n = square(a)
        batch_of(a, b, (len(a) - 2, len(a) - 1))
        if p.rightside:
            if b[-1] != n:
                raise InferError(f"B {fmt(b)} * A {fmt(a)} (rightside=True): incompatible "
                                 f"matrix dimensions for multiplication ({b[-1]} != {n})")
        elif b[-2] != n:
            raise InferError(f"A {fmt(a)} * B {fmt(b)}: incompatible matrix dimensions for "
                             f"multiplication ({n} != {b[-2]})")
        assign(outs, 0, b, "out")
    elif known(outs[0]) and len(outs[0]) >= 2:
        o = outs[0]
        n = o[-1] if p.rightside else o[-2]
        assign(ins, 0, o[:-2] + (n, n))
        assign(ins, 1, o)


def _syrk_shape(p, ins, outs):
    a = ins[0]
    if known(a) and len(a) >= 2:
        n = a[-1] if p.transpose else a[-2]
        assign(outs, 0, a[:-2] + (n, n), "out")
    elif a is not None and len(a) < 2:
        raise InferError(f"input A {fmt(a)} must be a tensor of matrices")


# -- diagonals and triangles -------------------------------------------------------------------
def _diag_trian_shape(diag: bool, extract: bool):
    def rule(p, ins, outs):
        a = ins[0]
        if not known(a) or not a:
            return
        if extract:
            n = square(a)
            m = n - abs(p.offset)
            if m <= 0:
                raise InferError(f"offset {p.offset} leaves no diagonal in matrices of order "
                                 f"{n} (A {fmt(a)}): |offset| must be below {n}")
            out = a[:-2] + ((m,) if diag else (m * (m + 1) // 2,))
        elif diag:
            n = a[-1] + abs(p.offset)
            out = a[:-1] + (n, n)
        else:
            size = a[-1]
            m = int((((8 * size + 1) ** 0.5) - 1) / 2 + 0.5)
            if m * (m + 1) // 2 != size or size == 0:
                raise InferError(f"the last axis of A {fmt(a)} holds {size} entries, not a "
                                 f"triangle's (a number m*(m+1)/2 with m >= 1)")
            out = a[:-1] + (m + abs(p.offset),) * 2
        assign(outs, 0, out, "out")
    return rule


def _declare() -> None:
    mult = {"transpose_a": Bool(False), "transpose_b": Bool(False), "alpha": Float(1.0),
            "axis": Int(-2)}
    triang = {"transpose": Bool(False), "rightside": Bool(False), "lower": Bool(True),
              "alpha": Float(1.0)}
    diag, trian = {"offset": Int(0)}, {"offset": Int(0), "lower": Bool(True)}
    specs = [
        ("gemm", ("A", "B", "C"), {**mult, "beta": Float(1.0)}, _gemm_shape, "in"),
        ("gemm2", ("A", "B"), mult, _gemm_shape, "in"),
        ("trmm", ("A", "B"), triang, _triang_shape, "in"),
        ("trsm", ("A", "B"), triang, _triang_shape, "inout"),
        ("syrk", ("A",), {"transpose": Bool(False), "alpha": Float(1.0)}, _syrk_shape, "in"),
        ("extractdiag", ("A",), diag, _diag_trian_shape(True, True), "none"),
        ("makediag", ("A",), diag, _diag_trian_shape(True, False), "none"),
        ("extracttrian", ("A",), trian, _diag_trian_shape(False, True), "none"),
        ("maketrian", ("A",), trian, _diag_trian_shape(False, False), "none"),
    ]
    for short, inputs, params, shape, use in specs:
        bw = f"_backward_linalg_{short}"
        register_op(OpDef(f"_linalg_{short}", aliases=(f"linalg_{short}",), params=params,
                          inputs=inputs, infer_shape=shape, infer_type=la_type(),
                          gradient=la_gradient(bw, use != "none", use == "inout")))
        bw_inputs = ("ograd",) + (inputs if use != "none" else ()) + \
            (("output",) if use == "inout" else ())
        backward_op(bw, inputs=bw_inputs, outputs=len(inputs), params=params)


_declare()
