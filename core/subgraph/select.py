"""Backend selection and application: which backends partition a bind, and in what order.

Precedence: an explicit ``backend=`` argument (bind, simple_bind, optimize_for) >
MXNET_SUBGRAPH_BACKEND (read at every bind) > ``[subgraph] default_backend`` in plugins.toml.
``NONE`` (or an empty value) disables partitioning; ``a,b`` applies ``a`` then ``b``.
MXNET_SUBGRAPH_VERBOSE: 0 silent, 1 (default) backend activation, 2 every region and skip.
"""
from __future__ import annotations

import logging
import os
import warnings
from typing import Any, Sequence

from ..ir.arguments import as_mapping
from ..ir.errors import ArgumentTypeError, GraphexecError, UnknownBackendError
from ..passes.inference import dtype_seeds, run_inference, shape_seeds
from ..plugins import plugin_config
from ..symbol.symbol import Symbol
from .api import (NodeShapes, PartitionRequest, SubgraphBackend, SubgraphProperty, VetoSelector,
                  get_backend, get_op_names)
from .partition import grow_regions, partition_symbol
from .plan import PartitionPlan

__all__ = ["resolve_backends", "parse_backend_spec", "apply_backends", "verbosity",
           "node_shapes", "OnlyNodesProperty"]

log = logging.getLogger("graphexec.subgraph")


def verbosity() -> int:
    try:
        return int(os.environ.get("MXNET_SUBGRAPH_VERBOSE", "1"))
    except ValueError:
        return 1


def resolve_backends(backend: str | Sequence[str] | None,
                     options: dict[str, dict] | None = None) -> tuple[list[str], dict[str, dict]]:
    """Backend names and options from the argument, else the environment, else plugins.toml.

    A text names backends separated by commas, each optionally followed by ``:key=value``
    options, further options after commas (``onnxrt:threads=2,spinning=true,fused``);
    values are ints, floats, ``true``/``false``, ``none``, lists joined by ``|``, or strings.
    ``options`` (per backend, e.g. ``backend_options``) override those of the text."""
    if backend is None:
        backend = os.environ.get("MXNET_SUBGRAPH_BACKEND")
    if backend is None:
        backend = plugin_config().get("subgraph", {}).get("default_backend", "NONE")
    if isinstance(backend, str):
        names, parsed = parse_backend_spec(backend)
    elif isinstance(backend, (list, tuple)) and all(isinstance(b, str) for b in backend):
        names, parsed = [b for b in backend if b and b.upper() != "NONE"], {}
    else:
        raise ArgumentTypeError(f"backend must be a name ('onnxrt', 'onnxrt,fused') or a list "
                                f"of names, got {type(backend).__name__} {backend!r:.40}")
    for n in names:
        get_backend(n)  # fails fast, listing the registered backends
    for n, opts in _backend_options(options).items():
        parsed.setdefault(n, {}).update(opts)
    return names, parsed


def _backend_options(options: Any) -> dict[str, dict]:
    """``backend_options`` checked: registered backend names (a misspelt one would be
    ignored silently) mapping to dicts of options."""
    options = as_mapping(options, "backend_options", "dict of options")
    for name, opts in options.items():
        if not isinstance(name, str):
            raise ArgumentTypeError(f"backend_options: keys are backend names, got {name!r}")
        try:
            get_backend(name)
        except UnknownBackendError as exc:
            raise UnknownBackendError(f"backend_options: {exc}") from None
        as_mapping(opts, f"backend_options[{name!r}]", "option value")
    return options


