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
``cost_model`` (default True; False claims every supported region).
"""
from __future__ import annotations

import logging
import warnings

import numpy as np

from graphexec.core.context import Context
from graphexec.core.errors import GraphexecError
from graphexec.core.subgraph import (ReasonSelector, RegionCall, SubgraphBackend, SubgraphProperty,
                                     SubgraphSelector)
from graphexec.core.subgraph.select import verbosity

from .ops import FORWARD

__all__ = ["FusedSelector", "FusedProperty", "make_backend", "OPTIONS", "numba_problem"]

log = logging.getLogger("graphexec.fused")

#: the property's own options, with their defaults
OPTIONS = {"cost_model": True}
_FLOATS = frozenset(np.dtype(t) for t in ("float16", "float32", "float64"))
_NUMBA: list = []  # memo: [None] when numba imports, [reason] when it does not


def numba_problem() -> str | None:
    """None when numba can be imported, else why not (in words a user can act on)."""
    if not _NUMBA:
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
    """Claims supported elementwise nodes whose output has the region's shape."""

    def __init__(self, shapes, exclude: set[str], cost_model: bool, min_size: int = 2):
        super().__init__()
        self._shapes = shapes
        self._exclude = {_canonical(name) for name in exclude}
        self._cost_model = cost_model
        self._min_size = min_size
        self._out: dict[int, tuple] = {}
        self._domain: tuple | None = None

    def reason(self, node) -> str | None:
        problem = numba_problem()
        if problem:
            return problem
        name = node.op.name
        if name in self._exclude:
            return "excluded by the exclude_ops option"
        lowering = FORWARD.get(name)
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
        bad = sorted({str(d) for d in self._shapes.dtypes(node)
                      if d is None or np.dtype(d) not in _FLOATS})
        if bad:
            return f"dtype {', '.join(bad)} (fused kernels compute float16/32/64 only)"
        self._out[id(node)] = tuple(shapes[1] if name == "where" else
                                    np.broadcast_shapes(*map(tuple, shapes)))
        return None

    def _joins(self, node) -> bool:
        return self.why_not(node) is None and self._out[id(node)] == self._domain

    def select(self, node) -> bool:
        if self.why_not(node) is not None:
            return False
        self._domain = self._out[id(node)]
        return True

    def select_input(self, node, input_node) -> bool:
        return self._joins(input_node)

    def select_output(self, node, output_node) -> bool:
        return self._joins(output_node)

    def filter(self, candidates: list) -> list:
        if not self._cost_model or len(candidates) < self._min_size:
            return candidates  # too small a region is the partitioner's to report
        from .cost import profitable
        import numba
        dtype = max((np.dtype(d) for n in candidates for d in self._shapes.dtypes(n)),
                    key=lambda d: d.itemsize)
        ok, words = profitable(candidates, self._domain, dtype, _cost_class,
                               numba.get_num_threads())
        if not ok:
            self.filter_reason = f"cost model: {words}"
            if verbosity() > 1:
                log.info("fused: region of %d nodes from %s not claimed: %s", len(candidates),
                         candidates[0].name, words)
        return candidates if ok else []

    def reset(self) -> None:
        self._domain = None


def _canonical(name: str) -> str:
    """An op's canonical name for an alias (``_plus`` -> ``elemwise_add``); other names as
    given."""
    from graphexec.core.ops.registry import find_op
    op = find_op(name)
    return op.name if op is not None else name


def _cost_class(node) -> str:
    return FORWARD[node.op.name].cost_of(node.params)


class FusedProperty(SubgraphProperty):
    """Regions of elementwise nodes, each run as one generated kernel; supports training
    (the backward region, the region's gradient, runs as a generated kernel too)."""

    name = "fused"
    needs_shapes = True
    default_attrs = {"min_size": 2, **OPTIONS}

    def set_options(self, **options) -> None:
        super().set_options(**options)
        size = self.attrs["min_size"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise GraphexecError(f"fused option min_size={size!r}: expected an integer >= 1")
        if not isinstance(self.attrs["cost_model"], bool):
            raise GraphexecError(f"fused option cost_model={self.attrs['cost_model']!r}: "
                                 f"expected True or False")

    def create_selector(self) -> SubgraphSelector:
        return FusedSelector(self.shapes, set(self.attrs["exclude_ops"]),
                             self.attrs["cost_model"], self.attrs["min_size"])

    def create_runner(self, region: RegionCall):
        from .runner import fused_runner
        return fused_runner(region)


def make_backend() -> SubgraphBackend:
    """The backend; CPU only for now (MXNet's ``context`` attribute: on a gpu context it is
    not activated, and the plan's ``skipped`` says so)."""
    return SubgraphBackend("fused", [FusedProperty()], attrs={"context": Context("cpu", 0)},
                           options=("min_size", "exclude_ops", *OPTIONS))
