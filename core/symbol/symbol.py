"""The Symbol API: MXNet-compatible symbolic graphs built from variables and operators.

:class:`Symbol` is defined once, here, with what the symbol layer itself can do: structure
(``list_arguments``, ``get_internals``, indexing, ``Group``), composition, attributes,
operator application and ``debug_str``. The layers above add the methods they implement,
each installed with :func:`symbol_method` where it is defined, so that no layer reaches up:

- ``tojson``, ``save``, pickling (``symbol/json_io.py``),
- ``infer_shape``, ``infer_shape_partial``, ``infer_type``, ``infer_type_partial``
  (``passes/inference.py``),
- ``optimize_for`` (``subgraph/frontend.py``),
- ``bind``, ``simple_bind`` (``runtime/bind.py``).

``import graphexec`` imports every layer, so a Symbol always has all of them.
"""
from __future__ import annotations

import copy
from typing import Any, Iterator, Sequence

import numpy as np

from ..ir.arguments import as_dtype, as_shape
from ..ir.attrs import HIDDEN_KEYS, HIDDEN_STORED, hidden_key, to_attr_string
from ..ir.errors import (ArgumentTypeError, ArgumentValueError, AttributeParseError,
                         DuplicateNameError, GraphexecError, NotImplementedForSymbol,
                         OutputIndexError,
                         UnknownArgumentError)
from ..ir.graph import Entry, IndexedGraph, Node
from ..ops.registry import OpDef, find_op, get_op
from .debug_str import graph_debug_str
from .naming import AttrScope, NameManager
from .op_args import hide_keys, split_call

__all__ = ["Symbol", "Variable", "var", "Group", "create_op_symbol", "DTYPE_FLAGS",
           "symbol_method", "entry_name", "copy_graph", "check_unique_names"]

#: MXNet's dtype flags, as written in ``__dtype__`` attributes.
DTYPE_FLAGS = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
               6: "int64", 7: "bool", 8: "int16", 9: "uint16", 10: "uint32", 11: "uint64",
               12: "bfloat16"}
_FLAG_OF = {v: k for k, v in DTYPE_FLAGS.items()}


