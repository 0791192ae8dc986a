"""Device contexts: ``gx.cpu(i)`` and ``gx.gpu(i)``."""
from __future__ import annotations

import numbers
import threading

from .errors import AllocationError, ContextError

__all__ = ["Context", "cpu", "gpu", "current_context", "aligned_zeros", "HOST_ALIGNMENT"]

#: Host arrays the executor allocates start on a cache-line boundary: BLAS reads aligned
#: operands measurably faster (numpy's own allocations are only 16-byte aligned; see
#: benchmarks/README.md, training).
HOST_ALIGNMENT = 64


def aligned_zeros(shape, dtype, alignment: int = HOST_ALIGNMENT):
    """A zero-filled numpy array whose data starts on an ``alignment``-byte boundary."""
    import numpy as np
    dt = np.dtype(dtype)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    nbytes = dt.itemsize
    for d in shape:
        nbytes *= d
    raw = np.zeros(nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + nbytes].view(dt).reshape(shape)


class Context:
    """A device: ``device_type`` ('cpu' or 'gpu') and ``device_id``.

    ``cpu(0)`` and ``cpu(1)`` are distinct contexts (both run on the host) so that
    multi-context graphs can be built and tested without a GPU.
    """

    __slots__ = ("device_type", "device_id", "_old_ctx")
    _default: "Context"
    # MXNet's ``Context._default_ctx``: per thread, ``.value`` is the context a ``with``
    # block made current (``current_context()`` reads it; cpu(0) where none was set).
    _default_ctx = threading.local()

    def __init__(self, device_type: str = "cpu", device_id: int = 0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if not isinstance(device_type, str) or device_type not in ("cpu", "gpu", "cpu_pinned"):
            raise ContextError(f"unknown device type {device_type!r:.60}: expected 'cpu' or "
                               f"'gpu'")
        if not isinstance(device_id, numbers.Integral) or isinstance(device_id, bool) or \
                device_id < 0:
            raise ContextError(f"device id {device_id!r:.60}: expected an integer >= 0")
        self.device_type = device_type
        self.device_id = int(device_id)
        self._old_ctx = None

    def __enter__(self) -> "Context":
        """``with gx.cpu(1): ...`` makes this the current context inside the block."""
        self._old_ctx = getattr(Context._default_ctx, "value", None)
        Context._default_ctx.value = self
        return self

    def __exit__(self, *exc_info) -> None:
        Context._default_ctx.value = self._old_ctx

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Context) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    @property
    def is_gpu(self) -> bool:
        return self.device_type == "gpu"

    @property
    def xp(self):
        """The array module arrays of this context use (numpy, or cupy on a GPU)."""
        if not self.is_gpu:
            import numpy
            return numpy
        try:
            import cupy
        except ImportError as exc:
            raise ContextError(f"context {self!r} needs CuPy (pip install graphexec[gpu]): {exc}") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - CUDA reports its own error types
            raise ContextError(f"context {self!r}: no usable CUDA device ({exc})") from None
        if self.device_id >= count:
            raise ContextError(f"context {self!r}: only {count} GPU(s) present")
        return cupy


    def zeros(self, shape, dtype):
        """A zero-filled array on this context: on the host aligned to ``HOST_ALIGNMENT``
        bytes, CuPy arrays on the right GPU."""
        xp = self.xp
        try:
            if not self.is_gpu:
                return aligned_zeros(shape, dtype)
            with xp.cuda.Device(self.device_id):
                return xp.zeros(shape, dtype=dtype)
        except (MemoryError, ValueError, OverflowError) as exc:  # numpy's "array is too big"
            raise AllocationError(f"cannot allocate an array of shape {shape} and dtype "
                                  f"{dtype} on {self}: {type(exc).__name__}: {exc}") from None


def cpu(device_id: int = 0) -> Context:
    """The host CPU context."""
    return Context("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    """A CUDA GPU context (arrays are CuPy arrays)."""
    return Context("gpu", device_id)


def current_context() -> Context:
    """The context of the innermost ``with <context>:`` block of this thread, else
    ``cpu(0)``."""
    ctx = getattr(Context._default_ctx, "value", None)
    return ctx if ctx is not None else cpu(0)
