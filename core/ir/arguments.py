"""Checks of the values users hand to the API (shapes, dtypes, dicts of arrays), so that a
wrong type or value is a :class:`~.errors.GraphexecError` naming the argument instead of a
numpy or Python traceback from deep inside."""
from __future__ import annotations

import numbers
import os
from typing import Any, BinaryIO, Mapping

import numpy as np

from .errors import ArgumentShapeError, ArgumentTypeError

__all__ = ["as_shape", "as_dtype", "as_mapping", "as_array", "open_regular_file",
           "DTYPE_NAMES"]

#: the dtypes MXNet 1.x computes with (numpy names; bfloat16 has no numpy equivalent)
DTYPE_NAMES = frozenset({"float32", "float64", "float16", "uint8", "int32", "int8", "int64",
                         "bool", "int16", "uint16", "uint32", "uint64"})
_INT64 = 1 << 63


def as_shape(value: Any, what: str) -> tuple[int, ...]:
    """``value`` (a tuple or list of integers >= 0) as a tuple of ints; ``what`` names it."""
    if not isinstance(value, (tuple, list)):
        raise ArgumentTypeError(f"{what}: a shape is a tuple of integers such as (2, 3), got "
                                f"{type(value).__name__} {value!r:.60}")
    dims = []
    for d in value:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral):
            raise ArgumentTypeError(f"{what}: shape {tuple(value)!r:.80} holds "
                                    f"{type(d).__name__} {d!r:.30}; dimensions are integers")
        if not 0 <= int(d) < _INT64:
            raise ArgumentShapeError(f"{what}: shape {tuple(value)!r:.80} has dimension {int(d)}; "
                                     f"dimensions are integers from 0 to 2**63-1")
        dims.append(int(d))
    return tuple(dims)


def as_dtype(value: Any, what: str) -> np.dtype:
    """``value`` (a dtype, a numpy type or its name) as one of the dtypes graphexec computes
    with (:data:`DTYPE_NAMES`)."""
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError, SyntaxError):
        raise ArgumentTypeError(f"{what}: {value!r:.60} is not a dtype; expected one of "
                                f"{', '.join(sorted(DTYPE_NAMES))}") from None
    if dtype.name not in DTYPE_NAMES or not dtype.isnative and dtype.itemsize > 1:
        raise ArgumentTypeError(f"{what}: dtype {dtype} is not one graphexec computes with; "
                                f"expected one of {', '.join(sorted(DTYPE_NAMES))}")
    return dtype


def as_mapping(value: Any, what: str, of: str = "arrays") -> Mapping:
    """``value`` when it is a dict (``None`` as an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"{what} must be a dict of name -> {of}, got "
                                f"{type(value).__name__}")
    return value


def as_array(value: Any, what: str) -> Any:
    """``value`` when it is an array (anything with ``shape`` and ``dtype``) of a dtype
    graphexec computes with."""
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        raise ArgumentTypeError(f"{what} must be an array (numpy.ndarray), got "
                                f"{type(value).__name__}")
    if np.dtype(value.dtype).name not in DTYPE_NAMES:
        raise ArgumentTypeError(f"{what} has dtype {value.dtype}, which graphexec does not "
                                f"compute with; expected one of {', '.join(sorted(DTYPE_NAMES))}")
    return value


def _special_file(path: Any) -> bool:
    """Whether ``path`` exists but is neither a folder nor a regular file: a FIFO or a
    device, which a loader must not open (reading could block, or never end)."""
    return os.path.exists(path) and not os.path.isdir(path) and not os.path.isfile(path)


def open_regular_file(path: Any, error: type[Exception], what: str) -> BinaryIO:
    """``path`` opened for binary reading, for a loader of ``what`` ("symbol file", or ""):
    a FIFO or device, a missing or unreadable file and a name with a NUL byte are ``error``
    saying ``cannot read <what> <path>: <why>``."""
    shown = f"{what} {os.fsdecode(path)!r}" if what else repr(os.fsdecode(path))
    if _special_file(path):
        raise error(f"cannot read {shown}: it is not a regular file")
    try:
        return open(path, "rb")
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise error(f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}") from None
