"""The ``torch`` strategy: the native executor with PyTorch's CPU kernels for convolutions,
BatchNorm, pooling, relu and RNN, forward and backward (oneDNN's convolutions and LSTM, as
MXNet 1.9.1's CPU backend), and for the forward of softmax, gelu and LayerNorm. An optional
plugin: PyTorch is not a dependency of graphexec (``pip install torch``, the CPU wheel:
~190 MB, BSD-3-Clause; or ``graphexec[torch]``).

``backend="torch"`` (``MXNET_SUBGRAPH_BACKEND=torch``) at bind, for training or inference::

    exe = sym.simple_bind(gx.cpu(), backend="torch", data=(16, 3, 112, 112))

No region is cut: after the gradient pass the supported nodes and their backward nodes are
marked to run the ``torch`` kernel variants (:mod:`.select`, :mod:`.kernels`); BatchNorm,
where numba is installed, the native kernels' ``openmp`` variant instead (their compiled
loops on numba's threads, faster than PyTorch's NCHW BatchNorm), 2-D max pooling the
native kernels (their compiled loops: MXNet's maxima and gradient), and 3x3 stride-1
convolutions of 128 channels and more the native Winograd variant with PyTorch's products
(registered as the batched product ``torch``); the rest runs natively.
PyTorch's threads follow OMP_NUM_THREADS (``torch.set_num_threads`` changes them).
"""
from __future__ import annotations

from graphexec.core.hookspecs import hookimpl
from graphexec.core.runtime.blas_threads import register_product

from .kernels import INPLACE, KERNELS, batched_product
from .select import NAME, make_backend, torch_kernels_pass

__all__ = ["graphexec_register_kernels", "graphexec_register_passes",
           "graphexec_register_subgraph_backends"]


@hookimpl
def graphexec_register_kernels(registry) -> None:
    """The ``torch`` kernel variants (CPU) and PyTorch's batched product."""
    register_product(NAME, batched_product)
    for name, factory in KERNELS.items():
        registry.register(name, factory, device="cpu", inplace=name in INPLACE, variant=NAME)


@hookimpl
def graphexec_register_passes(register) -> None:
    """Marks the nodes that run the variants, after the gradient pass."""
    register("torch_kernels", requires=("shape", "dtype"),
             stage="after_gradient")(torch_kernels_pass)


@hookimpl
def graphexec_register_subgraph_backends(register) -> None:
    """The ``torch`` strategy."""
    register(NAME, make_backend)
