"""MXNet's binary NDArray-list format: the ``.params`` files written by ``mx.nd.save``,
``Module.save_checkpoint`` and Gluon ``export()``.

Layout (little-endian)::

    uint64 0x112 (list magic), uint64 reserved (0), uint64 number of arrays, then per array:
        uint32 magic             0xF993FAC9 (V2), 0xF993FACA (V3: NumPy shape semantics),
                                 0xF993FAC8 (V1: no storage type), anything else: pre-V1,
                                 where this word is already ndim and dims are uint32
        int32  storage type      V2/V3 only: 0 dense (1 row_sparse and 2 csr are not supported)
        uint32 ndim, int64 dims  the shape
        int32  dev_type, dev_id  the context it was saved from (1 = cpu, 2 = gpu, ...)
        int32  type flag         0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8,
                                 6 int64, 7 bool
        raw data                 C order
    uint64 number of keys (0 for a list), then per key: uint64 length, UTF-8 bytes.

``save`` writes exactly what MXNet 1.9.1's ``mx.nd.save`` writes for the same arrays. One
exception: a 0-d array forces V3 for the whole file, since MXNet 1.9.1 writes 0-d arrays in
V2 but cannot read them back (its V2 reader takes ndim 0 for "no array"); a V3 file loads
with ``mx.npx.load``.

>>> save('w.params', {'arg:fc_weight': np.ones((2, 3), 'f4')})
>>> load('w.params')['arg:fc_weight'].shape
(2, 3)
"""
from __future__ import annotations

import os
import struct
from typing import Any, BinaryIO, Mapping, Sequence

import numpy as np

from ..ir.arguments import open_regular_file
from ..ir.errors import ArgumentTypeError, ParamsFormatError

__all__ = ["load", "save", "LIST_MAGIC", "V1_MAGIC", "V2_MAGIC", "V3_MAGIC", "TYPE_FLAGS"]

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
#: Type flag -> numpy dtype, for the dtypes MXNet 1.9.1 can store.
TYPE_FLAGS = {0: np.dtype("float32"), 1: np.dtype("float64"), 2: np.dtype("float16"),
              3: np.dtype("uint8"), 4: np.dtype("int32"), 5: np.dtype("int8"),
              6: np.dtype("int64"), 7: np.dtype("bool")}
_FLAG_OF = {dt: flag for flag, dt in TYPE_FLAGS.items()}
_STORAGE = {1: "row_sparse", 2: "csr"}
_DEV_TYPES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
_MAX_NDIM = 32

ArrayData = dict[str, np.ndarray] | list[np.ndarray]


