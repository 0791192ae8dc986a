"""Cases for core/ops/loss_extra.py: SVMOutput (forward only: a loss head's gradient ignores
the head gradient, tests/test_ops_misc.py checks it) and the CTC loss, against a brute-force
twin summing the probability of every alignment that collapses to the label."""
from __future__ import annotations

import itertools

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
F = ("float32", "float64")


def _collapse(path, blank):
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def _sequence(row, pad, length=None):
    row = [int(v) for v in row]
    if length is not None:
        return row[:int(length)]
    return row[:row.index(pad)] if pad in row else row


def ctc_twin(data, label, *lengths, use_data_lengths=False, use_label_lengths=False,
             blank_label="first"):
    T, N, C = data.shape
    lengths = list(lengths)
    dlen = lengths.pop(0) if use_data_lengths else np.full(N, T)
    llen = lengths.pop(0) if use_label_lengths else [None] * N
    blank = 0 if blank_label == "first" else C - 1
    pad = 0 if blank_label == "first" else -1
    z = data.astype(np.float64)
    prob = np.exp(z - z.max(-1, keepdims=True))
    prob /= prob.sum(-1, keepdims=True)
    out = np.zeros(N)
    for n in range(N):
        steps, target = int(dlen[n]), _sequence(label[n], pad, llen[n])
        total = sum(np.prod([prob[t, n, c] for t, c in enumerate(path)])
                    for path in itertools.product(range(C), repeat=steps)
                    if _collapse(path, blank) == target)
        out[n] = -np.log(total)
    return out


def _ctc_gen(labels, *lengths):
    def gen(rng, shape, dtype, index):
        if index == 0:
            return None
        return np.array(labels if index == 1 else lengths[index - 2], dtype)
    return gen


CASES += [
    OpCase("CTCLoss", [(4, 2, 3), (2, 2)], ctc_twin, gen=_ctc_gen([[1, 2], [2, 0]]),
           dtypes=F, grad_inputs=(0,), rtol=1e-4),
    OpCase("ctc_loss", [(4, 2, 3), (2, 3)], ctc_twin, id="blank-last-repeat",
           attrs={"blank_label": "last"}, gen=_ctc_gen([[1, 1, -1], [0, -1, -1]]),
           dtypes=F, grad_inputs=(0,), rtol=1e-4),
    OpCase("_contrib_ctc_loss", [(5, 2, 3), (2, 2), (2,), (2,)], ctc_twin, id="lengths",
           attrs={"use_data_lengths": True, "use_label_lengths": True},
           gen=_ctc_gen([[2, 1], [1, 1]], [3, 5], [1, 2]), dtypes=F, grad_inputs=(0,),
           rtol=1e-4),
    OpCase("SVMOutput", [(3, 4), (3,)], lambda x, label, **kw: x,
           gen=lambda rng, s, dt, i: rng.integers(0, 4, s).astype(dt) if i == 1 else None,
           grad_inputs=()),
]
