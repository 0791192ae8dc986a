"""Math for the generated CUDA kernels (:mod:`.cuda`): the names the code generator's
expressions call (:mod:`.vmath` on the CPU), as numba CUDA device functions.

On the device the float32 functions are CUDA's own (``expf``, ``tanhf``...: numba maps the
NumPy ufuncs on scalars to libdevice), so the CPU path's vectorised polynomials are not
needed; float16 arrays are read and written as float16 (the CPU path moves their bits).
Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) these run as Python on NumPy
scalars, in the scalar's own precision.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

__all__ = ["exp_f4", "expm1_f4", "log_f4", "log1p_f4", "log2_f4", "log10_f4", "tanh_f4",
           "sigmoid_f4", "erf_f4", "softrelu_f4", "exp_f8", "expm1_f8", "log_f8", "log1p_f8",
           "log2_f8", "log10_f8", "tanh_f8", "sigmoid_f8", "erf_f8", "softrelu_f8",
           "h2f", "f2h", "round_f16", "sel"]

_device = cuda.jit(device=True)


@_device
def sel(cond, a, b):
    """``a`` where ``cond`` else ``b`` (both already computed)."""
    return a if cond else b


@_device
def h2f(x):
    """A float16 value as float32 (exact)."""
    return np.float32(x)


@_device
def f2h(x):
    """float32 to float16, rounding to nearest even (the store into a float16 array)."""
    return np.float16(x)


@_device
def round_f16(x):
    """``x`` rounded to float16 once, as a float32."""
    return np.float32(np.float16(x))


def _pair(fn32, fn64):
    return _device(fn32), _device(fn64)


exp_f4, exp_f8 = _pair(lambda x: np.exp(x), lambda x: np.exp(x))
expm1_f4, expm1_f8 = _pair(lambda x: np.expm1(x), lambda x: np.expm1(x))
log_f4, log_f8 = _pair(lambda x: np.log(x), lambda x: np.log(x))
log1p_f4, log1p_f8 = _pair(lambda x: np.log1p(x), lambda x: np.log1p(x))
log2_f4, log2_f8 = _pair(lambda x: np.log2(x), lambda x: np.log2(x))
log10_f4, log10_f8 = _pair(lambda x: np.log10(x), lambda x: np.log10(x))
tanh_f4, tanh_f8 = _pair(lambda x: np.tanh(x), lambda x: np.tanh(x))


@_device
def sigmoid_f4(x):
    return np.float32(1) / (np.float32(1) + np.exp(-x))


@_device
def sigmoid_f8(x):
    return 1.0 / (1.0 + np.exp(-x))


@_device
def erf_f4(x):
    return np.float32(math.erf(x))


@_device
def erf_f8(x):
    return math.erf(x)


@_device
def softrelu_f4(x):
    """ln(1 + e**x) = max(x, 0) + ln(1 + e**-|x|), as numpy's logaddexp(x, 0)."""
    m = x if x > np.float32(0) else np.float32(0)
    return m + np.log1p(np.exp(-abs(x)))


@_device
def softrelu_f8(x):
    m = x if x > 0.0 else 0.0
    return m + np.log1p(np.exp(-abs(x)))
