"""``_FusedOp``: the node that MXNET_USE_FUSION's pass (``backends/fused/fuse_pointwise.py``) puts
in place of a fused region of the forward+backward graph (MXNet's name for its fused node),
and its kernel.

A ``_subgraph_op`` region infers its shapes by running inference on its inner graph. A
``_FusedOp`` built by the pass cannot: its inner graph holds backward operators cut off from
the forward nodes whose inputs give their shapes. So it records the shape and dtype of every
inner entry when the pass creates it (the pass runs on the inferred graph), and its shape and
dtype rules read them. A ``_FusedOp`` loaded from symbol JSON (``get_optimized_symbol`` of a
fused executor holds forward ones) records nothing and infers through its inner graph as a
``_subgraph_op`` does.

The kernel is the fused backend's generated kernel (:mod:`.codegen`, :mod:`.runner`; on a gpu
context the same kernel for numba's CUDA target, :mod:`.cuda`); when it cannot be built (no
numba, no CUDA target on a gpu context, a compile error) the node runs its inner graph with
the native kernels instead, with a ``RuntimeWarning`` naming it, counted in
``exe.partition_plan.fallbacks``. Its state (``exe.region_states``) holds the kernel's
``source`` as for fused regions, so :func:`graphexec.backends.fused.sources` lists it.
"""
from __future__ import annotations

import json
import warnings
from functools import partial
from typing import Callable

from graphexec.core.ir.graph import Graph, Node
from graphexec.core.ops.common import merge
from graphexec.core.ops.registry import OpDef, ShapeConflict
from graphexec.core.runtime.kernels import KernelCall
from graphexec.core.runtime.plan import ExecPlan
from graphexec.core.subgraph import RegionCall, native_runner
from graphexec.core.subgraph.region import REGION_OP, RegionParams, region_params
from graphexec.core.symbol.symbol import Symbol

from .codegen import generate, generate_inferred
from .cuda import cuda_runner
from .runner import kernel_runner

__all__ = ["FUSED_OP", "FusedOpParams", "fused_node", "fused_op_kernel"]


class FusedOpParams(RegionParams):
    """Region parameters plus ``entry_shapes`` / ``entry_dtypes``: per inner entry (entry id
    order of the inner graph), recorded by the pass (None when loaded from JSON), and
    ``serial``: the kernel runs on one thread (see
    :meth:`~.subgraph.PointwiseFusionProperty.serial_kernels`)."""


def fused_node(name: str, subgraph: Symbol, input_names: list[str], output_names: list[str],
               entry_shapes: list | None = None, entry_dtypes: list | None = None,
               serial: bool = False) -> Node:
    """A ``_FusedOp`` node running ``subgraph`` (inputs: inner variables named
    ``input_names``); its ``inputs`` are left empty for the caller to connect."""
    base = region_params(subgraph, input_names, output_names)
    params = FusedOpParams(**vars(base), entry_shapes=entry_shapes, entry_dtypes=entry_dtypes,
                           serial=serial)
    attrs = {"__input_names__": json.dumps(list(input_names)),
             "__output_names__": json.dumps(list(output_names))}
    return Node(FUSED_OP, name, attrs, params, [], [], [subgraph])


def _params_from_node(attrs: dict, subgraphs: list) -> FusedOpParams:
    """For the JSON loader: the region's parameters, no recorded shapes."""
    base = REGION_OP.subgraph_params(attrs, subgraphs)
    return FusedOpParams(**vars(base), entry_shapes=None, entry_dtypes=None, serial=False)


def _slots(p: FusedOpParams) -> tuple[list[int], list[int]]:
    """Inner entry ids of the node's inputs and outputs (computed once per node)."""
    slots = p.__dict__.get("_slots")
    if slots is None:
        ig = p.inner
        by_name = {ig.nodes[i].name: ig.row_ptr[i] for i in ig.input_nodes}
        slots = p.__dict__["_slots"] = ([by_name[n] for n in p.input_names], list(ig.outputs))
    return slots


