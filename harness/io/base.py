"""The data-iterator protocol of ``mx.io``: ``DataDesc``, ``DataBatch``, ``DataIter``, and
the wrappers ``ResizeIter`` and ``PrefetchingIter``."""
from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any, Sequence

import numpy as np

from graphexec.core.ir.errors import GraphexecError

__all__ = ["DataDesc", "DataBatch", "DataIter", "ResizeIter", "PrefetchingIter", "DataError"]


class DataError(GraphexecError, ValueError):
    """A data iterator got data it cannot serve (mismatched sizes, bad arguments)."""


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input: a ``(name, shape)`` tuple with ``dtype``
    (float32 by default) and ``layout`` (``'NCHW'``; the position of ``N`` is the batch
    axis) attributes."""

    def __new__(cls, name: str, shape: Sequence[int], dtype: Any = np.float32,
                layout: str = "NCHW") -> "DataDesc":
        desc = super().__new__(cls, name, tuple(shape))
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout: str | None) -> int:
        """The batch axis of ``layout`` (0 when None, -1 when it has no ``N``)."""
        return 0 if layout is None else layout.find("N")

    @staticmethod
    def get_list(shapes: Sequence[tuple], types: Sequence[tuple] | None) -> list["DataDesc"]:
        """DataDescs from ``(name, shape)`` pairs and optional ``(name, dtype)`` pairs."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        type_of = dict(types)
        return [DataDesc(name, shape, type_of[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of ``data`` and ``label`` arrays, the number of padding examples at
    its end (``pad``), example ``index``, ``bucket_key`` and, when they differ from the
    iterator's, ``provide_data`` / ``provide_label``."""

    def __init__(self, data: Sequence[Any] | None, label: Sequence[Any] | None = None,
                 pad: int | None = None, index: Any = None, bucket_key: Any = None,
                 provide_data: list | None = None, provide_label: list | None = None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise DataError(f"DataBatch: data must be a list of arrays, got "
                            f"{type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise DataError(f"DataBatch: label must be a list of arrays, got "
                            f"{type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        labels = [x.shape for x in self.label] if self.label else None
        return (f"{type(self).__name__}: data shapes: {[d.shape for d in self.data]} "
                f"label shapes: {labels}")


class DataIter:
    """Base class of data iterators: ``next()`` returns a :class:`DataBatch` or raises
    StopIteration; ``reset()`` starts over. Subclasses implement ``iter_next``,
    ``getdata``, ``getlabel``, ``getpad`` (and ``getindex``), or ``next`` itself."""

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self) -> "DataIter":
        return self

    def reset(self) -> None:
        """Go back to the first batch."""

    def next(self) -> DataBatch:
        """The next batch (StopIteration at the end)."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end."""
        return False

    def getdata(self) -> list:
        """The data arrays of the current batch."""
        return []

    def getlabel(self) -> list:
        """The label arrays of the current batch."""
        return []

    def getindex(self) -> Any:
        """The example indices of the current batch (None when unknown)."""
        return None

    def getpad(self) -> int:
        """How many examples at the end of the current batch are padding."""
        return 0


class _HoldsBatch(DataIter):
    """An iterator whose ``iter_next`` sets ``current_batch``: the accessors read it."""

    current_batch: DataBatch

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        return self.current_batch

    def getdata(self) -> list:
        return self.current_batch.data

    def getlabel(self) -> list:
        return self.current_batch.label

    def getindex(self) -> Any:
        return self.current_batch.index

    def getpad(self) -> int:
        return self.current_batch.pad


class ResizeIter(_HoldsBatch):
    """``data_iter`` made to last exactly ``size`` batches per epoch (restarting it when it
    ends early); ``reset_internal`` resets it at every ``reset``."""

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__(data_iter.batch_size)
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: DataBatch | None = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


class PrefetchingIter(_HoldsBatch):
    """Reads the next batch of each of ``iters`` in a background thread while the current
    one is used; the batches of several iterators are joined (their data and labels
    concatenated as lists), ``rename_data`` / ``rename_label`` (one dict per iterator)
    rename their inputs."""

    def __init__(self, iters: DataIter | list[DataIter], rename_data: list | None = None,
                 rename_label: list | None = None):
        super().__init__()
        self.iters = iters if isinstance(iters, list) else [iters]
        if not self.iters:
            raise DataError("PrefetchingIter needs at least one iterator")
        self.rename_data, self.rename_label = rename_data, rename_label
        self.batch_size = self.provide_data[0].shape[0]
        self.current_batch: DataBatch | None = None
        self._next: list = [None] * len(self.iters)
        self._ready = [threading.Event() for _ in self.iters]
        self._taken = [threading.Event() for _ in self.iters]
        self._running = True
        for event in self._taken:
            event.set()
        self._threads = [threading.Thread(target=self._fetch, args=(k,), daemon=True)
                         for k in range(len(self.iters))]
        for thread in self._threads:
            thread.start()

    def _fetch(self, k: int) -> None:
        while True:
            self._taken[k].wait()
            if not self._running:
                return
            try:
                self._next[k] = self.iters[k].next()
            except StopIteration:
                self._next[k] = None
            self._taken[k].clear()
            self._ready[k].set()

    def close(self) -> None:
        """Stop the prefetching threads."""
        self._running = False
        for event in self._taken:
            event.set()
        for thread in self._threads:
            thread.join()

    __del__ = close

    def _renamed(self, attr: str, renames: list | None) -> list:
        if renames is None:
            return sum((getattr(it, attr) for it in self.iters), [])
        return sum(([DataDesc(r[d.name], d.shape, d.dtype) for d in getattr(it, attr)]
                    for r, it in zip(renames, self.iters)), [])

    @property
    def provide_data(self) -> list:
        return self._renamed("provide_data", self.rename_data)

    @property
    def provide_label(self) -> list:
        return self._renamed("provide_label", self.rename_label)

    def reset(self) -> None:
        for event in self._ready:
            event.wait()
        for it in self.iters:
            it.reset()
        for event in self._ready:
            event.clear()
        for event in self._taken:
            event.set()

    def iter_next(self) -> bool:
        for event in self._ready:
            event.wait()
        batches = list(self._next)
        if batches[0] is None:
            if any(b is not None for b in batches):
                raise DataError("PrefetchingIter: the iterators end after different numbers "
                                "of batches")
            return False
        if any(b is None or b.pad != batches[0].pad for b in batches):
            raise DataError("PrefetchingIter: the iterators' batches do not line up (different "
                            "lengths or padding)")
        self.current_batch = DataBatch(sum((b.data for b in batches), []),
                                       sum((b.label for b in batches), []), batches[0].pad,
                                       batches[0].index, provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        for event in self._ready:
            event.clear()
        for event in self._taken:
            event.set()
        return True

