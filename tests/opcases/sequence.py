"""Cases for SequenceMask, SequenceLast and SequenceReverse (core/ops/sequence.py). Lengths
are given as floats or ints (truncated, as MXNet reads them)."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _lengths(values, dtype="float32"):
    """gen making input 1 the given lengths."""
    def gen(rng, shape, dt, index):
        return np.array(values, dtype) if index == 1 else None
    return gen


def _lens(x, length, axis):
    if length is None:
        return [x.shape[axis]] * x.shape[1 - axis]
    return np.trunc(length).astype(int)


def _mask(x, length=None, use_sequence_length=False, value=0.0, axis=0):
    out = np.array(x, copy=True)
    for b, n in enumerate(_lens(x, length, axis)):
        if axis == 0:
            out[n:, b] = value
        else:
            out[b, n:] = value
    return out


def _last(x, length=None, use_sequence_length=False, axis=0):
    idx = _lens(x, length, axis)
    return np.stack([x[n - 1, b] if axis == 0 else x[b, n - 1] for b, n in enumerate(idx)])


def _reverse(x, length=None, use_sequence_length=False, axis=0):
    out = np.array(x, copy=True)
    for b, n in enumerate(_lens(x, length, axis)):
        out[:n, b] = x[:n, b][::-1]
    return out


LEN = dict(grad_inputs=(0,))
CASES += [
    OpCase("SequenceMask", [(4, 3, 2)], _mask),
    OpCase("SequenceMask", [(4, 3, 2), (3,)], _mask, gen=_lengths([1, 4.7, 0]), id="len",
           attrs={"use_sequence_length": True, "value": -1.5}, **LEN),
    OpCase("SequenceMask", [(3, 4, 2), (3,)], _mask, gen=_lengths([2, 3, 1], "int32"),
           attrs={"use_sequence_length": True, "axis": 1}, id="axis1", **LEN),
    OpCase("SequenceLast", [(4, 3, 2)], _last),
    OpCase("SequenceLast", [(4, 3, 2, 2), (3,)], _last, gen=_lengths([1, 4, 2.5]),
           attrs={"use_sequence_length": True}, id="len", **LEN),
    OpCase("SequenceLast", [(3, 4, 2), (3,)], _last, gen=_lengths([2, 4, 1], "int32"),
           attrs={"use_sequence_length": True, "axis": 1}, id="axis1", **LEN),
    OpCase("SequenceReverse", [(4, 3, 2)], _reverse),
    OpCase("SequenceReverse", [(4, 3, 2), (3,)], _reverse, gen=_lengths([3, 2, 4], "int32"),
           attrs={"use_sequence_length": True}, id="len", **LEN),
]
