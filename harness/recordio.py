"""``gx.recordio``: MXNet's RecordIO files (``.rec``) and their text index (``.idx``), byte for
byte as MXNet 1.9.1 (dmlc-core) reads and writes them, and the image-record helpers.

A record is written as ``uint32 magic 0xced7230a``, ``uint32 lrec`` (the upper 3 bits a
continuation flag, the lower 29 the length), the bytes, then zero padding to 4 bytes. Where
the payload holds the magic number at a 4-byte boundary, the record is split there into
parts (flag 1 first, 2 middle, 3 last) and the magic is left out; the reader puts it back.
The index has one ``key\\tbyte offset`` line per record.

``pack`` / ``unpack`` prefix a record with MXNet's ``IRHeader`` (``flag``, ``label``,
``id``, ``id2`` as ``<IfQQ``; a label vector is stored after the header, ``flag`` giving its
length). ``pack_img`` / ``unpack_img`` encode and decode images with OpenCV when it is
installed, else Pillow (``pip install graphexec[image]``); images are BGR as with OpenCV.
"""
from __future__ import annotations

import io
import numbers
import os
import struct
from collections import namedtuple
from typing import Any, Callable

import numpy as np

from graphexec.core.ir.errors import GraphexecError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img", "RecordIOError", "MAGIC"]

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_LEN_MASK = (1 << 29) - 1


class RecordIOError(GraphexecError, ValueError):
    """A RecordIO file is malformed, or a record cannot be written or read."""


class MXRecordIO:
    """Sequential reading (``flag='r'``) or writing (``'w'``) of a RecordIO file.

    >>> w = gx.recordio.MXRecordIO('data.rec', 'w'); w.write(b'abc'); w.close()
    >>> gx.recordio.MXRecordIO('data.rec', 'r').read()
    b'abc'
    """

    def __init__(self, uri: str | os.PathLike, flag: str):
        self.uri = os.fspath(uri)
        if flag not in ("r", "w"):
            raise RecordIOError(f"MXRecordIO flag must be 'r' or 'w', got {flag!r}")
        self.flag = flag
        self.is_open = False
        self.open()

    def open(self) -> None:
        """Open the file (done by the constructor)."""
        try:
            self._file = open(self.uri, "wb" if self.flag == "w" else "rb")
        except OSError as exc:
            raise RecordIOError(f"cannot open {self.uri!r}: {exc.strerror}") from None
        self.writable = self.flag == "w"
        self.is_open = True
        self.pid = os.getpid()

    def close(self) -> None:
        """Close the file."""
        if self.is_open:
            self._file.close()
            self.is_open = False

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> dict:
        """Picklable (for worker processes): reopened on unpickling."""
        state = {k: v for k, v in self.__dict__.items() if k != "_file"}
        state["is_open"] = False
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.open()

    def reset(self) -> None:
        """Go back to the first record (reopens the file)."""
        self.close()
        self.open()

    def _check(self, writing: bool) -> None:
        if not self.is_open:
            raise RecordIOError(f"{self.uri!r} is closed")
        if writing != self.writable:
            raise RecordIOError(f"{self.uri!r} is open for {'writing' if self.writable else 'reading'}")

    def write(self, buf: bytes) -> None:
        """Append one record."""
        self._check(True)
        self._file.write(encode_record(bytes(buf)))

    def read(self) -> bytes | None:
        """The next record, or None at the end of the file."""
        self._check(False)
        return read_record(self._file, self.uri)

    def tell(self) -> int:
        """The byte offset where the next record starts."""
        return self._file.tell()


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with its index (``idx_path``): random access by key
    (``read_idx``, ``seek``), keys in ``keys`` (converted with ``key_type``)."""

    def __init__(self, idx_path: str | os.PathLike, uri: str | os.PathLike, flag: str,
                 key_type: Callable = int):
        self.idx_path = os.fspath(idx_path)
        self.idx: dict = {}
        self.keys: list = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx, self.keys = {}, []
        if self.writable:
            self.fidx = open(self.idx_path, "w")
            return
        self.fidx = None
        try:
            with open(self.idx_path) as f:
                lines = f.readlines()
        except OSError as exc:
            raise RecordIOError(f"cannot read index {self.idx_path!r}: {exc.strerror}") from None
        for n, line in enumerate(lines, 1):
            parts = line.strip().split("\t")
            if len(parts) < 2:
                if line.strip():
                    raise RecordIOError(f"{self.idx_path}:{n}: expected 'key<TAB>offset', got "
                                        f"{line.strip()!r}")
                continue
            key = self.key_type(parts[0])
            self.idx[key] = int(parts[1])
            self.keys.append(key)

    def close(self) -> None:
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None
        super().close()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx: Any) -> None:
        """Move to the record of key ``idx``."""
        self._check(False)
        if idx not in self.idx:
            raise RecordIOError(f"{self.idx_path}: no record has key {idx!r}")
        self._file.seek(self.idx[idx])

    def read_idx(self, idx: Any) -> bytes:
        """The record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx: Any, buf: bytes) -> None:
        """Append a record under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


# -- the record format -----------------------------------------------------------------------
def encode_record(data: bytes) -> bytes:
    """The bytes dmlc-core's RecordIOWriter writes for one record."""
    if len(data) >= 1 << 29:
        raise RecordIOError(f"a record holds at most 2^29 - 1 bytes, got {len(data)}")
    parts, start = [], 0
    aligned_end = len(data) - len(data) % 4
    i = data.find(_MAGIC_BYTES)
    while 0 <= i and i + 4 <= aligned_end:
        if i % 4:  # only occurrences at 4-byte boundaries split the record
            i = data.find(_MAGIC_BYTES, i + 1)
            continue
        parts.append((1 if start == 0 else 2, data[start:i]))
        start = i + 4
        i = data.find(_MAGIC_BYTES, start)
    parts.append((3 if start else 0, data[start:]))
    out = bytearray()
    for cflag, chunk in parts:
        out += struct.pack("<II", MAGIC, cflag << 29 | len(chunk)) + chunk
    out += bytes(-len(data) % 4)
    return bytes(out)


