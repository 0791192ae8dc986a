"""The subgraph API: selectors, properties, backends, the partitioner and its plan."""
from .api import (OpNameSelector, ReasonSelector, RegionCall, SubgraphBackend, SubgraphProperty,
                  SubgraphSelector, VetoSelector, get_backend, list_backends,
                  register_backend, set_op_names)
from .plan import PartitionPlan
from .runtime import native_runner

__all__ = ["SubgraphSelector", "ReasonSelector", "OpNameSelector", "VetoSelector",
           "SubgraphProperty", "SubgraphBackend", "RegionCall", "PartitionPlan", "register_backend", "get_backend", "list_backends",
           "set_op_names", "native_runner"]
