"""Memory planning: give every entry a storage id from a liveness analysis.

Entries whose last reader has run free their storage; later entries reuse a free block that
fits (best fit, growing the largest smaller block when none fits, as MXNet's GraphAllocator);
an op whose declaration and kernel allow it writes an output in place of a dying input of the
same size. External entries (arguments, auxiliary states, gradient buffers: user arrays) are
never planned, and graph outputs stay alive. As in MXNet, a forward entry is freed after its
last reader, in backward too, so backward temporaries may reuse it; the plan records whether
that happens (``backward_clobbers_forward``: a second backward() then recomputes them).
``repeatable_backward`` (or GRAPHEXEC_REPEATABLE_BACKWARD=1) keeps forward entries read by
backward alive instead, at the cost of memory.

Input attrs: ``shape``, ``dtype``, ``external_entries`` (set of entry ids), optional
``num_forward_nodes``, ``repeatable_backward``, ``context`` (per node: storage never crosses devices) and
``inplace_ok`` (``fn(node) -> bool``: the kernel tolerates aliasing).
Output attrs: ``storage_id`` (per entry; -1 for external), ``storage_bytes`` and
``storage_context`` (per storage id),
``planned_bytes`` and ``unplanned_bytes`` (what one buffer per entry would take).
"""
from __future__ import annotations

import bisect
import os
from typing import Callable

import numpy as np

from ..ir.graph import Graph
from .manager import register_pass

__all__ = ["plan_memory_pass", "EXTERNAL"]

EXTERNAL = -1
_NEVER = 1 << 40
#: below this size an in-place write is not worth it: numpy's overlap check on an aliased
#: output costs more than the memory saved (measured: 3.5 us vs 1.7 us per tiny ufunc call)
INPLACE_MIN_BYTES = int(os.environ.get("GRAPHEXEC_INPLACE_MIN_BYTES", 1 << 16))


@register_pass("plan_memory", requires=("shape", "dtype", "external_entries"))
def plan_memory_pass(graph: Graph) -> Graph:
    ig = graph.indexed
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    external = graph.attrs["external_entries"]
    inplace_ok: Callable = graph.attrs.get("inplace_ok", lambda node: False)
    nbytes = [_nbytes(s, t) for s, t in zip(shapes, dtypes)]
    keep_forward = graph.attrs.get("repeatable_backward", repeatable_backward_default())
    refs = _reference_counts(graph, keep_forward)
    alloc = _Allocator()
    contexts = graph.attrs.get("context") or [None] * len(ig.nodes)
    sid = [EXTERNAL] * ig.num_entries
    for nid, node in enumerate(ig.nodes):
        start, stop = ig.row_ptr[nid], ig.row_ptr[nid + 1]
        if node.op is None:
            continue
        in_ids = ig.node_inputs[nid]
        taken: set[int] = set()
        for k in range(start, stop):
            if k in external:
                continue
            src = None
            if node.op.inplace and nbytes[k] >= INPLACE_MIN_BYTES:
                src = _inplace_source(node, k - start, in_ids, sid, refs, nbytes, k, external,
                                      inplace_ok, taken)
            if src is not None:
                sid[k] = sid[src]
                taken.add(src)
                alloc.share(sid[k])
            else:
                sid[k] = alloc.request(nbytes[k], contexts[nid])
        for e in in_ids:
            refs[e] -= 1
            if refs[e] == 0 and sid[e] != EXTERNAL:
                alloc.release(sid[e])
        for k in range(start, stop):
            if refs[k] == 0 and sid[k] != EXTERNAL:
                alloc.release(sid[k])
    unplanned = sum(nbytes[e] for e in range(ig.num_entries) if sid[e] != EXTERNAL)
    if os.environ.get("MXNET_MEM_PLAN_VERBOSE_LOGGING", "0") not in ("", "0"):
        _log_plan(ig, sid, nbytes)
    return graph.with_attrs(storage_id=sid, storage_bytes=list(alloc.sizes),
                            storage_context=list(alloc.device),
                            planned_bytes=sum(alloc.sizes), unplanned_bytes=unplanned,
                            backward_clobbers_forward=_clobbers(graph, sid))


def _nbytes(shape, dtype) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * np.dtype(dtype).itemsize


def repeatable_backward_default() -> bool:
    return os.environ.get("GRAPHEXEC_REPEATABLE_BACKWARD", "0") not in ("", "0")


def _reference_counts(graph: Graph, keep_forward: bool) -> list[int]:
    """Readers per entry; graph outputs and variables are pinned (never freed), and so are
    forward entries read by backward nodes when ``keep_forward``."""
    ig = graph.indexed
    nfwd = graph.attrs.get("num_forward_nodes", len(ig.nodes))
    refs = [0] * ig.num_entries
    for nid in range(len(ig.nodes)):
        for e in ig.node_inputs[nid]:
            if keep_forward and nid >= nfwd and e < ig.row_ptr[nfwd]:
                refs[e] = _NEVER
            else:
                refs[e] += 1
    for e in ig.outputs:
        refs[e] = _NEVER
    for nid in ig.input_nodes:
        refs[ig.row_ptr[nid]] = _NEVER
    return refs


def _clobbers(graph: Graph, sid: list[int]) -> bool:
    """Whether a backward node writes storage holding a forward value that backward reads
    (then a second backward() needs a new forward first)."""
    ig = graph.indexed
    nfwd = graph.attrs.get("num_forward_nodes", len(ig.nodes))
    fwd_end = ig.row_ptr[nfwd]
    read = {sid[e] for nid in range(nfwd, len(ig.nodes)) for e in ig.node_inputs[nid]
            if e < fwd_end and sid[e] != EXTERNAL}
    return any(sid[e] in read for e in range(fwd_end, ig.num_entries))


def _inplace_source(node, out_index, in_ids, sid, refs, nbytes, k, external, inplace_ok,
                    taken):
    for i, o in node.op.inplace:
        if o != out_index or i >= len(in_ids):
            continue
        src = in_ids[i]
        if (src in external or sid[src] == EXTERNAL or refs[src] != 1 or src in taken
                or nbytes[src] != nbytes[k] or in_ids.count(src) > 1
                or not inplace_ok(node)):
            continue
        return src
    return None


class _Allocator:
    """Storage blocks with reference counts and, per device, a free list sorted by size."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.users: list[int] = []
        self.device: list[object] = []
        self.free: dict[object, list[tuple[int, int]]] = {}  # (size, storage id), sorted

    def request(self, size: int, device: object = None) -> int:
        free = self.free.setdefault(device, [])
        i = bisect.bisect_left(free, (size, -1))
        if i < len(free):
            _, s = free.pop(i)
        elif free:
            _, s = free.pop()  # the largest smaller block, grown to fit
            self.sizes[s] = size
        else:
            s = len(self.sizes)
            self.sizes.append(size)
            self.users.append(0)
            self.device.append(device)
        self.users[s] = 1
        return s

    def share(self, s: int) -> None:
        self.users[s] += 1

    def release(self, s: int) -> None:
        self.users[s] -= 1
        if self.users[s] == 0:
            bisect.insort(self.free[self.device[s]], (self.sizes[s], s))


def _log_plan(ig, sid: list[int], nbytes: list[int]) -> None:
    for nid, node in enumerate(ig.nodes):
        for k in range(ig.row_ptr[nid], ig.row_ptr[nid + 1]):
            where = "external" if sid[k] == EXTERNAL else f"storage {sid[k]}"
            print(f"[plan_memory] {node.name} output {k - ig.row_ptr[nid]}: {nbytes[k]} bytes, "
                  f"{where}")
