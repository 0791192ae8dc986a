"""The ``default`` subgraph backend (MXNet's test backend): claims the operators named in its
op-name set (``gx.subgraph.set_op_names('default', {...})`` or the ``op_names`` option) and
runs each region as a nested native plan, with gradients."""
from __future__ import annotations

from graphexec.core.subgraph import RegionCall, SubgraphBackend, SubgraphProperty, native_runner

__all__ = ["DefaultProperty", "make_backend", "make_backend_v2"]


class DefaultProperty(SubgraphProperty):
    """Op-name-set selection; regions run natively and support training."""

    name = "default"

    def create_runner(self, region: RegionCall):
        return native_runner(region)


def make_backend() -> SubgraphBackend:
    return SubgraphBackend("default", [DefaultProperty()], options=("op_names", "min_size",
                                                                    "exclude_ops"))


class DefaultV2Property(DefaultProperty):
    """MXNet's ``default_v2`` test backend: the same op-name-set selection through MXNet's
    second selector API, with its own op-name set (``set_op_names('default_v2', ...)``)."""

    name = "default_v2"


def make_backend_v2() -> SubgraphBackend:
    return SubgraphBackend("default_v2", [DefaultV2Property()],
                           options=("op_names", "min_size", "exclude_ops"))