def parse_backend_spec(text: str) -> tuple[list[str], dict[str, dict]]:
    """``"a:k=v,k2=v2,b"`` -> (["a", "b"], {"a": {"k": v, "k2": v2}}); ``NONE`` is dropped."""
    names: list[str] = []
    options: dict[str, dict] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        if ":" in item:
            name, item = (x.strip() for x in item.split(":", 1))
            names.append(name)
        elif "=" not in item:
            names.append(item)
            continue
        if not names:
            raise GraphexecError(f"backend specification {text!r}: option {item!r} comes "
                                 f"before any backend name")
        key, sep, value = (x.strip() for x in item.partition("="))
        if not sep or not key:
            raise GraphexecError(f"backend specification {text!r}: expected key=value after "
                                 f"'{names[-1]}:', got {item!r}")
        options.setdefault(names[-1], {})[key] = _option_value(value)
    kept = [n for n in names if n.upper() != "NONE"]
    return kept, {n: o for n, o in options.items() if n in kept}


def _option_value(text: str) -> Any:
    if "|" in text:
        return [_option_value(t) for t in text.split("|") if t]
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _backend_active(backend: SubgraphBackend, ctx: Any, verbose: int) -> bool:
    if backend.attrs.get("enable", True) is not True:
        if verbose > 1:
            log.info("Subgraph backend %s isn't activated.", backend.name)
        return False
    want = backend.attrs.get("context")
    if want is not None and want != ctx:
        if verbose > 1:
            log.info("Subgraph backend %s isn't activated as context mismatch.", backend.name)
        return False
    return True


def apply_backends(sym: Symbol, names: list[str], ctx: Any, need_grad: bool,
                   options: dict[str, dict] | None = None,
                   input_shapes: dict[str, tuple] | None = None,
                   input_dtypes: dict[str, Any] | None = None,
                   restrict: dict[str, set[str]] | None = None,
                   restrict_reason: str = "left to another backend by the strategy"
                   ) -> tuple[Symbol, PartitionPlan]:
    """Partition ``sym`` with each backend in turn; returns the symbol and the plan.
    ``input_shapes`` / ``input_dtypes`` (by variable name) let properties that need shapes
    see the inferred graph. ``restrict`` limits a backend to the named nodes (what a
    whole-graph backend such as ``auto`` uses to hand each region to the backend it chose);
    the plan gives the other nodes ``restrict_reason``."""
    backends = [get_backend(name) for name in names]
    whole = [b for b in backends if b.whole_graph]
    if whole:
        if len(names) > 1:
            raise GraphexecError(f"backend {whole[0].name!r} chooses among all backends itself: "
                                 f"give it alone, not in the chain {names}")

        def apply(s, chosen, restrict=None, reason="left to another backend by the strategy"):
            return apply_backends(s, chosen, ctx, need_grad, options, input_shapes,
                                  input_dtypes, restrict, reason)
        return whole[0].partition_graph(PartitionRequest(
            sym, ctx, need_grad, options or {}, input_shapes or {}, input_dtypes or {}, apply))
    plan = PartitionPlan(backends=list(names))
    plan.register(sym._indexed().nodes)  # the table lists nodes in graph order
    verbose = verbosity()
    _check_options(backends, options or {})
    for name, backend in zip(names, backends):
        if not _backend_active(backend, ctx, verbose):
            plan.skipped.append(f"backend {name}: not active for {ctx}")
            continue
        if verbose:
            log.info("Subgraph backend %s is activated.", name)
        op_names = get_op_names(name)
        opts = dict((options or {}).get(name, {}))
        for index, prop in enumerate(backend.properties):
            if op_names is not None:
                prop.attrs["op_names"] = set(op_names)
            prop.set_options(**{k: v for k, v in opts.items() if k in prop.attrs})
            if prop.attrs.get("disable"):
                log.info("subgraph property %s from backend %s is disabled.", prop.name, name)
                plan.skipped.append(f"{name}/{prop.name}: disabled")
                continue
            if prop.inference_only and need_grad:
                if verbose > 1:
                    log.info("skip partitioning graph with subgraph property %s from backend %s "
                             "as it requires `grad_req=null`.", prop.name, name)
                plan.skipped.append(f"{name}/{prop.name}: inference_only, gradients requested")
                _mark_inference_only(sym, prop, plan)
                continue
            if prop.needs_shapes:
                prop.shapes = node_shapes(sym, input_shapes or {}, input_dtypes or {})
            if restrict is not None:
                prop = OnlyNodesProperty(prop, restrict.get(name, set()), restrict_reason)
            sym = _partition_or_skip(sym, prop, name, index, plan, opts)
            if verbose > 1:
                for region in plan.regions:
                    if region.backend == name and region.property == prop.name:
                        log.info("%s region %d (%s): %d nodes %s", name, region.id, region.node,
                                 len(region.members), region.members)
    return sym, plan


