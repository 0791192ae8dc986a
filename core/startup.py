"""The top of the core: load every plugin and fill the registries the layers below define.

``import graphexec`` calls :func:`load_plugins` last, so the registries are complete before
any user code runs, and never half-filled: the whole loading happens under Python's import
lock and a lock of its own, and the manager is published (:func:`~.plugins.install`) only
once every hook has run. The order matters: operators first (kernels and backends name
them), then graph passes, kernels and subgraph backends.

It also connects the core's own pieces across layers: the region operator ``_subgraph_op``
(declared by the subgraph layer) gets its kernel from the runtime, which also provides the
subgraph API's ``native_runner``.
"""
from __future__ import annotations

import threading

from .ops.registry import register_op
from .passes.manager import register_pass
from .plugins import Plugins, install, plugin_config
from .runtime.control_flow import CONTROL_FLOW_KERNELS
from .runtime.kernels import kernel_registry
from .runtime.regions import native_region_runner, region_kernel
from .subgraph.api import register_backend, set_native_runner
from .subgraph.control_flow import CONTROL_FLOW_OPS
from .subgraph.region import REGION_OP

__all__ = ["load_plugins"]

_LOCK = threading.Lock()
_LOADED: Plugins | None = None


def load_plugins() -> Plugins:
    """Load the plugins and fill every registry, once per process; returns the manager."""
    global _LOADED
    with _LOCK:
        if _LOADED is None:
            register_op(REGION_OP)
            kernel_registry().register("_subgraph_op", region_kernel, device="any")
            set_native_runner(native_region_runner)
            for op in CONTROL_FLOW_OPS:  # nested graphs: declared and run by the core
                register_op(op)
                kernel_registry().register(op.name, CONTROL_FLOW_KERNELS[op.name], device="any")
            plugins = Plugins(plugin_config())
            plugins.load()
            plugins.call_each("graphexec_register_ops", register=register_op)
            plugins.call_each("graphexec_register_passes", register=register_pass)
            plugins.register_kernels(kernel_registry())
            plugins.call_each("graphexec_register_subgraph_backends", register=register_backend)
            install(plugins)
            _LOADED = plugins
    return _LOADED