def read_record(f: Any, where: str) -> bytes | None:
    """The next record of file ``f`` (None at its end)."""
    out = bytearray()
    while True:
        pos = f.tell()
        head = f.read(8)
        if not head:
            if out:
                raise RecordIOError(f"{where}: the file ends inside a multi-part record")
            return None
        if len(head) < 8:
            raise RecordIOError(f"{where}: truncated record header at byte {pos}")
        magic, lrec = struct.unpack("<II", head)
        if magic != MAGIC:
            raise RecordIOError(f"{where}: byte {pos} is not the start of a record (found "
                                f"0x{magic:08x}, expected the magic 0x{MAGIC:08x})")
        cflag, length = lrec >> 29, lrec & _LEN_MASK
        chunk = f.read(length)
        if len(chunk) < length:
            raise RecordIOError(f"{where}: record at byte {pos} announces {length} bytes, the "
                                f"file ends after {len(chunk)}")
        f.read(-length % 4)
        if cflag in (2, 3):
            out += _MAGIC_BYTES
        out += chunk
        if cflag in (0, 3):
            return bytes(out)


# -- image records -----------------------------------------------------------------------------
IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header: Any, s: bytes) -> bytes:
    """``header`` (an IRHeader or 4-tuple; a label vector is stored after it) and ``s`` as one
    record payload."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s: bytes) -> tuple[IRHeader, bytes]:
    """(header, payload) of a record ``pack`` made."""
    if len(s) < _IR_SIZE:
        raise RecordIOError(f"a packed record starts with a {_IR_SIZE}-byte header, this one "
                            f"has {len(s)} bytes")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise RecordIOError(f"the header announces {header.flag} labels, the record holds "
                                f"{len(s)} bytes after it")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def pack_img(header: Any, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """``pack`` of ``img`` (HxW or HxWx3 BGR uint8) encoded as JPEG (``quality``) or PNG
    (``quality`` = compression level)."""
    return pack(header, encode_image(img, quality, img_fmt))


def unpack_img(s: bytes, iscolor: int = -1) -> tuple[IRHeader, np.ndarray]:
    """(header, image as BGR uint8) of a record ``pack_img`` made; ``iscolor`` 1 forces 3
    channels, 0 grey, -1 as stored."""
    header, payload = unpack(s)
    return header, decode_image(payload, iscolor)


def _cv2() -> Any:
    try:
        import cv2
    except ImportError:
        return None
    return cv2


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise RecordIOError("encoding and decoding images needs OpenCV (opencv-python) or "
                            "Pillow: pip install graphexec[image]") from None
    return Image


def encode_image(img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """``img`` (BGR) encoded in ``img_fmt`` ('.jpg' or '.png')."""
    fmt = img_fmt.lower().lstrip(".")
    if fmt not in ("jpg", "jpeg", "png"):
        raise RecordIOError(f"img_fmt {img_fmt!r}: expected '.jpg' or '.png'")
    cv2 = _cv2()
    if cv2 is not None:
        flag = cv2.IMWRITE_JPEG_QUALITY if fmt != "png" else cv2.IMWRITE_PNG_COMPRESSION
        ok, buf = cv2.imencode(f".{fmt}", img, [flag, quality])
        if not ok:
            raise RecordIOError(f"OpenCV could not encode an image of shape {img.shape}")
        return buf.tobytes()
    rgb = img[..., ::-1] if img.ndim == 3 else img
    out = io.BytesIO()
    options = {"quality": quality} if fmt != "png" else {"compress_level": min(quality, 9)}
    _pil().fromarray(np.ascontiguousarray(rgb)).save(out, "PNG" if fmt == "png" else "JPEG",
                                                      **options)
    return out.getvalue()


def decode_image(buf: bytes, iscolor: int = -1) -> np.ndarray:
    """An encoded image as a BGR (or grey) uint8 array, as OpenCV's ``imdecode``."""
    cv2 = _cv2()
    if cv2 is not None:
        img = cv2.imdecode(np.frombuffer(buf, np.uint8), iscolor)
        if img is None:
            raise RecordIOError("OpenCV could not decode the image bytes")
        return img
    try:
        pil = _pil().open(io.BytesIO(buf))
        mode = {1: "RGB", 0: "L"}.get(iscolor, "L" if pil.mode in ("L", "1", "I;16") else "RGB")
        img = np.asarray(pil.convert(mode))
    except OSError as exc:
        raise RecordIOError(f"Pillow could not decode the image bytes: {exc}") from None
    return img[..., ::-1].copy() if img.ndim == 3 else img
