"""``gx.io``: MXNet 1.9.1's data iterators — ``DataDesc``, ``DataBatch``, ``DataIter``,
``NDArrayIter``, ``ResizeIter``, ``PrefetchingIter``, ``CSVIter``, ``MNISTIter`` and
``ImageRecordIter``.

>>> it = gx.io.NDArrayIter(x, y, batch_size=32, shuffle=True, last_batch_handle='pad')
>>> for batch in it: ...            # batch.data[0], batch.label[0], batch.pad
"""
from .base import DataBatch, DataDesc, DataError, DataIter, PrefetchingIter, ResizeIter
from .file_iters import CSVIter, MNISTIter
from .image_record import ImageRecordIter
from .ndarray_iter import NDArrayIter

__all__ = ["DataDesc", "DataBatch", "DataIter", "DataError", "NDArrayIter", "ResizeIter",
           "PrefetchingIter", "CSVIter", "MNISTIter", "ImageRecordIter"]
