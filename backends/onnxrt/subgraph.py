"""The ``onnxrt`` subgraph backend: claims maximal regions of nodes that convert to ONNX
(exactly the nodes whose converter declares their attributes and shapes supported, in
float32) and runs each region as an ONNX Runtime session (see :mod:`.session`).

Inference only, as MXNet's TensorRT property: a bind that requests gradients skips it.
Options (``backend_options={"onnxrt": {...}}`` at bind, keywords of ``optimize_for`` and
``gx.partition``): ``min_size``, ``exclude_ops``, ``providers``, ``threads``,
``inter_op_threads``, ``spinning``, ``opt_level``, ``save_models``, ``freeze_params``,
``strict_device``
(see :data:`OPTIONS` and README.md).
"""
from __future__ import annotations

import numpy as np

from graphexec.core.subgraph import (ReasonSelector, RegionCall, SubgraphBackend, SubgraphProperty,
                                     SubgraphSelector)

from .session import check_options, region_runner

__all__ = ["OnnxrtSelector", "OnnxrtProperty", "make_backend", "OPTIONS"]

#: the options of the property, with their defaults
OPTIONS = {
    "providers": None,          # None: CPU on cpu contexts, CUDA then CPU on gpu contexts
    "threads": 0,               # ORT intra-op threads (0: ORT's default, one per core)
    "inter_op_threads": 0,
    "spinning": False,          # ORT's threads spin-wait between runs (ORT's default: True)
    "opt_level": "all",         # "disable" | "basic" | "extended" | "all"
    "save_models": None,        # a folder: every region model is written there
    "freeze_params": True,      # True | False | [names]: parameters baked as initializers
    "strict_device": False,     # True: refuse to run a gpu region on the CPU
}

_FLOAT32 = np.dtype("float32")


class OnnxrtSelector(ReasonSelector):
    """Claims a node when a converter exists, its ``supports(node, input_shapes)`` is True,
    and every input and output is float32 (ONNX Runtime's CPU kernels
    cover float32 for every converted op; other dtypes stay native)."""

    def __init__(self, shapes):
        from .converters import CONVERTERS, NOT_EXPRESSED  # imports onnx: loaded on first use
        super().__init__()
        self._converters = CONVERTERS
        self._not_expressed = NOT_EXPRESSED
        self._shapes = shapes

    def reason(self, node) -> str | None:
        name = node.op.name
        conv = self._converters.get(name)
        if conv is None:
            why = self._not_expressed.get(name)
            return f"no ONNX converter for {name}" + (f": {why}" if why else "")
        shapes = self._shapes.inputs(node) if self._shapes else [None] * len(node.inputs)
        ok = conv.supports(node, shapes)
        if ok is not True:
            return str(ok)
        if self._shapes is None:
            return None
        if any(s is None for s in shapes + self._shapes.outputs(node)):
            # an exported model needs every shape: a node whose shape the graph does not
            # decide here would fail in ONNX Runtime and run natively after all
            return "shapes not inferred at partitioning"
        bad = sorted({"unknown" if d is None else str(d) for d in self._shapes.dtypes(node)
                      if d is None or np.dtype(d) != _FLOAT32})
        if bad:
            return f"dtype {', '.join(bad)} (onnxrt regions run float32 only)"
        return None


class OnnxrtProperty(SubgraphProperty):
    """Regions of convertible nodes, each run by one ONNX Runtime session per shape
    signature."""

    name = "onnxrt"
    needs_shapes = True
    default_attrs = {"inference_only": True, **OPTIONS}

    def set_options(self, **options) -> None:
        super().set_options(**options)
        check_options({k: self.attrs[k] for k in OPTIONS})

    def create_selector(self) -> SubgraphSelector:
        return OnnxrtSelector(self.shapes)

    def create_runner(self, region: RegionCall):
        return region_runner(region, {k: self.attrs[k] for k in OPTIONS})


def make_backend() -> SubgraphBackend:
    return SubgraphBackend("onnxrt", [OnnxrtProperty()],
                           options=("min_size", "exclude_ops", *OPTIONS))
