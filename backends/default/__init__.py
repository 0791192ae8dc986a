"""The default backend: native kernels (numpy on the host, CuPy on GPUs through the same code),
registered as an ordinary plugin (listed in plugins.toml)."""
from __future__ import annotations

from graphexec.core.hookspecs import hookimpl

from .fusion import relu_fusion_pass
from .kernels import INPLACE, load_all, load_variants
from .subgraph import make_backend, make_backend_v2
from .winograd_choice import winograd_choice_pass

__all__ = ["graphexec_register_kernels", "graphexec_register_passes",
           "graphexec_register_subgraph_backends"]


@hookimpl
def graphexec_register_kernels(registry) -> None:
    """Register every native kernel for device ``any``, and the host variants (see
    ``kernels.base.OPENMP``) for the CPU."""
    for op_name, factory in load_all().items():
        registry.register(op_name, factory, device="any", inplace=op_name in INPLACE)
    for (op_name, variant), factory in load_variants().items():
        registry.register(op_name, factory, device="cpu", inplace=op_name in INPLACE,
                          variant=variant)


@hookimpl
def graphexec_register_subgraph_backends(register) -> None:
    """The ``default`` and ``default_v2`` subgraph backends (MXNet's test backends)."""
    register("default", make_backend)
    register("default_v2", make_backend_v2)


@hookimpl
def graphexec_register_passes(register) -> None:
    """The native Winograd choice (``winograd_choice.py``), then the native relu fusion
    (``fusion.py``), after the gradient pass."""
    register("native_winograd", requires=("shape", "dtype"),
             stage="after_gradient")(winograd_choice_pass)
    register("native_relu_fusion", requires=("shape", "dtype"),
             stage="after_gradient")(relu_fusion_pass)
