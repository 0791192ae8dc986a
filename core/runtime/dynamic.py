"""Dynamic shapes: graphs holding an op whose output shape depends on the data
(``_contrib_boolean_mask``, trait ``dynamic_shape``), run as MXNet 1.9.1's executor runs
them when shape inference leaves entries unknown at bind (``is_dynamic_``, seed 003):

- the memory planner plans only the entries whose shape is known at bind; the others
  ("dynamic entries") get their own buffer at run time, kept and reused while their shape
  holds and grown when it does not;
- in forward and backward, before each node that reads or writes a dynamic entry runs, the
  shapes of its outputs are settled: from the input values for a dynamic op (its
  ``settle_shape``), else from the node's shape rule applied to the settled input shapes
  (a backward op without one takes its forward node's input shapes, as MXNet does); the
  node's kernel is then built again when its arrays changed ("later nodes re-planned");
- head gradients of dynamic outputs take the shape of the settled output;
- bulk execution is off (MXNet disables it in dynamic mode).

Unlike MXNet 1.9.1, shapes settle again at every forward: MXNet keeps the first forward's
shapes, so a later forward whose mask keeps another number of rows returns stale shapes and
corrupts memory (``free(): invalid next size``).
"""
from __future__ import annotations

from typing import Any, Callable

from ..ir.errors import BindError, KernelError
from ..ir.graph import Graph
from ..ops.common import fmt, known, prod
from ..ops.dynamic import DYNAMIC
from ..passes.infer_shape import apply_rule, node_rule

__all__ = ["DynamicShapes"]


