"""Cases for the dynamic-shape ops (core/ops/dynamic.py): the executor settles the output
shape from the index values at run time. More (MXNet's numbers, backends, re-settling) in
tests/test_dynamic_shapes.py."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _mask_inputs(rng, shape, dtype, index):
    if index == 0:
        return None  # uniform data
    flags = np.zeros(shape, dtype)
    kept = rng.permutation(shape[0])[: shape[0] // 2 + 1]
    flags[kept] = rng.choice([1, -2, 3], len(kept))
    return flags


def _boolean_mask(data, index, axis=0):
    return data[index != 0]


CASES += [
    OpCase("_contrib_boolean_mask", [(5, 3), (5,)], _boolean_mask, gen=_mask_inputs,
           grad_inputs=(0,)),
    OpCase("_contrib_boolean_mask", [(4, 2, 3), (4,)], _boolean_mask, gen=_mask_inputs,
           grad_inputs=(0,), id="3d"),
]
