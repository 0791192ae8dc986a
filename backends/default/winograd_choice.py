"""The default backend's choice of Winograd's F(2x2, 3x3) for graphs no strategy partitions
(``NONE``): 3x3 convolutions of stride 1 with enough channels and output tiles run the
native ``winograd`` kernel variant (``kernels/winograd.py``: the transforms compiled by
numba on the calling thread, the 16 products numpy's) instead of im2col and one product:
2.25x fewer multiplications, and one batched product where the plain kernel runs an image
per thread. At batch 1, against the plain kernel (benchmarks/README.md): 0.64-0.88x a layer
from 196 output tiles up (28x28 maps), 1.15-2.1x below 64 tiles (14x14 and 7x7 maps of
256-512 channels, where transforming the filters at each call outweighs the products);
with several images 0.36-0.8x down to 32 tiles; 3 input channels 2.6x. VGG-11 at batch 1
took 0.86x its time. ``GRAPHEXEC_NATIVE_WINOGRAD=0`` (read at every bind) turns the choice
off.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

from graphexec.core.ir.graph import Graph
from graphexec.core.ops.conv import winograd_tiles
from graphexec.core.passes.assign_context import host_nodes
from graphexec.core.runtime.kernels import KERNEL_ATTR

from .kernels.winograd import WINOGRAD

__all__ = ["winograd_choice_pass", "winograd_nodes"]

#: the fewest input channels and filters (a network's first layer, 3 channels at 224x224:
#: 2.6x the plain kernel's time; 16 channels at 112x112 0.75x)
NATIVE_WINOGRAD_MIN_CHANNELS = 16
#: one image: the fewest output tiles (2x2 each) times the fewer of channels and filters.
#: The filters' transform at each call costs most where the maps are small and the
#: channels few: 196 tiles (28x28) of 256-512 channels 0.78-0.82x, of 128 channels 0.98x
#: (ResNet-18's second stage: the model 1.01-1.03x with it), 49 tiles (14x14) of 256-512
#: channels 1.15-1.2x, 784 tiles (56x56) of 64 channels (ResNet-18's first stage) 0.88x;
#: 100 tiles of 256 channels 0.97x, of 128 1.08x
NATIVE_WINOGRAD_MIN_TILE_CHANNELS = 196 * 256
#: several images: the fewest output tiles (two images of 512 channels at 7x7, 32 tiles:
#: 0.80x; the plain kernel runs one image per thread with BLAS on one thread each)
NATIVE_WINOGRAD_MIN_BATCH_TILES = 32


def winograd_nodes(graph: Graph) -> set[int]:
    """The Convolution nodes that run the variant, and the backward node of each: 2-D
    channel-first 3x3 convolutions of stride 1 (``winograd_tiles``) on the host, float32 or
    float64 data, weight and output alike, with NATIVE_WINOGRAD_MIN_CHANNELS input channels
    and filters and enough output tiles (and channels, for one image), given no kernel
    variant by another pass; none without numba (the variant's transforms are compiled
    loops)."""
    if importlib.util.find_spec("numba") is None:
        return set()
    ig = graph.indexed
    shapes, dtypes = graph.attrs["shape"], graph.attrs["dtype"]
    host = host_nodes(graph)  # the variant is a host kernel
    chosen: set[int] = set()
    for nid, node in enumerate(ig.nodes):
        if node.op is None or KERNEL_ATTR in node.attrs or not host[nid]:
            continue
        if node.op.name == "_backward_Convolution":
            if ig.forward_node(nid) in chosen:
                chosen.add(nid)
            continue
        if node.op.name != "Convolution":
            continue
        data, weight = ig.node_inputs[nid][:2]
        types = {np.dtype(dtypes[e]) for e in (data, weight, ig.row_ptr[nid])}
        if len(types) != 1 or types.pop() not in (np.float32, np.float64):
            continue
        if shapes[data] is None or shapes[weight] is None:
            continue
        if _wins(node.params, tuple(shapes[data]), tuple(shapes[weight])):
            chosen.add(nid)
    return chosen


def _wins(p, data: tuple, weight: tuple) -> bool:
    tiles = winograd_tiles(p, data)
    if tiles is None or min(data[1], weight[0]) < NATIVE_WINOGRAD_MIN_CHANNELS:
        return False
    count = data[0] * tiles.th * tiles.tw
    if data[0] > 1:
        return count >= NATIVE_WINOGRAD_MIN_BATCH_TILES
    return count * min(data[1], weight[0]) >= NATIVE_WINOGRAD_MIN_TILE_CHANNELS


def winograd_choice_pass(graph: Graph) -> Graph:
    """The ``after_gradient`` pass: :func:`winograd_nodes` marked to run the ``winograd``
    variant when no strategy partitioned the graph (``graph`` itself otherwise: a strategy
    chooses its own kernels) and GRAPHEXEC_NATIVE_WINOGRAD is not 0."""
    if (graph.attrs.get("partition_plan") is not None
            or os.environ.get("GRAPHEXEC_NATIVE_WINOGRAD", "1") == "0"):
        return graph
    chosen = winograd_nodes(graph)
    if not chosen:
        return graph
    return graph.with_node_attrs({nid: {KERNEL_ATTR: WINOGRAD} for nid in chosen})
