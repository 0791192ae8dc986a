"""``gx.kv`` / ``gx.kvstore``: MXNet's KVStore. ``create('local' | 'device')`` aggregates
over the devices of one process; ``create('dist_sync' | 'dist_sync_device' | 'dist_async')``
trains across processes and machines on MPI (:mod:`.dist`; run under ``mpiexec``).

>>> kv = gx.kv.create('local')
>>> kv.init(3, gx.nd.ones((2, 3)))
>>> kv.push(3, [gx.nd.ones((2, 3)), gx.nd.ones((2, 3))])   # summed
>>> out = gx.nd.zeros((2, 3)); kv.pull(3, out=out)          # out is 2.0 everywhere
"""
from __future__ import annotations

from .base import LOCAL_TYPES, KVStore, KVStoreBase, KVStoreError
from .dist import DIST_TYPES, DistKVStore

__all__ = ["create", "KVStore", "KVStoreBase", "KVStoreError", "DistKVStore"]


def create(name: str = "local") -> KVStore:
    """A new store of kind ``name`` (see the module docstring)."""
    if not isinstance(name, str):
        raise KVStoreError(f"kvstore name must be a string, got {type(name).__name__}")
    if name in LOCAL_TYPES:
        return KVStore(name)
    if name in DIST_TYPES:
        return DistKVStore("dist_sync" if name in ("dist", "dist_device_sync") else name)
    raise KVStoreError(f"unknown kvstore type {name!r}; expected one of "
                       f"{', '.join(LOCAL_TYPES + DIST_TYPES)}")
