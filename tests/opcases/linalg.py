"""Cases for the linalg family (core/ops/linalg.py, linalg_factor.py): numpy twins in float64.

Inputs are generated so that each factorization exists and is well conditioned (symmetric
positive definite for potrf, a triangular factor with a large diagonal for potri/trsm, a
symmetric matrix with distinct eigenvalues for syevd). potrf and syevd read one triangle
of A but, as MXNet, give a symmetric gradient: finite differences over single entries cannot
check that, so their gradients are checked against MXNet's values (tests/test_ops_linalg.py).
"""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
F = ("float32", "float64")
TOL = dict(rtol=1e-4, atol=1e-4)


def _t(a):
    return np.swapaxes(a, -1, -2)


def _tri(a, lower=True):
    return np.tril(a) if lower else np.triu(a)


def _spd(rng, shape, dtype, index):
    a = rng.uniform(-1, 1, shape)
    return (a @ _t(a) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _factor(rng, shape, dtype, index):
    """Triangular-factor-like input: a dominant positive diagonal (both triangles filled, so
    that reading the wrong one shows)."""
    if index:
        return None
    return (rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1])).astype(dtype)


def _symmetric(rng, shape, dtype, index):
    a = rng.uniform(-1, 1, shape)
    return ((a + _t(a)) / 2 + np.diag(np.arange(shape[-1]) * 2.0)).astype(dtype)


def _well(rng, shape, dtype, index):
    return (rng.uniform(-1, 1, shape) + 2 * np.eye(shape[-2], shape[-1])).astype(dtype)


def _gemm(a, b, c=None, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0, axis=-2):
    a, b = (np.moveaxis(np.asarray(x, np.float64), axis, -2) for x in (a, b))
    res = alpha * ((_t(a) if transpose_a else a) @ (_t(b) if transpose_b else b))
    if c is not None:
        res = res + beta * np.moveaxis(np.asarray(c, np.float64), axis, -2)
    return np.moveaxis(res, -2, axis)


def _gemm2(a, b, **kw):
    return _gemm(a, b, None, **kw)


for shapes, attrs, tag in ((((3, 4), (4, 5), (3, 5)), {}, "2d"),
                           (((2, 4, 3), (2, 5, 4), (2, 3, 5)),
                            {"transpose_a": True, "transpose_b": True, "alpha": 0.5,
                             "beta": -2.0}, "batch-t"),
                           (((3, 2, 4), (4, 2, 5), (3, 2, 5)), {"axis": 0}, "axis0")):
    CASES.append(OpCase("_linalg_gemm", list(shapes), _gemm, attrs=attrs, id=tag, dtypes=F))
    attrs2 = {k: v for k, v in attrs.items() if k != "beta"}
    CASES.append(OpCase("_linalg_gemm2", list(shapes[:2]), _gemm2, attrs=attrs2, id=tag,
                        dtypes=F))


def _trmm(a, b, transpose=False, rightside=False, lower=True, alpha=1.0):
    m = _tri(np.asarray(a, np.float64), lower)
    m = _t(m) if transpose else m
    return alpha * (b @ m if rightside else m @ b)


def _trsm(a, b, transpose=False, rightside=False, lower=True, alpha=1.0):
    m = _tri(np.asarray(a, np.float64), lower)
    m = _t(m) if transpose else m
    return alpha * (b @ np.linalg.inv(m) if rightside else np.linalg.inv(m) @ b)


for attrs, bshape, tag in (({}, (2, 3, 4), "left"),
                           ({"transpose": True, "lower": False, "alpha": 2.0}, (2, 3, 4), "tu"),
                           ({"rightside": True}, (2, 4, 3), "right"),
                           ({"rightside": True, "transpose": True, "lower": False},
                            (2, 4, 3), "right-tu")):
    CASES.append(OpCase("_linalg_trmm", [(2, 3, 3), bshape], _trmm, attrs=attrs, id=tag,
                        dtypes=F, gen=_factor))
    CASES.append(OpCase("_linalg_trsm", [(2, 3, 3), bshape], _trsm, attrs=attrs, id=tag,
                        dtypes=F, gen=_factor, **TOL))


def _syrk(a, transpose=False, alpha=1.0):
    a = np.asarray(a, np.float64)
    return alpha * (_t(a) @ a if transpose else a @ _t(a))


CASES += [OpCase("_linalg_syrk", [(2, 3, 4)], _syrk, id="plain", dtypes=F),
          OpCase("_linalg_syrk", [(3, 4)], _syrk, attrs={"transpose": True, "alpha": 0.5},
                 id="t", dtypes=F)]


def _potrf(a, lower=True):
    a = np.asarray(a, np.float64)
    low = np.linalg.cholesky(np.tril(a) + _t(np.tril(a, -1)) if lower
                             else np.triu(a) + _t(np.triu(a, 1)))
    return low if lower else _t(low)


