"""Batch assembly shared by the iterators MXNet implements in C++ (``CSVIter``,
``MNISTIter``, ``ImageRecordIter``): its BatchLoader's rules, reproduced from MXNet 1.9.1's
observed behaviour.

- ``round_batch=True`` (default): an incomplete last batch is completed with examples from
  the start (``pad`` counts them) and the next epoch starts after those examples;
- ``round_batch=False``: the last batch keeps the previous batch's values in its unused slots
  (``pad`` counts them); the next epoch starts at the first example.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from graphexec.core.ir.ndarray import user_array

from .base import DataBatch, DataDesc, DataError, DataIter

__all__ = ["BatchPlan", "BufferedBatchIter", "rows_filler"]


class BatchPlan:
    """Example indices of each batch of an epoch over ``num`` examples."""

    def __init__(self, num: int, batch_size: int, round_batch: bool):
        if num < 1:
            raise DataError("the iterator has no examples")
        self.num, self.batch_size, self.round_batch = num, batch_size, round_batch
        self.start = 0

    def epoch(self, order: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, int]]:
        """(indices, pad) per batch; ``order`` permutes the examples (shuffle)."""
        n, b = self.num, self.batch_size
        pos, self.start = self.start, 0
        while pos < n:
            take = np.arange(pos, min(pos + b, n))
            pos += len(take)
            pad = b - len(take)
            if pad and self.round_batch:
                take = np.concatenate([take, np.arange(pad) % n])
                self.start = pad % n
            yield (take if order is None else order[take]), pad


class BufferedBatchIter(DataIter):
    """A DataIter filling one data and one label buffer per batch from examples chosen by a
    :class:`BatchPlan`: ``fill(indices, data, label)`` writes the first ``len(indices)`` rows
    of the buffers."""

    def __init__(self, fill: Callable[[np.ndarray, np.ndarray, np.ndarray], None], num: int, batch_size: int, data_shape: tuple, label_shape: tuple,
                 round_batch: bool, dtype: Any = np.float32, label_dtype: Any = np.float32,
                 shuffle: bool = False, seed: int = 0, data_name: str = "data",
                 label_name: str = "softmax_label"):
        super().__init__(int(batch_size))
        self._fill = fill
        if self.batch_size < 1:
            raise DataError(f"batch_size must be positive, got {batch_size}")
        self._plan = BatchPlan(num, self.batch_size, round_batch)
        self._data = np.zeros((self.batch_size,) + tuple(data_shape), dtype)
        self._label = np.zeros((self.batch_size,) + tuple(label_shape), label_dtype)
        self._shuffle, self._rng = shuffle, np.random.default_rng(seed)
        self.provide_data = [DataDesc(data_name, self._data.shape, self._data.dtype)]
        self.provide_label = [DataDesc(label_name, self._label.shape, self._label.dtype)]
        self._batches: Iterator | None = None
        self.reset()

    def reset(self) -> None:
        order = self._rng.permutation(self._plan.num) if self._shuffle else None
        self._batches = self._plan.epoch(order)

    def next(self) -> DataBatch:
        indices, pad = next(self._batches)
        self._fill(indices, self._data, self._label)
        # fresh arrays per batch: a batch stays valid while the next one is read (prefetch)
        return DataBatch([user_array(self._data.copy())], [user_array(self._label.copy())],
                         pad=pad, index=indices)


def rows_filler(data: np.ndarray, label: np.ndarray) -> Callable:
    """A ``fill`` copying rows of in-memory ``data`` and ``label`` tables."""
    def fill(indices: np.ndarray, out_data: np.ndarray, out_label: np.ndarray) -> None:
        out_data[:len(indices)] = data[indices]
        out_label[:len(indices)] = label[indices]
    return fill
