"""The ``default`` subgraph backend (MXNet's test backend): claims the operators named in its
op-name set (``gx.subgraph.set_op_names('default', {...})`` or the ``op_names`` option) and
runs each region as a nested native plan, with gradients."""
from __future__ import annotations

from graphexec.core.subgraph import RegionCall, SubgraphBackend, SubgraphProperty, native_runner

__all__ = ["DefaultProperty", "make_backend"]


class DefaultProperty(SubgraphProperty):
    """Op-name-set selection; regions run natively and support training."""

    name = "default"

    def create_runner(self, region: RegionCall):
        return native_runner(region)


def make_backend() -> SubgraphBackend:
    return SubgraphBackend("default", [DefaultProperty()], options=("op_names", "min_size",
                                                                    "exclude_ops"))
