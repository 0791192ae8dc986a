"""Creating NDArrays as ``mx.nd`` does: ``array``, ``zeros``, ``ones``, ``full``, ``empty``,
``arange``, ``linspace``, ``eye``, ``concatenate``, ``moveaxis``, ``onehot_encode``,
``waitall``. MXNet's default dtype is float32, also for ``array`` of a non-float source."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphexec.core.ir.context import Context, current_context
from graphexec.core.ir.ndarray import ArrayValueError, NDArray, user_array

from .imperative import invoke

__all__ = ["array", "zeros", "ones", "full", "empty", "arange", "linspace", "eye",
           "concatenate", "moveaxis", "onehot_encode", "waitall", "as_ctx", "DEFAULT_DTYPE"]

#: MXNet's ``mx_real_t``
DEFAULT_DTYPE = np.dtype("float32")


def as_ctx(ctx: Any) -> Context:
    """``ctx`` as a Context (None: the current context)."""
    if ctx is None:
        return current_context()
    return ctx if isinstance(ctx, Context) else Context(ctx)


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def _new(values: np.ndarray, ctx: Any) -> NDArray:
    return user_array(values, as_ctx(ctx))


def array(source_array: Any, ctx: Any = None, dtype: Any = None) -> NDArray:
    """A new NDArray holding a copy of ``source_array`` (an array, list or scalar); dtype:
    the source's for an NDArray, else float32 unless given."""
    if dtype is None:
        dtype = source_array.dtype if isinstance(source_array, NDArray) else DEFAULT_DTYPE
    try:
        values = np.array(source_array, dtype=dtype, subok=False)
    except (TypeError, ValueError) as exc:
        raise ArrayValueError(f"array: cannot make an array of {type(source_array).__name__} "
                              f"with dtype {dtype}: {exc}") from None
    if values.ndim == 0:
        values = values.reshape(1)  # MXNet's legacy arrays have at least one dimension
    ctx = source_array.context if ctx is None and isinstance(source_array, NDArray) else ctx
    return _new(values, ctx)


def empty(shape: Any, ctx: Any = None, dtype: Any = None) -> NDArray:
    """An uninitialised NDArray (zero-filled here)."""
    return zeros(shape, ctx, dtype)


def zeros(shape: Any, ctx: Any = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """An NDArray of zeros (float32 unless ``dtype``)."""
    ctx = as_ctx(ctx)
    return user_array(ctx.zeros(_shape(shape), dtype or DEFAULT_DTYPE), ctx)


def ones(shape: Any, ctx: Any = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """An NDArray of ones (float32 unless ``dtype``)."""
    return full(shape, 1, ctx, dtype or DEFAULT_DTYPE)


def full(shape: Any, val: Any, ctx: Any = None, dtype: Any = DEFAULT_DTYPE,
         out: NDArray | None = None) -> NDArray:
    """An NDArray filled with ``val`` (or ``out`` filled with it)."""
    if out is not None:
        out[...] = val
        return out
    arr = zeros(shape, ctx, dtype)
    arr[...] = val
    return arr


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           infer_range: Any = None, ctx: Any = None, dtype: Any = DEFAULT_DTYPE) -> NDArray:
    """Evenly spaced values in [start, stop), each repeated ``repeat`` times."""
    if stop is None:
        start, stop = 0, start
    # MXNet's range kernel: the length from the float values, then start + i * step in the
    # output dtype (an integer dtype truncates start and step first: 1.3 steps by 1)
    count = max(int(np.ceil((stop - start) / step)), 0)
    dt = np.dtype(dtype)
    if dt.kind in "iub":
        values = (int(start) + np.arange(count, dtype=np.int64) * int(step)).astype(dt)
    else:
        values = np.arange(start, stop, step, dtype=np.float64).astype(dt)
    return _new(np.repeat(values, int(repeat)) if repeat != 1 else values, ctx)


def linspace(start: float, stop: float, num: int, endpoint: bool = True, ctx: Any = None,
             dtype: Any = DEFAULT_DTYPE) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    return _new(np.linspace(start, stop, int(num), endpoint=endpoint).astype(dtype), ctx)


def eye(N: int, M: int = 0, k: int = 0, ctx: Any = None, dtype: Any = None) -> NDArray:
    """A 2-D array with ones on diagonal ``k`` (``M`` = 0: square)."""
    return _new(np.eye(int(N), int(M) or None, int(k), dtype=dtype or DEFAULT_DTYPE), ctx)


def concatenate(arrays: Sequence[Any], axis: int = 0, always_copy: bool = True) -> NDArray:
    """The arrays joined along ``axis`` (the Concat operator)."""
    if not arrays:
        raise ArrayValueError("concatenate needs at least one array")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return invoke("Concat", list(arrays), {"dim": axis})


def moveaxis(tensor: NDArray, source: int, destination: int) -> NDArray:
    """``tensor`` with axis ``source`` moved to ``destination`` (the transpose operator)."""
    axes = list(range(tensor.ndim))
    axes.insert(destination % tensor.ndim, axes.pop(source % tensor.ndim))
    return invoke("transpose", [tensor], {"axes": tuple(axes)})


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """Write the one-hot encoding of ``indices`` into ``out`` (shape (n, classes))."""
    return invoke("one_hot", [indices], {"depth": out.shape[1], "dtype": out.dtype, "out": out})


def waitall() -> None:
    """Wait for all pending computation (it is synchronous: returns at once)."""
