"""Shared pieces of the native kernels: the ``kernel`` decorator that fills the table the
default backend registers, and helpers for array-module-generic code (numpy or CuPy)."""
from __future__ import annotations

from typing import Callable

from graphexec.core.kernels import KernelCall, KernelFactory, KernelFn

__all__ = ["KERNELS", "INPLACE", "kernel", "special", "KernelCall", "KernelFn", "is_float",
           "cast_scalar", "sequence", "nothing"]

#: op name -> factory, filled by the kernel modules at import.
KERNELS: dict[str, KernelFactory] = {}
#: ops whose kernel stays correct when an output aliases an input (the memory planner may
#: then run them in place, where the op's declaration allows it)
INPLACE: set[str] = set()


def kernel(*op_names: str, inplace: bool = False) -> Callable[[KernelFactory], KernelFactory]:
    """Register the decorated factory for each of ``op_names``; ``inplace=True`` declares
    that it reads every input element before writing the aliased output element."""
    def deco(factory: KernelFactory) -> KernelFactory:
        for name in op_names:
            KERNELS[name] = factory
            if inplace:
                INPLACE.add(name)
            else:
                INPLACE.discard(name)
        return factory
    return deco


def special(xp):
    """scipy.special on the host, cupyx.scipy.special on a GPU (erf, erfinv, gamma...)."""
    if xp.__name__ == "numpy":
        import scipy.special
        return scipy.special
    import cupyx.scipy.special
    return cupyx.scipy.special


def is_float(arr) -> bool:
    return arr.dtype.kind == "f"


def cast_scalar(value: float, arr):
    """A Python scalar as ``arr``'s dtype (MXNet casts scalar operands to the data type)."""
    return arr.dtype.type(value)


def nothing() -> None:
    """The kernel of a node none of whose outputs is requested."""


def sequence(steps: list) -> Callable[[], None]:
    """One callable running ``steps`` in order (``nothing`` for none)."""
    if not steps:
        return nothing
    if len(steps) == 1:
        return steps[0]

    def run():
        for step in steps:
            step()
    return run
