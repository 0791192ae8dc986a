"""The default backend's own fusion, for graphs no strategy partitions (``NONE``): a relu
that is the only reader of a BatchNorm's output runs inside the BatchNorm's pass
(``kernels.base.NATIVE_BATCHNORM_RELU``). The BatchNorm writes max(., 0) where its compiled
loops allow (the normalisation with given statistics, i.e. inference, over channel planes),
else takes max(., 0) after; the relu, which the memory plan runs in place, has nothing left
to do. The numbers are the plain kernels' bit for bit, and a watched executor (a monitor)
runs the plain kernels (``MONITORED_KERNEL_ATTR``), so it still sees the BatchNorm's own
output. DenseNet-121's 121 relus took 4.6 of its 77 ms at batch 1 (benchmarks/README.md).
"""
from __future__ import annotations

import math

import numpy as np

from graphexec.core.ir.graph import Graph
from graphexec.core.passes import plan_memory
from graphexec.core.runtime.kernels import KERNEL_ATTR, MONITORED_KERNEL_ATTR

from .kernels.base import NATIVE_BATCHNORM_RELU

__all__ = ["batch_norm_relu_pass", "batch_norm_relu_pairs"]


def batch_norm_relu_pairs(graph: Graph) -> list[tuple[int, int]]:
    """(BatchNorm, relu) node ids where the relu (an Activation with act_type relu) is the
    only reader of the BatchNorm's output, which is not a graph output and is large enough
    for the memory planner to run the relu in place (INPLACE_MIN_BYTES), both on the host
    and neither given a kernel variant by another pass."""
    ig = graph.indexed
    readers = ig.entry_readers()
    outputs = set(ig.outputs)
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    contexts = graph.attrs.get("context")
    pairs = []
    for bn, node in enumerate(ig.nodes):
        if node.op is None or node.op.name != "BatchNorm" or KERNEL_ATTR in node.attrs:
            continue
        out = ig.row_ptr[bn]
        if (out in outputs or len(readers[out]) != 1 or shapes[out] is None
                or np.dtype(dtypes[out]).itemsize * math.prod(shapes[out])
                < plan_memory.INPLACE_MIN_BYTES):
            continue
        relu = readers[out][0]
        act = ig.nodes[relu]
        if (act.op is None or act.op.name != "Activation" or act.params.act_type != "relu"
                or KERNEL_ATTR in act.attrs):
            continue
        if contexts is not None and any(contexts[n].device_type != "cpu" for n in (bn, relu)):
            continue
        pairs.append((bn, relu))
    return pairs


def batch_norm_relu_pass(graph: Graph) -> Graph:
    """The ``after_gradient`` pass: :func:`batch_norm_relu_pairs` marked to run
    NATIVE_BATCHNORM_RELU when no strategy partitioned the graph (``graph`` itself
    otherwise: a strategy chooses its own kernels)."""
    if graph.attrs.get("partition_plan") is not None:
        return graph
    fused = {KERNEL_ATTR: NATIVE_BATCHNORM_RELU, MONITORED_KERNEL_ATTR: ""}
    return graph.with_node_attrs({nid: fused for pair in batch_norm_relu_pairs(graph)
                                  for nid in pair})