class Symbol:
    """A list of graph entries (the symbol's outputs). Immutable from the outside.

    The methods of the layers above this one are installed on it by :func:`symbol_method`
    (see the module docstring)."""

    __slots__ = ("_outputs", "_ig", "__weakref__")

    def __init__(self, outputs: Sequence[Entry]):
        self._outputs = list(outputs)
        self._ig: IndexedGraph | None = None

    # -- structure --------------------------------------------------------------------
    @property
    def outputs(self) -> list[Entry]:
        """The entries this symbol stands for."""
        return list(self._outputs)

    @property
    def name(self) -> str | None:
        """The node name of a single-output symbol, else None."""
        nodes = {id(e.node) for e in self._outputs}
        return self._outputs[0].node.name if len(nodes) == 1 else None

    def _indexed(self) -> IndexedGraph:
        # a symbol's structure never changes after creation, so its index can be kept
        if self._ig is None:
            self._ig = IndexedGraph(self._outputs)
        return self._ig

    def list_arguments(self) -> list[str]:
        """Names of the non-auxiliary inputs, in DFS order."""
        ig = self._indexed()
        return [ig.nodes[i].name for i in ig.arg_nodes]

    def list_auxiliary_states(self) -> list[str]:
        """Names of the auxiliary states (inputs an operator mutates), in DFS order."""
        ig = self._indexed()
        return [ig.nodes[i].name for i in ig.input_nodes if i in ig.mutable_input_nodes]

    def list_inputs(self) -> list[str]:
        """Names of every variable, arguments and auxiliary states, in DFS order."""
        ig = self._indexed()
        return [ig.nodes[i].name for i in ig.input_nodes]

    def list_outputs(self) -> list[str]:
        """``<node>_<output name>`` for operator outputs, the name for variables."""
        return [entry_name(e) for e in self._outputs]

    def get_internals(self) -> "Symbol":
        """A symbol whose outputs are every visible output of every node."""
        ig = self._indexed()
        return Symbol([Entry(n, i) for n in ig.nodes for i in range(n.num_visible_outputs)])

    def get_children(self) -> "Symbol | None":
        """The inputs of this symbol's node(s), or None for a variable."""
        nodes = list({id(e.node): e.node for e in self._outputs}.values())  # each node once
        ents = [e for node in nodes for e in node.inputs]
        return Symbol(ents) if ents else None

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self) -> Iterator["Symbol"]:
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index: int | str | slice) -> "Symbol":
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ArgumentValueError(f"there is no output named {index!r}; outputs are "
                                         f"{names}")
            if len(matches) > 1:
                raise ArgumentValueError(f"there are several outputs named {index!r}")
            index = matches[0]
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise ArgumentTypeError(f"a symbol is indexed by an output position or name, got "
                                    f"{type(index).__name__} {index!r:.40}")
        if not -len(self._outputs) <= index < len(self._outputs):
            raise OutputIndexError(f"output index {index} out of range for "
                                   f"{len(self._outputs)} outputs")
        return Symbol([self._outputs[index]])

    def __repr__(self) -> str:
        name = self.name
        if name is None:
            return f"<Symbol group [{', '.join(self.list_outputs())}]>"
        return f"<Symbol {name}>"

    __str__ = __repr__

    def __copy__(self) -> "Symbol":
        return Symbol(self._outputs)

    def __deepcopy__(self, memo: dict) -> "Symbol":
        return Symbol(copy_graph(self._outputs))

    def __call__(self, *args: "Symbol", **kwargs: "Symbol") -> "Symbol":
        """Compose: a copy of this symbol whose arguments are replaced by other symbols,
        positionally (list_arguments order) or by name, as MXNet's ``sym(data=other)``."""
        kwargs.pop("name", None)
        names = self.list_arguments()
        if len(args) > len(names):
            raise ArgumentTypeError(f"compose got {len(args)} positional symbols for {len(names)} "
                            f"arguments {names}")
        subst = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise UnknownArgumentError(f"compose: {key!r} is not an argument of the symbol; "
                                           f"arguments are {names}")
            subst[key] = value
        for key, value in subst.items():
            if not isinstance(value, Symbol) or len(value._outputs) != 1:
                raise ArgumentTypeError(f"compose: {key!r} must be a single-output Symbol")
        outputs = copy_graph(self._outputs)
        ig = IndexedGraph(outputs)
        for node in ig.nodes:
            node.inputs = [subst[e.node.name]._outputs[0]
                           if e.node.op is None and e.node.name in subst else e
                           for e in node.inputs]
        return Symbol([subst[e.node.name]._outputs[0]
                       if e.node.op is None and e.node.name in subst else e for e in outputs])

    # -- attributes -------------------------------------------------------------------
    def attr(self, key: str) -> str | None:
        """A string attribute of this (single-node) symbol, or None."""
        node = self._single_node("attr")
        value = node.attrs.get(key)
        if value is None and key in HIDDEN_KEYS:  # MXNet reads lr_mult as __lr_mult__
            value = node.attrs.get(f"__{key}__")
        return None if value is None else str(value)

    def list_attr(self, recursive: bool = False) -> dict[str, str]:
        """This node's attributes (``recursive`` is MXNet's deprecated form of attr_dict)."""
        if recursive:
            raise DeprecationWarning("list_attr(recursive=True) is deprecated; use attr_dict()")
        return _listed(self._single_node("list_attr").attrs)

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """Node name -> attributes, for every node that has some (hidden keys listed under
        both names, ``__lr_mult__`` and ``lr_mult``, as MXNet lists them)."""
        ig = self._indexed()
        return {n.name: _listed(n.attrs) for n in ig.nodes if n.attrs}

    def _set_attr(self, **kwargs: str) -> None:
        node = self._single_node("_set_attr")
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ArgumentValueError(f"attribute {key!r}: values must be strings")
            node.attrs[hidden_key(key, value, f"node {node.name!r}")] = value

    def _single_node(self, what: str) -> Node:
        nodes = {id(e.node): e.node for e in self._outputs}
        if len(nodes) != 1:
            raise GraphexecError(f"{what}() needs a single-node symbol, this one groups "
                                 f"{len(nodes)} nodes")
        return next(iter(nodes.values()))

    def debug_str(self) -> str:
        """The graph in MXNet's debug_str layout."""
        return graph_debug_str(self._outputs)

    # -- operators ----------------------------------------------------------------------
    def __add__(self, other): return _binary(self, other, "_Plus", "_PlusScalar")
    def __radd__(self, other): return _binary(self, other, "_Plus", "_PlusScalar")
    def __sub__(self, other): return _binary(self, other, "_Minus", "_MinusScalar")
    def __rsub__(self, other): return _rbinary(self, other, "_RMinusScalar")
    def __mul__(self, other): return _binary(self, other, "_Mul", "_MulScalar")
    def __rmul__(self, other): return _binary(self, other, "_Mul", "_MulScalar")
    def __truediv__(self, other): return _binary(self, other, "_Div", "_DivScalar")
    def __rtruediv__(self, other): return _rbinary(self, other, "_RDivScalar")
    __div__, __rdiv__ = __truediv__, __rtruediv__
    def __mod__(self, other): return _binary(self, other, "_Mod", "_ModScalar")
    def __rmod__(self, other): return _rbinary(self, other, "_RModScalar")
    def __pow__(self, other): return _binary(self, other, "_Power", "_PowerScalar")
    def __rpow__(self, other): return _rbinary(self, other, "_rpower_scalar")
    def __neg__(self): return _binary(self, -1.0, "_Mul", "_MulScalar")
    def __abs__(self): return create_op_symbol("abs", [self], {})
    def __eq__(self, other): return _binary(self, other, "_equal", "_equal_scalar")  # type: ignore[override]
    def __ne__(self, other): return _binary(self, other, "_not_equal", "_not_equal_scalar")  # type: ignore[override]
    def __gt__(self, other): return _binary(self, other, "_greater", "_greater_scalar")
    def __ge__(self, other): return _binary(self, other, "_greater_equal", "_greater_equal_scalar")
    def __lt__(self, other): return _binary(self, other, "_lesser", "_lesser_scalar")
    def __le__(self, other): return _binary(self, other, "_lesser_equal", "_lesser_equal_scalar")
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise NotImplementedForSymbol("a Symbol has no truth value (comparisons build new "
                                      "symbols)")

    def __getattr__(self, name: str):
        # MXNet exposes operators as methods: sym.reshape(...), sym.sum(axis=1), ...
        if name.startswith("_"):
            raise AttributeError(name)
        op = find_op(name)
        if op is None:
            raise AttributeError(f"'Symbol' object has no attribute {name!r}")
        return lambda *args, **kwargs: create_op_symbol(name, [self, *args], kwargs)


