"""Which nodes the ``torch`` strategy runs with PyTorch's kernels, and the pass that says so.

``backend="torch"`` (or ``MXNET_SUBGRAPH_BACKEND=torch``) does not cut the graph into regions:
the executed graph stays the native one, forward and backward, and after the gradient pass
:func:`torch_kernels_pass` marks the nodes :func:`supported` accepts (and the backward node of
each, which follows its forward node) with the kernel attribute, so that the executor runs
them with the ``torch`` kernel variants (:mod:`.kernels`), BatchNorm with the native kernels'
``openmp`` variant and the wider 3x3 stride-1 convolutions with their ``winograd`` variant
on PyTorch's products where numba is installed (:func:`variant_for`). Everything else runs
natively; the partition plan records, per node, which variant it got or why none.
Parameters stay the executor's arrays, so updates are seen at the next step.
"""
from __future__ import annotations

import importlib.util
import math

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.graph import Graph
from graphexec.core.ops.conv import (channel_last, conv_geometry, conv_out_size, pool_geometry,
                                     winograd_tiles)
from graphexec.core.passes import plan_memory
from graphexec.core.runtime.blas_threads import PRODUCT_ATTR
from graphexec.core.runtime.kernels import KERNEL_ATTR, MONITORED_KERNEL_ATTR, kernel_registry
from graphexec.core.runtime.layout import CHANNELS_LAST, LAYOUT_ATTR
from graphexec.core.subgraph import ReasonSelector, SubgraphBackend, SubgraphProperty

from .kernels import KERNELS, load_torch

__all__ = ["NAME", "supported", "torch_kernels_pass", "make_backend", "TorchKernelsProperty"]

#: the strategy's name and the kernel variant's
NAME = "torch"
#: what the plan records for a node that runs the variant
CHOSEN = "runs PyTorch's kernel (torch strategy, no region)"
#: the native kernels' variant whose compiled loops run on numba's threads (BatchNorm; the
#: Convolution's depthwise layers over channels-last data; the default backend registers
#: it); the strategy takes it where numba is installed
OPENMP = "openmp"
CHOSEN_OPENMP = ("runs the native compiled loops on numba's threads (torch strategy: faster "
                 "than PyTorch's NCHW BatchNorm and oneDNN's depthwise layers on small maps)")
#: the native kernels' Winograd F(2x2, 3x3) convolutions, their products on PyTorch's
#: (registered by the plugin as the batched product ``torch``)
WINOGRAD = "winograd"
CHOSEN_WINOGRAD = ("runs the native Winograd F(2x2, 3x3) transforms with PyTorch's products "
                   "(torch strategy: faster than oneDNN's direct 3x3 convolution here)")
#: the native kernels' variant of a channels-last BatchNorm that also applies the relu
#: reading its output (and masks that relu's gradient in its backward), and of that relu,
#: left with nothing to do (:func:`batch_norm_relu_nodes`)
BATCHNORM_RELU = "batchnorm_relu"
_CHOSEN = {OPENMP: CHOSEN_OPENMP, WINOGRAD: CHOSEN_WINOGRAD, NAME: CHOSEN}
#: the nodes that may store the 4-D entries between them channels-last
#: (:mod:`graphexec.core.runtime.layout`, :func:`channels_last_nodes`): PyTorch's
#: convolutions, pooling and relu, the native BatchNorm loops (which take channels-last data
#: as rows of channels), the native additions (numpy's ufuncs)
CHANNELS_LAST_OPS = {NAME: {"Convolution", "_backward_Convolution", "Activation",
                            "_backward_Activation", "Pooling", "_backward_Pooling"},
                     OPENMP: {"BatchNorm", "_backward_BatchNorm", "Convolution",
                              "_backward_Convolution"},
                     None: {"elemwise_add", "add_n", "Pooling", "_backward_Pooling"}}
#: why a 2-D max pooling stays native where numba is installed: the compiled loops (channel
#: planes, or channels-last rows in the strategy's groups) give MXNet's maxima and gradient
#: (NaN never taken; a border window of padding and the lowest value sends its gradient
#: nowhere, where PyTorch's kernel sends it to its first element), as fast as PyTorch's
#: (ResNet-18 v1's step 1.001x, 0.96-1.04; benchmarks/README.md)
NATIVE_MAX_POOLING = ("max pooling runs the native compiled loops (channel planes or "
                      "channels-last rows; MXNet's maxima: NaN never taken)")
