"""Exception hierarchy: one base class users can catch, subclasses that keep MXNet-era
``except`` clauses working by also deriving from the builtin MXNet's Python layer raised."""
from __future__ import annotations

__all__ = [
    "GraphexecError", "MXNetError", "OpError", "ShapeInferenceError", "TypeInferenceError",
    "UndecidedShapeError", "AttributeParseError", "UnknownOpError", "JSONFormatError",
    "ParamsFormatError", "BindError", "UnknownArgumentError", "ArgumentShapeError",
    "DuplicateNameError", "PassError", "PluginError", "UnknownBackendError", "KernelNotFoundError",
    "ContextError", "KernelError", "BackwardError", "HeadGradientError", "PlacementError",
    "AllocationError", "ConcurrentUseError", "ArgumentTypeError", "ArgumentValueError",
    "OutputIndexError", "NotImplementedForSymbol",
]


class GraphexecError(Exception):
    """Base class of every error graphexec raises for a user mistake or a failed backend."""


#: MXNet code catches ``mxnet.base.MXNetError``; ours is the same base class.
MXNetError = GraphexecError


class OpError(GraphexecError, RuntimeError):
    """An operator rejected its inputs or attributes ("Error in operator <node>: ...")."""


class ShapeInferenceError(OpError):
    """Shape inference found inconsistent shapes at a node."""


class TypeInferenceError(OpError):
    """Dtype inference found inconsistent dtypes at a node."""


class UndecidedShapeError(GraphexecError, RuntimeError):
    """simple_bind could not decide the shape (or dtype) of some arguments."""


class AttributeParseError(GraphexecError, ValueError):
    """An operator attribute is missing, unknown or has a malformed value."""


class UnknownOpError(GraphexecError, ValueError):
    """No operator of that name is registered."""


class NotImplementedForSymbol(GraphexecError, NotImplementedError):
    """An operation a Symbol does not support (MXNet's name: ``bool(sym)``, ...)."""


class JSONFormatError(GraphexecError, ValueError):
    """A symbol JSON document is malformed."""


class ParamsFormatError(GraphexecError, ValueError):
    """A ``.params`` (NDArray list) file is truncated or malformed."""


class BindError(GraphexecError, ValueError):
    """bind / simple_bind received arrays that do not fit the symbol."""


class UnknownArgumentError(GraphexecError, TypeError):
    """An argument name the symbol does not have (forward(**kwargs), copy_params_from)."""


class ArgumentShapeError(GraphexecError, ValueError):
    """An array's shape does not match what the executor holds."""


class DuplicateNameError(GraphexecError, ValueError):
    """Two arguments (or outputs, auxiliary states) share one name."""


class PassError(GraphexecError, RuntimeError):
    """A graph pass failed; the message names the pass and the passes run before it."""


class PluginError(GraphexecError, RuntimeError):
    """A plugin failed to import or to register."""


class UnknownBackendError(GraphexecError, ValueError):
    """A subgraph backend name that no plugin registered."""


class KernelNotFoundError(GraphexecError, NotImplementedError):
    """No kernel is registered for an operator on a device."""


class ContextError(GraphexecError, ValueError):
    """A device context is unavailable or arrays live on the wrong device."""


class KernelError(GraphexecError, RuntimeError):
    """A kernel failed while executing a node; the message names the node and op."""


class BackwardError(GraphexecError, RuntimeError):
    """backward() cannot run (no training forward before it)."""


class HeadGradientError(GraphexecError, RuntimeError):
    """A non-loss output got no head gradient in backward()."""


class PlacementError(GraphexecError, RuntimeError):
    """A subgraph backend cannot run a region where the executor runs and the user asked
    for strict placement (never answered by a native fallback)."""


class AllocationError(GraphexecError, MemoryError):
    """An array of the inferred (or declared) shape cannot be allocated: too large for this
    machine or for the address space."""


class ConcurrentUseError(GraphexecError, RuntimeError):
    """An executor (or executors sharing one memory pool) ran in two threads at once, or
    re-entered itself: its arrays would be overwritten under the running computation."""


class ArgumentTypeError(GraphexecError, TypeError):
    """A function of the API received an argument of the wrong type (a list where a dict
    of arrays is expected, a string where a shape is, ...)."""


class ArgumentValueError(GraphexecError, ValueError):
    """A function of the API received an argument of the right type but a wrong value (an
    output name a symbol does not have, an attribute value that is not a string, ...)."""


class OutputIndexError(GraphexecError, IndexError):
    """A symbol was indexed past its outputs."""
