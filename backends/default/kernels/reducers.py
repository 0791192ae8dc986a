"""MXNet's sequential reductions over host float data: sums (sum, mean, the gradients of
broadcasting, tile and repeat), nansum, products and the 1- and 2-norms computed as MXNet
1.9.1's CPU kernels compute them, element by element in the data's own type with Kahan's
compensation or LAPACK's scaling (:mod:`.reduce_loops`), so the numbers are MXNet's bit for
bit. numpy's pairwise float32 sums differed from MXNet's in the last bits for 30-80% of
rows of 10-100000 random values, float64 sums rounded to float32 for 34-44%, its products
(vectorised in other orders) for about 40%; MXNet's float16 reductions round every step to
float16 (they do not accumulate in float32).

The loops are numba's (the ``fused`` extra, :mod:`.compiled`): :func:`reduction_runner`
gives None without numba, for devices other than the host and for other dtypes, where the
kernels keep numpy's reductions (the same values within rounding; README, "Losses, contrib
utilities and the rest of the op set"). The reduced elements of an output are taken in
MXNet's order, row-major over the reduced axes: trailing reduced axes as rows, leading ones
as columns (no copy of C-contiguous data), others after one transposing copy.
"""
from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import Callable

import numpy as np

from graphexec.core.runtime.blas_threads import run_parts, split

from .compiled import compiled_for
from .reduce_loops import ABSSUM, NANPROD, NANSUM, NRM2, PROD, SUM

__all__ = ["Reduction", "REDUCER_OF", "norm_reducer", "reduction_into", "reduction_runner"]

#: the loops' reducer of each operator (``norm`` by its ``ord``: :func:`norm_reducer`)
REDUCER_OF = {"sum": SUM, "mean": SUM, "nansum": NANSUM, "prod": PROD, "nanprod": NANPROD}
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def norm_reducer(order: int) -> int:
    """The reducer of ``norm``: the scaled sum of squares for ord 2, else the sum of |x|."""
    return NRM2 if order == 2 else ABSSUM


#: the fewest reduced elements a part for the host's threads (a Kahan step is a chain of
#: four dependent operations: 2^16 elements take about 0.3 ms)
MIN_PART = 1 << 16


class Reduction:
    """The reduction of arrays of one shape and float dtype over ``axes`` as MXNet computes
    it, into arrays of the kept shape: ``plan(x, out)`` (``out`` of that shape with the
    reduced axes of size 1, any dtype: the result is cast into it; ``mean``: the sum divided
    by the count in the data's type). :meth:`build` gives None where the loops do not apply
    (see the module's docstring). The outputs are split across the host's threads where
    each gets MIN_PART reduced elements (Python threads: the loops release the GIL)."""

    def __init__(self, loop, args: tuple, parts: list, perm: list, arranged: tuple, scratch,
                 result, final, count, mean: bool):
        self.loop, self.args, self.parts, self.perm = loop, args, parts, perm
        self.arranged, self.scratch, self.result, self.final = arranged, scratch, result, final
        self.count, self.mean = count, mean

    @classmethod
    def build(cls, xp, shape: tuple, dtype, axes: tuple, reducer: int, mean: bool = False
              ) -> Reduction | None:
        dtype = np.dtype(dtype)
        if xp is not np or dtype not in _FLOATS or not math.prod(shape):
            return None
        half = dtype == np.float16
        work = np.dtype(np.float32) if half else dtype
        perm, rows, n, m = _arrangement(shape, axes)
        loop = _loop("reduce_rows" if rows else "reduce_columns", work)
        if loop is None:
            return None
        scratch = np.empty((n, m) if rows else (m, n), work)
        result = np.empty(n, work)
        parts = split(np, n, -(-MIN_PART // max(m, 1)))
        final = np.empty(n, dtype) if half else result
        # MXNet divides by the count in the data's type (a float16 count rounds)
        return cls(loop, (result, reducer, work.type(1), half), parts, perm, scratch.shape,
                   scratch, result, final, dtype.type(m), mean)

    def __call__(self, x, out) -> None:
        view = x.transpose(self.perm)
        if self.scratch.dtype == x.dtype and view.flags.c_contiguous:
            data = view.reshape(self.arranged)
        else:
            np.copyto(self.scratch.reshape(view.shape), view, casting="unsafe")
            data = self.scratch
        if len(self.parts) == 1:
            self.loop(data, *self.args, *self.parts[0])
        else:
            run_parts(np, self.parts, lambda j, lo, hi, sync: self.loop(data, *self.args, lo, hi),
                      one_blas_thread=False)
        if self.final is not self.result:
            np.copyto(self.final, self.result, casting="unsafe")
        if self.mean:
            with np.errstate(divide="ignore", invalid="ignore"):
                np.divide(self.final, self.count, out=self.final)
        np.copyto(out.reshape(self.final.shape), self.final, casting="unsafe")


@lru_cache(maxsize=None)
def _loop(name: str, work: np.dtype):
    """The loop ``name`` compiled for C-contiguous 2-D data of ``work`` (once a process:
    making a kernel then costs no numba type checks), or None (no numba)."""
    data, result = np.empty((1, 1), work), np.empty(1, work)
    return compiled_for(name, data, result, SUM, work.type(1), False, 0, 1)


def reduction_into(xp, shape: tuple, dtype, axes: tuple, out, reducer: int,
                   mean: bool = False) -> Callable[[object], None] | None:
    """``f(x)`` writing the :class:`Reduction` of ``x`` (of ``shape`` and ``dtype``) into
    ``out`` (its kept elements in order, the reduced axes of size 1 or absent), or None where
    the loops do not apply or ``out`` cannot be written as one flat view."""
    plan = Reduction.build(xp, shape, dtype, axes, reducer, mean)
    if plan is None or not _flat_view(out):
        return None
    return lambda x: plan(x, out)


def reduction_runner(xp, x, axes: tuple, out, reducer: int, mean: bool = False
                     ) -> Callable[[], None] | None:
    """``f()`` writing the :class:`Reduction` of ``x`` into ``out``
    (:func:`reduction_into`), or None where the loops do not apply."""
    write = reduction_into(xp, x.shape, x.dtype, axes, out, reducer, mean)
    return None if write is None else partial(write, x)


def _flat_view(a) -> bool:
    """Whether ``a`` reshapes to one axis as a view."""
    try:
        a.view().shape = (a.size,)
    except AttributeError:
        return False
    return True


def _arrangement(shape: tuple, axes: tuple) -> tuple[list, bool, int, int]:
    """(axis order, as rows?, outputs N, reduced elements M): the kept axes then the
    reduced ones (each in their order) taken as (N, M) rows, or, where every reduced axis
    of size above 1 comes before every kept one, the reduced axes first as (M, N)
    columns."""
    big = [a for a in range(len(shape)) if shape[a] != 1]
    reduced = [a for a in big if a in axes]
    kept = [a for a in big if a not in axes]
    n = math.prod(shape[a] for a in kept)
    m = math.prod(shape[a] for a in reduced)
    ones = [a for a in range(len(shape)) if shape[a] == 1]
    if kept and reduced and max(reduced) < min(kept):
        return reduced + kept + ones, False, n, m
    return kept + reduced + ones, True, n, m
