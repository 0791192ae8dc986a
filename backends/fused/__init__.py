"""fused backend: pointwise fusion with generated kernels (CPU, through numba; on a gpu
context the backend is not activated: CuPy kernels are not written yet).

``MXNET_SUBGRAPH_BACKEND=fused`` (or ``backend="fused"``) claims connected regions of
elementwise nodes (unary math, binary and scalar arithmetic, broadcast ops with known shapes,
comparisons, clip, where, Cast, Activation, LeakyReLU leaky/elu/selu/gelu) and runs each as
one generated loop: one kernel per region structure, dtypes and broadcast pattern, compiled
once and cached in memory and on disk (:mod:`.cache`). Training works: the gradient of a
fused region is a backward region whose ``_backward_*`` chain runs as a generated kernel too.

``MXNET_USE_FUSION=1`` fuses after the gradient pass too, on top of any backend (MXNet's
FusePointwise; ``backends/fused/fuse_pointwise.py``): forward chains left unclaimed and backward
chains become ``_FusedOp`` nodes (:mod:`.fusedop`) claimed by the same rules
(:class:`~.subgraph.PointwiseFusionProperty`), with the same code generation and cache.

Inspecting the generated code: :func:`sources` gives the source of every fused region of an
executor (after its first forward / backward, when the kernels are built);
MXNET_SUBGRAPH_VERBOSE=2 logs each source (logger ``graphexec.fused``) as it is built::

    from graphexec.backends.fused import sources
    exe = y.simple_bind(gx.cpu(), backend="fused", x=(1000,))
    exe.forward()
    print(sources(exe)["fused_subgraph0"])

numba is optional (``pip install 'graphexec[fused]'``): without it the backend claims
nothing, says why in ``exe.partition_plan`` and warns once.
"""
from __future__ import annotations

from graphexec.core.hookspecs import hookimpl

from .fuse_pointwise import fuse_pointwise_pass
from .fusedop import FUSED_OP, fused_op_kernel
from .subgraph import make_backend

__all__ = ["graphexec_register_ops", "graphexec_register_passes", "graphexec_register_kernels",
           "graphexec_register_subgraph_backends", "sources"]


@hookimpl
def graphexec_register_ops(register) -> None:
    """``_FusedOp``, the node of MXNET_USE_FUSION's fusion after the gradient pass."""
    register(FUSED_OP)


@hookimpl
def graphexec_register_passes(register) -> None:
    """MXNET_USE_FUSION's pointwise fusion, run by the bind pipeline after the gradient pass."""
    register("fuse_pointwise", requires=("shape", "dtype"),
             stage="after_gradient")(fuse_pointwise_pass)


@hookimpl
def graphexec_register_kernels(registry) -> None:
    """The kernel of ``_FusedOp`` (its generated kernel, or the native kernels)."""
    registry.register("_FusedOp", fused_op_kernel, device="any")


@hookimpl
def graphexec_register_subgraph_backends(register) -> None:
    """The ``fused`` subgraph backend."""
    register("fused", make_backend)


def sources(exe) -> dict[str, str]:
    """Region node name -> generated kernel source, for the fused regions of executor ``exe``
    (``_FusedOp`` nodes of MXNET_USE_FUSION included) whose kernels have been built (forward
    regions after the first forward, backward regions after the first backward)."""
    return {name: state["source"] for name, state in exe.region_states.items()
            if "source" in state}
