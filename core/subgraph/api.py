"""The subgraph API: selectors say which nodes a backend claims, properties turn a claimed
region into a node and, at bind time, into something that runs; backends group properties.

The core partitioner (``core/subgraph/partition.py``) asks a selector only *whether* it wants a
node; it alone grows regions and guarantees that they are acyclic, convex and deterministic.
"""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

from ..ir.errors import GraphexecError, UnknownBackendError, UnknownOpError
from ..ops.common import known
from ..ops.registry import all_names, find_op

if TYPE_CHECKING:
    from ..ir.graph import Node
    from ..symbol.symbol import Symbol

__all__ = ["SubgraphSelector", "ReasonSelector", "OpNameSelector", "VetoSelector",
           "SubgraphProperty", "SubgraphBackend", "PartitionRequest", "RegionCall", "NodeShapes", "register_backend",
           "get_backend", "list_backends", "set_op_names", "get_op_names", "native_runner",
           "set_native_runner"]


class SubgraphSelector:
    """Decides, node by node, what one region grows into (MXNet's SubgraphSelector).

    The partitioner calls ``select`` on a seed node, then ``select_input`` /
    ``select_output`` for each neighbour of a region member, then ``filter`` on the grown
    candidate list; ``reset`` comes before every new seed."""

    def select(self, node: "Node") -> bool:
        """Whether ``node`` may start a region."""
        return False

    def why_not(self, node: "Node") -> str | None:
        """Why ``select(node)`` is False, in a few words for the partition plan (None: the
        generic "no backend supports the op")."""
        return None

    def select_input(self, node: "Node", input_node: "Node") -> bool:
        """Whether the producer ``input_node`` of a member ``node`` joins the region."""
        return False

    def select_output(self, node: "Node", output_node: "Node") -> bool:
        """Whether the consumer ``output_node`` of a member ``node`` joins the region."""
        return False

    #: set by :meth:`filter` to say why it dropped candidates (recorded in the plan instead of
    #: the generic "rejected by the selector's filter"); cleared before every filter call
    filter_reason: str | None = None

    def filter(self, candidates: list["Node"]) -> list["Node"]:
        """The candidates to keep (default: all)."""
        return candidates

    def reset(self) -> None:
        """Forget the state of the previous region."""


class ReasonSelector(SubgraphSelector):
    """Claims a node when :meth:`reason` gives None; for the others the reason (computed once
    per node) is what the partition plan records. Growing through producers and consumers
    applies the same test."""

    def __init__(self):
        self._why: dict[int, str | None] = {}

    def reason(self, node: "Node") -> str | None:
        """None when ``node`` can be claimed, else why not, in a few words."""
        raise NotImplementedError

    def why_not(self, node: "Node") -> str | None:
        key = id(node)
        if key not in self._why:
            self._why[key] = self.reason(node)
        return self._why[key]

    def select(self, node):
        return self.why_not(node) is None

    def select_input(self, node, input_node):
        return self.why_not(input_node) is None

    def select_output(self, node, output_node):
        return self.why_not(output_node) is None


class OpNameSelector(SubgraphSelector):
    """Claims every node whose operator is in ``op_names`` (MXNet's SubgraphPropertyOpNameSet
    selector, used by its subgraph tests and by the ``default`` backend)."""

    def __init__(self, op_names: set[str]):
        self.op_names = set(op_names)

    def _ok(self, node: "Node") -> bool:
        return node.op is not None and node.op.name in self.op_names

    def select(self, node):
        return self._ok(node)

    def select_input(self, node, input_node):
        return self._ok(input_node)

    def select_output(self, node, output_node):
        return self._ok(output_node)


class VetoSelector(SubgraphSelector):
    """``inner`` kept off the nodes ``veto(node)`` objects to (it returns the reason, which the
    partition plan records, or None). The partitioner applies a property's ``exclude_ops``
    this way; the ``auto`` strategy limits each backend to the nodes it won."""

    def __init__(self, inner: SubgraphSelector, veto: Callable[["Node"], str | None]):
        self.inner, self.veto = inner, veto

    def select(self, node):
        return self.veto(node) is None and self.inner.select(node)

    def why_not(self, node):
        return self.veto(node) or self.inner.why_not(node)

    def select_input(self, node, input_node):
        return self.veto(input_node) is None and self.inner.select_input(node, input_node)

    def select_output(self, node, output_node):
        return self.veto(output_node) is None and self.inner.select_output(node, output_node)

    def filter(self, candidates):
        self.inner.filter_reason = None
        kept = self.inner.filter(candidates)
        self.filter_reason = self.inner.filter_reason
        return kept

    def reset(self):
        self.inner.reset()