def symbol_method(fn):
    """Install ``fn`` as the :class:`Symbol` method of the same name (a layer above this one
    adding what it implements: ``Symbol.bind`` is :func:`graphexec.core.runtime.bind.bind`).
    Returns ``fn`` unchanged, so it stays callable as a function too."""
    setattr(Symbol, fn.__name__, fn)
    return fn


def entry_name(e: Entry) -> str:
    """Output name of an entry: the variable name, or ``<node>_<output name>``."""
    node = e.node
    if node.op is None:
        return node.name
    if "subgraph" in node.op.traits:  # a region keeps the names of the outputs it replaced
        return node.params.output_names[e.index]
    return f"{node.name}_{node.op.output_names(node.params)[e.index]}"


def _listed(attrs: dict) -> dict[str, str]:
    out = {}
    for k, v in attrs.items():
        out[k] = str(v)
        if k in HIDDEN_STORED:
            out[k[2:-2]] = str(v)
    return out


def _binary(lhs: Symbol, rhs: Any, sym_op: str, scalar_op: str) -> Symbol:
    if isinstance(rhs, Symbol):
        return create_op_symbol(sym_op, [lhs, rhs], {})
    if isinstance(rhs, (int, float, np.number, bool)):
        return create_op_symbol(scalar_op, [lhs], {"scalar": rhs})
    return NotImplemented


def _rbinary(sym: Symbol, scalar: Any, scalar_op: str) -> Symbol:
    if isinstance(scalar, (int, float, np.number, bool)):
        return create_op_symbol(scalar_op, [sym], {"scalar": scalar})
    return NotImplemented


# -- variables and groups ----------------------------------------------------------------
def Variable(name: str, attr: dict | None = None, shape: Sequence[int] | None = None,
             lr_mult: float | None = None, wd_mult: float | None = None, dtype: Any = None,
             init: Any = None, stype: str | None = None, **kwargs: Any) -> Symbol:
    """A placeholder for an input array. ``shape`` and ``dtype`` become ``__shape__`` and
    ``__dtype__`` hints for inference, as in MXNet."""
    if not isinstance(name, str):
        raise ArgumentTypeError("Variable name must be a string")
    attrs = {hidden_key(k, v, f"Variable {name!r}"): v
             for k, v in AttrScope.current().get(attr).items()}
    if shape is not None:
        attrs["__shape__"] = to_attr_string(as_shape(shape, f"Variable {name!r}: shape"))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(_FLAG_OF[as_dtype(dtype, f"Variable {name!r}: dtype").name])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = str({"default": 0, "row_sparse": 1, "csr": 2}[stype])
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ArgumentValueError(f"Variable {name!r}: attribute {key!r} must be of the form "
                                     f"__x__")
        attrs[key] = to_attr_string(value)
    return Symbol([Entry(Node(None, name, attrs))])


