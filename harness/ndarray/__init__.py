"""``gx.nd`` (also ``gx.ndarray``): MXNet 1.x's imperative array API.

Arrays are :class:`NDArray` (a ``numpy.ndarray`` subclass with MXNet's idioms); creation
functions (``array``, ``zeros``, ``ones``, ``full``, ``empty``, ``arange``, ...), binary
functions with broadcasting (``add``, ``maximum``, ...), samplers (``gx.nd.random``),
``save`` / ``load`` in MXNet's binary format, and every registered operator as
``gx.nd.<op>(...)``, resolved on attribute access and run through the executor's kernels
(see :mod:`.imperative`), so operators plugins register appear too.

>>> x = gx.nd.array([[1, 2], [3, 4]])
>>> gx.nd.FullyConnected(x, gx.nd.ones((3, 2)), gx.nd.zeros(3), num_hidden=3).asnumpy()
array([[3., 3., 3.],
       [7., 7., 7.]], dtype=float32)
"""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

from graphexec.core.ir.ndarray import ArrayValueError, NDArray, user_array
from graphexec.core.ops.registry import all_names, internal_name, op_function
from graphexec.core.symbol import ndarray_io
from graphexec.core.symbol.namespaces import LINALG_OPS

from . import methods  # noqa: F401 - installs the operator methods on NDArray
from . import contrib, random  # noqa: F401 - gx.nd.contrib, gx.nd.random
from .arith import (add, divide, equal, greater, greater_equal, lesser, lesser_equal,
                    logical_and, logical_or, logical_xor, maximum, minimum, modulo, multiply,
                    not_equal, power, subtract, true_divide)
from .creation import (arange, array, concatenate, empty, eye, full, linspace, moveaxis, ones,
                       onehot_encode, waitall, zeros)
from .imperative import invoke

__all__ = ["NDArray", "ArrayValueError", "array", "zeros", "ones", "full", "empty", "arange",
           "linspace", "eye", "concatenate", "moveaxis", "onehot_encode", "waitall", "save",
           "load", "random", "invoke", "add", "subtract", "multiply", "divide", "true_divide",
           "linalg", "modulo", "power", "maximum", "minimum", "equal", "not_equal", "greater",
           "greater_equal", "lesser", "lesser_equal", "logical_and", "logical_or",
           "logical_xor"]


def save(fname: str | os.PathLike, data: NDArray | Sequence[Any] | Mapping[str, Any]) -> None:
    """Write one array, a list or a dict of arrays in MXNet's ``.params`` format."""
    ndarray_io.save(fname, data)


def load(fname: str | os.PathLike) -> list[NDArray] | dict[str, NDArray]:
    """Read a file ``save`` (or MXNet's ``mx.nd.save``) wrote: a list or a dict of NDArrays."""
    loaded = ndarray_io.load(fname)
    if isinstance(loaded, dict):
        return {k: user_array(v) for k, v in loaded.items()}
    return [user_array(v) for v in loaded]


def _linalg_function(short: str) -> Any:
    def apply(*args: Any, **kwargs: Any) -> Any:
        return invoke(f"_linalg_{short}", args, kwargs)
    apply.__name__ = short
    apply.__doc__ = f"``_linalg_{short}`` on NDArrays (MXNet's ``mx.nd.linalg.{short}``)."
    return apply


#: ``gx.nd.linalg``: the ``_linalg_*`` operators, as ``mx.nd.linalg``
linalg = SimpleNamespace(**{short: _linalg_function(short) for short in LINALG_OPS})


class _Internal:
    """``gx.nd._internal.<op>``: every registered operator by name, as MXNet's
    ``mx.nd._internal`` (where it keeps the underscore-prefixed ones: ``_plus_scalar``,
    ``_copy``, ...; ``plus_scalar`` finds ``_plus_scalar`` there too)."""

    def __getattr__(self, name: str) -> Any:
        return op_function("graphexec.nd._internal", internal_name(name), "", invoke)


#: ``gx.nd._internal``, as ``mx.nd._internal`` (Gluon blocks call ``F._internal.<op>``)
_internal = _Internal()


def __getattr__(name: str) -> Any:
    return op_function("graphexec.nd", name, "", invoke)


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(all_names()))
