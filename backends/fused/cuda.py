"""Fused kernels on CUDA devices: the code generator's kernel (:mod:`.codegen`: the same loop
body, operands and merged dims the CPU kernel has) as one numba CUDA kernel, launched on the
region's arrays (CuPy arrays on a GPU context, which numba takes through
``__cuda_array_interface__``).

Each thread takes elements of the loop domain in a grid-stride loop, splits the flat index
into the merged dims' indices and runs the body: broadcast inputs read at their own indices,
outputs written, gradient outputs smaller than the domain written over it into a scratch
buffer and summed down after the kernel (by the array module: CuPy's sum on a GPU). The math
the expressions call is :mod:`.vmath_cuda`'s.

Without a GPU the same kernels run under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``
before numba is imported), on NumPy arrays: tests/test_fused_cuda.py runs them there against
the CPU kernels. What has run on a GPU is said in README.md.
"""
from __future__ import annotations

import math
import time
from functools import partial
from typing import Callable

from graphexec.core.runtime.jit_cache import load_module
from graphexec.core.runtime.staging import Staging
from graphexec.core.subgraph import RegionCall

from .codegen import Kernel
from .runner import finishers, flat_view, operand_view

__all__ = ["cuda_available", "cuda_source", "cuda_runner", "launch_shape",
           "THREADS_PER_BLOCK"]

#: threads per block (the simulator runs each as a Python thread: it takes fewer)
THREADS_PER_BLOCK, SIMULATOR_THREADS = 256, 16
#: at most this many blocks; a grid-stride loop covers the rest of the domain
MAX_BLOCKS = 8192
_FORMAT = 1


def cuda_available() -> bool:
    """Whether numba's CUDA target can run kernels here (a GPU and its driver, or numba's
    simulator)."""
    try:
        from numba import cuda
    except ImportError:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver reports many kinds
        return False


def cuda_source(kernel: Kernel) -> str:
    """The module source of ``kernel`` for numba's CUDA target: ``kernel(n0, .., operands)``
    over a grid-stride loop of the merged domain."""
    sizes = [f"n{g}" for g in range(len(kernel.groups))]
    head = [f'"""graphexec fused CUDA kernel (generated; format {_FORMAT}).',
            f"ops: {' '.join(kernel.ops)}", '"""', "import numpy as np", "from numba import cuda",
            "from graphexec.backends.fused.vmath_cuda import *  # noqa: F401,F403", "",
            *kernel.constants, "", "", "@cuda.jit",
            f"def kernel({', '.join(sizes + kernel.names)}):",
            f"    total = {' * '.join(sizes)}",
            "    for flat in range(cuda.grid(1), total, cuda.gridsize(1)):"]
    split = []
    rest = "flat"
    for g in reversed(range(1, len(sizes))):
        split += [f"i{g} = {rest} % n{g}", f"r{g} = {rest} // n{g}"]
        rest = f"r{g}"
    split.append(f"i0 = {rest}")
    return "\n".join(head + ["        " + line for line in split + kernel.body]) + "\n"


def launch_shape(total: int, simulator: bool) -> tuple[int, int]:
    """(blocks, threads per block) for a domain of ``total`` elements."""
    threads = SIMULATOR_THREADS if simulator else THREADS_PER_BLOCK
    return max(1, min(MAX_BLOCKS, -(-total // threads))), threads


def cuda_runner(kernel: Kernel, region: RegionCall) -> Callable[[], None]:
    """Compile ``kernel`` for CUDA (now, for the region's arrays) and return the callable
    launching it on them (the region context's array module allocates the scratch buffers
    and sums them down); records the kernel in ``region.state`` as the CPU runner does."""
    from numba import config
    t0 = time.perf_counter()
    source = cuda_source(kernel)
    module = load_module(source)
    xp = region.ctx.xp
    staging = Staging(xp)
    scratch = {op.index: xp.empty(kernel.domain, op.dtype) for op in kernel.operands
               if op.kind == "scratch"}
    views = [flat_view(scratch[op.index], op, kernel) if op.kind == "scratch" else
             operand_view(op, kernel, region, staging, half_bits=False)
             for op in kernel.operands]
    sizes = [math.prod(kernel.domain[d] for d in g) for g in kernel.groups]
    blocks, threads = launch_shape(math.prod(sizes), bool(config.ENABLE_CUDASIM))
    args = tuple(sizes + views)
    # compiled now for these arguments, so that a kernel the device's compiler refuses
    # fails here, where the caller runs the region natively with a warning
    launch = module.kernel.specialize(*args)[blocks, threads]
    staging.after += finishers(kernel, region, scratch, xp)
    region.state.update(source=source, kernel=kernel.key, parallel=True, threads=blocks * threads,
                        compile_s=time.perf_counter() - t0, device="cuda")
    return staging.around(partial(launch, *args))
