"""graphexec-countingbackend: a third-party subgraph backend that runs its regions with the
native kernels and counts every run. The plugin itself lives in :mod:`gx_counting.plugin`
(entry point ``counting`` in the group ``graphexec.plugins``); this module holds its state.

>>> import gx_counting
>>> gx_counting.reset()
>>> # ... bind with MXNET_SUBGRAPH_BACKEND=counting, forward ...
>>> sum(gx_counting.RUNS.values()), gx_counting.LAST_PLAN.regions
"""
from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["RUNS", "LAST_PLAN", "reset"]

#: region node name -> how many times its runner ran (one per forward)
RUNS: Counter[str] = Counter()
#: the last PartitionPlan that graphexec announced (any backend), or None
LAST_PLAN: Any = None


def reset() -> None:
    """Forget the counted runs and the last plan."""
    global LAST_PLAN
    RUNS.clear()
    LAST_PLAN = None