class RegionCall:
    """What a property's bind-time hook receives for one region: the region's symbol, its
    input and output arrays (inputs in the region node's order, by name in ``input_names``),
    shapes, dtypes, context, whether it runs for training, the node name, and per input the
    grad_req of the argument feeding it ('null' for other inputs; BatchNorm's fix_gamma
    needs it) and whether it is a graph input (an argument or auxiliary state the user owns)
    rather than an entry computed by the executor (``input_is_var``).

    ``inputs`` are read-only views of the arrays a runner must not write (all but the
    auxiliary states, which a region may update); ``sources`` are the executor's arrays
    behind them, for a backend that must keep an array's identity (the ``onnxrt`` backend
    freezes the parameters it bakes into its model). Never write through ``sources``."""

    __slots__ = ("symbol", "input_names", "inputs", "outputs", "ctx", "is_train", "node_name",
                 "workspace", "state", "input_grad_reqs", "input_is_var", "sources")

    def __init__(self, symbol, input_names, inputs, outputs, ctx, is_train, node_name,
                 workspace=None, state=None, input_grad_reqs=None, input_is_var=None,
                 sources=None):
        self.symbol = symbol
        self.input_names = input_names
        self.inputs = inputs
        self.outputs = outputs
        self.ctx = ctx
        self.is_train = is_train
        self.node_name = node_name
        self.workspace = workspace
        self.state = state if state is not None else {}
        self.input_grad_reqs = list(input_grad_reqs or ["null"] * len(inputs))
        self.input_is_var = list(input_is_var or [False] * len(inputs))
        self.sources = list(inputs if sources is None else sources)

    @property
    def input_shapes(self) -> dict[str, tuple]:
        return {n: tuple(a.shape) for n, a in zip(self.input_names, self.inputs)}

    @property
    def input_dtypes(self) -> dict[str, Any]:
        return {n: a.dtype for n, a in zip(self.input_names, self.inputs)}


class NodeShapes:
    """Inferred shapes and dtypes of the graph being partitioned, by node (MXNet hands its
    properties the graph after shape inference). Unknown values are None."""

    def __init__(self, ig, shapes: list, dtypes: list):
        self._ig, self._shapes, self._dtypes = ig, shapes, dtypes

    def _entries(self, node: "Node", outputs: bool) -> list[int]:
        ig = self._ig
        nid = ig.node_id.get(id(node))
        if nid is None:
            return []
        if outputs:
            return list(range(ig.row_ptr[nid], ig.row_ptr[nid + 1]))
        return list(ig.node_inputs[nid])

    def inputs(self, node: "Node") -> list:
        """Shapes of ``node``'s inputs (tuples, None where unknown)."""
        return [s if known(s) else None for s in (self._shapes[e]
                                                  for e in self._entries(node, False))]

    def outputs(self, node: "Node") -> list:
        """Shapes of ``node``'s visible outputs (tuples, None where unknown)."""
        outs = self._entries(node, True)[:node.op.num_visible_outputs(node.params)]
        return [s if known(s) else None for s in (self._shapes[e] for e in outs)]

    def dtypes(self, node: "Node") -> list:
        """Dtypes of ``node``'s inputs and then its visible outputs (None where unknown)."""
        outs = self._entries(node, True)[:node.op.num_visible_outputs(node.params)]
        return [self._dtypes[e] for e in self._entries(node, False) + outs]


class SubgraphProperty:
    """A named partitioning strategy. ``attrs`` holds MXNet's property attributes
    (``inference_only``, ``disable``, ``op_names``) and the backend's own options
    (``min_size``, ``exclude_ops``...). Subclasses override :meth:`create_selector` and
    :meth:`create_runner`; :meth:`create_subgraph_node` names the region node."""

    name = "property"
    default_attrs: dict[str, Any] = {}
    #: when True, :attr:`shapes` holds the graph's inferred shapes while its selector runs
    needs_shapes = False

    def __init__(self, **options: Any):
        self.attrs: dict[str, Any] = {"inference_only": False, "disable": False,
                                      "op_names": set(), "min_size": 1, "exclude_ops": set()}
        self.attrs.update(self.default_attrs)
        self.shapes: NodeShapes | None = None
        self.set_options(**options)

    def set_options(self, **options: Any) -> None:
        unknown = [k for k in options if k not in self.attrs]
        if unknown:
            raise GraphexecError(f"subgraph property {self.name!r}: unknown option(s) {unknown}; "
                                 f"options are {sorted(self.attrs)}")
        for key in ("op_names", "exclude_ops"):  # one name given alone (``exclude_ops=relu``)
            if isinstance(options.get(key), str):
                options[key] = {options[key]}
        if "exclude_ops" in options:
            _check_op_names(self.name, "exclude_ops", options["exclude_ops"])
        size = options.get("min_size", 1)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise GraphexecError(f"subgraph property {self.name!r}: option min_size={size!r}: "
                                 f"expected an integer >= 1")
        self.attrs.update(options)

    @property
    def inference_only(self) -> bool:
        return bool(self.attrs.get("inference_only"))

    def create_selector(self) -> SubgraphSelector:
        """The selector for one partitioning run."""
        return OpNameSelector(set(self.attrs["op_names"]))

    def create_subgraph_node(self, subgraph: "Symbol", subgraph_id: int, backend: str) -> dict:
        """Name and attributes of the node that replaces region ``subgraph_id``: returns
        ``{"name": ..., "attrs": {...}}`` (the core builds the node)."""
        return {"name": f"{backend}_subgraph{subgraph_id}", "attrs": {}}

    def create_runner(self, region: RegionCall) -> Callable[[], None]:
        """At bind time: a zero-argument callable that computes ``region.outputs`` from
        ``region.inputs`` (a nested native plan, an ONNX Runtime session, a fused kernel)."""
        raise NotImplementedError(f"subgraph property {self.name!r} does not implement "
                                  f"create_runner")


