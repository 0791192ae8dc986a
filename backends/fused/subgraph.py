"""The ``fused`` subgraph property: claims connected regions of elementwise nodes over one
shape (the loop domain) and runs each region as one generated kernel.

A node is claimed when its operator has a lowering (:mod:`.ops`; its gradient's backward ops
have one too, in :mod:`.ops_grad`, so training regions fuse as well), its attributes are
covered, every input and output is float16/32/64 with a known shape, and its output has the
region's shape (inputs of smaller shapes broadcast into it). A region the cost model
(:mod:`.cost`) expects to run slower fused than unfused is not claimed (``cost_model``
option). Without numba nothing is claimed: the partition plan names the reason for every
node and one warning says so.

Options: ``min_size`` (default 2: a single op gains nothing), ``exclude_ops``,
``cost_model`` (default True; False claims every supported region). The same rules, over the
forward+backward graph, serve MXNET_USE_FUSION (:class:`PointwiseFusionProperty`).
"""
from __future__ import annotations

import logging
import os
import warnings

import numpy as np

from graphexec.core.ir.context import Context
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.subgraph import (ReasonSelector, RegionCall, SubgraphBackend, SubgraphProperty,
                                     SubgraphSelector)
from graphexec.core.subgraph.select import verbosity

from .codegen import LOWERINGS, node_domain
from .cost import profitable
from .ops import FORWARD
from .runner import fused_runner

__all__ = ["FusedSelector", "FusedProperty", "PointwiseFusionProperty", "make_backend", "OPTIONS",
           "numba_problem"]

log = logging.getLogger("graphexec.fused")

#: the property's own options, with their defaults
OPTIONS = {"cost_model": True}
#: operators whose native kernels call BLAS (see PointwiseFusionProperty.serial_kernels)
BLAS_OPS = frozenset(("FullyConnected", "Convolution", "Deconvolution", "dot", "batch_dot"))
_FLOATS = frozenset(np.dtype(t) for t in ("float16", "float32", "float64"))
_NUMBA: list = []  # memo: [None] when numba imports, [reason] when it does not


def numba_problem() -> str | None:
    """None when numba can be imported, else why not (in words a user can act on).

    Called before any fused kernel is compiled or run; it makes OpenMP threads sleep rather
    than spin when idle (``OMP_WAIT_POLICY=PASSIVE``, unless the user set it), read when numba
    starts its OpenMP pool: spinning numba threads took the cores from OpenBLAS's and ONNX
    Runtime's own threads, and a training step with ``backend="fused"`` ran 2.8-3.0x slower
    than native on 2 cores, 0.77x with passive waiting; large pure-pointwise kernels are as
    fast either way (benchmarks/README.md)."""
    if not _NUMBA:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import numba  # noqa: F401 - importing it is the check
            _NUMBA.append(None)
        except Exception as exc:  # noqa: BLE001 - an ImportError or a broken installation
            _NUMBA.append(f"numba is not available ({type(exc).__name__}: {exc}); install it "
                          f"with pip install 'graphexec[fused]'")
            warnings.warn(f"the fused subgraph backend claims nothing: {_NUMBA[0]}",
                          RuntimeWarning, stacklevel=3)
    return _NUMBA[0]


