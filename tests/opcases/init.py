"""Cases for the init family (no inputs: the shape comes from the attribute)."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES = [
    OpCase("_zeros", [], lambda shape: np.zeros(shape), attrs={"shape": (2, 3)}),
    OpCase("_ones", [], lambda shape: np.ones(shape), attrs={"shape": (2, 3)}),
    OpCase("_full", [], lambda shape, value: np.full(shape, value),
           attrs={"shape": (4,), "value": 2.5}),
]
