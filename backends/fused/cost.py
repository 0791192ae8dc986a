"""The selector's cost model: is one generated kernel faster than running the region's ops one
by one with the native (numpy) kernels? Estimates in nanoseconds, from costs measured on a
2-core x86 machine (AVX-512, numpy 2.4, numba 0.68, one thread): per element, numpy's float32
exp/tanh/log take 0.3-0.4 ns beyond moving the data (scipy's erf 19 ns), the fused float32
polynomials 0.2-1.5 ns; in float64 numpy stays vectorised (exp 1.7 ns, tanh 2.7 ns) while
the kernel calls scalar libm (exp 5 ns, tanh 22 ns, erf 18 ns), as it does for sin, cos and
pow in every dtype (8-22 ns, numpy 1-14 ns); numpy's float16 arithmetic converts element by
element (11 ns for an add). A native op costs about 0.7 us per call in the executor, a fused
region about 1.5 us. Only the ratio matters: regions where the kernel clearly loses (float64
transcendental chains, a few libm calls on their own) are turned down.

After the gradient pass (MXNET_USE_FUSION) a forward region stores every intermediate the
backward reads, so the fused side counts the results the region stores, not only its sinks.
"""
from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["estimate", "profitable", "runs_parallel", "threads_for", "machine_busy",
           "NS_PER_BYTE", "FUSED_NS", "PARALLEL_NS", "BUSY_LOAD"]

#: memory traffic, ns per byte (about 10 GB/s for one core streaming)
NS_PER_BYTE = 0.1
#: fixed cost of one native op call in the executor, and of one fused region call (ns)
OP_CALL_NS, REGION_CALL_NS = 700.0, 1500.0
#: ns per element of computing, by cost class (see ops.Lowering) and compute type
NUMPY_NS = {("cheap", "f4"): 0.0, ("poly", "f4"): 1.0, ("libm", "f4"): 1.0,
            ("cheap", "f8"): 0.0, ("poly", "f8"): 3.0, ("libm", "f8"): 8.0}
FUSED_NS = {("cheap", "f4"): 0.05, ("poly", "f4"): 0.8, ("libm", "f4"): 10.0,
            ("cheap", "f8"): 0.1, ("poly", "f8"): 16.0, ("libm", "f8"): 16.0}
#: numpy's float16 loops convert every element (ns per element per op, on average)
NUMPY_F16_NS = 5.0
#: a kernel runs multi-threaded when its estimated single-thread time reaches this (ns):
#: starting numba's threads costs a few microseconds
PARALLEL_NS = 50_000.0


#: the machine counts as busy when its 1-minute load average reaches this many times its
#: cores (this process's own threads count too: BLAS alone brings it to about 1)
BUSY_LOAD = 1.5


def runs_parallel(size: int, ns_per_element: float, threads: int) -> bool:
    """Whether a kernel over ``size`` elements costing ``ns_per_element`` on one thread
    runs its multi-threaded variant."""
    return threads > 1 and size * ns_per_element >= PARALLEL_NS


def threads_for(size: int, ns_per_element: float, threads: int, busy: bool = False) -> int:
    """Threads a kernel over ``size`` elements costing ``ns_per_element`` on one thread
    uses: one per PARALLEL_NS of estimated work, at most ``threads``; one on a ``busy``
    machine. A thread costs a wake-up (microseconds when its core is free, a scheduler
    time slice when other processes hold the cores: on a loaded 2-core machine small
    multi-threaded kernels then ran many times slower than serial ones)."""
    if busy or threads <= 1:
        return 1
    return max(1, min(threads, int(size * ns_per_element // PARALLEL_NS)))


def machine_busy() -> bool:
    """Whether the machine's 1-minute load average is at least BUSY_LOAD per core (False
    where the system does not tell)."""
    try:
        return os.getloadavg()[0] >= BUSY_LOAD * (os.cpu_count() or 1)
    except OSError:
        return False


def estimate(nodes: list, size: int, dtype: np.dtype, cost_class, threads: int,
             outputs: int | None = None) -> tuple[float, float]:
    """(fused, unfused) time estimates in ns for ``nodes`` over ``size`` elements of
    ``dtype``; ``cost_class(node)`` is the node's class, ``threads`` what the fused kernel
    may use (see :func:`runs_parallel`), ``outputs`` how many results the kernel stores
    (default: those of the nodes no other member reads)."""
    dtype = np.dtype(dtype)
    t = "f8" if dtype == np.float64 else "f4"
    item = dtype.itemsize
    members = {id(n) for n in nodes}
    outside = {(id(e.node), e.index) for n in nodes for e in n.inputs if id(e.node) not in members}
    if outputs is None:
        read = {id(e.node) for n in nodes for e in n.inputs}
        outputs = sum(1 for n in nodes if id(n) not in read)
    unfused = sum(OP_CALL_NS + size * ((len(n.inputs) + n.num_outputs) * item * NS_PER_BYTE
                                       + NUMPY_NS[(cost_class(n), t)]
                                       + (NUMPY_F16_NS if item == 2 else 0.0))
                  for n in nodes)
    per_element = ((len(outside) + max(outputs, 1)) * item * NS_PER_BYTE
                   + sum(FUSED_NS[(cost_class(n), t)] for n in nodes))
    per_element /= threads_for(size, per_element, threads)
    return REGION_CALL_NS + size * per_element, unfused


def profitable(nodes: list, shape: tuple, dtype, cost_class, threads: int,
               outputs: int | None = None) -> tuple[bool, str]:
    """Whether fusing ``nodes`` pays off, and the estimate in words."""
    fused, unfused = estimate(nodes, math.prod(shape), dtype, cost_class, threads, outputs)
    words = f"estimated {fused / 1e3:.1f} us fused vs {unfused / 1e3:.1f} us unfused"
    return fused < unfused, words