#: the nodes that take and give either layout at the same cost (oneDNN reorders a
#: convolution's data at every call anyway; PyTorch's pooling picks its kernel by layout),
#: so a layout may change across them
LAYOUT_CONVERTERS = frozenset({"Convolution", "_backward_Convolution", "Pooling",
                               "_backward_Pooling"})
#: the fewest positions per map (H x W) of every 4-D entry of a group of elementwise nodes
#: between convolutions kept channels-last without a depthwise convolution: oneDNN's
#: channels-last convolutions beat its channel-first calls on large maps only (ResNet-18's
#: 64 channels at 28x28, forward + backward, 0.66x; 128 at 14x14 0.86x; 256 at 7x7 1.05x;
#: 512 at 4x4 1.3x; benchmarks/README.md)
DENSE_CHANNELS_LAST_MIN_POSITIONS = 196
#: the most output positions per map (OH x OW) of a depthwise convolution that runs the
#: native compiled loops over channels-last rows (``openmp``) instead of oneDNN's, where
#: PyTorch's kernels use a vector extension outside NATIVE_DEPTHWISE_ANY_SIZE_CAPABILITIES:
#: on small maps oneDNN's fixed cost per call dominates (MobileNet v1 0.25's layers, batch
#: 16, forward + backward, loops over oneDNN's: 7x7 maps 0.3-0.85x, 4x4 0.57-0.85x); on an
#: AVX-512 Xeon every depthwise layer native made MobileNet's step 1.019x (0.98-1.05), up to
#: 300 positions 0.995x (benchmarks/README.md)
NATIVE_DEPTHWISE_MAX_POSITIONS = 64
#: the vector extensions of PyTorch's CPU kernels where depthwise convolutions of every map
#: size run the native loops: AVX2 (an AMD EPYC: MobileNet v1 0.25's step 0.950x, quartiles
#: 0.938-0.965, with its five large-map layers native; per layer with cold caches, as in a
#: step, forward + backward 0.54-0.88x oneDNN's with its copies into the planned arrays;
#: benchmarks/README.md)
NATIVE_DEPTHWISE_ANY_SIZE_CAPABILITIES = frozenset({"AVX2"})
#: the fewest input and output channels, and 2x2 output tiles in the batch, for which the
#: Winograd variant beat oneDNN's convolution, forward and backward, on every layer shape
#: measured (benchmarks/bench_winograd.py: ResNet's 128-512 channel layers 0.53-0.89x; 8-32
#: channels, or 16 tiles of 512 channels, 1.3-1.9x). 64 channels lost to oneDNN's
#: channels-last convolutions, which those layers' maps (28x28 and more) get without the
#: variant: an AMD EPYC (Zen 3), 64 channels at 28x28, forward 1.9x, backward 1.2x; ResNet-18
#: v1's step from 128 channels 0.90-0.98x its time from 64 (``bench_winograd.py least``)
WINOGRAD_MIN_CHANNELS, WINOGRAD_MIN_TILES = 128, 64
#: the vector extensions of PyTorch's CPU kernels (``torch.backends.cpu.get_cpu_capability``)
#: where the Winograd variant beat oneDNN's direct convolution: AVX2 (AMD machines, ResNet-18's
#: step 0.85x). With AVX-512 oneDNN's own kernels won (a Xeon: ResNet-18's layers 1.08-1.27x,
#: the step 1.10-1.13x with the variant; benchmarks/bench_winograd.py, benchmarks/README.md)
WINOGRAD_CAPABILITIES = frozenset({"AVX2"})
_F32 = np.dtype("float32")


def _conv(node, shapes) -> str | None:
    p = node.params
    geo = conv_geometry(p)
    if geo.last:
        return f"layout {p.layout} (torch kernels take channel-first layouts)"
    return None


def _batch_norm(node, shapes) -> str | None:
    data = shapes[0]
    if node.params.axis % len(data) != 1:
        return f"axis {node.params.axis} (torch kernels normalise axis 1)"
    return None


