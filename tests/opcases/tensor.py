"""Cases for the shape-manipulation ops (core/ops/tensor.py). Reshape's expected shapes were
read off MXNet 1.9.1's infer_shape; the twins only reshape to them."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
INT = dict(dtypes=("int32",), low=-50, high=50)


def _reshape(in_shape, attrs, expected, id, **kw):
    return OpCase("Reshape", [in_shape], lambda x, **_: x.reshape(expected), attrs=attrs, id=id,
                  **kw)


CASES += [
    OpCase("Flatten", [(2, 3, 4)], lambda x: x.reshape(2, 12)),
    OpCase("flatten", [(5,)], lambda x: x.reshape(5, 1), id="1d"),
    _reshape((2, 6, 4), {"shape": (-1, 0)}, (8, 6), "infer-copy"),
    _reshape((2, 6, 4), {"shape": (-1, 0), "reverse": True}, (12, 4), "reverse"),
    _reshape((2, 3, 4), {"shape": (4, 0, 2)}, (4, 3, 2), "copy-middle"),
    _reshape((2, 3, 4), {"shape": (6, 1, -1)}, (6, 1, 4), "infer-last"),
    _reshape((2, 3, 4), {"shape": (-2, 1, 1)}, (2, 3, 4, 1, 1), "copy-rest"),
    _reshape((2, 3, 4), {"shape": (-2, -1)}, (2, 3, 4, 1), "copy-rest-infer"),
    _reshape((2, 3, 4, 5), {"shape": (-3, -2)}, (6, 4, 5), "merge"),
    _reshape((2, 3, 4, 5), {"shape": (-3, -3)}, (6, 20), "merge-twice"),
    _reshape((2, 3, 4), {"shape": (2, -4, -1, 3, -2)}, (2, 1, 3, 4), "split-infer"),
    _reshape((2, 3, 4), {"shape": (-4, 1, 2, -2)}, (1, 2, 3, 4), "split"),
    _reshape((4, 3, 2), {"shape": (-2, -3), "reverse": True}, (4, 6), "reverse-merge"),
    _reshape((2, 3, 4), {"target_shape": (0, 6)}, (4, 6), "target-shape"),
    _reshape((2, 3, 4), {"target_shape": (3, 0), "keep_highest": True}, (2, 12), "keep-highest"),
    _reshape((2, 3, 4), {"shape": (0, -1)}, (2, 12), "int", **INT),
    OpCase("reshape", [(6,)], lambda x, shape: x.reshape(shape), attrs={"shape": (2, 3)},
           id="alias"),
]

CASES += [
    OpCase("transpose", [(2, 3, 4)], lambda x: x.transpose()),
    OpCase("transpose", [(2, 3, 4)], lambda x, axes: x.transpose(axes), attrs={"axes": (1, 0, 2)},
           id="axes"),
    OpCase("transpose", [(2, 3, 4, 5)], lambda x, axes: np.transpose(x, axes),
           attrs={"axes": (3, 0, -2, 1)}, id="negative"),
    OpCase("transpose", [(2, 3, 4)], lambda x, axes: x.transpose(axes), attrs={"axes": (2, 0, 1)},
           id="int", **INT),
    OpCase("SwapAxis", [(2, 3, 4)], lambda x, dim1, dim2: np.swapaxes(x, dim1, dim2),
           attrs={"dim1": 0, "dim2": 2}),
    OpCase("swapaxes", [(2, 3, 4)], lambda x, dim1, dim2: np.swapaxes(x, dim1, dim2),
           attrs={"dim1": -1, "dim2": 1}, id="negative"),
    OpCase("SwapAxis", [(2, 3)], lambda x: x, id="default"),
]
for axis in (0, 2, -1, -3):
    CASES.append(OpCase("expand_dims", [(2, 3)], lambda x, axis: np.expand_dims(x, axis),
                        attrs={"axis": axis}, id=f"axis{axis}"))
CASES += [
    OpCase("squeeze", [(1, 3, 1, 4)], lambda x: x.reshape(3, 4)),
    OpCase("squeeze", [(1, 3, 1, 4)], lambda x, axis: x.reshape(3, 1, 4), attrs={"axis": 0},
           id="axis"),
    OpCase("squeeze", [(1, 3, 1, 4)], lambda x, axis: x.reshape(3, 4), attrs={"axis": (0, -2)},
           id="axes"),
    OpCase("squeeze", [(1, 1)], lambda x: x.reshape(1), id="all-ones"),
]
for reps in ((2,), (2, 1), (1, 2, 3), (2, 1, 1, 2), ()):
    CASES.append(OpCase("tile", [(2, 3, 4)], lambda x, reps: np.tile(x, reps),
                        attrs={"reps": reps}, id=f"reps{len(reps)}-{reps[:1]}"))
for repeats, axis in ((2, None), (3, 0), (2, -1), (2, 1)):
    attrs = {"repeats": repeats} if axis is None else {"repeats": repeats, "axis": axis}
    CASES.append(OpCase("repeat", [(2, 3, 4)], lambda x, repeats, axis=None:
                        np.repeat(x, repeats, axis), attrs=attrs, id=f"axis{axis}"))
for axis in ((0,), (1, 2), (-1,), 1):
    CASES.append(OpCase("reverse", [(2, 3, 4)], lambda x, axis: np.flip(x, axis),
                        attrs={"axis": axis}, id=f"axis{axis}"))
CASES.append(OpCase("flip", [(3, 2)], lambda x, axis: x[::-1], attrs={"axis": 0}, id="alias"))

CASES += [
    OpCase("broadcast_to", [(1, 3, 1)], lambda x, shape: np.broadcast_to(x, shape),
           attrs={"shape": (2, 3, 4)}),
    OpCase("broadcast_to", [(2, 1, 1)], lambda x, shape: np.broadcast_to(x, (2, 3, 4)),
           attrs={"shape": (0, 3, 4)}, id="keep"),
    OpCase("broadcast_axis", [(1, 3, 1)], lambda x, axis, size: np.broadcast_to(x, (2, 3, 4)),
           attrs={"axis": (0, 2), "size": (2, 4)}),
    OpCase("broadcast_axes", [(1, 3, 1)], lambda x, axis, size: np.broadcast_to(x, (1, 3, 4)),
           attrs={"axis": -1, "size": 4}, id="negative"),
    OpCase("broadcast_like", [(1, 3, 1), (2, 3, 4)], lambda x, y: np.broadcast_to(x, y.shape)),
    OpCase("broadcast_like", [(1, 3, 1), (2, 3, 5)],
           lambda x, y, lhs_axes, rhs_axes: np.broadcast_to(x, (2, 3, 5)),
           attrs={"lhs_axes": (0, 2), "rhs_axes": (0, -1)}, id="axes"),
    OpCase("broadcast_like", [(1, 3), (4, 3, 2)],
           lambda x, y, lhs_axes, rhs_axes: np.broadcast_to(x, (2, 3)),
           attrs={"lhs_axes": (0,), "rhs_axes": (2,)}, id="cross-rank"),
]