class FusedSelector(ReasonSelector):
    """Claims supported elementwise nodes that loop over the region's shape (see
    :func:`~.codegen.node_domain`); ``lowerings`` are the operators it may claim. No member
    reads a value of a smaller shape from another member: such values (gradients summed over
    broadcast axes) are computed by the kernel only as region outputs."""

    def __init__(self, shapes, cost_model: bool, min_size: int = 2, lowerings=FORWARD,
                 count_outputs=None):
        super().__init__()
        self._shapes = shapes
        self._cost_model = cost_model
        self._min_size = min_size
        self._lowerings = lowerings
        self._count_outputs = count_outputs
        # per claimable node: its loop shape, input shapes and widest dtype
        self._seen: dict[int, tuple] = {}
        self._domain: tuple | None = None
        self._members: set[int] = set()
        self._read_small: set[int] = set()  # members' producers read at a smaller shape

    def reason(self, node) -> str | None:
        problem = numba_problem()
        if problem:
            return problem
        name = node.op.name
        lowering = self._lowerings.get(name)
        if lowering is None:
            return f"no fused lowering for {name}"
        unsupported = lowering.supports(node.params)
        if unsupported:
            return unsupported
        if self._shapes is None:
            return "shapes unknown (the fused backend needs the input shapes at bind)"
        shapes = self._shapes.inputs(node)
        if any(s is None for s in shapes):
            return "input shapes unknown"
        dtypes = self._shapes.dtypes(node)
        bad = sorted({str(d) for d in dtypes if d is None or np.dtype(d) not in _FLOATS})
        if bad:
            return f"dtype {', '.join(bad)} (fused kernels compute float16/32/64 only)"
        try:
            domain = node_domain(name, shapes)
        except ValueError:
            return f"input shapes {', '.join(map(str, shapes))} do not broadcast together"
        self._seen[id(node)] = (domain, [tuple(s) for s in shapes],
                                max(map(np.dtype, dtypes), key=lambda d: d.itemsize))
        return None

    def _joins(self, node) -> bool:
        if self.why_not(node) is not None or self._seen[id(node)][0] != self._domain:
            return False
        small = {id(e.node) for e, s in zip(node.inputs, self._seen[id(node)][1])
                 if s != self._domain}
        if id(node) in self._read_small or small & self._members:
            return False
        self._members.add(id(node))
        self._read_small |= small
        return True

    def select(self, node) -> bool:
        if self.why_not(node) is not None:
            return False
        self._domain = self._seen[id(node)][0]
        return self._joins(node)

    def select_input(self, node, input_node) -> bool:
        return self._joins(input_node)

    def select_output(self, node, output_node) -> bool:
        return self._joins(output_node)

    def filter(self, candidates: list) -> list:
        if not self._cost_model or len(candidates) < self._min_size:
            return candidates  # too small a region is the partitioner's to report
        import numba
        dtype = max((self._seen[id(n)][2] for n in candidates), key=lambda d: d.itemsize)
        outputs = self._count_outputs(candidates) if self._count_outputs else None
        ok, words = profitable(candidates, self._domain, dtype, _cost_class,
                               numba.get_num_threads(), outputs)
        if not ok:
            self.filter_reason = f"cost model: {words}"
            if verbosity() > 1:
                log.info("fused: region of %d nodes from %s not claimed: %s", len(candidates),
                         candidates[0].name, words)
        return candidates if ok else []

    def reset(self) -> None:
        self._domain = None
        self._members = set()
        self._read_small = set()


def _cost_class(node) -> str:
    return LOWERINGS[node.op.name].cost_of(node.params)


class FusedProperty(SubgraphProperty):
    """Regions of elementwise nodes, each run as one generated kernel; supports training
    (the backward region, the region's gradient, runs as a generated kernel too)."""

    name = "fused"
    needs_shapes = True
    default_attrs = {"min_size": 2, **OPTIONS}
    #: the operators it claims
    lowerings = FORWARD
    #: ``fn(nodes) -> int``: how many results a region of these nodes stores, for the cost
    #: model (None: those no member reads)
    count_outputs = None

    def set_options(self, **options) -> None:
        super().set_options(**options)
        size = self.attrs["min_size"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise GraphexecError(f"fused option min_size={size!r}: expected an integer >= 1")
        if not isinstance(self.attrs["cost_model"], bool):
            raise GraphexecError(f"fused option cost_model={self.attrs['cost_model']!r}: "
                                 f"expected True or False")

    def create_selector(self) -> SubgraphSelector:
        return FusedSelector(self.shapes, self.attrs["cost_model"], self.attrs["min_size"],
                             self.lowerings, self.count_outputs)

    def create_runner(self, region: RegionCall):
        return fused_runner(region)


class PointwiseFusionProperty(FusedProperty):
    """The same rules over the whole forward+backward graph, for MXNET_USE_FUSION's pass
    (``backends/fused/fuse_pointwise.py``): it also claims the backward operators the gradient
    pass inserted (``_backward_*``, gradient sums, head-gradient identities). ``zeros_like``
    is left out: in a gradient graph it only stands for "no gradient here" and reads nothing.
    Not part of the backend's property list (``MXNET_SUBGRAPH_BACKEND=fused`` partitions the
    forward graph only); its regions become ``_FusedOp`` nodes (:mod:`.fusedop`)."""

    name = "fuse_pointwise"
    lowerings = {k: v for k, v in LOWERINGS.items() if k != "zeros_like"}

    def serial_kernels(self, nodes) -> bool:
        """Whether the kernels of a graph holding ``nodes`` run on one thread: yes when it
        also runs BLAS (OpenBLAS's threads spin for a while after each call, and numba's
        OpenMP threads then wait for a core: on 2 cores a training step of an MLP block took
        3.5x longer with multi-threaded fused kernels, 0.72x the unfused step on one thread)."""
        return any(n.op is not None and n.op.name.removeprefix("_backward_") in BLAS_OPS
                   for n in nodes)


def make_backend() -> SubgraphBackend:
    """The backend; CPU only for now (MXNet's ``context`` attribute: on a gpu context it is
    not activated, and the plan's ``skipped`` says so)."""
    return SubgraphBackend("fused", [FusedProperty()], attrs={"context": Context("cpu", 0)},
                           options=("min_size", "exclude_ops", *OPTIONS))
