"""The operator registry: one :class:`OpDef` per operator, looked up by MXNet name or alias.

An OpDef is a declaration only: attribute schema, input/output names, shape and dtype rules,
the gradient rule (a graph rewrite) and traits that passes query. Kernels live with their
backend (see ``backends/default``). The registry is filled by the plugins'
``graphexec_register_ops`` hooks when ``graphexec`` is imported (``core/startup.py``); it
never loads anything itself.
"""
from __future__ import annotations

import difflib
from typing import Any, Callable, Sequence

from ..ir.attrs import Params, Schema
from ..ir.errors import UnknownOpError

__all__ = ["OpDef", "register_op", "get_op", "find_op", "all_ops", "ShapeConflict", "InferError",
           "op_function"]

_OPS: dict[str, "OpDef"] = {}
_CANONICAL: dict[str, "OpDef"] = {}

Names = Sequence[str] | Callable[[Params], Sequence[str]]
Count = int | Callable[[Params], int]


class InferError(Exception):
    """Raised by shape/dtype rules; the inference pass adds the node and op to the message."""


class ShapeConflict(InferError):
    """An input or output already holds a value that disagrees with the inferred one."""

    def __init__(self, side: str, index: int, have: Any, want: Any):
        super().__init__(side, index, have, want)
        self.side, self.index, self.have, self.want = side, index, have, want


def _const(value):
    return lambda p: value


class OpDef:
    """Declaration of one operator.

    Parameters mirror MXNet's operator registration: ``inputs`` (names, or a function of
    the parsed params), ``aux`` (names of inputs that are auxiliary states), ``outputs``
    (names; ``visible`` outputs are the first ``num_visible_outputs``), ``infer_shape`` /
    ``infer_type`` (``fn(params, in_list, out_list)`` filling the lists in place),
    ``gradient`` (a graph rewrite, see ``core/passes/gradient.py``), ``traits`` (a set passes
    query, e.g. ``{"elementwise"}``), ``inplace`` ((input, output) pairs that may share memory),
    ``variadic`` (name of the attribute counting positional inputs, e.g. ``num_args``),
    ``input_var_attrs`` (attributes given to implicitly created input variables),
    ``named_inputs`` (False where MXNet lists inputs as ``input<k>``: monitor names),
    ``random`` (True, or ``fn(params) -> bool``, where the op draws random numbers: such nodes
    are never merged, and a replayed forward restores the generator first),
    ``settle_shape`` (ops whose output shape depends on the data, trait ``dynamic_shape``:
    ``fn(params, input arrays) -> output shapes``, called at run time before the kernel, as
    MXNet 1.9.1's executor settles dynamic shapes).
    """

    def __init__(self, name: str, *, aliases: Sequence[str] = (), params: dict | None = None,
                 inputs: Names = ("data",), aux: Names = (), outputs: Names = ("output",),
                 num_visible: Count | None = None, infer_shape: Callable | None = None,
                 infer_type: Callable | None = None, gradient: Callable | None = None,
                 traits: Sequence[str] = (), inplace: Sequence[tuple[int, int]] = (),
                 variadic: str | None = None, input_var_attrs: dict | None = None,
                 named_inputs: bool = True, random: bool | Callable = False,
                 settle_shape: Callable | None = None, doc: str = ""):
        self.name = name
        self.aliases = tuple(aliases)
        self.schema = Schema(params)
        self.variadic = variadic
        self._inputs = inputs if callable(inputs) else _const(list(inputs))
        self._outputs = outputs if callable(outputs) else _const(list(outputs))
        self._aux = aux if callable(aux) else tuple(aux)
        self.has_aux = callable(aux) or bool(aux)
        #: for region operators: ``fn(attrs, subgraphs) -> Params`` (see core/subgraph)
        self.subgraph_params: Callable | None = None
        if num_visible is None:
            self._num_visible = None
        else:
            self._num_visible = num_visible if callable(num_visible) else _const(num_visible)
        self._fixed_outputs = None if callable(outputs) else len(outputs)
        self.infer_shape_fn = infer_shape
        self.infer_type_fn = infer_type
        self.gradient = gradient
        self.traits = frozenset(traits)
        self.inplace = tuple(inplace)
        self.input_var_attrs = dict(input_var_attrs or {})
        self.named_inputs = named_inputs
        self._random = random if callable(random) else _const(bool(random))
        self.settle_shape = settle_shape
        self.__doc__ = doc or f"The {name} operator."

    def draws_random(self, p: Params) -> bool:
        """Whether a node of this op with parameters ``p`` draws random numbers."""
        return self._random(p)

    # -- names and counts -------------------------------------------------------------
    def input_names(self, p: Params) -> list[str]:
        return list(self._inputs(p))

    def output_names(self, p: Params) -> list[str]:
        return list(self._outputs(p))

    def num_outputs(self, p: Params) -> int:
        n = self._fixed_outputs
        return n if n is not None else len(self._outputs(p))

    def num_visible_outputs(self, p: Params) -> int:
        if self._num_visible is None:
            return self.num_outputs(p)
        return self._num_visible(p)

    def aux_indices(self, p: Params) -> list[int]:
        names = self.input_names(p)
        aux = self._aux(p) if callable(self._aux) else self._aux
        return [names.index(a) for a in aux if a in names]

    def parse(self, attrs: dict[str, Any], node_name: str | None = None) -> Params:
        return self.schema.parse(attrs, self.name, node_name)

    def __repr__(self) -> str:
        return f"OpDef({self.name})"


