"""Running regions: the kernel of ``_subgraph_op`` asks the claiming property for a runner
and falls back to a native nested plan (with a warning and a counter) when that fails; the
nested native plan itself is :func:`native_region_runner` (``native_runner`` of the subgraph
API, installed there by ``core/startup.py``)."""
from __future__ import annotations

import json
import logging
import warnings
from typing import Any, Callable

from ..ir.errors import BindError, PlacementError
from ..ir.random import generator
from ..subgraph.api import RegionCall, get_backend
from ..subgraph.select import verbosity
from .pipeline import build_graph
from .plan import ExecPlan

__all__ = ["region_kernel", "native_region_runner"]

log = logging.getLogger("graphexec.subgraph")


def native_region_runner(region: RegionCall) -> Callable[[], None]:
    """Run the region's inner symbol with the native kernels, writing the region outputs in
    place (a nested executor plan sharing the outer workspace)."""
    sym = region.symbol
    ig = sym._indexed()
    by_name = dict(zip(region.input_names, region.inputs))
    aux_ids = [i for i in ig.input_nodes if i in ig.mutable_input_nodes]
    args = [by_name[ig.nodes[i].name] for i in ig.arg_nodes]
    aux = [by_name[ig.nodes[i].name] for i in aux_ids]
    reqs = {ig.nodes[i].name: "null" for i in ig.arg_nodes}
    g = build_graph(sym, ig, args, aux, reqs, ctx=region.ctx, backend="NONE",
                    output_shapes=[tuple(o.shape) for o in region.outputs])
    full = g.indexed
    eid_of = {ig.nodes[i].name: full.row_ptr[full.node_id[id(ig.nodes[i])]]
              for i in ig.input_nodes}
    external = {eid_of[n]: by_name[n] for n in eid_of}
    grad_reqs = {eid_of[n]: r for n, r in zip(region.input_names, region.input_grad_reqs)}
    copies = []
    for k, eid in enumerate(full.outputs):
        if eid in external:
            copies.append((eid, k))
        else:
            external[eid] = region.outputs[k]
    workspaces = [(region.ctx, region.workspace)] if region.workspace is not None else None
    plan = ExecPlan(g, region.ctx, external, arg_grad_reqs=grad_reqs, workspaces=workspaces)
    is_train = region.is_train
    outputs = region.outputs

    def run() -> None:
        plan.run(is_train, "forward")
        for eid, k in copies:
            outputs[k][...] = plan.arrays[eid]
    return run


