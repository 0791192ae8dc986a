"""Many small GEMMs on several cores (host threads that kernels of any backend use): the
work is split into parts, one per BLAS thread, each part run by its own Python thread with
BLAS on one thread (numpy releases the GIL in BLAS and ufunc loops), meeting the others at
a barrier where the parts depend on each other; :func:`serial_blas` runs a block with BLAS
on one thread (the control-flow loops, small products).

Why: OpenBLAS's own threads help large GEMMs but not small ones. A recurrence step is
(N, P) x (P, G*H), small in N; OpenBLAS splits it by rows, so every thread streams the whole
weight matrix and two threads ran no faster than one (LSTM 32 x 650: 2.2 ms a step on one
thread, 2.2-18 ms on two on a shared 2-core machine), while two threads each with half of
the gate columns (the native RNN cells) ran 35 steps in 29-33 ms against 69-70 ms on one.
The 96 (128 x 64) x (64 x 128) products of a BERT attention layer took 18-216 ms with
OpenBLAS's two threads, 4-16 ms on one (measured in isolation); the attention kernels
split the batch of products instead.
"""
from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Callable

from ..ir.errors import GraphexecError

__all__ = ["serial_blas", "split", "run_parts", "matmul_rows", "on_numba_threads",
           "PRODUCT_ATTR", "register_product", "batched_product"]

#: the fewest rows of a large product worth a thread of their own
MIN_ROWS = 128


@lru_cache(maxsize=1)
def _blas_libs() -> tuple:
    """threadpoolctl's controllers of the BLAS libraries loaded (numpy's OpenBLAS here)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # a dependency; an install without it runs the loops as they come
        return ()
    return tuple(lib for lib in ThreadpoolController().lib_controllers
                 if lib.user_api == "blas")


def _blas_threads() -> int:
    return max([1] + [lib.num_threads for lib in _blas_libs()])


class _OneBlasThread:
    """BLAS on one thread inside the block, its thread counts restored after (a direct
    set: threadpoolctl's ``limit`` costs ~90 us a call, this ~35 us)."""

    def __init__(self, libs: tuple):
        self.libs = libs
        self.saved: list[int] = []

    def __enter__(self):
        self.saved = [lib.num_threads for lib in self.libs]
        for lib in self.libs:
            lib.set_num_threads(1)
        return self

    def __exit__(self, *exc) -> None:
        for lib, n in zip(self.libs, self.saved):
            lib.set_num_threads(n)


def serial_blas(xp):
    """A context running BLAS on one thread (numpy on the host; nothing on other devices)."""
    libs = _blas_libs() if xp.__name__ == "numpy" else ()
    return _OneBlasThread(libs) if libs else contextlib.nullcontext()


def split(xp, size: int, min_part: int) -> list[tuple[int, int]]:
    """[0, size) in ranges of at least ``min_part``, one per BLAS thread (one range on
    devices other than the host)."""
    count = 1
    if xp.__name__ == "numpy":
        count = max(1, min(_blas_threads(), size // max(min_part, 1)))
    bounds = [size * k // count for k in range(count + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


@lru_cache(maxsize=4)
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(workers, thread_name_prefix="graphexec-rnn")


def run_parts(xp, parts: list[tuple[int, int]], fn: Callable, one_blas_thread: bool = True
              ) -> None:
    """``fn(j, u0, u1, sync)`` for every part j = (u0, u1), side by side, BLAS on one
    thread each (``one_blas_thread``; False for parts that call no BLAS: setting the thread
    counts costs ~35 us); ``sync()`` waits for every part (a barrier). The calling thread
    runs part 0; an exception in any part stops them all and is raised here."""
    with serial_blas(xp) if one_blas_thread else contextlib.nullcontext():
        if len(parts) == 1:
            fn(0, *parts[0], lambda: None)
            return
        barrier = threading.Barrier(len(parts))

        def guarded(j: int) -> None:
            try:
                fn(j, *parts[j], barrier.wait)
            except BaseException:
                barrier.abort()
                raise
        futures = [_pool(len(parts) - 1).submit(guarded, j) for j in range(1, len(parts))]
        errors = []
        try:
            guarded(0)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others
            errors.append(exc)
        for future in futures:
            exc = future.exception()
            if exc is not None:
                errors.append(exc)
        if errors:
            first = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
            raise (first or errors)[0]


def matmul_rows(xp, a, b, out, accumulate: bool = False, bias=None) -> None:
    """out (+)= a @ b (2-D) (+ ``bias``, added by each part to its rows while they are in
    cache), the rows split across threads with BLAS on one thread each: the kernels that
    also run many small products keep OpenBLAS's own threads out of the way (its idle
    threads spin for a while after a call; on a loaded machine they took the core a part
    thread was waiting for)."""
    def part(j, r0, r1, sync):
        if accumulate:
            out[r0:r1] += xp.matmul(a[r0:r1], b)
        else:
            xp.matmul(a[r0:r1], b, out=out[r0:r1])
        if bias is not None:
            xp.add(out[r0:r1], bias, out=out[r0:r1])
    run_parts(xp, split(xp, a.shape[0], MIN_ROWS), part)


def on_numba_threads(fn: Callable, threads: int) -> Callable:
    """``fn`` (a numba ``parallel=True`` function) run on at most ``threads`` of numba's
    threads. From the pool's size up, the call leaves the calling thread's own setting as it
    is (all of the pool unless that thread asked for fewer): setting and restoring it costs
    about 4 us a call, which BatchNorm's loops paid twice a node per step. Below it, the
    setting is ``threads`` for the call and put back after."""
    import numba
    if threads >= numba.config.NUMBA_NUM_THREADS:
        return fn
    threads = max(1, threads)

    def run(*args) -> None:
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            fn(*args)
        finally:
            numba.set_num_threads(before)
    return run


#: the node attribute naming the batched product (:func:`batched_product`) a host kernel's
#: stacks of matrix products run on (absent: numpy's); the pass choosing the kernel sets it
PRODUCT_ATTR = "__product__"


def _numpy_product(a, b, out) -> None:
    import numpy as np
    np.matmul(a, b, out=out)


_PRODUCTS: dict[str, Callable] = {"numpy": _numpy_product}


def register_product(name: str, fn: Callable) -> None:
    """Make ``fn(a, b, out)`` (out[i] = a[i] @ b[i] for 3-D host arrays, ``a`` and ``b``
    possibly transposed views, ``out`` C-contiguous) the batched product ``name``: a plugin
    whose library has faster products than numpy's BLAS, or whose threads numpy's BLAS
    threads would spin against, offers them to the native kernels this way."""
    _PRODUCTS[name] = fn


def batched_product(name: str | None) -> Callable:
    """The batched product registered as ``name`` (None: numpy's)."""
    try:
        return _PRODUCTS[name or "numpy"]
    except KeyError:
        raise GraphexecError(f"no batched product {name!r} is registered (known: "
                             f"{', '.join(sorted(_PRODUCTS))}); the plugin providing it "
                             f"registers it when it loads") from None
