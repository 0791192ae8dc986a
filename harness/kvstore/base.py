"""The KVStore interface of ``mx.kv`` and the in-process stores ``local`` and ``device``.

A store keeps one array per key (an int or a str). ``push`` sums the values given for a key
(one per device), then either hands the sum to the updater with the stored array (after
``set_optimizer``) or replaces the stored array by it; ``pull`` copies the stored array into
every output array. The distributed stores (:mod:`.dist`) add a sum across processes.
"""
from __future__ import annotations

import pickle
from typing import Any, Callable

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.ndarray import user_array

from ..optimizer import Optimizer, get_updater

__all__ = ["KVStoreBase", "KVStore", "KVStoreError", "LOCAL_TYPES", "key_value_pairs"]

LOCAL_TYPES = ("local", "device", "local_update_cpu", "local_allreduce_cpu",
               "local_allreduce_device")


class KVStoreError(GraphexecError, ValueError):
    """A KVStore call with unknown or uninitialised keys, or values that do not fit."""


class KVStoreBase:
    """Capabilities a store may have (``is_capable``)."""

    OPTIMIZER = "optimizer"


def key_value_pairs(key: Any, value: Any, what: str) -> list[tuple[Any, list]]:
    """(key, [arrays]) pairs from MXNet's calling forms: one key with an array or a list of
    arrays (one per device), or a list of keys with a list of those."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise KVStoreError(f"{what}: {len(key)} keys need a list of {len(key)} values, got "
                               f"{type(value).__name__}")
        return [pair for k, v in zip(key, value) for pair in key_value_pairs(k, v, what)]
    if not isinstance(key, (int, np.integer, str)):
        raise KVStoreError(f"{what}: keys are ints or strs, got {type(key).__name__}")
    arrays = list(value) if isinstance(value, (list, tuple)) else [value]
    if not arrays or not all(isinstance(a, np.ndarray) for a in arrays):
        raise KVStoreError(f"{what}: key {key!r} needs an array or a list of arrays, got "
                           f"{[type(a).__name__ for a in arrays]}")
    return [(int(key) if isinstance(key, np.integer) else key, arrays)]


class KVStore(KVStoreBase):
    """An in-process store: ``local`` and ``device`` (and MXNet's ``local_*`` variants)
    sum the values pushed from several devices; ``rank`` 0 of 1 worker."""

    def __init__(self, kind: str = "local"):
        self._type = kind
        self._store: dict[Any, np.ndarray] = {}
        self._updater: Callable | None = None
        self._optimizer: Optimizer | None = None
        self._key_kind: type | None = None

    # -- identity ---------------------------------------------------------------------------
    @property
    def type(self) -> str:
        """The store's kind (``'local'``, ``'dist_sync'``, ...)."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's index."""
        return 0

    @property
    def num_workers(self) -> int:
        """How many workers share the store."""
        return 1

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (``KVStoreBase.OPTIMIZER``: yes)."""
        return capability == KVStoreBase.OPTIMIZER

    # -- data -------------------------------------------------------------------------------
    def _check_key(self, key: Any, what: str, initialised: bool = True) -> None:
        kind = str if isinstance(key, str) else int
        if self._key_kind is not None and kind is not self._key_kind:
            raise KVStoreError(f"{what}: key {key!r} is a {kind.__name__} but this store uses "
                               f"{self._key_kind.__name__} keys (they cannot be mixed)")
        if initialised and key not in self._store:
            raise KVStoreError(f"{what}: key {key!r} has not been initialized; call "
                               f"init({key!r}, value) first")

    def init(self, key: Any, value: Any) -> None:
        """Store an initial value for each key (the first array when a list is given)."""
        for k, arrays in key_value_pairs(key, value, "init"):
            self._check_key(k, "init", initialised=False)
            if k in self._store:
                raise KVStoreError(f"init: key {k!r} is already initialized")
            self._key_kind = str if isinstance(k, str) else int
            self._store[k] = self._initial(k, arrays[0])

    def _initial(self, key: Any, value: np.ndarray) -> np.ndarray:
        return user_array(np.array(value, subok=False))

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Sum the values of each key (over devices) into the store, through the updater
        when one is set."""
        for k, arrays in key_value_pairs(key, value, "push"):
            self._check_key(k, "push")
            self._apply(k, self._reduce(k, arrays))

    def _check_shapes(self, key: Any, arrays: list) -> None:
        stored = self._store[key]
        for a in arrays:
            if a.shape != stored.shape:
                raise KVStoreError(f"push: key {key!r} stores shape {stored.shape}, a pushed "
                                   f"value has shape {a.shape}")

    def _reduce(self, key: Any, arrays: list) -> np.ndarray:
        """The sum of the values pushed for ``key`` from this process's devices."""
        self._check_shapes(key, arrays)
        stored = self._store[key]
        if len(arrays) == 1:
            return arrays[0]
        total = np.array(arrays[0], dtype=stored.dtype, subok=False)
        for a in arrays[1:]:
            np.add(total, a, out=total)
        return total

    def _apply(self, key: Any, merged: np.ndarray) -> None:
        stored = self._store[key]
        if self._updater is not None:
            self._updater(key, user_array(merged), stored)
        elif merged is not stored:
            np.copyto(stored, merged, casting="unsafe")

    def pull(self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True
             ) -> None:
        """Copy each key's stored value into its output array(s)."""
        if out is None:
            raise KVStoreError("pull: give the arrays to pull into with out=")
        for k, arrays in key_value_pairs(key, out, "pull"):
            self._check_key(k, "pull")
            stored = self._store[k]
            for a in arrays:
                if a.shape != stored.shape:
                    raise KVStoreError(f"pull: key {k!r} stores shape {stored.shape}, the "
                                       f"output has shape {a.shape}")
                if a is not stored:
                    np.copyto(a, stored, casting="unsafe")

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """``push`` then ``pull`` (into ``value`` itself when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """``init`` with ``value``, then ``pull`` into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key: Any, out: Any = None, priority: int = 0,
                        row_ids: Any = None) -> None:
        """Arrays are dense: the same as ``pull``."""
        self.pull(key, out, priority)

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Gradient compression: only ``{'type': 'none'}`` is supported."""
        if dict(compression_params).get("type", "none") != "none":
            raise KVStoreError(f"gradient compression {compression_params} is not supported by "
                               f"the {self.type!r} store")

    # -- optimizer --------------------------------------------------------------------------
    def set_optimizer(self, optimizer: Optimizer) -> None:
        """Run ``optimizer`` on every push (the store then holds the weights)."""
        if not isinstance(optimizer, Optimizer):
            raise KVStoreError(f"set_optimizer needs an Optimizer, got "
                               f"{type(optimizer).__name__}")
        self._optimizer = optimizer
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater: Callable) -> None:
        self._updater = updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the updater's states (and the optimizer with ``dump_optimizer``)."""
        if self._updater is None:
            raise KVStoreError("Cannot save states for distributed training (no optimizer is "
                               "set on this store)")
        with open(fname, "wb") as f:
            f.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Read states ``save_optimizer_states`` wrote."""
        if self._updater is None:
            raise KVStoreError("Cannot load states for distributed training (no optimizer is "
                               "set on this store)")
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())

    # -- synchronisation --------------------------------------------------------------------
    def barrier(self) -> None:
        """Wait for every worker (nothing to wait for in one process)."""

    _barrier = barrier

    def _send_command_to_servers(self, head: int, body: str) -> None:
        """There are no servers (MPI stores run the optimizer on every worker)."""

    def __getstate__(self) -> dict:
        raise pickle.PicklingError("a KVStore cannot be pickled")
