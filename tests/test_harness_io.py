"""gx.io iterators against MXNet 1.9.1's batches (NDArrayIter, CSVIter, ImageRecordIter),
and the wrappers."""
from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

DATA = Path(__file__).parent / "data" / "harness"
REF = json.loads((DATA / "reference.json").read_text())
IMAGES = np.load(DATA / "images.npz")


def _epochs(it, count=3):
    out = []
    for _ in range(count):
        out.append([[b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad]
                    for b in it])
        it.reset()
    return out


@pytest.mark.parametrize("handle", ["pad", "discard", "roll_over"])
def test_ndarrayiter_last_batch_handling_matches_mxnet(handle):
    data = np.arange(30, dtype="f4").reshape(10, 3)
    it = gx.io.NDArrayIter(data, np.arange(10, dtype="f4"), batch_size=4,
                           last_batch_handle=handle)
    assert _epochs(it) == REF["ndarrayiter"][handle]


def test_ndarrayiter_names_dicts_and_lists_as_mxnet():
    data = np.arange(30, dtype="f4").reshape(10, 3)
    it = gx.io.NDArrayIter({"b": data, "a": data * 2}, {"lab": np.arange(10)}, batch_size=5)
    assert [[d.name, list(d.shape)] for d in it.provide_data + it.provide_label] == \
        REF["ndarrayiter"]["dict_provide"]
    assert it.provide_label[0].dtype == np.float32  # numpy inputs become float32 NDArrays
    it = gx.io.NDArrayIter([data, data], batch_size=5)
    assert [d.name for d in it.provide_data + it.provide_label] == \
        REF["ndarrayiter"]["list_names"]


def test_ndarrayiter_shuffles_with_numpys_generator_and_keeps_pairs():
    data = np.arange(20, dtype="f4").reshape(20, 1)
    np.random.seed(3)
    it = gx.io.NDArrayIter(data, np.arange(20), batch_size=5, shuffle=True)
    seen = np.concatenate([b.data[0].asnumpy()[:, 0] for b in it])
    labels = np.concatenate([b.label[0].asnumpy() for b in (it.reset() or it)])
    assert sorted(seen) == list(range(20)) and list(seen) != list(range(20))
    assert sorted(labels) == list(range(20))


@pytest.mark.parametrize("round_batch", [True, False])
def test_csviter_matches_mxnet(round_batch):
    it = gx.io.CSVIter(data_csv=str(DATA / "csv_data.csv"), data_shape=(3,),
                       label_csv=str(DATA / "csv_label.csv"), batch_size=2,
                       round_batch=round_batch)
    assert _epochs(it) == REF["csviter"][str(round_batch)]


@pytest.mark.parametrize("name", ["plain", "norm", "resize"])
def test_image_record_iter_matches_mxnet(name):
    pytest.importorskip("PIL", reason="decoding images needs Pillow or OpenCV")
    it = gx.io.ImageRecordIter(path_imgrec=str(DATA / "images.rec"), data_shape=(3, 8, 9),
                               batch_size=2, preprocess_threads=2, **REF["image_configs"][name])
    batches = list(it)
    assert len(batches) == 3
    for n, batch in enumerate(batches):
        want = IMAGES[f"images/{name}/data{n}"]
        # OpenCV's fixed-point bilinear resize may differ from ours by one grey level
        atol = 1.0 if name == "resize" else 1e-5
        np.testing.assert_allclose(batch.data[0].asnumpy(), want, atol=atol, rtol=1e-6)
        np.testing.assert_array_equal(batch.label[0].asnumpy(), IMAGES[f"images/{name}/label{n}"])
        assert batch.pad == int(IMAGES[f"images/{name}/pad{n}"])


def test_image_record_iter_rejects_what_it_does_not_implement():
    with pytest.raises(gx.io.DataError, match="max_rotate_angle.*not supported"):
        gx.io.ImageRecordIter(path_imgrec=str(DATA / "images.rec"), data_shape=(3, 8, 8),
                              batch_size=2, max_rotate_angle=10)


def test_resize_and_prefetching_iterators():
    data = np.arange(40, dtype="f4").reshape(20, 2)
    base = gx.io.NDArrayIter(data, np.arange(20), batch_size=4)
    resized = gx.io.ResizeIter(base, 7)
    assert len(list(resized)) == 7  # restarts the inner iterator when it runs out
    first = [b.data[0].asnumpy() for b in gx.io.NDArrayIter(data, batch_size=4)]
    pre = gx.io.PrefetchingIter([gx.io.NDArrayIter(data, batch_size=4),
                                 gx.io.NDArrayIter({"x": data}, batch_size=4)],
                                rename_data=[{"data": "a"}, {"x": "b"}])
    assert [d.name for d in pre.provide_data] == ["a", "b"]
    for _ in range(2):
        got = [b.data for b in pre]
        assert len(got) == 5 and all(np.array_equal(g[0], f) for g, f in zip(got, first))
        pre.reset()
    pre.close()


def test_mnist_iter_reads_idx_files(tmp_path):
    images = np.arange(5 * 28 * 28, dtype=np.uint8).reshape(5, 28, 28)
    with gzip.open(tmp_path / "img.gz", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, 5, 28, 28) + images.tobytes())
    (tmp_path / "lab").write_bytes(struct.pack(">II", 0x801, 5) + bytes([3, 1, 4, 1, 5]))
    it = gx.io.MNISTIter(image=str(tmp_path / "img.gz"), label=str(tmp_path / "lab"),
                         batch_size=5, shuffle=False, flat=True)
    batch = next(it)
    assert batch.data[0].shape == (5, 784)
    np.testing.assert_allclose(batch.data[0].asnumpy(), images.reshape(5, -1) / 255.0, rtol=1e-6)
    assert batch.label[0].asnumpy().tolist() == [3, 1, 4, 1, 5]
    with pytest.raises(gx.io.DataError, match="not an MNIST idx file"):
        gx.io.MNISTIter(image=str(tmp_path / "lab"), label=str(tmp_path / "lab"))


def test_iterator_errors_are_clear(tmp_path):
    with pytest.raises(gx.io.DataError, match="'label' has 3 examples.*'data' has 4"):
        gx.io.NDArrayIter({"data": np.zeros((4, 2))}, {"label": np.zeros(3)})
    with pytest.raises(gx.io.DataError, match="last_batch_handle='keep'"):
        gx.io.NDArrayIter(np.zeros((4, 2)), last_batch_handle="keep")
    (tmp_path / "two.csv").write_text("1,2\n3,4\n")
    with pytest.raises(gx.io.DataError, match="has 2 values per row, but the shape \\(3,\\)"):
        gx.io.CSVIter(data_csv=str(tmp_path / "two.csv"), data_shape=(3,), batch_size=1)
    with pytest.raises(gx.io.DataError, match="cannot read data_csv"):
        gx.io.CSVIter(data_csv=str(tmp_path / "missing.csv"), data_shape=(3,))
