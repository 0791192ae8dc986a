"""The subgraph API, what backend authors build on: selectors, properties, backends, the
partitioner and its plan. This package is the import path third-party backends use
(``from graphexec.core.subgraph import SubgraphProperty, native_runner, ...``).

Layer: above the passes (a region's shapes and gradient come from its inner graph), below the
runtime, which runs the regions (``core/runtime/regions.py``) and provides
:func:`native_runner`."""
from .api import (OpNameSelector, PartitionRequest, ReasonSelector, RegionCall, SubgraphBackend,
                  SubgraphProperty, SubgraphSelector, VetoSelector, get_backend, list_backends,
                  native_runner, register_backend, set_op_names)
from .frontend import partition, validate_partition  # also installs Symbol.optimize_for
from .plan import PartitionPlan

__all__ = ["SubgraphSelector", "ReasonSelector", "OpNameSelector", "VetoSelector",
           "SubgraphProperty", "SubgraphBackend", "PartitionRequest", "RegionCall",
           "PartitionPlan", "register_backend", "get_backend", "list_backends", "set_op_names",
           "native_runner", "partition", "validate_partition"]
