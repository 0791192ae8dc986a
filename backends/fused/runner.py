"""Running one fused region: generate (or reuse) its kernel, compile it for the region's
arrays (numba; from its disk cache when an earlier process compiled the same kernel), and
call it on views of the executor's own buffers.

The region's ``state`` (``RegionCall.state``) receives ``source`` (the generated module),
``kernel`` (its hash), ``parallel`` (whether the multi-threaded variant runs), ``threads`` (how
many threads it uses: by the region's size, one on a busy machine, see
:func:`~.cost.threads_for`) and ``compile_s`` (seconds spent compiling or loading it);
MXNET_SUBGRAPH_VERBOSE=2 logs the source when the runner is created.
"""
from __future__ import annotations

import logging
import math
import time
from functools import partial
from typing import Callable

import numpy as np

from graphexec.core.subgraph import RegionCall
from graphexec.core.subgraph.select import verbosity

from graphexec.core.runtime.blas_threads import on_numba_threads
from graphexec.core.runtime.jit_cache import compile_cached, load_module
from graphexec.core.runtime.staging import Staging
from .codegen import Kernel, Operand, generate
from .cost import machine_busy, threads_for

__all__ = ["fused_runner", "kernel_runner", "operand_view", "flat_view", "finishers"]

log = logging.getLogger("graphexec.fused")


def fused_runner(region: RegionCall) -> Callable[[], None]:
    """The runner of one fused region (a zero-argument callable)."""
    kernel = generate(region.symbol, region.input_names, [a.shape for a in region.inputs],
                      [a.dtype for a in region.inputs])
    return kernel_runner(kernel, region)


def kernel_runner(kernel: Kernel, region: RegionCall,
                  allow_parallel: bool = True) -> Callable[[], None]:
    """Compile (or load) ``kernel`` for the arrays of ``region`` and return the callable that
    runs it on them (its multi-threaded variant when large enough and ``allow_parallel``);
    records the kernel in ``region.state``."""
    import numba
    t0 = time.perf_counter()
    module = load_module(kernel.source)
    threads = threads_for(math.prod(kernel.domain), kernel.ns_per_element,
                          numba.get_num_threads(), machine_busy()) if allow_parallel else 1
    parallel = threads > 1
    fn = module.kernel if parallel else module.kernel_serial
    staging = Staging()
    scratch = {op.index: np.empty(kernel.domain, op.dtype) for op in kernel.operands
               if op.kind == "scratch"}
    views = [flat_view(scratch[op.index], op, kernel) if op.kind == "scratch" else
             operand_view(op, kernel, region, staging) for op in kernel.operands]
    sizes = [math.prod(kernel.domain[d] for d in g) for g in kernel.groups]
    args = tuple(sizes + views)
    compile_cached(fn, tuple(numba.typeof(a) for a in args), module)
    region.state.update(source=kernel.source, kernel=kernel.key, parallel=parallel,
                        threads=threads, compile_s=time.perf_counter() - t0)
    if verbosity() > 1:
        log.info("fused region %s: kernel %s (%s, domain %s)\n%s", region.node_name, kernel.key,
                 "parallel" if parallel else "serial", kernel.domain, kernel.source)
    staging.after += finishers(kernel, region, scratch)
    if parallel and threads < numba.get_num_threads():
        fn = on_numba_threads(fn, threads)
    return staging.around(partial(fn, *args))


def operand_view(op: Operand, kernel: Kernel, region: RegionCall, staging: Staging,
                 half_bits: bool = True):
    """The kernel argument of ``op``: a view of the region's array with the broadcast dims
    dropped and the merged dims flattened (float16 as its bits with ``half_bits``, as the
    CPU kernels take it). A non-contiguous array goes through ``staging``'s copies."""
    if op.kind == "in":
        arr = staging.read(region.inputs[op.index])
    else:
        arr = staging.write(region.outputs[op.index])
    if half_bits and arr.dtype == np.float16:
        arr = arr.view(np.uint16)
    return flat_view(arr, op, kernel)


def flat_view(arr, op: Operand, kernel: Kernel):
    domain = kernel.domain
    a = arr.reshape(op.shape)
    # the Ellipsis keeps a view when every dim is dropped (a domain of ones): a plain integer
    # index would give a numpy scalar, a copy the kernel would read or write instead
    a = a[tuple(slice(None) if op.shape[d] == domain[d] != 1 else 0
                for d in range(len(domain))) + (Ellipsis,)]
    sizes = [math.prod(domain[d] for d in g) for g, m in zip(kernel.groups, op.mask) if m]
    return a.reshape(sizes or (1,))


def finishers(kernel: Kernel, region: RegionCall, scratch: dict,
              xp=np) -> list[Callable[[], None]]:
    """Per region output that the kernel does not store: zero-fill it, or sum its scratch
    buffer over the broadcast axes into it."""
    steps = []
    domain = kernel.domain
    for j, (kind, *rest) in enumerate(kernel.outputs):
        out = region.outputs[j]
        if kind == "zero":
            steps.append(lambda out=out: out.fill(0))
        elif kind == "reduce":
            target = rest[0]
            lead = len(domain) - len(target)
            axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(target)
                                              if s == 1 and domain[lead + i] != 1)
            steps.append(lambda out=out, buf=scratch[j], axes=axes: xp.copyto(
                out, buf.sum(axis=axes).reshape(out.shape), casting="unsafe"))
    return steps
