"""``NDArray``: the arrays users see, a ``numpy.ndarray`` subclass with MXNet's idioms.

Executors hand out NDArrays (``simple_bind``'s arguments, gradients and auxiliary states,
every executor's ``outputs``); arrays a user binds are kept as they are. An NDArray is the
same memory as the numpy buffer it views (no copy), so ``isinstance(x, numpy.ndarray)``
holds and kernels work on it unchanged; the planner's internal buffers stay plain numpy
arrays, so the executor's inner loop never pays the subclass's dispatch.

On top of numpy's behaviour an NDArray has what MXNet scripts call: ``asnumpy()``,
``asscalar()``, ``context`` / ``ctx``, ``copyto()``, ``as_in_context()``,
``wait_to_read()``, ``stype``; integer indexing gives a 0-d NDArray rather than a numpy
scalar (so ``x[0].asscalar()`` works). The operator methods (``x.exp()``, ``x.sum(axis=1)``
with MXNet's semantics, ...) are installed by the harness (``graphexec.harness.ndarray``)
with :func:`ndarray_method`, as the layers above install Symbol methods.

GPU arrays (CuPy) are not wrapped (:func:`user_array` returns them unchanged).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .context import Context, cpu
from .errors import ContextError, GraphexecError

__all__ = ["NDArray", "user_array", "user_zeros", "ndarray_method"]

_CPU0 = cpu(0)


class NDArray(np.ndarray):
    """An array on a context: numpy's ndarray with MXNet's NDArray idioms.

    >>> x = gx.nd.array([[1, 2], [3, 4]])
    >>> x.asnumpy().sum(), x[1, 1].asscalar(), x.context
    (10.0, 4.0, cpu(0))
    """

    # a view keeps the context of the array it views
    def __array_finalize__(self, obj: Any) -> None:
        ctx = getattr(obj, "_ctx", None)
        if ctx is not None:
            self._ctx = ctx

    def __reduce__(self):
        state = super().__reduce__()
        return (state[0], state[1], (state[2], self.context))

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], Context):
            state, self._ctx = state
        super().__setstate__(state)

    def __getitem__(self, key: Any) -> Any:
        out = super().__getitem__(key)
        if isinstance(out, np.ndarray):
            return out
        return user_array(np.array(out), self.context)  # numpy gives a scalar: keep an array

    __hash__ = object.__hash__  # MXNet's NDArrays are hashable (by identity)

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.shape))
        return f"\n{np.asarray(self)!s}\n<NDArray {shape} @{self.context}>"

    # -- MXNet's idioms ----------------------------------------------------------------------
    @property
    def context(self) -> Context:
        """The device context this array lives on."""
        return self.__dict__.get("_ctx", _CPU0)

    ctx = context

    @property
    def stype(self) -> str:
        """Storage type: arrays are dense (``'default'``)."""
        return "default"

    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the values."""
        return np.array(self, subok=False)

    def asscalar(self) -> Any:
        """The value of a one-element array as a numpy scalar."""
        if self.size != 1:
            raise ArrayValueError(f"The current array is not a scalar: asscalar() needs one "
                                  f"element, the array has shape {self.shape}")
        return np.asarray(self).reshape(-1)[0]

    def wait_to_read(self) -> None:
        """Computation is synchronous: there is nothing to wait for."""

    wait_to_write = wait_to_read

    def copyto(self, other: Any) -> "NDArray":
        """Copy into ``other`` (an array of the same shape, returned) or onto a context (a
        new array there)."""
        if isinstance(other, Context):
            return user_array(np.array(self, subok=False), other)
        if not isinstance(other, np.ndarray):
            raise TypeError(f"copyto does not support type {type(other).__name__}: give an "
                            f"NDArray or a Context")
        if other is self:
            return other
        if other.shape != self.shape:
            raise ArrayValueError(f"copyto: shape mismatch, source {self.shape} and target "
                                  f"{other.shape}")
        np.copyto(other, self, casting="unsafe")
        return other

    def as_in_context(self, context: Context) -> "NDArray":
        """This array when it is on ``context``, else a copy there."""
        if context == self.context:
            return self
        return self.copyto(context)


class ArrayValueError(GraphexecError, ValueError):
    """An NDArray operation got values it cannot work on (wrong size, mismatched shapes)."""


__all__.append("ArrayValueError")


def user_array(arr: Any, ctx: Context | None = None) -> Any:
    """``arr`` as an :class:`NDArray` on ``ctx`` (a view, never a copy); NDArrays already on
    ``ctx`` and non-numpy (GPU) arrays are returned unchanged."""
    if type(arr) is NDArray:
        if ctx is None or arr.context == ctx:
            return arr
    elif not isinstance(arr, np.ndarray):
        return arr
    view = arr.view(NDArray)
    if ctx is not None and ctx != _CPU0:
        if ctx.is_gpu:
            raise ContextError(f"a host (numpy) array cannot live on {ctx}")
        view._ctx = ctx
    return view


def user_zeros(ctx: Context, shape: Any, dtype: Any) -> Any:
    """A zero-filled array on ``ctx`` as users see it (an NDArray on the host)."""
    return user_array(ctx.zeros(shape, dtype), ctx)


def ndarray_method(fn: Callable) -> Callable:
    """Install ``fn`` as the :class:`NDArray` method of the same name (a layer above this one
    adding what it implements); returns ``fn`` unchanged."""
    setattr(NDArray, fn.__name__, fn)
    return fn