def region_kernel(call: Any) -> Callable[[], None]:
    """The kernel of ``_subgraph_op``: the claiming property's runner, or a native nested
    plan when the property cannot build or run the region (counted, with a warning)."""
    p, attrs = call.params, call.attrs
    region = RegionCall(p.subgraph, p.input_names, _guarded_inputs(p, call), call.outputs,
                        call.ctx, call.is_train, call.node_name, call.workspace, call.state,
                        call.input_grad_reqs, call.input_is_var, sources=call.inputs)
    backend = attrs.get("__backend__", "default")
    try:
        prop = _claiming_property(backend, attrs, call.node_name)
        run = prop.create_runner(region)
    except (BindError, PlacementError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - any backend failure (SystemExit too) falls back
        return _fallback(region, backend, f"creating its runner failed: {type(exc).__name__}: "
                                          f"{exc}")
    state = call.state

    @_replaying_random(p, call.is_train)
    def guarded() -> None:
        fallback = state.get("fallback_runner")
        if fallback is not None:
            fallback()
            return
        try:
            run()
        except (PlacementError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - a plugin's runner never ends the program
            fallback = _fallback(region, backend, f"running it failed: {type(exc).__name__}: "
                                                  f"{exc}")
            fallback()
    return guarded


def _claiming_property(backend: str, attrs: dict, node_name: str) -> Any:
    """The property that claimed a region node, set up with the options stored in the node.
    What the node stores comes from a symbol file: a property index or options that do not
    fit the backend are a :class:`BindError` naming the node. A backend that is not
    installed raises UnknownBackendError, and the region falls back to the native kernels
    with a warning (its inner symbol is the original computation)."""
    where = f"region node {node_name!r}"
    properties = get_backend(backend).properties
    index = attrs.get("__property__", "0")
    if not (index.isdigit() and int(index) < len(properties)):
        raise BindError(f"{where}: __property__={index!r} is not the index of one of backend "
                        f"{backend!r}'s {len(properties)} properties")
    try:
        options = json.loads(attrs.get("__options__", "{}"))
    except ValueError:
        options = None
    if not isinstance(options, dict):
        raise BindError(f"{where}: __options__ must be a JSON object of option values, "
                        f"got {attrs.get('__options__')!r}")
    prop = properties[int(index)]
    try:
        prop.set_options(**{k: v for k, v in options.items() if k in prop.attrs})
    except Exception as exc:  # noqa: BLE001 - the values come from the file: name them
        raise BindError(f"{where}: backend {backend!r} rejects the options stored in the node "
                        f"({options}): {type(exc).__name__}: {exc}") from None
    return prop


def _guarded_inputs(p: Any, call: Any) -> list:
    """The region's inputs as its runner sees them: read-only views of the arrays it must
    not write (a runner writing them would corrupt the caller's data, and the native
    fallback after a failure would compute from corrupted inputs). Writable stay the
    auxiliary states and the inputs a native kernel of the region writes by MXNet's rules
    (BatchNorm's fix_gamma resets a gamma that has a gradient)."""
    writable = set(p.aux_names) | _reset_gammas(p.subgraph, p.input_names, call.input_grad_reqs)
    return [a if n in writable else _read_only(a) for n, a in zip(p.input_names, call.inputs)]


def _reset_gammas(sym: Any, names: list[str], grad_reqs: list[str]) -> set[str]:
    with_grad = {n for n, r in zip(names, grad_reqs) if r != "null"}
    if not with_grad:
        return set()
    found = set()
    for node in sym._indexed().nodes:
        if node.op is not None and node.op.name == "BatchNorm" and node.params.fix_gamma:
            found.add(node.inputs[1].node.name)
    return found & with_grad


def _read_only(array: Any) -> Any:
    if not hasattr(array, "flags") or not getattr(array.flags, "writeable", False):
        return array  # cupy arrays have no such flag; read-only arrays stay as they are
    view = array.view()
    view.flags.writeable = False
    return view


def _replaying_random(p: Any, is_train: bool):
    """Decorator for a region's run function: a linked forward region (see
    ``link_regions`` in ``core/subgraph/region.py``) records the random state it starts
    from; its backward region recomputes the forward part from that state (the same Dropout
    masks), then puts the stream back where it was."""
    def wrap(run: Callable[[], None]) -> Callable[[], None]:
        link = getattr(p, "link", None)
        if link is None or not is_train:
            return run
        gen = generator()
        if not getattr(p, "backward", False):
            def forward() -> None:
                link["random_state"] = gen.bit_generator.state
                run()
            return forward

        def backward() -> None:
            saved = link.get("random_state")
            if saved is None:
                run()
                return
            current = gen.bit_generator.state
            gen.bit_generator.state = saved
            try:
                run()
            finally:
                gen.bit_generator.state = current
        return backward
    return wrap


def _fallback(region: RegionCall, backend: str, cause: str) -> Callable[[], None]:
    region.state["fallbacks"] = region.state.get("fallbacks", 0) + 1
    # the partition plan shows the region as fallen back, with this cause
    region.state["fallback_cause"] = cause
    if verbosity() >= 1:
        log.info("subgraph region %s of backend %s falls back to the native kernels: %s",
                 region.node_name, backend, cause)
    warnings.warn(f"subgraph region {region.node_name!r} of backend {backend!r} runs with the "
                  f"native kernels instead: {cause}", RuntimeWarning, stacklevel=2)
    run = native_region_runner(region)
    region.state["fallback_runner"] = run
    return run