def _pooling(node, shapes) -> str | None:
    p = node.params
    data = shapes[0]
    if p.global_pool or len(data) != 4 or channel_last(p.layout):
        return "not 2-D channel-first pooling with a kernel"
    if p.pool_type == "max" and _native_max_pooling():
        return NATIVE_MAX_POOLING
    if p.pool_type not in ("max", "avg"):
        return f"pool_type {p.pool_type}"
    geo, out_sp = pool_geometry(p, data)
    pads = [left for left, _ in geo.pad]
    if any(2 * pd > k for pd, k in zip(pads, geo.kernel)):
        return "padding over half the kernel"
    if p.pool_type == "avg" and p.pooling_convention != "valid":
        return f"avg pooling with pooling_convention {p.pooling_convention}"
    if p.pooling_convention not in ("valid", "full"):
        return f"pooling_convention {p.pooling_convention}"
    if tuple(out_sp) != _torch_pool_out(data[2:], geo, pads, p.pooling_convention == "full"):
        return "PyTorch's ceil_mode gives another output size"
    return None


def _torch_pool_out(sp, geo, pads, ceil: bool) -> tuple:
    out = []
    for x, k, s, pd in zip(sp, geo.kernel, geo.stride, pads):
        span = x + 2 * pd - k
        o = (-(-span // s) if ceil else span // s) + 1
        if ceil and (o - 1) * s >= x + pd:  # PyTorch: the last window starts inside
            o -= 1
        out.append(o)
    return tuple(out)


def _activation(node, shapes) -> str | None:
    return None if node.params.act_type == "relu" else f"act_type {node.params.act_type}"


def _rnn(node, shapes) -> str | None:
    p = node.params
    if p.projection_size:
        return "projection_size (LSTMP runs natively)"
    if p.lstm_state_clip_min is not None or p.lstm_state_clip_max is not None:
        return "lstm_state_clip_min/max (PyTorch's cells do not clip)"
    if p.use_sequence_length:
        return "use_sequence_length (per-sequence lengths)"
    if p.p > 0 and p.num_layers > 1:
        return "dropout between layers (masks from graphexec's seeded generator)"
    return None


def _softmax(node, shapes) -> str | None:
    p = node.params
    if node.op.name == "softmax" and p.temperature not in (None, 1.0):
        return f"temperature {p.temperature}"
    return None


def _gelu(node, shapes) -> str | None:
    act = node.params.act_type
    return None if act == "gelu" else f"act_type {act}"


def _layer_norm(node, shapes) -> str | None:
    axis = node.params.axis
    return None if axis % len(shapes[0]) == len(shapes[0]) - 1 else f"axis {axis} (not the last)"


#: op -> the inputs its variant takes in any dtype (softmax's lengths: MXNet reads them as
#: they are)
_ANY_DTYPE = {"softmax": lambda p: (1,) if p.use_length else ()}

_RULES = {"FullyConnected": lambda node, shapes: None, "Convolution": _conv,
          "BatchNorm": _batch_norm, "Pooling": _pooling, "Activation": _activation,
          "RNN": _rnn, "SoftmaxOutput": _softmax, "softmax": _softmax, "LeakyReLU": _gelu,
          "LayerNorm": _layer_norm}


def supported(node, in_shapes: list, dtypes: list) -> str | None:
    """None when the forward ``node`` runs the variant, else why not (every input and output
    float32 with known shapes, but the inputs of :data:`_ANY_DTYPE`, and the op's own
    rule)."""
    rule = _RULES.get(node.op.name) if node.op is not None else None
    if rule is None:
        return "no torch kernel for the op"
    if any(s is None for s in in_shapes) or not in_shapes:
        return "shapes not known"
    free = _ANY_DTYPE.get(node.op.name, lambda p: ())(node.params)
    if any(d is None or (np.dtype(d) != _F32 and k not in free) for k, d in enumerate(dtypes)):
        return "not float32"
    try:
        return rule(node, in_shapes)
    except GraphexecError as exc:
        return str(exc)


class _Reasons(ReasonSelector):
    """Claims nothing (no regions): records in the plan what the pass will decide."""

    def __init__(self, shapes):
        super().__init__()
        self._shapes = shapes

    def reason(self, node) -> str | None:
        if self._shapes is None:
            return "shapes not inferred at partitioning"
        outs = node.op.num_visible_outputs(node.params)
        ins = self._shapes.inputs(node)
        why = supported(node, ins, self._shapes.dtypes(node)[:outs + len(node.inputs)])
        return why if why is not None else _CHOSEN[variant_for(node, ins)]


class TorchKernelsProperty(SubgraphProperty):
    """The ``torch`` strategy's one property: no regions, only the plan's reasons (the
    kernels are chosen after the gradient pass by :func:`torch_kernels_pass`)."""

    name = "torch_kernels"
    needs_shapes = True

    def create_selector(self):
        return _Reasons(self.shapes)


def make_backend() -> SubgraphBackend:
    return SubgraphBackend(NAME, [TorchKernelsProperty()])


def variant_for(node, in_shapes: list) -> str:
    """The kernel variant the supported forward ``node`` (and its backward) runs, where numba
    is installed and the native variant registered: BatchNorm, and depthwise convolutions
    (on small output maps, :data:`NATIVE_DEPTHWISE_MAX_POSITIONS`, or all of them with
    AVX2, :data:`NATIVE_DEPTHWISE_ANY_SIZE_CAPABILITIES`), the native compiled
    loops on numba's threads (in a step of ResNet-18 v1 0.97-0.99x, of MobileNet v1 0.25 0.89-0.94x
    the time with PyTorch's BatchNorm, benchmarks/README.md); 3x3 stride-1 convolutions of
    at least WINOGRAD_MIN_CHANNELS channels in and out and WINOGRAD_MIN_TILES output tiles
    the native Winograd transforms with PyTorch's products where PyTorch's kernels use a
    vector extension of WINOGRAD_CAPABILITIES; everything else PyTorch's."""
    if node.op.name == "BatchNorm" and _openmp_batch_norm():
        return OPENMP
    if node.op.name == "Convolution" and _native_depthwise(node.params, in_shapes):
        return OPENMP
    if node.op.name == "Convolution" and _winograd_wins(node.params, in_shapes):
        return WINOGRAD
    return NAME


def _winograd_wins(p, in_shapes: list) -> bool:
    data, weight = in_shapes[0], in_shapes[1]
    tiles = winograd_tiles(p, data)
    if tiles is None or min(data[1], weight[0]) < WINOGRAD_MIN_CHANNELS:
        return False
    if _capability() not in WINOGRAD_CAPABILITIES:
        return False
    return data[0] * tiles.th * tiles.tw >= WINOGRAD_MIN_TILES and _native_variant(WINOGRAD,
                                                                                   "Convolution")


def _native_depthwise(p, in_shapes: list) -> bool:
    """A 2-D depthwise convolution (as many groups as input channels and filters) with at
    most NATIVE_DEPTHWISE_MAX_POSITIONS output positions per map, or of any size where
    PyTorch's kernels use a vector extension of NATIVE_DEPTHWISE_ANY_SIZE_CAPABILITIES,
    where numba is installed."""
    data = in_shapes[0]
    if data is None or len(data) != 4 or channel_last(p.layout):
        return False
    if not p.num_group == data[1] == p.num_filter > 1:
        return False
    geo = conv_geometry(p)
    positions = math.prod(conv_out_size(x, i, geo) for i, x in enumerate(data[2:]))
    any_size = _capability() in NATIVE_DEPTHWISE_ANY_SIZE_CAPABILITIES
    return ((any_size or positions <= NATIVE_DEPTHWISE_MAX_POSITIONS)
            and _native_variant(OPENMP, "Convolution"))


def _capability() -> str:
    """The vector extension of PyTorch's CPU kernels ("AVX2", "AVX512", ...)."""
    return load_torch().backends.cpu.get_cpu_capability()


def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def _native_max_pooling() -> bool:
    return _numba_installed()


def _openmp_batch_norm() -> bool:
    return _native_variant(OPENMP, "BatchNorm")


def _native_variant(variant: str, op_name: str) -> bool:
    """Whether numba is installed and the default backend registered ``variant`` for
    ``op_name`` and its backward."""
    if not _numba_installed():
        return False
    try:
        kernel_registry().lookup(op_name, "cpu", variant)
        kernel_registry().lookup(f"_backward_{op_name}", "cpu", variant)
    except GraphexecError:
        return False
    return True


def torch_kernels_pass(graph: Graph) -> Graph:
    """Mark the nodes that run the ``torch`` variant when the bind chose the strategy
    (``graph`` itself otherwise). Registered for the ``after_gradient`` stage."""
    plan = graph.attrs.get("partition_plan")
    if plan is None or NAME not in plan.backends:
        return graph
    try:
        load_torch()
    except ImportError as exc:
        raise GraphexecError(f"the {NAME!r} strategy needs PyTorch (pip install torch, the CPU "
                             f"wheel; or graphexec[torch]): {exc}") from None
    ig = graph.indexed
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    contexts = graph.attrs.get("context")
    chosen: dict[int, str] = {}
    for nid, node in enumerate(ig.nodes):
        if node.op is None or node.op.name not in KERNELS:
            continue
        if contexts is not None and contexts[nid].device_type != "cpu":
            continue
        if node.op.name.startswith("_backward_"):
            fwd = ig.forward_node(nid)
            if fwd in chosen:
                chosen[nid] = chosen[fwd]
            continue
        ins = [tuple(shapes[e]) if shapes[e] is not None else None for e in ig.node_inputs[nid]]
        outs = range(ig.row_ptr[nid], ig.row_ptr[nid + 1])
        why = supported(node, ins, [dtypes[e] for e in ig.node_inputs[nid]] +
                        [dtypes[e] for e in outs][:node.op.num_visible_outputs(node.params)])
        if why is None:
            chosen[nid] = variant_for(node, ins)
    return _marked(graph, chosen)


def _root(group: dict[int, int], nid: int) -> int:
    """The representative of ``nid``'s group in the union-find ``group`` (paths halved)."""
    while group[nid] != nid:
        group[nid] = group[group[nid]]
        nid = group[nid]
    return nid


def channels_last_nodes(graph: Graph, chosen: dict[int, str]) -> set[int]:
    """The nodes asking for channels-last storage: the connected groups of nodes of
    CHANNELS_LAST_OPS (running the variant named there; joined by the entries between them)
    that hold a depthwise convolution (groups as many as its input channels, 2-D). oneDNN's
    channel-first calls reorder the data to its blocked layout and back each time, which
    costs most on depthwise layers (8 channels at 56x56, batch 16: 1.32 ms forward against
    0.32 channels-last): MobileNet v1 0.25's train step took 0.77x its time with them
    channels-last, ResNet-18 v1's (no depthwise layer) 1.17x (benchmarks/README.md)."""
    ig = graph.indexed
    shapes = graph.attrs["shape"]
    members = {nid for nid, node in enumerate(ig.nodes) if node.op is not None
               and node.op.name in CHANNELS_LAST_OPS.get(chosen.get(nid), ())}
    group = {nid: nid for nid in members}
    anchors = set()
    for nid in members:
        for e in ig.node_inputs[nid]:
            src = ig.entry_node(e)[0]
            if src in members:
                group[_root(group, src)] = _root(group, nid)
        node = ig.nodes[nid]
        data = shapes[ig.node_inputs[nid][0]]
        if (node.op.name == "Convolution" and data is not None and len(data) == 4
                and node.params.num_group > 1 and node.params.num_group == data[1]):
            anchors.add(nid)
    kept = {_root(group, a) for a in anchors}
    depthwise = {nid for nid in members if _root(group, nid) in kept}
    return depthwise | _dense_channels_last(graph, members - depthwise)


def _dense_channels_last(graph: Graph, members: set[int]) -> set[int]:
    """Of ``members`` (nodes of CHANNELS_LAST_OPS outside the depthwise groups): the groups
    of elementwise nodes (not LAYOUT_CONVERTERS; joined by the entries between them) whose
    4-D entries all have at least DENSE_CHANNELS_LAST_MIN_POSITIONS positions per map and
    are written and read by members only, with the converters beside them. A group
    touching any other node (a graph output, a node of another variant) stays channel-
    first, so no elementwise node ever sees two layouts (PyTorch's relu gradient over a
    channels-last and a channel-first array took 9x its time)."""
    ig = graph.indexed
    shapes = graph.attrs["shape"]
    readers = ig.entry_readers()
    outputs = set(ig.outputs)
    inner = {nid for nid in members if ig.nodes[nid].op.name not in LAYOUT_CONVERTERS}
    group = {nid: nid for nid in inner}

    def entries(nid: int) -> list[int]:
        return [*ig.node_inputs[nid], *range(ig.row_ptr[nid], ig.row_ptr[nid + 1])]

    def touching(e: int) -> list[int]:
        return [ig.entry_node(e)[0], *readers[e]]

    def fits(e: int) -> bool:
        shape = shapes[e]
        return (shape is None or len(shape) != 4
                or (shape[2] * shape[3] >= DENSE_CHANNELS_LAST_MIN_POSITIONS
                    and e not in outputs and all(t in members for t in touching(e))))
    for nid in inner:
        for e in entries(nid):
            for other in touching(e):
                if other in inner:
                    group[_root(group, other)] = _root(group, nid)
    rejected = {_root(group, nid) for nid in inner if not all(map(fits, entries(nid)))}
    kept = {nid for nid in inner if _root(group, nid) not in rejected}
    beside = {other for nid in kept for e in entries(nid) for other in touching(e)
              if other in members}
    return kept | beside


def batch_norm_relu_nodes(graph: Graph, chosen: dict[int, str], layout: set[int]) -> set[int]:
    """The BatchNorm nodes (``openmp``, channels-last: the rows loops) whose output only a
    relu (``torch``) reads, not a graph output, with their backward nodes, the relu and its
    backward (whose output only the BatchNorm's backward reads): the four run
    BATCHNORM_RELU, the relu inside the BatchNorm's passes. Only outputs the memory planner
    may run in place (INPLACE_MIN_BYTES and more): the relu's kernels have nothing left
    to do then. The 27 relus of a MobileNet v1 0.25 step (batch 16) took 0.82 ms forward
    and 1.92 ms backward of its 31 ms (benchmarks/README.md)."""
    if not (_native_variant(BATCHNORM_RELU, "BatchNorm")
            and _native_variant(BATCHNORM_RELU, "Activation")):
        return set()
    ig = graph.indexed
    readers = ig.entry_readers()
    outputs = set(ig.outputs)
    backward = {fwd: nid for nid, fwd in ((n, ig.forward_node(n)) for n in range(len(ig.nodes)))
                if fwd is not None}

    def only_reader(e: int) -> int | None:
        return readers[e][0] if len(readers[e]) == 1 and e not in outputs else None
    fused: set[int] = set()
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    for bn, node in enumerate(ig.nodes):
        out = ig.row_ptr[bn]
        if (node.op is None or node.op.name != "BatchNorm" or chosen.get(bn) != OPENMP
                or bn not in layout or node.params.axis % 4 != 1
                or np.dtype(dtypes[out]).itemsize * math.prod(shapes[out])
                < plan_memory.INPLACE_MIN_BYTES):
            continue
        relu = only_reader(out)
        if (relu is None or chosen.get(relu) != NAME or ig.nodes[relu].op.name != "Activation"
                or ig.nodes[relu].params.act_type != "relu"):
            continue
        pair = {bn, relu}
        bn_back, relu_back = backward.get(bn), backward.get(relu)
        if (bn_back is None) != (relu_back is None):
            continue
        if bn_back is not None:
            dx = ig.row_ptr[relu_back]
            if only_reader(dx) != bn_back or ig.node_inputs[bn_back][0] != dx:
                continue
            pair |= {bn_back, relu_back}
        fused |= pair
    return fused


def _marked(graph: Graph, chosen: dict[int, str]) -> Graph:
    """A copy of ``graph`` whose ``chosen`` nodes carry the kernel attribute naming their
    variant (BATCHNORM_RELU for :func:`batch_norm_relu_nodes`, their choice kept for a
    watched executor), the Winograd ones PyTorch's batched product too, and the nodes of
    :func:`channels_last_nodes` the layout attribute (``Graph.with_node_attrs``)."""
    layout = channels_last_nodes(graph, chosen)
    fused = batch_norm_relu_nodes(graph, chosen, layout)
    updates: dict[int, dict] = {}
    for nid in set(chosen) | layout:
        attrs = updates[nid] = {}
        if nid in chosen:
            attrs[KERNEL_ATTR] = chosen[nid]
            if chosen[nid] == WINOGRAD:
                attrs[PRODUCT_ATTR] = NAME
        if nid in fused:  # a monitor sees each node's own outputs: the plain choice then
            attrs.update({KERNEL_ATTR: BATCHNORM_RELU, MONITORED_KERNEL_ATTR: chosen[nid]})
        if nid in layout:
            attrs[LAYOUT_ATTR] = CHANNELS_LAST
    return graph.with_node_attrs(updates)
