"""How modules update parameters, as MXNet 1.9.1's ``mx.model`` helpers: which KVStore to
use, whether the optimizer runs inside it, and the per-step update through it or through a
local updater."""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from .. import kvstore as kvs
from .. import optimizer as opt
from .errors import ModuleError

__all__ = ["create_kvstore", "initialize_kvstore", "make_optimizer", "update_params_on_kvstore",
           "update_params"]

#: MXNet keeps the optimizer out of a local store whose largest parameter exceeds this
_LOCAL_UPDATE_LIMIT = 1024 * 1024 * 16


def create_kvstore(kvstore: Any, num_device: int, arg_params: dict
                   ) -> tuple[kvs.KVStore | None, bool]:
    """(store or None, update_on_kvstore): no store for one device in one process; the
    optimizer runs in the store unless MXNET_UPDATE_ON_KVSTORE=0 (or, for 'local', a
    parameter is larger than 16M elements)."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStore):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params and max(
                    int(np.prod(p.shape)) for p in arg_params.values()) > _LOCAL_UPDATE_LIMIT:
                update_on_kvstore = False
    else:
        raise ModuleError(f"kvstore must be KVStore, str or None, got {type(kvstore).__name__}")
    if kv is None:
        return None, False
    return kv, update_on_kvstore and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)


def make_optimizer(optimizer: Any, optimizer_params: Any, rescale_grad: float, symbol: Any,
                   param_names: list[str], num_contexts: int, update_on_kvstore: bool
                   ) -> opt.Optimizer:
    """The module's optimizer: created from a name (``rescale_grad`` by default 1 / (batch size
    x workers), parameter names by index: one index per parameter in a store, one per
    parameter and device otherwise), or an Optimizer given as is (with a warning when its
    ``rescale_grad`` differs)."""
    if update_on_kvstore:
        idx2name = dict(enumerate(param_names))
    else:
        idx2name = {i * num_contexts + k: name for k in range(num_contexts)
                    for i, name in enumerate(param_names)}
    if isinstance(optimizer, str):
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", rescale_grad)
        return opt.create(optimizer, sym=symbol, param_idx2name=idx2name, **params)
    if not isinstance(optimizer, opt.Optimizer):
        raise ModuleError(f"optimizer must be a name or an Optimizer, got "
                          f"{type(optimizer).__name__}")
    if optimizer.rescale_grad != rescale_grad:
        warnings.warn(f"Optimizer created manually outside Module but rescale_grad is not "
                      f"normalized to 1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. "
                      f"{rescale_grad}). Is this intended?", stacklevel=4)
    if not optimizer.idx2name:
        optimizer.idx2name = idx2name.copy()
    return optimizer


def initialize_kvstore(kvstore: kvs.KVStore, param_arrays: list, arg_params: dict,
                       param_names: list[str], update_on_kvstore: bool) -> None:
    """Put every parameter into the store (and, when it updates them, its value into every
    device's copy, so all workers start from worker 0's values)."""
    for name, on_devices in zip(param_names, param_arrays):
        if update_on_kvstore:
            kvstore.broadcast(name, arg_params[name], out=on_devices)
        else:
            kvstore.init(name, arg_params[name])


def _with_gradients(param_arrays: list, grad_arrays: list, param_names: list) -> list:
    return [(name, weights, grads) for name, weights, grads
            in zip(param_names, param_arrays, grad_arrays) if grads[0] is not None]


def update_params_on_kvstore(param_arrays: list, grad_arrays: list, kvstore: kvs.KVStore,
                             param_names: list[str]) -> None:
    """Push every gradient (summed over devices) and pull the updated weights back: one
    ``pushpull`` for all parameters, so a distributed store exchanges them together."""
    todo = _with_gradients(param_arrays, grad_arrays, param_names)
    if todo:
        names, weights, grads = (list(x) for x in zip(*todo))
        kvstore.pushpull(names, grads, out=weights)


def update_params(param_arrays: list, grad_arrays: list, updater: Any, num_device: int,
                  kvstore: kvs.KVStore | None = None, param_names: list | None = None) -> None:
    """Sum the gradients over devices through ``kvstore`` (when given; one ``pushpull``
    for all), then update each device's weights with ``updater`` (index
    ``i * num_device + device``)."""
    if kvstore:
        todo = _with_gradients(param_arrays, grad_arrays, param_names)
        if todo:
            names, _, grads = (list(x) for x in zip(*todo))
            kvstore.pushpull(names, grads)
    updates: list[list] = [[] for _ in range(num_device)]
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        for k, (w, g) in enumerate(zip(weights, grads)):
            updates[k].append((index * num_device + k, g, w))
    for device_updates in updates:
        if device_updates:
            indices, grads, weights = zip(*device_updates)
            updater(list(indices), list(grads), list(weights))
