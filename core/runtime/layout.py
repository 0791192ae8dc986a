"""Channels-last storage for entries between nodes that ask for it.

A pass may set the node attribute ``__layout__`` to ``"channels_last"`` on nodes whose kernels
take 4-D arrays with any strides, read and write (PyTorch's operators, numpy's ufuncs with
``out=``). An entry is then *stored* channels-last, N x H x W x C in memory, when the node
producing it and every node reading it carry the attribute, it is 4-D, and it is neither a
graph output nor an array the executor was given (arguments, gradients, auxiliary states):
nodes that read only its shape (:data:`SHAPE_ONLY_OPS`, the gradient pass's zeros for a hidden
output) do not count as readers that keep it channel-first; its array is still an (N, C, H,
W) array, a transposed view of its storage, so every kernel
and every monitor sees the same numbers; only the strides differ. oneDNN runs channels-last
convolutions without reordering the data to its blocked layout and back, which its
channel-first calls do each time (benchmarks/README.md, issue 21).

Two entries of different layouts never share storage in place (an elementwise kernel
writing one while it reads the other would read what it wrote): the memory planner asks
:func:`inplace_allowed`.
"""
from __future__ import annotations

from typing import Any

from ..ir.graph import Graph

__all__ = ["LAYOUT_ATTR", "CHANNELS_LAST", "channels_last_entries", "inplace_allowed",
           "channels_last_view", "stored_channels_last"]

#: the node attribute, and its one value
LAYOUT_ATTR, CHANNELS_LAST = "__layout__", "channels_last"


#: ops that read only their input's shape and dtype, never its elements: their reading
#: an entry does not keep it channel-first (the gradient pass's zeros for a hidden output)
SHAPE_ONLY_OPS = frozenset({"zeros_like", "ones_like"})


def _asks(node) -> bool:
    return node.op is not None and node.attrs.get(LAYOUT_ATTR) == CHANNELS_LAST


def _indifferent(node) -> bool:
    return _asks(node) or (node.op is not None and node.op.name in SHAPE_ONLY_OPS)


def channels_last_entries(graph: Graph, external: set | frozenset) -> frozenset:
    """The entry ids of ``graph`` stored channels-last (see the module's docstring); the
    entries in ``external`` (arrays the executor is given, entries sized at run time) never
    are."""
    ig = graph.indexed
    if not any(_asks(n) for n in ig.nodes):
        return frozenset()
    shapes = graph.attrs["shape"]
    readers = ig.entry_readers()
    outputs = set(ig.outputs)
    chosen = set()
    for nid, node in enumerate(ig.nodes):
        if not _asks(node):
            continue
        for e in range(ig.row_ptr[nid], ig.row_ptr[nid + 1]):
            shape = shapes[e]
            if (e in external or e in outputs or shape is None or len(shape) != 4
                    or not readers[e]):
                continue
            if (all(_indifferent(ig.nodes[r]) for r in readers[e])
                    and any(_asks(ig.nodes[r]) for r in readers[e])):
                chosen.add(e)
    return frozenset(chosen)


def inplace_allowed(graph: Graph, chosen: frozenset):
    """``fn(node) -> bool``: whether ``node``'s inputs and outputs are all stored alike (all
    channels-last or none), the condition for the planner to run it in place."""
    if not chosen:
        return lambda node: True
    ig = graph.indexed

    def alike(node) -> bool:
        nid = ig.node_id[id(node)]
        entries = list(ig.node_inputs[nid]) + list(range(ig.row_ptr[nid], ig.row_ptr[nid + 1]))
        return len({e in chosen for e in entries}) == 1
    return alike


def channels_last_view(buf: Any, shape: tuple) -> Any:
    """The (N, C, H, W) array ``shape`` over ``buf`` (flat, at least that many elements)
    holding it as N x H x W x C."""
    n, c, h, w = shape
    return buf[:n * c * h * w].reshape(n, h, w, c).transpose(0, 3, 1, 2)


def stored_channels_last(arr: Any) -> bool:
    """Whether the (N, C, H, W) array ``arr`` is stored N x H x W x C (as
    :func:`channels_last_view` makes it)."""
    return arr.ndim == 4 and arr.transpose(0, 2, 3, 1).flags.c_contiguous
