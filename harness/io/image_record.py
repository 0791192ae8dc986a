"""``ImageRecordIter``: batches of images from an MXNet RecordIO file (``im2rec`` / ``pack_img``
records), decoded and augmented by ``preprocess_threads`` worker threads, with MXNet 1.9.1's
parameters, defaults and order of operations: decode (BGR, or grey for 1 channel) ->
``resize`` (shorter edge; bilinear) -> ``pad`` -> crop to ``data_shape`` (centre, or random
with ``rand_crop``; images smaller than the crop are first enlarged) -> mirror
(``rand_mirror`` / ``mirror``) -> RGB, ``(pixel - mean) * scale / std`` as float32 in CHW.
Batching follows MXNet's ``round_batch`` rules (:mod:`.batching`).

Augmentations beyond these (rotation, shear, colour jitter, random resized crops) are not
implemented and are rejected by name. ``path_imgidx`` is accepted; records are located by
scanning the ``.rec`` file's headers once. Decoding needs OpenCV or Pillow
(``pip install graphexec[image]``); with Pillow, resizing is bilinear in numpy and may
differ from OpenCV's by one grey level.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import recordio
from .base import DataError
from .batching import BufferedBatchIter

__all__ = ["ImageRecordIter", "resize_bilinear"]

# parameters of MXNet's augmenter this iterator does not implement, with their defaults
_UNSUPPORTED = {"max_rotate_angle": 0, "rotate": -1, "max_shear_ratio": 0.0,
                "max_random_scale": 1.0, "min_random_scale": 1.0, "max_aspect_ratio": 0.0,
                "random_resized_crop": False, "max_crop_size": -1, "min_crop_size": -1,
                "brightness": 0.0, "contrast": 0.0, "saturation": 0.0, "pca_noise": 0.0,
                "random_h": 0, "random_s": 0, "random_l": 0, "max_random_contrast": 0.0,
                "max_random_illumination": 0.0, "mean_img": "", "path_imglist": ""}


def _offsets(path: str) -> list[int]:
    """Byte offset of every record of a RecordIO file (headers only are read)."""
    offsets = []
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while pos < size:
            start = pos
            while True:
                f.seek(pos)
                head = f.read(8)
                if len(head) < 8:
                    raise DataError(f"ImageRecordIter: {path} is truncated at byte {pos}")
                magic, lrec = np.frombuffer(head, "<u4")
                if magic != recordio.MAGIC:
                    raise DataError(f"ImageRecordIter: {path} is not a RecordIO file (byte "
                                    f"{pos})")
                length = int(lrec) & ((1 << 29) - 1)
                pos += 8 + length + (-length % 4)
                if int(lrec) >> 29 in (0, 3):
                    break
            offsets.append(start)
    return offsets


def resize_bilinear(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bilinear resize with OpenCV's pixel-centre convention (no antialiasing), uint8."""
    cv2 = recordio._cv2()
    if cv2 is not None:
        return cv2.resize(img, (width, height), interpolation=cv2.INTER_LINEAR)

    def axis(n_out: int, n_in: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        x = np.clip(x, 0, n_in - 1)
        lo = np.floor(x).astype(np.int64)
        return lo, np.minimum(lo + 1, n_in - 1), (x - lo)
    y0, y1, wy = axis(height, img.shape[0])
    x0, x1, wx = axis(width, img.shape[1])
    src = img.astype(np.float32)
    wx = wx.reshape((1, -1) + (1,) * (img.ndim - 2))
    top = src[y0][:, x0] * (1 - wx) + src[y0][:, x1] * wx
    bottom = src[y1][:, x0] * (1 - wx) + src[y1][:, x1] * wx
    wy = wy.reshape((-1,) + (1,) * (img.ndim - 1))
    return np.clip(np.rint(top * (1 - wy) + bottom * wy), 0, 255).astype(np.uint8)


class ImageRecordIter(BufferedBatchIter):
    """Batches of (data (batch, c, h, w) float32, label (batch,) or (batch, label_width))
    from ``path_imgrec``."""

    def __init__(self, path_imgrec: str, data_shape: tuple, batch_size: int,
                 path_imgidx: str = "", label_width: int = 1, shuffle: bool = False,
                 seed: int = 0, round_batch: bool = True, preprocess_threads: int = 4,
                 resize: int = -1, rand_crop: bool = False, rand_mirror: bool = False,
                 mirror: bool = False, mean_r: float = 0.0, mean_g: float = 0.0,
                 mean_b: float = 0.0, mean_a: float = 0.0, std_r: float = 1.0,
                 std_g: float = 1.0, std_b: float = 1.0, std_a: float = 1.0, scale: float = 1.0,
                 pad: int = 0, fill_value: int = 255, inter_method: int = 1,
                 num_parts: int = 1, part_index: int = 0, data_name: str = "data",
                 label_name: str = "softmax_label", **kwargs: Any):
        bad = {k: v for k, v in kwargs.items() if k in _UNSUPPORTED and v != _UNSUPPORTED[k]}
        if bad:
            raise DataError(f"ImageRecordIter: {sorted(bad)} are not supported by graphexec's "
                            f"ImageRecordIter (resize, crop, mirror, pad and normalisation are)")
        self.data_shape = tuple(int(d) for d in data_shape)
        if len(self.data_shape) != 3 or self.data_shape[0] not in (1, 3, 4):
            raise DataError(f"ImageRecordIter: data_shape must be (channels, height, width) with "
                            f"1, 3 or 4 channels, got {data_shape}")
        self.path_imgrec = os.fspath(path_imgrec)
        offsets = _offsets(self.path_imgrec)
        self._offsets = offsets[len(offsets) * part_index // num_parts:
                                len(offsets) * (part_index + 1) // num_parts]
        self._aug = dict(resize=resize, rand_crop=rand_crop, rand_mirror=rand_mirror,
                         mirror=mirror, pad=pad, fill_value=fill_value)
        channels = self.data_shape[0]
        self._mean = np.array([mean_r, mean_g, mean_b, mean_a][:channels], np.float32)
        self._mult = (np.float32(scale) / np.array([std_r, std_g, std_b, std_a][:channels],
                                                   np.float32)).astype(np.float32)
        self.label_width = label_width
        self._pool = ThreadPoolExecutor(max(1, int(preprocess_threads)))
        self._aug_rng = np.random.default_rng(seed)
        label_shape = () if label_width == 1 else (label_width,)
        super().__init__(self._fill, len(self._offsets), batch_size, self.data_shape,
                         label_shape, round_batch, shuffle=shuffle, seed=seed,
                         data_name=data_name, label_name=label_name)

    def _fill(self, indices: np.ndarray, data: np.ndarray, label: np.ndarray) -> None:
        with open(self.path_imgrec, "rb") as f:
            raws = []
            for i in indices:
                f.seek(self._offsets[i])
                raws.append(recordio.read_record(f, self.path_imgrec))
        seeds = self._aug_rng.integers(0, 2 ** 32, len(raws))
        jobs = [self._pool.submit(self._decode, raw, int(s), data, label, k)
                for k, (raw, s) in enumerate(zip(raws, seeds))]
        for job in jobs:
            job.result()

    def _decode(self, raw: bytes, seed: int, data: np.ndarray, label: np.ndarray, k: int
                ) -> None:
        header, payload = recordio.unpack(raw)
        channels, height, width = self.data_shape
        img = recordio.decode_image(payload, 1 if channels >= 3 else 0)
        img = self._augment(img, height, width, np.random.default_rng(seed))
        if img.ndim == 2:
            img = img[:, :, None]
        rgb = img[:, :, ::-1] if channels >= 3 else img
        np.multiply(np.subtract(np.transpose(rgb, (2, 0, 1)), self._mean[:, None, None],
                                dtype=np.float32), self._mult[:, None, None], out=data[k])
        values = np.atleast_1d(np.asarray(header.label, np.float32))
        if values.size < self.label_width:
            raise DataError(f"ImageRecordIter: record {header.id} has {values.size} labels, "
                            f"label_width is {self.label_width}")
        label[k] = values[0] if self.label_width == 1 else values[:self.label_width]

    def _augment(self, img: np.ndarray, height: int, width: int, rng: np.random.Generator
                 ) -> np.ndarray:
        aug = self._aug
        if aug["resize"] > 0:
            rows, cols = img.shape[:2]
            if rows > cols:
                img = resize_bilinear(img, aug["resize"], aug["resize"] * rows // cols)
            else:
                img = resize_bilinear(img, aug["resize"] * cols // rows, aug["resize"])
        if aug["pad"] > 0:
            p = aug["pad"]
            widths = ((p, p), (p, p)) + ((0, 0),) * (img.ndim - 2)
            img = np.pad(img, widths, constant_values=aug["fill_value"])
        if img.shape[0] < height:
            img = resize_bilinear(img, int(height / img.shape[0] * img.shape[1]), height)
        if img.shape[1] < width:
            img = resize_bilinear(img, width, int(width / img.shape[1] * img.shape[0]))
        y, x = img.shape[0] - height, img.shape[1] - width
        if aug["rand_crop"]:
            y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
        else:
            y, x = y // 2, x // 2
        img = img[y:y + height, x:x + width]
        if aug["mirror"] or (aug["rand_mirror"] and rng.integers(0, 2)):
            img = img[:, ::-1]
        return img
