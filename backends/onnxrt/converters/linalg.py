"""Converters of the linalg operators ONNX expresses exactly: gemm / gemm2 (MatMul, Mul, Add;
a row axis other than -2 through Transpose), syrk (MatMul with a transposed copy), trmm
(Trilu then MatMul) and det (Det). The factorizations (potrf, potri, gelqf, syevd), the
solvers (trsm, inverse), slogdet and the diagonal/triangle copies have no ONNX operator and
stay region boundaries (tests/test_onnx_converters.py lists why)."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.linalg import gemm_axis

from ..convert import ConvertCall, converter


def _scaled(c: ConvertCall, x: str, factor: float, out: str | None, what: str) -> str:
    """``x`` times ``factor`` (no node for 1)."""
    if factor == 1.0:
        return x if out is None else c.b.one("Identity", [x], out)
    k = c.b.const(factor, c.out_dtypes[0], c.hint(f"{what}_k"))
    return c.b.one("Mul", [x, k], out, hint=c.hint(what))


def _swap_last(c: ConvertCall, x: str, ndim: int, what: str) -> str:
    perm = list(range(ndim - 2)) + [ndim - 1, ndim - 2]
    return c.b.one("Transpose", [x], hint=c.hint(what), perm=perm)


def _move_axis(c: ConvertCall, x: str, perm: list, what: str) -> str:
    return x if perm == sorted(perm) else c.b.one("Transpose", [x], hint=c.hint(what),
                                                   perm=perm)


@converter("_linalg_gemm", "_linalg_gemm2")
def _gemm(c: ConvertCall) -> None:
    """alpha op(A) op(B) (+ beta C) on the matrices (axis, last)."""
    p, ndim = c.p, len(c.in_shapes[0])
    ax = gemm_axis(p, ndim)
    perm = [i for i in range(ndim) if i != ax]
    perm.insert(ndim - 2, ax)
    back = [int(i) for i in np.argsort(perm)]
    a, b = (_move_axis(c, x, perm, f"in{k}") for k, x in enumerate(c.inputs[:2]))
    a = _swap_last(c, a, ndim, "ta") if p.transpose_a else a
    b = _swap_last(c, b, ndim, "tb") if p.transpose_b else b
    prod = c.b.one("MatMul", [a, b], hint=c.hint("mm"))
    final = c.out if perm == sorted(perm) else None
    if len(c.inputs) > 2:
        cc = _scaled(c, _move_axis(c, c.inputs[2], perm, "c"), p.beta, None, "beta")
        res = c.b.one("Add", [_scaled(c, prod, p.alpha, None, "alpha"), cc], final,
                      hint=c.hint("add"))
    else:
        res = _scaled(c, prod, p.alpha, final, "alpha")
    if final is None:
        c.b.one("Transpose", [res], c.out, perm=back)


@converter("_linalg_syrk")
def _syrk(c: ConvertCall) -> None:
    ndim = len(c.in_shapes[0])
    at = _swap_last(c, c.x, ndim, "t")
    pair = [at, c.x] if c.p.transpose else [c.x, at]
    _scaled(c, c.b.one("MatMul", pair, hint=c.hint("mm")), c.p.alpha, c.out, "alpha")


@converter("_linalg_trmm")
def _trmm(c: ConvertCall) -> None:
    p, ndim = c.p, len(c.in_shapes[0])
    tri = c.b.one("Trilu", [c.inputs[0]], hint=c.hint("tri"), upper=int(not p.lower))
    tri = _swap_last(c, tri, ndim, "t") if p.transpose else tri
    pair = [c.inputs[1], tri] if p.rightside else [tri, c.inputs[1]]
    _scaled(c, c.b.one("MatMul", pair, hint=c.hint("mm")), p.alpha, c.out, "alpha")


@converter("_linalg_det")
def _det(c: ConvertCall) -> None:
    """ONNX's Det drops the matrix axes; MXNet keeps (1,) for a single matrix."""
    if len(c.in_shapes[0]) > 2:
        c.b.one("Det", [c.x], c.out)
        return
    d = c.b.one("Det", [c.x], hint=c.hint("det"))
    c.b.one("Reshape", [d, c.b.ints([1], c.hint("shape"))], c.out)
