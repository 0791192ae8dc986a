"""Cases for core/ops/misc.py (smooth_l1, softmin, softmax_cross_entropy, moments, diag, ...)
and the legacy comparison aliases."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
NOGRAD = dict(grad_inputs=())
F = ("float32", "float64")


def _smooth_l1(x, scalar=1.0):
    s2 = scalar ** 2
    return np.where(np.abs(x) < 1 / s2, 0.5 * s2 * x * x, np.abs(x) - 0.5 / s2)


def _softmin(x, axis=-1, temperature=None):
    z = -x.astype(np.float64) / (temperature or 1.0)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _label_gen(k, n):
    def gen(rng, shape, dtype, index):
        return rng.integers(0, n, size=shape).astype(dtype) if index == k else None
    return gen


def _sce(x, label):
    z = x.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(x)), label.astype(int)].sum().reshape(1)


def _moments(x, axes, keepdims=False):
    axes = tuple(axes)
    m = x.astype(np.float64).mean(axis=axes, keepdims=keepdims)
    v = x.astype(np.float64).var(axis=axes, keepdims=keepdims)
    return [m.reshape(-1) if m.ndim == 0 else m, v.reshape(-1) if v.ndim == 0 else v]


def _diag(x, k=0, axis1=0, axis2=1):
    return np.diag(x, k) if x.ndim == 1 else np.diagonal(x, k, axis1, axis2)


def _khatri_rao(*mats, num_args=None):
    acc = mats[0]
    for m in mats[1:]:
        acc = np.einsum("ik,jk->ijk", acc, m).reshape(-1, m.shape[1])
    return acc


CASES += [
    OpCase("smooth_l1", [(3, 4)], _smooth_l1),
    OpCase("smooth_l1", [(3, 4)], _smooth_l1, attrs={"scalar": 2.0}, id="sigma2"),
    OpCase("softmin", [(3, 5)], _softmin, dtypes=F, rtol=1e-4),
    OpCase("softmin", [(2, 3, 4)], _softmin, attrs={"axis": 1, "temperature": 2.0},
           id="axis-temperature", dtypes=F, rtol=1e-4),
    OpCase("softmax_cross_entropy", [(4, 5), (4,)], _sce, gen=_label_gen(1, 5), dtypes=F,
           grad_inputs=(0,), rtol=1e-4),
    OpCase("moments", [(3, 4, 2)], _moments, attrs={"axes": (0, 1, 2)}, dtypes=F, rtol=1e-4),
    OpCase("moments", [(3, 4, 2)], _moments, attrs={"axes": (0, 2), "keepdims": True},
           id="axes-keepdims", dtypes=F, rtol=1e-4),
    OpCase("diag", [(4,)], _diag),
    OpCase("diag", [(3,)], _diag, attrs={"k": -1}, id="vector-k"),
    OpCase("diag", [(3, 4)], _diag, attrs={"k": 1}, id="matrix-k"),
    OpCase("diag", [(2, 3, 4)], _diag, attrs={"k": -1, "axis1": 2, "axis2": 1}, id="3d"),
    OpCase("khatri_rao", [(2, 3), (3, 3)], _khatri_rao, attrs={"num_args": 2}, **NOGRAD),
    OpCase("khatri_rao", [(2, 2), (1, 2), (3, 2)], _khatri_rao, attrs={"num_args": 3},
           id="three", **NOGRAD),
]


def _scatter_gen(rng, shape, dtype, index):
    if index != 1:
        return None
    # distinct index columns: a repeated index makes the result order-dependent
    cols = rng.choice(12, size=shape[1], replace=False)
    return np.stack([cols // 4, cols % 4]).astype(dtype)


def _scatter_nd(data, ind, shape):
    out = np.zeros(shape, data.dtype)
    out[tuple(ind.astype(int))] = data
    return out


def _ravel(x, shape):
    return np.ravel_multi_index(tuple(x.astype(int)), shape).astype(x.dtype)


def _unravel(x, shape):
    """MXNet's: a vector of flat indices; the leading axis is not wrapped."""
    flat = x.astype(int)
    rows = [flat // int(np.prod(shape[1:]))]
    for k in range(1, len(shape)):
        rows.append(flat // int(np.prod(shape[k + 1:])) % shape[k])
    return np.array(rows).astype(x.dtype)


def _index_gen(high):
    def gen(rng, shape, dtype, index):
        return rng.integers(0, high, size=shape).astype(dtype)
    return gen


def _ravel_gen(rng, shape, dtype, index):
    return np.stack([rng.integers(0, d, size=shape[1:]) for d in (3, 4, 5)]).astype(dtype)


CASES += [
    OpCase("scatter_nd", [(5,), (2, 5)], _scatter_nd, attrs={"shape": (3, 4)},
           gen=_scatter_gen, grad_inputs=(0,)),
    OpCase("scatter_nd", [(5, 2), (2, 5)], _scatter_nd, attrs={"shape": (3, 4, 2)},
           gen=_scatter_gen, grad_inputs=(0,), id="trailing"),
    OpCase("_ravel_multi_index", [(3, 6)], _ravel, attrs={"shape": (3, 4, 5)},
           gen=_ravel_gen, dtypes=("float32", "int32"), **NOGRAD),
    OpCase("_unravel_index", [(6,)], _unravel, attrs={"shape": (3, 4, 5)},
           gen=_index_gen(80), dtypes=("float32", "int64"), **NOGRAD),
]


def _split_v2(x, indices=(), axis=1, squeeze_axis=False, sections=0):
    n = x.shape[axis]
    if sections:
        parts = np.array_split(x, sections, axis=axis)
    else:
        parts = np.split(x, list(indices[1:]), axis=axis)
    assert n == sum(p.shape[axis] for p in parts)
    return [np.squeeze(p, axis) if squeeze_axis else p for p in parts]


def _fill(lhs, mhs, rhs):
    out = lhs.copy()
    out[np.arange(len(lhs)), rhs.astype(int)] = mhs
    return out


def _slice_assign(lhs, rhs, begin, end, step=()):
    out = lhs.copy()
    out[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step or (None,) * len(begin)))] = rhs
    return out


