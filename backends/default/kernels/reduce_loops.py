"""MXNet's CPU reductions as loops for numba (source only: the compiled-loops module,
:mod:`.compiled`, compiles them; as Python they are never called).

MXNet 1.9.1 reduces each output element on its own, sequentially over the reduced elements
in row-major order of the reduced axes (``seq_reduce_assign``), in the data's own type:

- ``SUM`` (``mshadow::red::sum``: sum, mean, the gradients of broadcasting): Kahan's
  compensated sum, y = x - c, t = s + y, c = (t - s) - y, s = t, the compensation reset to 0
  where t is infinite;
- ``NANSUM`` (``mshadow_op::nansum``): the same, NaN skipped, the compensation never reset
  (so anything after an infinity gives NaN, as MXNet's does);
- ``ABSSUM`` (the 1-norm): ``NANSUM``'s sequence over |x| without the skipping;
- ``PROD`` / ``NANPROD``: s = s * x in order (NaN skipped by the second);
- ``NRM2`` (the 2-norm, ``mshadow_op::nrm2``): LAPACK's scaled sum of squares, for x != 0
  with a = |x|: where scale < a, ssq = 1 + ssq * (scale / a) * (scale / a) and scale = a,
  else ssq = ssq + (a / scale) * (a / scale); the result scale * sqrt(ssq).

float16 data is taken as float32 (exactly) with ``half``: every operation's float32 result
rounded to float16 as MXNet's ``half_t`` arithmetic rounds it (:func:`_half`), the 2-norm's
last product (float32 in MXNet) rounded once. Rows (``_reduce_rows``, the reduced elements
of an output contiguous in a row) one after another; columns (``_reduce_columns``, data (M,
N) reduced over its first axis) take the N outputs in blocks, each block's running sums
kept in arrays while the M rows stream past. Both take a range of outputs, so that the
host's threads can share them (:mod:`.reducers`).
"""
from __future__ import annotations

import math

import numpy as np

#: the reducers (the ``op`` argument of the loops; the compiled module defines the same names)
REDUCERS = ("SUM", "NANSUM", "ABSSUM", "PROD", "NANPROD", "NRM2")
SUM, NANSUM, ABSSUM, PROD, NANPROD, NRM2 = range(len(REDUCERS))
#: the columns whose running values the loop over columns keeps at a time (the compiled
#: module defines it too)
COLUMNS = 512


def _half(v):  # pragma: no cover - numba's
    """v (float32) rounded to the nearest float16 value, ties to even, beyond 65504 to an
    infinity (as a float32)."""
    d = np.float64(v)
    if d != d or d == np.inf or d == -np.inf:
        return v
    _, e = math.frexp(d)
    q = math.ldexp(1.0, max(e - 11, -24))
    r = np.rint(d / q) * q
    if abs(r) > 65504.0:
        r = math.copysign(np.inf, d)
    return np.float32(r)


def _rounded(v, half):  # pragma: no cover - numba's
    """v, rounded to float16 with ``half``."""
    if half:
        return _half(v)
    return v


def _start(op, one):  # pragma: no cover - numba's
    """(running value, its companion) before the first element: 1 for products, else 0;
    the companion (Kahan's compensation, the 2-norm's scale) 0."""
    zero = one - one
    if op == PROD or op == NANPROD:
        return one, zero
    return zero, zero


def _step(op, s, c, v, one, half):  # pragma: no cover - numba's
    """(s, c) after element v (see the module's docstring)."""
    if (op == NANSUM or op == NANPROD) and v != v:
        return s, c
    if op == PROD or op == NANPROD:
        return _rounded(s * v, half), c
    if op == NRM2:
        if v != 0:
            a = abs(v)
            if c < a:
                q = _rounded(c / a, half)
                return _rounded(one + _rounded(_rounded(s * q, half) * q, half), half), a
            q = _rounded(a / c, half)
            return _rounded(s + _rounded(q * q, half), half), c
        return s, c
    if op == ABSSUM:
        v = abs(v)
    y = _rounded(v - c, half)
    t = _rounded(s + y, half)
    if op == SUM and (t == np.inf or t == -np.inf):
        return t, one - one
    return t, _rounded(_rounded(t - s, half) - y, half)


def _finish(op, s, c, half):  # pragma: no cover - numba's
    """The reduction's value from (s, c)."""
    if op == NRM2:
        return _rounded(c * np.sqrt(s), half)
    return s


def _reduce_rows(x, out, op, one, half, r0, r1):  # pragma: no cover - numba's
    """out[i] = the reduction ``op`` of row x[i] (x (N, M), C-contiguous) for the rows
    [r0, r1)."""
    for i in range(r0, r1):
        s, c = _start(op, one)
        for k in range(x.shape[1]):
            s, c = _step(op, s, c, x[i, k], one, half)
        out[i] = _finish(op, s, c, half)


def _reduce_columns(x, out, op, one, half, j0, j1):  # pragma: no cover - numba's
    """out[j] = the reduction ``op`` of column x[:, j] (x (M, N), C-contiguous) for the
    columns [j0, j1), COLUMNS of them at a time: their running values kept in arrays while
    the M rows stream past."""
    sums = np.empty(min(COLUMNS, j1 - j0), out.dtype)
    comps = np.empty_like(sums)
    for b0 in range(j0, j1, COLUMNS):
        width = min(COLUMNS, j1 - b0)
        s0, c0 = _start(op, one)
        sums[:width] = s0
        comps[:width] = c0
        for k in range(x.shape[0]):
            for j in range(width):
                sums[j], comps[j] = _step(op, sums[j], comps[j], x[k, b0 + j], one, half)
        for j in range(width):
            out[b0 + j] = _finish(op, sums[j], comps[j], half)


#: the loops in definition order (a loop calls the ones before it); the two last are
#: called (on a range of outputs each, from the host's threads: :mod:`.reducers`)
FUNCTIONS = (_half, _rounded, _start, _step, _finish, _reduce_rows, _reduce_columns)
LOOPS = ("_reduce_rows", "_reduce_columns")
#: inlined into the loops
INLINE = ("_rounded", "_start", "_step", "_finish")