# -- reading -------------------------------------------------------------------------------
def load(fname: str | os.PathLike) -> ArrayData:
    """Read an NDArray-list file: a dict name -> array when the file has keys, else a list.

    Raises :class:`~graphexec.core.ir.errors.ParamsFormatError` naming the file, the array and
    what was expected when the file is missing, truncated or malformed."""
    if not isinstance(fname, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(f"load: expected a file name (str or path), got "
                                f"{type(fname).__name__}")
    with open_regular_file(fname, ParamsFormatError, "parameter file") as f:
        return _Reader(f, os.fspath(fname)).read_file()


class _Reader:
    """Sequential reader that knows its position and how many bytes are left."""

    def __init__(self, f: BinaryIO, fname: str):
        self.f = f
        self.fname = fname
        self.size = os.fstat(f.fileno()).st_size
        self.where = "header"

    def fail(self, message: str) -> ParamsFormatError:
        return ParamsFormatError(f"{self.fname}: {self.where}: {message}")

    def left(self) -> int:
        return self.size - self.f.tell()

    def unpack(self, fmt: str, what: str) -> tuple:
        n = struct.calcsize(fmt)
        pos = self.f.tell()
        raw = self.f.read(n)
        if len(raw) != n:
            raise self.fail(f"file ends at byte {self.size} while reading {what} "
                            f"({n} bytes at offset {pos}): truncated file")
        return struct.unpack(fmt, raw)

    def read_file(self) -> ArrayData:
        magic, _reserved, count = self.unpack("<QQQ", "the list header")
        if magic != LIST_MAGIC:
            raise self.fail(f"not an MXNet NDArray file: starts with 0x{magic:x}, expected the "
                            f"list magic 0x{LIST_MAGIC:x}")
        if count * 16 > self.left():
            raise self.fail(f"the header announces {count} arrays but only {self.left()} bytes "
                            f"follow: corrupt or truncated file")
        arrays = []
        for i in range(count):
            self.where = f"array {i} of {count}"
            arrays.append(self.read_array())
        self.where = "key table"
        return self.read_keys(arrays)

    def read_array(self) -> np.ndarray:
        (magic,) = self.unpack("<I", "the array magic")
        if magic in (V2_MAGIC, V3_MAGIC):
            (stype,) = self.unpack("<i", "the storage type")
            if stype != 0:
                what = (f"{_STORAGE[stype]} (sparse) storage is not supported" if stype in
                        _STORAGE else f"unknown storage type {stype}")
                raise self.fail(f"{what}; expected dense storage (0)")
            (ndim,) = self.unpack("<i", "the number of dimensions")
            if magic == V3_MAGIC and ndim == -1:
                raise self.fail("the array has no shape (an uninitialised NDArray)")
            shape = self.read_dims(ndim, "q")
        elif magic == V1_MAGIC:
            (ndim,) = self.unpack("<I", "the number of dimensions")
            shape = self.read_dims(ndim, "q")
        else:  # pre-V1 files: the first word is ndim, dims are uint32
            shape = self.read_dims(magic, "I")
        return self.read_data(shape)

    def read_dims(self, ndim: int, code: str) -> tuple[int, ...]:
        if not 0 <= ndim <= _MAX_NDIM:
            raise self.fail(f"expected an array magic (0x{V2_MAGIC:x}) or a number of "
                            f"dimensions (0..{_MAX_NDIM}), found {ndim}")
        dims = self.unpack(f"<{ndim}{code}", f"{ndim} dimensions") if ndim else ()
        if any(d < 0 for d in dims):
            raise self.fail(f"negative dimension in shape {dims}")
        return tuple(dims)

    def read_data(self, shape: tuple[int, ...]) -> np.ndarray:
        dev_type, dev_id = self.unpack("<ii", "the context (dev_type, dev_id)")
        if dev_type not in _DEV_TYPES or not 0 <= dev_id < 1 << 16:
            raise self.fail(f"expected a context after shape {shape} (dev_type 1 cpu, 2 gpu, "
                            f"3 cpu_pinned or 5 cpu_shared), found dev_type={dev_type}, "
                            f"dev_id={dev_id}")
        (flag,) = self.unpack("<i", "the type flag")
        dtype = TYPE_FLAGS.get(flag)
        if dtype is None:
            note = " (bfloat16 has no numpy equivalent)" if flag == 12 else ""
            raise self.fail(f"unknown type flag {flag}{note}, expected one of "
                            + ", ".join(f"{k} ({v.name})" for k, v in TYPE_FLAGS.items()))
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        # numpy needs the non-zero dims' product in bytes to fit in an int64, even when a
        # zero dim makes the array empty
        if int(np.prod([d for d in shape if d], dtype=object)) * dtype.itemsize >= 1 << 63:
            raise self.fail(f"shape {shape} of {dtype.name} is too large to represent (its "
                            f"non-zero dimensions multiply past the int64 range)")
        if nbytes > self.left():
            raise self.fail(f"shape {shape} of {dtype.name} needs {nbytes} bytes of data, only "
                            f"{self.left()} bytes are left: truncated or corrupt file")
        arr = np.empty(shape, dtype.newbyteorder("<"))
        if nbytes:
            self.f.readinto(memoryview(arr.reshape(-1)).cast("B"))
        return arr.astype(dtype, copy=False)

    def read_keys(self, arrays: list[np.ndarray]) -> ArrayData:
        (count,) = self.unpack("<Q", "the number of keys")
        if count == 0:
            return arrays
        if count != len(arrays):
            raise self.fail(f"the file names {count} keys for {len(arrays)} arrays, expected "
                            f"{len(arrays)} keys or none")
        out: dict[str, np.ndarray] = {}
        for i, arr in enumerate(arrays):
            key = self.read_key(i, count)
            if key in out:
                raise self.fail(f"key {i} ({key!r}) appears twice")
            out[key] = arr
        return out

    def read_key(self, i: int, count: int) -> str:
        self.where = f"key {i} of {count}"
        (length,) = self.unpack("<Q", "the key length")
        if length > self.left():
            raise self.fail(f"key length {length} exceeds the {self.left()} bytes left")
        raw = self.f.read(length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"key bytes {raw[:40]!r} are not UTF-8 text") from None


# -- writing -------------------------------------------------------------------------------
def save(fname: str | os.PathLike, data: Mapping[str, Any] | Sequence[Any] | np.ndarray,
         np_shape: bool | None = None) -> None:
    """Write ``data`` (a dict name -> array, a list of arrays, or one array) in MXNet's
    NDArray-list format, loadable by MXNet 1.9.1's ``mx.nd.load``.

    ``np_shape`` picks the array magic: False writes V2 (``mx.nd.save``), True writes V3
    (``mx.npx.save``); None (default) writes V2 unless an array is 0-d."""
    keys, arrays = _normalize(data)
    v3 = any(a.ndim == 0 for a in arrays) if np_shape is None else bool(np_shape)
    with open(fname, "wb") as f:
        f.write(struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays)))
        for arr in arrays:
            _write_array(f, arr, V3_MAGIC if v3 else V2_MAGIC)
        f.write(struct.pack("<Q", len(keys)))
        for key in keys:
            raw = key.encode("utf-8")
            f.write(struct.pack("<Q", len(raw)) + raw)