def register_op(op: OpDef) -> OpDef:
    """Add ``op`` under its name and aliases. Re-registering a name replaces it (plugins may
    override a built-in declaration deliberately)."""
    _CANONICAL[op.name] = op
    _OPS[op.name] = op
    for alias in op.aliases:
        _OPS[alias] = op
    return op


def find_op(name: str) -> OpDef | None:
    """The OpDef registered as ``name`` (canonical name or alias), or None."""
    return _OPS.get(name)


def internal_name(name: str) -> str:
    """The operator ``_internal.<name>`` means in MXNet's ``sym._internal`` / ``nd._internal``
    namespaces: ``name`` where an operator is registered so, else ``_name`` where that one
    is (``_internal.plus`` is ``_plus``); ``name`` when neither is."""
    return "_" + name if find_op(name) is None and find_op("_" + name) is not None else name


def op_function(namespace: str, name: str, prefix: str, apply: Callable[[str, tuple, dict], Any]
                ) -> Callable[..., Any]:
    """The function ``<namespace>.<name>`` of a module that exposes every registered operator
    (``gx.sym``, ``gx.nd`` and their ``contrib``): ``apply(op_name, args, kwargs)`` on the
    operator ``prefix + name``. AttributeError (as a module's ``__getattr__`` must raise)
    when no such operator is registered."""
    op_name = prefix + name
    op = None if name.startswith("__") else find_op(op_name)
    if op is None:
        raise AttributeError(f"module {namespace!r} has no attribute {name!r} (no function or "
                             f"registered operator {op_name!r}: no operator of that name is "
                             f"registered; gx.operator.get_all_registered_operators() lists "
                             f"them)")

    def function(*args: Any, **kwargs: Any) -> Any:
        return apply(op_name, args, kwargs)
    function.__name__, function.__doc__ = name, op.__doc__
    return function


def get_op(name: str) -> OpDef:
    """The OpDef registered as ``name`` (canonical name or alias)."""
    op = find_op(name)
    if op is None:
        close = difflib.get_close_matches(name, list(_OPS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownOpError(f"operator {name!r} is not registered{hint}")
    return op


def all_ops() -> dict[str, OpDef]:
    """Canonical name -> OpDef for every registered operator."""
    return dict(_CANONICAL)


def all_names() -> list[str]:
    """Every registered name, aliases included."""
    return list(_OPS)