def _rule(kind: str):
    """Shape (dtype) rule: the recorded values, else inference through the inner graph."""
    region_rule = REGION_OP.infer_shape_fn if kind == "shape" else REGION_OP.infer_type_fn

    def rule(p, ins, outs):
        values = p.entry_shapes if kind == "shape" else p.entry_dtypes
        if values is None:
            region_rule(p, ins, outs)
            return
        in_ids, out_ids = _slots(p)
        _fill(ins, [values[e] for e in in_ids], "in", kind)
        _fill(outs, [values[e] for e in out_ids], "out", kind)
    return rule


def _fill(have: list, want: list, side: str, kind: str) -> None:
    for k, v in enumerate(want):
        if have[k] is None or have[k] == v:
            have[k] = v
            continue
        try:
            if kind != "shape":
                raise ValueError
            have[k] = merge(have[k], v)  # a partly known shape
        except ValueError:
            raise ShapeConflict(side, k, have[k], v) from None


def fused_op_kernel(call: KernelCall) -> Callable[[], None]:
    """The kernel of ``_FusedOp``: the generated kernel, or the native kernels when it cannot
    be built (warned and counted)."""
    p = call.params
    region = RegionCall(p.subgraph, p.input_names, call.inputs, call.outputs, call.ctx,
                        call.is_train, call.node_name, call.workspace, call.state,
                        call.input_grad_reqs, call.input_is_var)
    try:
        if call.ctx.device_type not in ("cpu", "gpu"):
            raise RuntimeError(f"fused kernels run on cpu and gpu contexts, the node is on "
                               f"{call.ctx}")
        if p.entry_shapes is None:
            kernel = generate(p.subgraph, p.input_names, [a.shape for a in call.inputs],
                              [a.dtype for a in call.inputs])
        else:
            kernel = generate_inferred(p.inner, p.input_names, p.entry_shapes, p.entry_dtypes)
        if call.ctx.device_type == "gpu":
            return cuda_runner(kernel, region)
        return kernel_runner(kernel, region, allow_parallel=not p.serial)
    except Exception as exc:  # noqa: BLE001 - any failure runs natively, reported
        ops = sorted({n.op.name for n in p.inner.nodes if n.op is not None})
        warnings.warn(f"fused node {call.node_name!r} ({', '.join(ops)}) runs with the native "
                      f"kernels instead: creating its kernel failed: {type(exc).__name__}: {exc}",
                      RuntimeWarning, stacklevel=2)
        call.state["fallbacks"] = call.state.get("fallbacks", 0) + 1
        call.state["fallback_cause"] = (f"creating its kernel failed: {type(exc).__name__}: "
                                        f"{exc}")
        return _native(p, region)


def _native(p: FusedOpParams, region: RegionCall) -> Callable[[], None]:
    """The inner graph as a nested native plan over the node's own arrays."""
    if p.entry_shapes is None:
        return native_runner(region)
    ig = p.inner
    graph = Graph(p.subgraph.outputs, {"shape": p.entry_shapes, "dtype": p.entry_dtypes,
                                       "shape_num_unknown": 0, "dtype_num_unknown": 0}, ig)
    by_name = {ig.nodes[i].name: ig.row_ptr[i] for i in ig.input_nodes}
    external = {by_name[n]: a for n, a in zip(p.input_names, region.inputs)}
    external.update(zip(ig.outputs, region.outputs))
    workspaces = [(region.ctx, region.workspace)] if region.workspace is not None else None
    plan = ExecPlan(graph, region.ctx, external, workspaces=workspaces)
    return partial(plan.run, region.is_train, "forward")


FUSED_OP = OpDef(
    "_FusedOp", params={}, inputs=lambda p: p.input_names, outputs=lambda p: p.output_names,
    infer_shape=_rule("shape"), infer_type=_rule("dtype"), traits=("subgraph",),
    doc="Pointwise nodes fused after the gradient pass (MXNET_USE_FUSION): one generated "
        "kernel over forward or backward elementwise chains.")
FUSED_OP.subgraph_params = _params_from_node