class DynamicShapes:
    """The dynamic entries of a bound graph and what settles them at run time."""

    def __init__(self, graph: Graph, entries: frozenset[int]):
        ig = graph.indexed
        rp = ig.row_ptr
        self.static = graph.attrs["shape"]
        self.dtypes = graph.attrs["dtype"]
        self.entries = entries
        #: op nodes reading or writing a dynamic entry
        self.nodes = frozenset(
            nid for nid, n in enumerate(ig.nodes) if n.op is not None and (
                any(e in entries for e in ig.node_inputs[nid])
                or any(e in entries for e in range(rp[nid], rp[nid + 1]))))
        self._buffers: dict[int, Any] = {}
        self._kernels: dict[tuple[int, bool], tuple[tuple, Callable]] = {}

    @classmethod
    def of(cls, graph: Graph) -> "DynamicShapes | None":
        """None when every shape and dtype is known; the dynamic entries when the unknown
        shapes come with dynamic-shape ops; else a :class:`BindError` naming the entries."""
        if graph.attrs.get("shape_num_unknown") == 0 and graph.attrs.get("dtype_num_unknown") == 0:
            return None
        ig = graph.indexed
        shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
        dynamic = any(n.op is not None and DYNAMIC in n.op.traits for n in ig.nodes)
        bad = []
        for nid, node in enumerate(ig.nodes):
            for k in range(ig.row_ptr[nid], ig.row_ptr[nid + 1]):
                if dtypes[k] is None or not (dynamic or known(shapes[k])):
                    bad.append(f"{node.name} output {k - ig.row_ptr[nid]}: shape "
                               f"{shapes[k]}, dtype {dtypes[k]}")
        if bad:
            raise BindError("cannot bind: the shape or dtype of these entries could not be "
                            "inferred:\n  " + "\n  ".join(bad[:20]))
        entries = frozenset(e for e in range(ig.num_entries) if not known(shapes[e]))
        _check_regions(graph, entries)
        return cls(graph, entries)

    # -- running -------------------------------------------------------------------------
    def step(self, plan, nid: int, is_train: bool) -> Callable[[], None]:
        """The callable running node ``nid``: settle its output shapes, then run its kernel
        (rebuilt when its arrays changed)."""
        def run() -> None:
            self.settle(plan, nid)
            self._kernel(plan, nid, is_train)()
        return run

    def settle(self, plan, nid: int) -> None:
        """Give the dynamic outputs of node ``nid`` their run-time shape and array."""
        ig = plan.graph.indexed
        node, rp = ig.nodes[nid], ig.row_ptr
        outs = range(rp[nid], rp[nid + 1])
        if not any(e in self.entries for e in outs):
            return
        if node.op.settle_shape is not None:
            shapes = node.op.settle_shape(node.params, [plan.arrays[e]
                                                        for e in ig.node_inputs[nid]])
        else:
            rule, in_ids = node_rule(ig, nid)
            shapes = [self.static[e] for e in outs]
            if rule is not None:
                apply_rule(node, rule, [tuple(plan.arrays[e].shape) for e in in_ids], shapes)
        for k, (e, shape) in enumerate(zip(outs, shapes)):
            if e not in self.entries:
                continue
            if not known(shape):
                ins = [fmt(tuple(plan.arrays[i].shape)) for i in ig.node_inputs[nid]]
                raise KernelError(f"node {node.name!r} ({node.op.name}): the shape of output "
                                  f"{k} cannot be settled at run time from its inputs' shapes "
                                  f"{', '.join(ins)} (it follows a dynamic-shape op)")
            plan.arrays[e] = self.array(plan, e, tuple(shape), plan.node_ctx[nid])

    def array(self, plan, eid: int, shape: tuple, ctx) -> Any:
        """The array of dynamic entry ``eid`` with ``shape``: the current one when its shape
        holds, else a view of the entry's buffer (grown when too small)."""
        current = plan.arrays[eid]
        if current is not None and tuple(current.shape) == shape:
            return current
        dtype = self.dtypes[eid]
        nbytes = prod(shape) * dtype.itemsize
        buf = self._buffers.get(eid)
        if buf is None or buf.nbytes < nbytes:
            buf = self._buffers[eid] = ctx.zeros(max(nbytes, 1), "uint8")
        return buf[:nbytes].view(dtype).reshape(shape)

    def _kernel(self, plan, nid: int, is_train: bool) -> Callable[[], None]:
        ig = plan.graph.indexed
        rp = ig.row_ptr
        # the kernel captured these arrays (alive while cached, so ids cannot be reused)
        key = tuple(id(plan.arrays[e]) for e in list(ig.node_inputs[nid]) +
                    list(range(rp[nid], rp[nid + 1])))
        hit = self._kernels.get((nid, is_train))
        if hit is not None and hit[0] == key:
            return hit[1]
        fn = plan.make_kernel(nid, is_train)
        self._kernels[(nid, is_train)] = (key, fn)
        return fn

    def head_gradient(self, plan, eid: int, output_eid: int) -> Any:
        """The head-gradient array ``eid`` shaped like the settled output ``output_eid``."""
        if eid not in self.entries:
            return plan.arrays[eid]
        out = plan.arrays[output_eid]
        nid, _ = plan.graph.indexed.entry_node(eid)
        plan.arrays[eid] = self.array(plan, eid, tuple(out.shape), plan.node_ctx[nid])
        return plan.arrays[eid]


def _check_regions(graph: Graph, entries: frozenset[int]) -> None:
    """A backend region (an ONNX Runtime session, a fused kernel, a nested plan) is built for
    static shapes: one that reads or writes a dynamic entry (a partitioned symbol loaded from
    JSON, a plugin's region) cannot run."""
    ig = graph.indexed
    rp = ig.row_ptr
    for nid, node in enumerate(ig.nodes):
        if node.op is None or "subgraph" not in node.op.traits:
            continue
        eids = list(ig.node_inputs[nid]) + list(range(rp[nid], rp[nid + 1]))
        if any(e in entries for e in eids):
            raise BindError(f"cannot bind: region {node.name!r} ({node.op.name}, backend "
                            f"{node.attrs.get('__backend__', 'fused')!r}) reads or writes a "
                            f"shape that settles only at run time (a dynamic-shape op such "
                            f"as _contrib_boolean_mask is in or before it), and a backend "
                            f"region runs static shapes only; partition the symbol again "
                            f"(dynamic-shape ops and the nodes after them stay native)")