def _check_op_names(prop: str, option: str, names: Any) -> None:
    """Every name of ``names`` is a registered operator (or alias): a misspelt one would
    exclude nothing, silently."""
    if names is None:
        return
    if not isinstance(names, (set, frozenset, list, tuple)) or \
            not all(isinstance(n, str) for n in names):
        raise GraphexecError(f"subgraph property {prop!r}: option {option}={names!r:.60}: "
                             f"expected an operator name or a list of them")
    for name in names:
        if find_op(name) is None:
            close = difflib.get_close_matches(name, all_names(), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownOpError(f"subgraph property {prop!r}: option {option} names "
                                 f"{name!r}, which is not a registered operator{hint}")


class PartitionRequest(NamedTuple):
    """What a whole-graph backend's :meth:`SubgraphBackend.partition_graph` receives: the
    symbol, context, whether gradients are requested, options per backend name, input shapes
    and dtypes by variable name, and ``apply(symbol, names, restrict=None, reason=...)``,
    which partitions with other backends (``restrict``: backend name -> the node names it
    may claim; the plan gives the others ``reason``) and returns ``(symbol,
    PartitionPlan)``."""

    symbol: Any
    ctx: Any
    need_grad: bool
    options: dict
    input_shapes: dict
    input_dtypes: dict
    apply: Callable[..., Any]


class SubgraphBackend:
    """A named, ordered list of properties, applied in order, with MXNet's backend attributes
    ``enable`` (False: the backend is skipped) and ``context`` (only for that context).

    A backend that chooses its regions over the whole graph itself (``whole_graph = True``,
    e.g. the ``auto`` strategy, which times every other backend's regions) overrides
    :meth:`partition_graph`; it must be given alone, not in a chain."""

    #: True when :meth:`partition_graph` partitions instead of :attr:`properties`
    whole_graph = False

    def __init__(self, name: str, properties: Sequence[SubgraphProperty],
                 attrs: dict[str, Any] | None = None, options: Sequence[str] = ()):
        self.name = name
        self.properties = list(properties)
        self.attrs = dict(attrs or {})
        self.options = tuple(options)

    def partition_graph(self, request: PartitionRequest) -> tuple:
        """``(partitioned symbol, PartitionPlan)`` for a ``whole_graph`` backend."""
        raise NotImplementedError(f"subgraph backend {self.name!r} partitions through its "
                                  f"properties, not partition_graph")

    def __repr__(self) -> str:
        return f"SubgraphBackend({self.name!r}, {[p.name for p in self.properties]})"


_BACKENDS: dict[str, Callable[[], SubgraphBackend]] = {}
_NATIVE: list[Callable[[RegionCall], Callable[[], None]]] = []
_OP_NAMES: dict[str, set[str]] = {}


def register_backend(name: str, factory: Callable[[], SubgraphBackend]) -> None:
    """Register a backend factory (called anew for every partitioning, so options never leak
    between binds)."""
    _BACKENDS[name] = factory


def get_backend(name: str) -> SubgraphBackend:
    """A fresh instance of backend ``name``; unknown names list every registered backend."""
    factory = _BACKENDS.get(name)
    if factory is None:
        raise UnknownBackendError(f"subgraph backend {name!r} is not registered; registered "
                                  f"backends: {', '.join(sorted(_BACKENDS)) or '(none)'} "
                                  f"(and NONE to disable partitioning)")
    return factory()


def list_backends() -> list[str]:
    """Names of every registered subgraph backend (plugins included)."""
    return sorted(_BACKENDS)


def set_op_names(backend: str, op_names: set[str] | None) -> None:
    """MXNet's SubgraphPropertyOpNameSet: the op names ``backend``'s properties claim (testing
    aid, as in MXNet); ``None`` clears it."""
    if op_names is None:
        _OP_NAMES.pop(backend, None)
    else:
        _OP_NAMES[backend] = set(op_names)


def get_op_names(backend: str) -> set[str] | None:
    return _OP_NAMES.get(backend)


def set_native_runner(factory: Callable[[RegionCall], Callable[[], None]]) -> None:
    """Install the runtime's nested native plan as :func:`native_runner` (``core/startup.py``
    does; the runtime sits above this layer)."""
    _NATIVE[:] = [factory]


def native_runner(region: RegionCall) -> Callable[[], None]:
    """Run the region's inner symbol with the native kernels, writing ``region.outputs`` in
    place: a nested executor plan sharing the outer workspace. A property's
    ``create_runner`` may return it as it is (the ``default`` backend does) or wrap it."""
    if not _NATIVE:
        raise GraphexecError("native_runner: the runtime is not loaded (import graphexec)")
    return _NATIVE[0](region)