def _slice_assign_scalar(x, begin, end, step=(), scalar=0.0):
    out = x.copy()
    out[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step or (None,) * len(begin)))] = \
        scalar
    return out


def _nonfinite_gen(rng, shape, dtype, index):
    x = rng.uniform(-1, 1, size=shape).astype(dtype)
    if index == 1:
        x.reshape(-1)[0] = np.inf
    return x


CASES += [
    OpCase("_split_v2", [(3, 7, 2)], _split_v2, attrs={"indices": (0, 2, 3), "axis": 1}),
    OpCase("_split_v2", [(5, 2)], _split_v2, attrs={"indices": (), "axis": 0, "sections": 3},
           id="sections"),
    OpCase("_split_v2", [(3, 2)], _split_v2, id="squeeze",
           attrs={"indices": (0, 1, 2), "axis": 0, "squeeze_axis": True}),
    OpCase("fill_element_0index", [(3, 4), (3,), (3,)], _fill, gen=_label_gen(2, 4),
           **NOGRAD),
    OpCase("_slice_assign", [(4, 5), (2, 2)], _slice_assign,
           attrs={"begin": (1, 0), "end": (3, 4), "step": (1, 2)}, **NOGRAD),
    OpCase("_slice_assign_scalar", [(4, 5, 2)], _slice_assign_scalar,
           attrs={"begin": (0, 1), "end": (4, 5), "step": (2, 3), "scalar": 1.5}, **NOGRAD),
    OpCase("all_finite", [(3, 4)], lambda x, init_output=True: np.ones(1, np.float32),
           **NOGRAD),
    OpCase("multi_all_finite", [(3,), (2, 2)], lambda *a, num_arrays=2: np.zeros(1),
           attrs={"num_arrays": 2}, gen=_nonfinite_gen, id="inf", **NOGRAD),
    OpCase("amp_cast", [(3, 4)], lambda x, dtype: x.astype(dtype) if x.dtype != np.float64
           else x, attrs={"dtype": "float16"}),
    OpCase("amp_multicast", [(3,), (2, 2)],
           lambda a, b, num_outputs, cast_narrow=False: [a, b],
           attrs={"num_outputs": 2}, dtypes=("float16", "float32")),
]

# legacy CamelCase aliases of the comparisons (MXNet 1.9.1 registers them)
_COMPARE = {"_Equal": np.equal, "_Not_Equal": np.not_equal, "_Greater": np.greater,
            "_Greater_Equal": np.greater_equal, "_Lesser": np.less,
            "_Lesser_Equal": np.less_equal, "_Logical_And": np.logical_and,
            "_Logical_Or": np.logical_or, "_Logical_Xor": np.logical_xor}
_SCALAR = {"_LogicalAndScalar": np.logical_and, "_LogicalOrScalar": np.logical_or,
           "_LogicalXorScalar": np.logical_xor}


def _int_gen(rng, shape, dtype, index):
    return rng.integers(-1, 2, size=shape).astype(dtype)


CASES += [OpCase(name, [(3, 4), (3, 4)], lambda a, b, f=f: f(a, b).astype(a.dtype),
                 gen=_int_gen, id="alias", **NOGRAD) for name, f in _COMPARE.items()]
CASES += [OpCase(name, [(3, 4)], lambda a, scalar, f=f: f(a, scalar).astype(a.dtype),
                 attrs={"scalar": 0.0}, gen=_int_gen, id="alias", **NOGRAD)
          for name, f in _SCALAR.items()]
