"""``CSVIter`` and ``MNISTIter``: MXNet's C++ iterators over CSV files and MNIST's idx files,
with their parameters, defaults and batching rules (:mod:`.batching`)."""
from __future__ import annotations

import gzip
import os
import struct
from typing import Any

import numpy as np

from .base import DataError
from .batching import BufferedBatchIter, rows_filler

__all__ = ["CSVIter", "MNISTIter"]


def _read_csv(path: str, what: str, row_shape: tuple, dtype: Any) -> np.ndarray:
    try:
        table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    except OSError as exc:
        raise DataError(f"CSVIter: cannot read {what} {path!r}: {exc}") from None
    except ValueError as exc:
        raise DataError(f"CSVIter: {what} {path!r} is not a CSV table of numbers: {exc}") from None
    width = int(np.prod(row_shape))
    if table.shape[1] != width:
        raise DataError(f"CSVIter: {what} {path!r} has {table.shape[1]} values per row, but "
                        f"the shape {tuple(row_shape)} needs {width}")
    return table.astype(dtype).reshape((len(table),) + tuple(row_shape))


class CSVIter(BufferedBatchIter):
    """Batches from CSV files: each row of ``data_csv`` is one example of ``data_shape``;
    labels come from ``label_csv`` (rows of ``label_shape``) or are zeros without it. A
    ``label_shape`` of (1,) gives labels of shape (batch_size,), as MXNet's."""

    def __init__(self, data_csv: str, data_shape: tuple, label_csv: str = "NULL",
                 label_shape: tuple = (1,), batch_size: int = 1, round_batch: bool = True,
                 dtype: str = "float32", data_name: str = "data",
                 label_name: str = "softmax_label", **kwargs: Any):
        data_shape, label_shape = tuple(data_shape), tuple(label_shape)
        data = _read_csv(data_csv, "data_csv", data_shape, dtype)
        if label_csv in (None, "NULL"):
            label = np.zeros((len(data),) + label_shape, np.float32)
        else:
            label = _read_csv(label_csv, "label_csv", label_shape, np.float32)
            if len(label) != len(data):
                raise DataError(f"CSVIter: {label_csv!r} has {len(label)} rows, {data_csv!r} "
                                f"has {len(data)}")
        if label_shape == (1,):
            label, label_shape = label.reshape(len(label)), ()
        super().__init__(rows_filler(data, label), len(data), batch_size, data_shape,
                         label_shape, round_batch, dtype=dtype, data_name=data_name,
                         label_name=label_name)


def _read_idx(path: str, magic: int) -> np.ndarray:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise DataError(f"MNISTIter: cannot read {path!r}: {exc}") from None
    ndim = magic & 0xFF
    if len(raw) < 4 + 4 * ndim or struct.unpack(">I", raw[:4])[0] != magic:
        raise DataError(f"MNISTIter: {path!r} is not an MNIST idx file (expected magic "
                        f"0x{magic:08x})")
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    body = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise DataError(f"MNISTIter: {path!r} holds {body.size} bytes of data for shape {dims}")
    return body.reshape(dims)


class MNISTIter(BufferedBatchIter):
    """Batches of MNIST from its idx files (``image``, ``label``; .gz accepted): images
    scaled to [0, 1], shape (batch, 1, 28, 28), or (batch, 784) with ``flat``; shuffled
    with ``seed`` unless ``shuffle=False``; ``num_parts`` / ``part_index`` read one part."""

    def __init__(self, image: str = "./train-images-idx3-ubyte",
                 label: str = "./train-labels-idx1-ubyte", batch_size: int = 128,
                 shuffle: bool = True, flat: bool = False, seed: int = 0, silent: bool = False,
                 num_parts: int = 1, part_index: int = 0, data_name: str = "data",
                 label_name: str = "softmax_label", **kwargs: Any):
        images = _read_idx(os.fspath(image), 0x00000803)
        labels = _read_idx(os.fspath(label), 0x00000801)
        if len(images) != len(labels):
            raise DataError(f"MNISTIter: {len(images)} images but {len(labels)} labels")
        part = slice(len(images) * part_index // num_parts,
                     len(images) * (part_index + 1) // num_parts)
        images = images[part].astype(np.float32) / 255.0
        shape = (int(np.prod(images.shape[1:])),) if flat else (1,) + images.shape[1:]
        images = images.reshape((len(images),) + shape)
        super().__init__(rows_filler(images, labels[part].astype(np.float32)), len(images),
                         batch_size, shape, (), True, shuffle=shuffle, seed=seed,
                         data_name=data_name, label_name=label_name)
