"""Distributed stores on MPI (mpi4py): ``dist_sync``, ``dist_sync_device``, ``dist_async``.

Launch one process per worker with ``mpiexec -n N python train.py`` (``-f hostfile`` or
``-hosts a,b`` across machines); ``pip install graphexec[dist]`` brings mpi4py and MPICH's
``mpiexec``. Every worker keeps the full store; there are no servers:

- ``init`` broadcasts worker 0's value (as MXNet's store keeps the first worker's);
- ``push`` sums over the worker's devices, then over the workers with an ``Allreduce`` from
  the summed buffer into the key's receive buffer (no other copy), then runs the optimizer
  on every worker — the same arithmetic on the same sums, so the workers' weights stay
  identical, as with MXNet's server-side update;
- ``dist_async`` gathers every worker's sum and applies them one after another in rank
  order (MXNet's servers apply pushes in arrival order): deterministic, but workers still
  meet at every push, so it does not hide stragglers.

Before each collective the workers compare what they are about to exchange (operation, key,
shape, dtype); when they disagree (different scripts, shapes or call orders per rank)
every worker raises the same :class:`KVStoreError` naming the ranks and what each sent,
instead of exchanging mismatched buffers.
"""
from __future__ import annotations

import os
import zlib
from typing import Any

import numpy as np

from graphexec.core.ir.ndarray import user_array

from .base import KVStore, KVStoreError

__all__ = ["DistKVStore", "DIST_TYPES", "mpi_world"]

DIST_TYPES = ("dist_sync", "dist_sync_device", "dist_async", "dist_device_sync", "dist")
_OPS = {"init": 1, "push": 2}
_HEADER = 12  # op, key hash, dtype, ndim, up to 8 dims


def mpi_world() -> Any:
    """MPI's world communicator (mpi4py), or a clear error when it is not installed."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise KVStoreError(f"distributed kvstores run on MPI and need mpi4py ({exc}): pip "
                           f"install graphexec[dist], then launch the script with "
                           f"'mpiexec -n <workers> python train.py'") from None
    return MPI.COMM_WORLD


class DistKVStore(KVStore):
    """A store shared by the processes of an MPI job (see the module docstring)."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self._comm = mpi_world()
        self._received: dict[Any, np.ndarray] = {}
        expected = os.environ.get("DMLC_NUM_WORKER")
        if expected is not None and int(expected) != self._comm.Get_size():
            raise KVStoreError(f"DMLC_NUM_WORKER={expected} but the MPI job has "
                               f"{self._comm.Get_size()} processes: launch with "
                               f"'mpiexec -n {expected} ...'")

    @property
    def rank(self) -> int:
        return self._comm.Get_rank()

    @property
    def num_workers(self) -> int:
        return self._comm.Get_size()

    def _agree(self, op: str, key: Any, arr: np.ndarray) -> None:
        """Raise on every worker when the workers are not about to exchange the same thing."""
        if arr.ndim > _HEADER - 4:
            raise KVStoreError(f"{op}: key {key!r} has {arr.ndim} dimensions; at most "
                               f"{_HEADER - 4} are supported")
        mine = np.zeros(_HEADER, np.int64)
        mine[:4] = (_OPS[op], _key_hash(key), arr.dtype.num, arr.ndim)
        mine[4:4 + arr.ndim] = arr.shape
        every = np.empty((self.num_workers, _HEADER), np.int64)
        self._comm.Allgather(mine, every)
        if (every == every[0]).all():
            return
        keys = self._comm.allgather(repr(key))  # every rank is here: safe to exchange more
        lines = [f"rank {r}: {_describe(row, k)}" for r, (row, k) in enumerate(zip(every, keys))]
        raise KVStoreError(f"{self.type}: the workers disagree at {op} of key {key!r} (rank "
                           f"{self.rank} of {self.num_workers}); every rank must run the same "
                           f"script with the same shapes and key order:\n  "
                           + "\n  ".join(lines))

    def _initial(self, key: Any, value: np.ndarray) -> np.ndarray:
        arr = np.array(value, subok=False, order="C")
        self._agree("init", key, arr)
        self._comm.Bcast(arr, root=0)
        return user_array(arr)

    def _reduce(self, key: Any, arrays: list) -> np.ndarray:
        local = np.ascontiguousarray(super()._reduce(key, arrays))
        self._agree("push", key, local)
        if self.type == "dist_async":
            gathered = np.empty((self.num_workers,) + local.shape, local.dtype)
            self._comm.Allgather(local, gathered)
            return gathered
        received = self._received.get(key)
        if received is None or received.shape != local.shape or received.dtype != local.dtype:
            received = self._received[key] = np.empty_like(local)
        self._comm.Allreduce(local, received)
        return received

    def _apply(self, key: Any, merged: np.ndarray) -> None:
        if self.type != "dist_async":
            super()._apply(key, merged)
            return
        for worker_sum in merged:  # the pushes of every worker, in rank order
            super()._apply(key, worker_sum)

    def barrier(self) -> None:
        """Wait until every worker reaches this point."""
        self._comm.Barrier()

    _barrier = barrier


def _key_hash(key: Any) -> int:
    if isinstance(key, str):
        return zlib.crc32(key.encode()) | 1 << 40  # str and int keys never collide
    return int(key)


def _describe(row: np.ndarray, key: str) -> str:
    op = {v: k for k, v in _OPS.items()}.get(int(row[0]), "?")
    shape = tuple(int(d) for d in row[4:4 + int(row[3])])
    return f"{op} key {key} shape {shape} dtype {_dtype_name(int(row[2]))}"


def _dtype_name(num: int) -> str:
    for name in ("float32", "float64", "float16", "int32", "int64", "uint8", "int8", "bool"):
        if np.dtype(name).num == num:
            return name
    return f"#{num}"