def _partition_or_skip(sym: Symbol, prop: SubgraphProperty, name: str, index: int,
                       plan: PartitionPlan, opts: dict) -> Symbol:
    """``partition_symbol`` for one property; a property whose own code fails (a plugin's
    selector or node factory raising anything but a GraphexecError, SystemExit included) is
    skipped with a warning naming it, and the graph stays as it was."""
    try:
        return partition_symbol(sym, prop, name, index, plan, opts)
    except (GraphexecError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - a plugin never ends the bind or the program
        why = f"{name}/{prop.name}: partitioning failed: {type(exc).__name__}: {exc}"
        plan.skipped.append(why)
        warnings.warn(f"subgraph {why}; the graph runs without its regions", RuntimeWarning,
                      stacklevel=4)
        return sym


class OnlyNodesProperty(SubgraphProperty):
    """``prop`` whose selector only claims ``allowed`` nodes, the others vetoed with
    ``reason`` (regions still run through the backend's own property: the region node names
    the backend and property index)."""

    def __init__(self, prop: SubgraphProperty, allowed: set[str], reason: str):
        self.__dict__.update(prop.__dict__)
        self.name = prop.name
        self._prop, self._allowed, self._reason = prop, allowed, reason

    def create_selector(self):
        allowed, reason = self._allowed, self._reason
        return VetoSelector(self._prop.create_selector(),
                            lambda node: None if node.name in allowed else reason)

    def create_subgraph_node(self, *args, **kwargs):
        return self._prop.create_subgraph_node(*args, **kwargs)

    def create_runner(self, region):
        return self._prop.create_runner(region)


def _check_options(backends: list[SubgraphBackend], options: dict[str, dict]) -> None:
    """Every option given for these backends is known to at least one of their properties
    (options shared by a chain go to every backend, each taking the ones it knows)."""
    known = {k for b in backends for p in b.properties for k in p.attrs}
    for b in backends:
        unknown = sorted(set(options.get(b.name, {})) - known)
        if unknown:
            raise GraphexecError(f"subgraph backend {b.name!r}: unknown option(s) {unknown}; "
                                 f"options are {sorted(known)}")


def node_shapes(sym: Symbol, input_shapes: dict, input_dtypes: dict) -> NodeShapes | None:
    """The inferred shapes of ``sym``'s nodes from shapes and dtypes given by name (None for
    everything when inference fails: the bind that follows reports that error itself)."""
    ig = sym._indexed()
    by_name = {ig.nodes[i].name: i for i in ig.input_nodes}
    shapes = {by_name[k]: v for k, v in input_shapes.items() if k in by_name}
    dtypes = {by_name[k]: v for k, v in input_dtypes.items() if k in by_name}
    try:
        g = run_inference(sym, shape_seeds(ig, shapes, True), dtype_seeds(ig, dtypes))
    except GraphexecError:
        return None
    return NodeShapes(ig, g.attrs["shape"], g.attrs["dtype"])


def _mark_inference_only(sym: Symbol, prop, plan: PartitionPlan) -> None:
    ig = sym._indexed()
    dry = PartitionPlan()
    for members in grow_regions(ig, prop, dry):
        for nid in members:
            plan.decide(ig.nodes[nid], "inference_only")