def _normalize(data: Any) -> tuple[list[str], list[np.ndarray]]:
    if isinstance(data, Mapping):
        bad = [k for k in data if not isinstance(k, str)]
        if bad:
            raise ParamsFormatError(f"cannot save: keys must be strings, got {bad[0]!r}")
        items = list(data.items())
        return [k for k, _ in items], [_host_array(v, repr(k)) for k, v in items]
    if isinstance(data, (list, tuple)):
        return [], [_host_array(v, f"item {i}") for i, v in enumerate(data)]
    return [], [_host_array(data, "the array")]


def _host_array(value: Any, what: str) -> np.ndarray:
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        value = value.get()
    if not isinstance(value, (np.ndarray, np.generic)):
        raise ParamsFormatError(f"cannot save {what}: expected a numpy or cupy array, got "
                                f"{type(value).__name__}")
    arr = np.asarray(value)
    if _native(arr.dtype) not in _FLAG_OF:
        raise ParamsFormatError(f"cannot save {what}: dtype {arr.dtype} cannot be stored in a "
                                f".params file; MXNet 1.9.1 reads "
                                + ", ".join(dt.name for dt in _FLAG_OF))
    # astype, not ascontiguousarray, which would turn a 0-d array into shape (1,)
    return arr.astype(arr.dtype.newbyteorder("<"), order="C", copy=False)


def _native(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("=")


def _write_array(f: BinaryIO, arr: np.ndarray, magic: int) -> None:
    header = struct.pack(f"<Iii{arr.ndim}q", magic, 0, arr.ndim, *arr.shape)
    flag = _FLAG_OF[_native(arr.dtype)]
    f.write(header + struct.pack("<iii", 1, 0, flag))
    if arr.size:
        f.write(memoryview(arr.reshape(-1)).cast("B"))
