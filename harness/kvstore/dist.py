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

Before the collectives of an ``init`` or ``push``, the workers exchange what they are about to
send (keys, shapes, dtypes) and any error their own checks found; when they disagree
(different scripts, shapes or call orders per rank) or one of them failed, every worker raises
the same :class:`KVStoreError` naming each rank's call, instead of exchanging mismatched
buffers or leaving the others waiting.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from graphexec.core.ir.ndarray import user_array

from .base import KVStore, KVStoreError, key_value_pairs

__all__ = ["DistKVStore", "DIST_TYPES", "mpi_world"]

DIST_TYPES = ("dist_sync", "dist_sync_device", "dist_async", "dist_device_sync", "dist")


def mpi_world() -> Any:
    """mpi4py's MPI module, or a clear error when it is not installed."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise KVStoreError(f"distributed kvstores run on MPI and need mpi4py ({exc}): pip "
                           f"install graphexec[dist], then launch the script with "
                           f"'mpiexec -n <workers> python train.py'") from None
    return MPI


class DistKVStore(KVStore):
    """A store shared by the processes of an MPI job (see the module docstring)."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self._mpi = mpi_world()
        self._comm = self._mpi.COMM_WORLD
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

    def init(self, key: Any, value: Any) -> None:
        for k, arrays in self._agreed("init", key, value, initialised=False):
            arr = np.array(arrays[0], subok=False, order="C")
            self._comm.Bcast(arr, root=0)
            self._key_kind = str if isinstance(k, str) else int
            self._store[k] = user_array(arr)

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Sum each key's values over devices and workers (all the keys of one call
        exchanged at once: one check, then one collective per key, all in flight together),
        then update or store them."""
        pairs = self._agreed("push", key, value, initialised=True)
        buffers, requests = [], []
        for k, arrays in pairs:
            buffer, request = self._start(k, np.ascontiguousarray(self._reduce(k, arrays)))
            buffers.append(buffer)
            requests.append(request)
        self._mpi.Request.Waitall(requests)
        for (k, _), buffer in zip(pairs, buffers):
            self._apply(k, buffer)

    def _agreed(self, op: str, key: Any, value: Any, initialised: bool) -> list:
        """The (key, arrays) pairs of a call, once every worker has checked its own and all
        agree on what they are about to exchange; otherwise every worker raises the same
        error (a worker raising alone would leave the others waiting in a collective)."""
        error, pairs = None, []
        try:
            pairs = key_value_pairs(key, value, op)
            for k, arrays in pairs:
                self._check_key(k, op, initialised=initialised)
                if op == "init" and k in self._store:
                    raise KVStoreError(f"init: key {k!r} is already initialized")
                if op == "push":
                    self._check_shapes(k, arrays)
        except KVStoreError as exc:
            error = str(exc)
        summary = (error, [(repr(k), tuple(a[0].shape), str(a[0].dtype)) for k, a in pairs])
        everyone = self._comm.allgather(summary)
        if all(s == everyone[0] for s in everyone) and error is None:
            return pairs
        lines = [f"rank {r}: " + (e or "; ".join(f"{op} key {k} shape {sh} dtype {dt}"
                                                for k, sh, dt in d))
                 for r, (e, d) in enumerate(everyone)]
        raise KVStoreError(f"{self.type}: the workers disagree at {op} (rank {self.rank} of "
                           f"{self.num_workers}); every rank must run the same script with the "
                           f"same shapes and key order:\n  " + "\n  ".join(lines))

    def _start(self, key: Any, local: np.ndarray) -> tuple[np.ndarray, Any]:
        """Start the non-blocking collective of one key: the sum over workers into the key's
        receive buffer, or (dist_async) every worker's sum gathered."""
        shape = ((self.num_workers,) + local.shape if self.type == "dist_async"
                 else local.shape)
        buffer = self._received.get(key)
        if buffer is None or buffer.shape != shape or buffer.dtype != local.dtype:
            buffer = self._received[key] = np.empty(shape, local.dtype)
        if self.type == "dist_async":
            return buffer, self._comm.Iallgather(local, buffer)
        return buffer, self._comm.Iallreduce(local, buffer)

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
