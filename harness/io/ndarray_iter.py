"""``NDArrayIter``: batches from in-memory arrays, as MXNet 1.9.1's (names sorted, numpy
inputs converted to float32 NDArrays, ``shuffle`` with numpy's global generator,
``last_batch_handle`` 'pad' / 'discard' / 'roll_over'). Batches along axis 0 are views of the
data (MXNet copies them); padded and rolled-over batches are new arrays."""
from __future__ import annotations

from typing import Any

import numpy as np

from graphexec.core.ir.ndarray import NDArray

from ..ndarray.creation import array
from .base import DataBatch, DataDesc, DataError, DataIter

__all__ = ["NDArrayIter", "named_arrays"]

_HANDLES = ("pad", "discard", "roll_over")


def named_arrays(data: Any, default_name: str, allow_empty: bool) -> list[tuple[str, NDArray]]:
    """MXNet's canonical form of iterator inputs: sorted ``(name, NDArray)`` pairs from one
    array, a list (named ``_<i>_<name>`` when several) or a dict."""
    if data is None:
        if not allow_empty:
            raise DataError(f"NDArrayIter: {default_name} is required")
        data = []
    if isinstance(data, np.ndarray):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise DataError(f"NDArrayIter: {default_name} is an empty list")
        data = ({default_name: data[0]} if len(data) == 1 else
                {f"_{i}_{default_name}": d for i, d in enumerate(data)})
    if not isinstance(data, dict):
        raise DataError(f"NDArrayIter: {default_name} must be an array, a list of arrays or a "
                        f"dict name -> array, got {type(data).__name__}")
    out = []
    for name, value in data.items():
        if not isinstance(value, NDArray):
            try:
                value = array(value)
            except (ValueError, TypeError) as exc:
                raise DataError(f"NDArrayIter: {name!r} cannot be made an array "
                                f"({type(value).__name__}): {exc}") from None
        out.append((name, value))
    return sorted(out, key=lambda item: item[0])



class NDArrayIter(DataIter):
    """Batches of ``batch_size`` examples from ``data`` and ``label`` (arrays, lists or
    dicts of arrays sharing their first dimension).

    >>> it = gx.io.NDArrayIter(x, y, batch_size=32, shuffle=True)
    >>> mod.fit(it, num_epoch=3)
    """

    def __init__(self, data: Any, label: Any = None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label", layout: str = "NCHW"):
        super().__init__(batch_size)
        if last_batch_handle not in _HANDLES:
            raise DataError(f"NDArrayIter: last_batch_handle={last_batch_handle!r}; expected one "
                            f"of {_HANDLES}")
        if int(batch_size) < 1:
            raise DataError(f"NDArrayIter: batch_size must be positive, got {batch_size}")
        self.data = named_arrays(data, data_name, allow_empty=False)
        self.label = named_arrays(label, label_name, allow_empty=True)
        self.layout = layout
        self._axis = DataDesc.get_batch_axis(layout)
        self.num_data = self.data[0][1].shape[self._axis]
        for name, arr in self.data + self.label:
            if arr.shape[self._axis] != self.num_data:
                raise DataError(f"NDArrayIter: {name!r} has {arr.shape[self._axis]} examples "
                                f"(shape {arr.shape}) but {self.data[0][0]!r} has "
                                f"{self.num_data}")
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = int(batch_size)
        self.cursor = -self.batch_size
        self._cache_data: list | None = None
        self._cache_label: list | None = None
        self.reset()
        self.data_list = [a for _, a in self.data] + [a for _, a in self.label]
        self.num_source = len(self.data_list)

    def _descs(self, pairs: list) -> list[DataDesc]:
        axis = self._axis
        return [DataDesc(name, arr.shape[:axis] + (self.batch_size,) + arr.shape[axis + 1:],
                         arr.dtype, layout=self.layout) for name, arr in pairs]

    @property
    def provide_data(self) -> list[DataDesc]:
        """Name, batch shape, dtype and layout of each data input."""
        return self._descs(self.data)

    @property
    def provide_label(self) -> list[DataDesc]:
        """Name, batch shape, dtype and layout of each label."""
        return self._descs(self.label)

    def hard_reset(self) -> None:
        """Start over, dropping rolled-over examples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = self._cache_label = None

    def reset(self) -> None:
        if self.shuffle:
            self._shuffle_data()
        if (self.last_batch_handle == "roll_over"
                and self.num_data - self.batch_size < self.cursor < self.num_data):
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self) -> bool:
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if data[0].shape[self._axis] != self.batch_size:  # incomplete: kept for roll_over
            self._cache_data, self._cache_label = data, label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    # -- batches ------------------------------------------------------------------------------
    def _slice(self, pairs: list, start: int, end: int) -> list:
        if self._axis == 0:
            return [arr[start:end] for _, arr in pairs]
        index = (slice(None),) * self._axis + (slice(start, end),)
        return [arr[index] for _, arr in pairs]

    def _join(self, first: list, second: list) -> list:
        if not first or not second:
            return first or second
        return [_concat(a, b, self._axis) for a, b in zip(first, second)]

    def _batchify(self, pairs: list) -> list:
        if self.cursor >= self.num_data:
            raise DataError("NDArrayIter: the iterator is exhausted; call reset()")
        n, b, c = self.num_data, self.batch_size, self.cursor
        if self.last_batch_handle == "roll_over" and -b < c < 0:
            cached = self._cache_data if self._cache_data is not None else self._cache_label
            if cached is None:
                raise DataError("NDArrayIter: roll_over expected the examples left over from "
                                "the last epoch")
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._join(cached, self._slice(pairs, 0, c + b))
        if self.last_batch_handle == "pad" and c + b > n:
            pad = c + b - n
            rest = [self._slice(pairs, 0, n)] * (pad // n) + [self._slice(pairs, 0, pad % n)]
            out = self._slice(pairs, c, n)
            for part in rest:
                if part and part[0].shape[self._axis]:
                    out = self._join(out, part)
            return out
        return self._slice(pairs, c, min(c + b, n))

    def getdata(self) -> list:
        return self._batchify(self.data)

    def getlabel(self) -> list:
        return self._batchify(self.label)

    def getpad(self) -> int:
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self) -> None:
        np.random.shuffle(self.idx)  # numpy's global generator, as MXNet's NDArrayIter
        self.data = [(k, _take(v, self.idx, self._axis)) for k, v in self.data]
        self.label = [(k, _take(v, self.idx, self._axis)) for k, v in self.label]


def _take(arr: NDArray, idx: np.ndarray, axis: int) -> NDArray:
    out = np.take(np.asarray(arr), idx, axis=axis)
    return array(out, ctx=arr.context, dtype=arr.dtype)


def _concat(a: NDArray, b: NDArray, axis: int) -> NDArray:
    return array(np.concatenate([np.asarray(a), np.asarray(b)], axis=axis), ctx=a.context,
                 dtype=a.dtype)
