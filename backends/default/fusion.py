"""The default backend's own fusion, for graphs no strategy partitions (``NONE``): a relu
that is the only reader of a BatchNorm's or a Convolution's output runs inside that node's
last pass (``kernels.base.NATIVE_RELU_FUSED``): the BatchNorm's normalisation with given
statistics (inference) over channel planes, the convolution's bias addition, each one
compiled loop writing max(., 0) (elsewhere max(., 0) follows the pass); the relu, which the
memory plan runs in place, has nothing left to do. The numbers are the plain kernels' bit
for bit, and a watched executor (a monitor) runs the plain kernels
(``MONITORED_KERNEL_ATTR``), so it still sees the node's own output. DenseNet-121's 121
relus took 4.6 of its 77 ms at batch 1 (benchmarks/README.md).
"""
from __future__ import annotations

import math

import numpy as np

from graphexec.core.ir.graph import Graph
from graphexec.core.passes import plan_memory
from graphexec.core.passes.assign_context import host_nodes
from graphexec.core.runtime.kernels import KERNEL_ATTR, MONITORED_KERNEL_ATTR

from .kernels.base import NATIVE_RELU_FUSED

__all__ = ["relu_fusion_pass", "relu_pairs"]

#: the nodes whose kernels can apply the relu after them (NATIVE_RELU_FUSED variants)
PRODUCERS = ("BatchNorm", "Convolution")


def relu_pairs(graph: Graph) -> list[tuple[int, int]]:
    """(producer, relu) node ids where the relu (an Activation with act_type relu) is the
    only reader of a PRODUCERS node's first output, which is not a graph output and is
    large enough for the memory planner to run the relu in place (INPLACE_MIN_BYTES), both
    on the host (the node's context, else the bind's) and neither given a kernel variant by
    another pass."""
    ig = graph.indexed
    readers = ig.entry_readers()
    outputs = set(ig.outputs)
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    host = host_nodes(graph)  # the variants are host kernels
    pairs = []
    for producer, node in enumerate(ig.nodes):
        if (node.op is None or node.op.name not in PRODUCERS or KERNEL_ATTR in node.attrs
                or not host[producer]):
            continue
        out = ig.row_ptr[producer]
        if (out in outputs or len(readers[out]) != 1 or shapes[out] is None
                or np.dtype(dtypes[out]).itemsize * math.prod(shapes[out])
                < plan_memory.INPLACE_MIN_BYTES):
            continue
        relu = readers[out][0]
        act = ig.nodes[relu]
        if (act.op is None or act.op.name != "Activation" or act.params.act_type != "relu"
                or KERNEL_ATTR in act.attrs or not host[relu]):
            continue
        pairs.append((producer, relu))
    return pairs


def relu_fusion_pass(graph: Graph) -> Graph:
    """The ``after_gradient`` pass: :func:`relu_pairs` marked to run
    NATIVE_RELU_FUSED when no strategy partitioned the graph (``graph`` itself
    otherwise: a strategy chooses its own kernels)."""
    if graph.attrs.get("partition_plan") is not None:
        return graph
    fused = {KERNEL_ATTR: NATIVE_RELU_FUSED, MONITORED_KERNEL_ATTR: ""}
    return graph.with_node_attrs({nid: fused for pair in relu_pairs(graph) for nid in pair})
