"""The bind pipeline: from a symbol and its bound arrays to the executed graph.

Partitioning by the selected subgraph backends, common-subexpression elimination, the
gradient pass, context assignment, shape and dtype inference, then the passes plugins
registered for the ``after_gradient`` stage (the fused backend's pointwise fusion with
MXNET_USE_FUSION=1): each a pass or a partitioning step of the layers below.
"""
from __future__ import annotations

from typing import Any

from ..ir.context import Context
from ..ir.graph import Graph, IndexedGraph
from ..passes.cse import cse_enabled
from ..passes.manager import apply_passes, run_stage
from ..plugins import notify
from ..subgraph.region import link_regions
from ..subgraph.select import apply_backends, resolve_backends
from ..symbol.symbol import Symbol

__all__ = ["build_graph"]


def build_graph(sym: Symbol, ig: IndexedGraph, arg_arrays: list, aux_arrays: list,
                reqs: dict[str, str], inferred: Graph | None = None,
                mirror: bool | None = None, ctx: Context | None = None,
                group2ctx: dict | None = None, backend: Any = None,
                backend_options: dict | None = None,
                output_shapes: list | None = None) -> Graph:
    """The executed graph: the forward graph partitioned by the selected subgraph backends
    (``backend``, else MXNET_SUBGRAPH_BACKEND, else plugins.toml), after common-subexpression
    elimination, plus, when some grad_req is not null, the backward graph (gradient pass);
    shapes and dtypes inferred from the bound arrays; then the ``after_gradient`` stage.
    ``inferred`` is the forward graph already inferred from the same arrays (reused when no
    pass changes it); ``mirror`` overrides MXNET_BACKWARD_DO_MIRROR; ``output_shapes``: the
    shapes of the outputs where known from elsewhere (a region's, from the graph around it)."""
    ctx = ctx or Context("cpu")
    aux_ids = [i for i in ig.input_nodes if i in ig.mutable_input_nodes]
    given = {id(ig.nodes[k]): a for k, a in zip(ig.arg_nodes, arg_arrays)}
    given.update((id(ig.nodes[k]), a) for k, a in zip(aux_ids, aux_arrays))
    grad_nodes = [ig.nodes[n] for n in ig.arg_nodes if reqs[ig.nodes[n].name] != "null"]
    names, backend_options = resolve_backends(backend, backend_options)
    plan = None
    if names:
        arrays = {n.name: given[id(n)] for n in ig.nodes if id(n) in given}
        part, plan = apply_backends(sym, names, ctx, bool(grad_nodes), backend_options,
                                    {k: tuple(a.shape) for k, a in arrays.items()},
                                    {k: a.dtype for k, a in arrays.items()})
        notify("graphexec_partition_done", symbol=part, plan=plan)
        if part is not sym:
            sym, ig, inferred = part, part._indexed(), None
    if grad_nodes:  # regions drawing random numbers share their state with their backward
        linked = link_regions(sym)
        if linked is not sym:
            sym, ig, inferred = linked, linked._indexed(), None
    g = Graph(sym.outputs, {"partition_plan": plan}, ig)
    if cse_enabled():
        g = apply_passes(g, ["eliminate_common_expr"])
    if inferred is not None and not grad_nodes and g.indexed is ig and not group2ctx:
        return _after_gradient(inferred.with_attrs(partition_plan=plan), ctx, backend_options)
    if grad_nodes:
        attrs = {"grad_args": [g.indexed.node_id[id(n)] for n in grad_nodes]}
        if mirror is not None:
            attrs["mirror"] = mirror
        g = apply_passes(g.with_attrs(**attrs), ["gradient"])
    if group2ctx:
        g = apply_passes(g.with_attrs(default_ctx=ctx, group2ctx=group2ctx), ["assign_context"])
    full = g.indexed
    seeds = {full.node_id[key]: a for key, a in given.items()}
    g = g.with_attrs(shape_inputs={k: tuple(a.shape) for k, a in seeds.items()},
                     dtype_inputs={k: a.dtype for k, a in seeds.items()},
                     shape_outputs=output_shapes)
    g = apply_passes(g, ["infer_shape", "infer_type"])
    return _after_gradient(g, ctx, backend_options)


def _after_gradient(graph: Graph, ctx: Context, backend_options: dict) -> Graph:
    """The ``after_gradient`` stage: the passes plugins registered there (none by default)."""
    return run_stage(graph.with_attrs(default_ctx=ctx, backend_options=backend_options),
                     "after_gradient")
