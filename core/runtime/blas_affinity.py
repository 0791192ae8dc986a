"""OpenBLAS's worker threads kept off the calling thread's core while an executor runs after
an idle pause (Linux, numpy's OpenBLAS with its own pthreads).

Why: OpenBLAS's workers fall asleep after about 0.1 s without work. The next threaded
product wakes them, and after an idle pause the kernel's scheduler may put a woken worker
on the core of the thread that woke it (on a 2-core VM with another process running between
our calls: 32-52% of the first forwards after a 0.3 s pause). OpenBLAS's threads wait for
each other inside a product by calling ``sched_yield`` in a loop, so two of them on one core
hardly progress until the load balancer moves one (~10 ms): SqueezeNet 1.1's 7 ms forward
took 16-23 ms, ResNet-18's 26 ms one 35-37 ms. Threads that sleep while they wait (ours,
OpenMP's) just run in turn. With the workers' affinity excluding the caller's core for the
run, none of 75 such forwards stalled, against 30 of 75 without (benchmarks/README.md).

How: when a run starts IDLE_SECONDS or more after the previous run ended, each active worker
(``openblas_setaffinity``'s indices 0 .. threads-2; the last index is the calling thread)
is restricted to its allowed CPUs minus the one the calling thread is on; when the run ends,
each gets back the affinity it had. Runs back to back touch nothing (their workers are awake
where they are). Nested or concurrent runs share one placement: the first run in places the
workers, the last out restores them. Right after a fork OpenBLAS has no workers (its atfork
handler stops them, in the parent too, until its next threaded call starts new ones): such
a run places nothing. ``GRAPHEXEC_BLAS_AFFINITY=0`` (read at each placement) turns it off.
Nothing happens elsewhere than on Linux, with a BLAS other than OpenBLAS, with
OpenBLAS's OpenMP build (whose ``openblas_setaffinity`` only prints a message), with one
BLAS thread, or with one allowed CPU. If placing fails (the library refuses), a
RuntimeWarning says so once and the mechanism stays off for the process: the run itself
goes on as it would have.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
import warnings
from functools import lru_cache

from .blas_threads import _blas_libs

__all__ = ["workers_apart", "IDLE_SECONDS", "ENV"]

#: a run starting this long after the previous one ended places the workers (OpenBLAS's
#: sleep after about 0.1 s; placing costs a few microseconds a worker)
IDLE_SECONDS = 0.02
#: the environment switch ("0": off)
ENV = "GRAPHEXEC_BLAS_AFFINITY"

#: CPUs a mask holds (glibc's CPU_SETSIZE)
_MASK_CPUS = 1024
_Mask = ctypes.c_ulong * (_MASK_CPUS // (8 * ctypes.sizeof(ctypes.c_ulong)))


def _to_mask(cpus) -> ctypes.Array:
    mask = _Mask()
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    for cpu in cpus:
        if 0 <= cpu < _MASK_CPUS:
            mask[cpu // bits] |= 1 << (cpu % bits)
    return mask


def _from_mask(mask) -> set[int]:
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    cpus = set()
    for i, word in enumerate(mask):
        while word:
            low = word & -word
            cpus.add(i * bits + low.bit_length() - 1)
            word ^= low
    return cpus


class _OpenBLAS:
    """The calls this module makes into one OpenBLAS library and the C library."""

    def __init__(self, dynlib, get_threads, sched_getcpu):
        self.set = dynlib.openblas_setaffinity
        self.get = dynlib.openblas_getaffinity
        for fn in (self.set, self.get):
            fn.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
            fn.restype = ctypes.c_int
        self.threads = get_threads
        self.cpu = sched_getcpu
        #: OpenBLAS's flag that its workers run: a fork shuts them down (its atfork
        #: handler, in the parent too) until the next threaded call starts new ones, and
        #: their old handles must not be touched meanwhile
        self.server = ctypes.c_int.in_dll(dynlib, "blas_server_avail")

    def running(self) -> bool:
        return self.server.value != 0

    def affinity(self, idx: int) -> set[int] | None:
        mask = _Mask()
        if self.get(idx, ctypes.sizeof(mask), ctypes.addressof(mask)) != 0:
            return None
        return _from_mask(mask)

    def place(self, idx: int, cpus) -> bool:
        mask = _to_mask(cpus)
        return self.set(idx, ctypes.sizeof(mask), ctypes.addressof(mask)) == 0


@lru_cache(maxsize=1)
def _library() -> _OpenBLAS | None:
    """numpy's OpenBLAS (pthreads build) with its affinity calls, or None."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None)
    sched_getcpu = getattr(libc, "sched_getcpu", None)
    if sched_getcpu is None:
        return None
    sched_getcpu.restype = ctypes.c_int
    # numpy's own copy first where several OpenBLAS libraries are loaded (scipy's wheels
    # bring another)
    for lib in sorted(_blas_libs(), key=lambda lib: "numpy" not in str(lib.filepath)):
        if lib.internal_api != "openblas" or getattr(lib, "threading_layer", "") != "pthreads":
            continue
        dynlib = getattr(lib, "dynlib", None)
        if dynlib is None or not all(hasattr(dynlib, name) for name in (
                "openblas_setaffinity", "openblas_getaffinity", "blas_server_avail")):
            continue
        return _OpenBLAS(dynlib, lambda lib=lib: lib.num_threads, sched_getcpu)
    return None


class _Placement:
    """The process's one placement of OpenBLAS's workers (see the module's docstring)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.last_end = float("-inf")
        self.saved: list[tuple[int, set[int]]] = []
        self.broken = False

    def __enter__(self) -> None:
        with self.lock:
            self.depth += 1
            if self.depth == 1 and time.perf_counter() - self.last_end >= IDLE_SECONDS:
                self._place()

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                self._restore()
                self.last_end = time.perf_counter()

    def _place(self) -> None:
        if self.broken or os.environ.get(ENV, "1") == "0":
            return
        lib = _library()
        if lib is None or not lib.running():  # no workers (after a fork: none until used)
            return
        workers = lib.threads() - 1
        if workers < 1:
            return
        here = lib.cpu()
        for idx in range(workers):
            before = lib.affinity(idx)
            if before is None:
                return self._fail(f"openblas_getaffinity({idx}) failed")
            if here not in before or before == {here}:  # already apart, or nowhere else
                continue
            if not lib.place(idx, before - {here}):
                return self._fail(f"openblas_setaffinity({idx}) failed")
            self.saved.append((idx, before))

    def _restore(self) -> None:
        if not self.saved:
            return
        lib = _library()
        saved, self.saved = self.saved, []
        failed = [idx for idx, before in saved if not lib.place(idx, before)]
        if failed:
            self._fail(f"restoring the affinity of worker(s) {failed} failed")

    def _fail(self, what: str) -> None:
        self.broken = True
        self._restore()
        warnings.warn(f"OpenBLAS's worker threads could not be kept off the calling thread's "
                      f"core ({what}); runs go on without it (set {ENV}=0 to skip trying)",
                      RuntimeWarning, stacklevel=4)  # the run's with


_PLACEMENT = _Placement()


def _after_fork_in_child() -> None:
    """A fork while another thread held the lock would leave it held in the child: a new
    lock there (the child's OpenBLAS restarts its own workers; the placement's count and
    saved affinities stay, as the forking thread may be inside a run)."""
    _PLACEMENT.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def workers_apart() -> _Placement:
    """A context for one run of an executor: after an idle pause, OpenBLAS's worker threads
    stay off the calling thread's core until the run (the outermost, if nested) ends."""
    return _PLACEMENT
