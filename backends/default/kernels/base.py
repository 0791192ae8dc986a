"""Shared pieces of the native kernels: the ``kernel`` decorator that fills the table the
default backend registers, and helpers for array-module-generic code (numpy or CuPy)."""
from __future__ import annotations

from functools import lru_cache, partial
from typing import Callable

import numpy as np

from graphexec.core.runtime.kernels import KernelCall, KernelFactory, KernelFn

__all__ = ["KERNELS", "INPLACE", "kernel", "special", "KernelCall", "KernelFn", "is_float",
           "cast_scalar", "scalar_operand", "sequence", "nothing", "bound_by_scalar",
           "float_math", "cast_like_c"]

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


#: (op name, variant name) -> factory of a host kernel variant, registered for the CPU: a
#: pass of any plugin chooses it for a node by naming the variant (``KERNEL_ATTR``)
VARIANTS: dict[tuple[str, str], KernelFactory] = {}
#: the variant of BatchNorm's kernels whose compiled loops run on numba's threads (OpenMP):
#: for processes whose heavy kernels are not OpenBLAS's (the ``torch`` strategy chooses it
#: by this name); beside OpenBLAS's spinning threads they made native steps slower
OPENMP = "openmp"
#: the variant of BatchNorm's kernels (``OPENMP``'s loops) that also applies the relu after
#: it, forward (max(., 0) in its output) and backward (its output gradient masked), and of
#: that relu's kernels, which then have nothing left to do where their output is their
#: input's array (see ``nn.batch_norm_relu``)
BATCHNORM_RELU = "batchnorm_relu"
#: the plain BatchNorm and Convolution kernels applying the relu after them in their
#: forward pass (the normalisation's, the bias's), and that relu's kernels (as for
#: BATCHNORM_RELU): the default backend's own fusion, for graphs no strategy partitions
#: (``backends/default/fusion.py``); backward nodes keep their kernels
NATIVE_RELU_FUSED = "native_relu_fused"


def kernel_variant(op_name: str, variant: str) -> Callable[[KernelFactory], KernelFactory]:
    """Register the decorated factory as ``op_name``'s kernel variant ``variant`` (in place
    where the plain kernel is)."""
    def deco(factory: KernelFactory) -> KernelFactory:
        VARIANTS[(op_name, variant)] = factory
        return factory
    return deco


def special(xp):
    """scipy.special on the host, cupyx.scipy.special on a GPU (erf, erfinv, gamma...)."""
    if xp.__name__ == "numpy":
        import scipy.special
        return scipy.special
    import cupyx.scipy.special
    return cupyx.scipy.special


def float_math(factory, work=np.float32, half: bool = False, integers: bool = True):
    """``factory`` for float data; for integer data (MXNet computes such ops in float32, its
    special functions in float64, and truncates the result into the integer dtype: exp(3) =
    20, erf(5) = 0, sqrt(-7) and log(0) give the dtype's lowest value, as a C cast of NaN
    and inf does on x86) it runs on ``work`` copies of its one input and output and casts
    (not with ``integers`` False). With ``half``, float16 data too (kernels of several steps,
    which in float16 would round after each: sigmoid(-1) came out an ulp below MXNet's, which
    rounds once from float32)."""
    def wrapped(call):
        x, y = call.inputs[0], call.outputs[0]
        halves = half and x.dtype == np.float16 and y.dtype == np.float16
        numbers = integers and x.dtype.kind != "f" and y.dtype.kind != "f"
        if not (halves or numbers):
            return factory(call)
        xp = call.xp
        xf, yf = xp.empty(x.shape, work), xp.empty(y.shape, work)
        inner = factory(call.with_arrays([xf], [yf]))

        def run():
            xp.copyto(xf, x, casting="unsafe")
            inner()
            cast_like_c(xp, y, yf)
        return run
    wrapped.__doc__ = factory.__doc__
    return wrapped


def cast_like_c(xp, out, values) -> None:
    """Float ``values`` into ``out`` as MXNet's C casts give them on x86: into an integer
    dtype truncated, NaN, infinities and values beyond the dtype its lowest value (``values``
    is overwritten there); into a float dtype rounded."""
    if out.dtype.kind in "iu":
        xp.copyto(values, np.iinfo(out.dtype).min, where=~xp.isfinite(values))
    with np.errstate(invalid="ignore"):
        xp.copyto(out, values, casting="unsafe")


def is_float(arr) -> bool:
    return arr.dtype.kind == "f"


def cast_scalar(value: float, arr):
    """A Python scalar as ``arr``'s dtype (MXNet casts scalar operands to the data type)."""
    return arr.dtype.type(value)


def scalar_operand(xp, value, arr):
    """``value`` as an operand of a ufunc writing ``arr``: a 0-d array of ``arr``'s dtype on the
    host (numpy converts a Python or numpy scalar on every call: 0.72-0.88 us against 0.53 us
    per call on 16 floats, numpy 2.4; same dtype, so the same arithmetic), the dtype's scalar
    on a GPU."""
    value = cast_scalar(value, arr)
    return np.asarray(value) if xp is np else value


def nothing() -> None:
    """The kernel of a node none of whose outputs is requested."""


def same_array(a, b) -> bool:
    """Whether host arrays ``a`` and ``b`` are the same memory seen the same way (an output
    the memory plan put in place of an input)."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


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


# -- max/min against a scalar -------------------------------------------------------------------
#: numpy (2.x) runs maximum/minimum with a scalar operand through an unvectorised loop, ~4x
#: slower than the same ufunc on two arrays (64x512 float32: 27 us against 6 us, measured
#: with numpy 2.4); comparing against a constant block of up to this many elements, broadcast
#: over the rows of the data, takes the vectorised loop.
_BLOCK_LIMIT = 1 << 16
_BLOCK_MIN = 256


def bound_by_scalar(xp, ufunc: str, x, value, out) -> Callable[[], None]:
    """A kernel writing ``xp.<ufunc>(x, value)`` into ``out`` (``ufunc`` is 'maximum',
    'minimum' or 'fmax', ``value`` a scalar of ``out``'s dtype). On the host, for contiguous data of
    one dtype, the scalar becomes a shared read-only constant block (see ``_BLOCK_LIMIT``);
    results are identical, NaN and signed zeros included."""
    fn = getattr(xp, ufunc)
    block = _block_size(x.shape)
    if (xp is not np or block is None or x.dtype != out.dtype or x.shape != out.shape
            or not (x.flags.c_contiguous and out.flags.c_contiguous)):
        return partial(fn, x, scalar_operand(xp, value, out), out=out)
    return partial(fn, x.reshape(-1, block), _constant(out.dtype, np.asarray(value).item(), block),
                   out=out.reshape(-1, block))


def _block_size(shape: tuple) -> int | None:
    """The largest product of trailing dimensions within [_BLOCK_MIN, _BLOCK_LIMIT]."""
    best, n = None, 1
    for d in reversed(shape):
        n *= d
        if n > _BLOCK_LIMIT:
            break
        if n >= _BLOCK_MIN:
            best = n
    return best


@lru_cache(maxsize=64)  # shared between kernels; bounded: a block is up to 256 KiB
def _constant(dtype: np.dtype, value, n: int) -> np.ndarray:
    arr = np.full(n, value, dtype)
    arr.flags.writeable = False
    return arr
