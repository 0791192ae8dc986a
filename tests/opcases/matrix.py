"""Cases for dot and batch_dot (core/ops/matrix.py); twins use einsum / tensordot in float64."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
F16 = dict(rtol=2e-2, atol=2e-2)


def _dot(a, b, transpose_a=False, transpose_b=False):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    out = np.tensordot(a, b, axes=([0 if transpose_a else a.ndim - 1],
                                   [b.ndim - 1 if transpose_b else 0]))
    return out.reshape(out.shape or (1,))


def _batch_dot(a, b, transpose_a=False, transpose_b=False):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.einsum("...ij,...jk->...ik", np.swapaxes(a, -1, -2) if transpose_a else a,
                     np.swapaxes(b, -1, -2) if transpose_b else b)


for shapes, ta, tb, tag in ((((3, 4), (4, 5)), False, False, "2d"),
                            (((4, 3), (4, 5)), True, False, "ta"),
                            (((3, 4), (5, 4)), False, True, "tb"),
                            (((4, 3), (5, 4)), True, True, "ta-tb"),
                            (((2, 3, 4), (4, 5)), False, False, "3d-2d"),
                            (((2, 3, 4), (4, 5, 6)), False, False, "3d-3d"),
                            (((2, 3, 4), (2, 5)), True, False, "3d-ta"),
                            (((2, 3, 4), (5, 6, 4)), False, True, "3d-tb"),
                            (((2, 3, 4), (4, 2)), True, True, "3d-ta-tb"),
                            (((4,), (4,)), False, False, "vectors"),
                            (((4,), (5, 4)), False, True, "vector-tb"),
                            (((4, 3), (4,)), True, False, "ta-vector")):
    attrs = {k: True for k, v in (("transpose_a", ta), ("transpose_b", tb)) if v}
    CASES.append(OpCase("dot", list(shapes), _dot, attrs=attrs, id=tag, **F16))
CASES.append(OpCase("dot", [(3, 4), (4, 2)], _dot, id="int", dtypes=("int32",), low=-5, high=5))

for shapes, ta, tb, tag in ((((2, 3, 4), (2, 4, 5)), False, False, "plain"),
                            (((2, 4, 3), (2, 4, 5)), True, False, "ta"),
                            (((2, 3, 4), (2, 5, 4)), False, True, "tb"),
                            (((2, 4, 3), (2, 5, 4)), True, True, "ta-tb"),
                            (((3, 2, 3, 4), (3, 2, 4, 5)), False, False, "4d"),
                            (((3, 2, 4, 3), (3, 2, 5, 4)), True, True, "4d-ta-tb")):
    attrs = {k: True for k, v in (("transpose_a", ta), ("transpose_b", tb)) if v}
    CASES.append(OpCase("batch_dot", list(shapes), _batch_dot, attrs=attrs, id=tag, **F16))