def _potri(a, lower=True):
    m = _tri(np.asarray(a, np.float64), lower)
    return np.linalg.inv(m @ _t(m) if lower else _t(m) @ m)


for lower in (True, False):
    tag = "lower" if lower else "upper"
    CASES.append(OpCase("_linalg_potrf", [(2, 3, 3)], _potrf, attrs={"lower": lower}, id=tag,
                        dtypes=F, gen=_spd, grad_inputs=(), **TOL))
    CASES.append(OpCase("_linalg_potri", [(2, 3, 3)], _potri, attrs={"lower": lower}, id=tag,
                        dtypes=F, gen=_factor, **TOL))


def _sumlogdiag(a):
    d = np.log(np.diagonal(np.asarray(a, np.float64), 0, -2, -1)).sum(-1)
    return d.reshape(d.shape or (1,))


def _inverse(a):
    return np.linalg.inv(np.asarray(a, np.float64))


def _det(a):
    d = np.linalg.det(np.asarray(a, np.float64))
    return d.reshape(d.shape or (1,))


def _slogdet(a):
    s, d = np.linalg.slogdet(np.asarray(a, np.float64))
    return [s.reshape(s.shape or (1,)), d.reshape(d.shape or (1,))]


CASES += [OpCase("_linalg_sumlogdiag", [(2, 3, 3)], _sumlogdiag, dtypes=F, gen=_factor),
          OpCase("_linalg_sumlogdiag", [(3, 3)], _sumlogdiag, id="single", dtypes=F,
                 gen=_factor),
          OpCase("_linalg_inverse", [(2, 3, 3)], _inverse, dtypes=F, gen=_well, **TOL),
          OpCase("_linalg_det", [(2, 3, 3)], _det, dtypes=F, gen=_well, **TOL),
          OpCase("_linalg_det", [(3, 3)], _det, id="single", dtypes=F, gen=_well, **TOL),
          OpCase("_linalg_slogdet", [(2, 3, 3)], _slogdet, dtypes=F, gen=_well, **TOL)]


def _gelqf(a):
    q, r = np.linalg.qr(_t(np.asarray(a, np.float64)))
    return [_t(q), _t(r)]


def _syevd(a):
    w, v = np.linalg.eigh(np.asarray(a, np.float64))
    u = _t(v)
    k = np.abs(u).argmax(-1)[..., None]
    return [u * np.where(np.take_along_axis(u, k, -1) < 0, -1, 1), w]


CASES += [OpCase("_linalg_gelqf", [(2, 3, 4)], _gelqf, dtypes=F, gen=_well, **TOL),
          OpCase("_linalg_syevd", [(2, 3, 3)], _syevd, dtypes=F, gen=_symmetric,
                 grad_inputs=(), **TOL)]


def _diag_index(n, k):
    i = np.arange(n - abs(k))
    return i + max(-k, 0), i + max(k, 0)


def _extractdiag(a, offset=0):
    r, c = _diag_index(a.shape[-1], offset)
    return np.asarray(a)[..., r, c]


def _makediag(a, offset=0):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n))
    r, c = _diag_index(n, offset)
    out[..., r, c] = a
    return out


def _trian_index(n, offset, lower):
    pairs = [(r, c) for r in range(abs(offset), n) for c in range(r - abs(offset) + 1)]
    if offset > 0 or (offset == 0 and not lower):
        pairs = [(c, r) for r, c in pairs]
    return tuple(np.array(x, int) for x in zip(*pairs))


def _extracttrian(a, offset=0, lower=True):
    r, c = _trian_index(a.shape[-1], offset, lower)
    return np.asarray(a)[..., r, c]


def _maketrian(a, offset=0, lower=True):
    m = int(round((np.sqrt(8 * a.shape[-1] + 1) - 1) / 2))
    n = m + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n))
    out[(...,) + _trian_index(n, offset, lower)] = a
    return out


for offset in (0, 1, -2):
    CASES += [OpCase("_linalg_extractdiag", [(2, 4, 4)], _extractdiag,
                     attrs={"offset": offset}, id=f"k{offset}", dtypes=F),
              OpCase("_linalg_makediag", [(2, 3)], _makediag, attrs={"offset": offset},
                     id=f"k{offset}", dtypes=F)]
for offset, lower in ((0, True), (0, False), (1, True), (-1, False)):
    attrs = {"offset": offset, "lower": lower}
    CASES += [OpCase("_linalg_extracttrian", [(2, 4, 4)], _extracttrian, attrs=attrs,
                     id=f"k{offset}-{lower}", dtypes=F),
              OpCase("_linalg_maketrian", [(2, 6)], _maketrian, attrs=attrs,
                     id=f"k{offset}-{lower}", dtypes=F)]