var = Variable


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """One symbol whose outputs are the outputs of ``symbols`` in order."""
    if not isinstance(symbols, (list, tuple)) or not symbols or \
            any(not isinstance(s, Symbol) for s in symbols):
        raise ArgumentTypeError("Group expects a non-empty list of Symbols")
    return Symbol([e for s in symbols for e in s._outputs])


# -- operator application ----------------------------------------------------------------
def create_op_symbol(called: str, args: Sequence[Any], kwargs: dict[str, Any],
                     hint: str | None = None) -> Symbol:
    """Apply the operator registered as ``called`` (name or alias). Symbols come positionally
    or by input name; other keyword arguments are attributes. ``name`` and ``attr`` as in
    MXNet. Missing inputs become variables named ``<node>_<input>``. Automatic node names
    count ``hint`` (default: ``called`` in lower case; ``gx.sym.linalg.det`` names ``det0``)."""
    op = get_op(called)
    kwargs = dict(kwargs)
    name = kwargs.pop("name", None)
    extra_attr = kwargs.pop("attr", None)
    positional, sym_kwargs, raw = split_call(op, called, list(args), kwargs,
                                             lambda v: isinstance(v, Symbol))
    if op.variadic and op.variadic not in raw:
        raw[op.variadic] = len(positional) + len(sym_kwargs)
    attrs = AttrScope.current().get(extra_attr)
    for k, v in raw.items():
        attrs[k] = to_attr_string(v)
    name = NameManager.current().get(name, hint or called.lower())
    attrs = hide_keys(attrs, f"{op.name} {name!r}")
    params = op.parse(attrs, name)
    input_names = op.input_names(params)
    inputs = _gather_inputs(op, name, input_names, positional, sym_kwargs, attrs)
    node = Node(op, name, attrs, params, inputs)
    _version_aux_inputs(op, node)
    return Symbol([Entry(node, i) for i in range(op.num_visible_outputs(params))])


def _gather_inputs(op: OpDef, name: str, input_names: list[str], positional: list[Symbol],
                   by_name: dict[str, Symbol], attrs: dict[str, str]) -> list[Entry]:
    if len(positional) > len(input_names):
        raise AttributeParseError(f"{op.name} {name!r} takes {len(input_names)} inputs "
                                  f"({', '.join(input_names)}), got {len(positional)}")
    unknown = [k for k in by_name if k not in input_names]
    if unknown:
        raise AttributeParseError(f"{op.name} {name!r}: unknown input(s) {unknown}; inputs "
                                  f"are {input_names}")
    entries = []
    for i, in_name in enumerate(input_names):
        sym = positional[i] if i < len(positional) else None
        sym = by_name.get(in_name) if sym is None else sym
        if sym is None:
            var_attrs = dict(attrs)
            var_attrs.update(op.input_var_attrs.get(in_name, {}))
            entries.append(Entry(Node(None, f"{name}_{in_name}", var_attrs)))
            continue
        if len(sym._outputs) != 1:
            raise AttributeParseError(
                f"{op.name} {name!r}: input {in_name!r} must be a single-output symbol, got "
                f"{len(sym._outputs)} outputs ({', '.join(sym.list_outputs())})")
        entries.append(sym._outputs[0])
    return entries


def _version_aux_inputs(op: OpDef, node: Node) -> None:
    if not op.has_aux:
        return
    aux = set(op.aux_indices(node.params))
    for k, e in enumerate(node.inputs):
        if k in aux and e.node.op is None:
            e.node.version += 1
            node.inputs[k] = Entry(e.node, e.index, e.node.version)


def copy_graph(outputs: Sequence[Entry]) -> list[Entry]:
    """Deep copy of the nodes reachable from ``outputs`` (attrs copied, params shared)."""
    ig = IndexedGraph(list(outputs))
    new: dict[int, Node] = {}
    for n in ig.nodes:
        c = Node(n.op, n.name, dict(n.attrs), n.params,
                 [Entry(new[id(e.node)], e.index, e.version) for e in n.inputs],
                 [new[id(d)] for d in n.control_deps], copy.deepcopy(n.subgraphs))
        c.version = n.version
        new[id(n)] = c
    return [Entry(new[id(e.node)], e.index, e.version) for e in outputs]


def check_unique_names(kind: str, names: list[str]) -> None:
    """Raise DuplicateNameError (a ValueError, as MXNet's) if ``names`` repeats one."""
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise DuplicateNameError(f"Duplicate names detected, {names} ({kind} {n!r} "
                                     f"appears more than once)")
        seen.add(n)
