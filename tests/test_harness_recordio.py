"""gx.recordio reads files MXNet 1.9.1 wrote identically and writes them byte for byte
(tests/data/harness/mxnet.rec, written by make_reference.py)."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

DATA = Path(__file__).parent / "data" / "harness"
REF = json.loads((DATA / "reference.json").read_text())["recordio"]
RECORDS = [bytes.fromhex(r) for r in REF["records"]]


def test_reads_mxnet_files_sequentially_and_by_key():
    reader = gx.recordio.MXRecordIO(str(DATA / "mxnet.rec"), "r")
    got = [reader.read() for _ in range(len(RECORDS))]
    assert got == RECORDS
    indexed = gx.recordio.MXIndexedRecordIO(str(DATA / "mxnet.idx"), str(DATA / "mxnet.rec"), "r")
    assert indexed.keys[:len(RECORDS)] == REF["keys"]
    for key, payload in reversed(list(zip(REF["keys"], RECORDS))):
        assert indexed.read_idx(key) == payload
    header, payload = gx.recordio.unpack(indexed.read_idx(1001))
    assert (header.flag, header.id, header.id2, payload) == (3, 8, 9, b"vector")
    np.testing.assert_array_equal(header.label, [1.0, 2.0, 3.0])
    header, payload = gx.recordio.unpack(indexed.read_idx(1000))
    assert (header.flag, header.label, header.id, payload) == (0, 3.5, 7, b"payload")


def test_writes_the_same_bytes_as_mxnet(tmp_path):
    writer = gx.recordio.MXIndexedRecordIO(str(tmp_path / "a.idx"), str(tmp_path / "a.rec"), "w")
    for key, payload in zip(REF["keys"], RECORDS):
        writer.write_idx(key, payload)
    writer.write_idx(1000, gx.recordio.pack(gx.recordio.IRHeader(0, 3.5, 7, 0), b"payload"))
    writer.write_idx(1001, gx.recordio.pack(gx.recordio.IRHeader(0, [1.0, 2.0, 3.0], 8, 9),
                                            b"vector"))
    writer.close()
    assert (tmp_path / "a.rec").read_bytes() == (DATA / "mxnet.rec").read_bytes()
    assert (tmp_path / "a.idx").read_text() == (DATA / "mxnet.idx").read_text()
    assert gx.recordio.pack((0, 3.5, 7, 0), b"payload").hex() == REF["packed_scalar"]


def test_image_records_round_trip(tmp_path):
    pytest.importorskip("PIL", reason="image records need Pillow or OpenCV")
    img = np.random.default_rng(0).integers(0, 256, (6, 7, 3), dtype=np.uint8)
    packed = gx.recordio.pack_img((0, 2.0, 5, 0), img, img_fmt=".png")
    header, back = gx.recordio.unpack_img(packed)
    np.testing.assert_array_equal(back, img)  # BGR in, BGR out
    assert header.label == 2.0
    grey = gx.recordio.unpack_img(packed, iscolor=0)[1]
    assert grey.shape == (6, 7)


def test_reset_tell_and_pickling(tmp_path):
    writer = gx.recordio.MXRecordIO(str(tmp_path / "b.rec"), "w")
    writer.write(b"one")
    assert writer.tell() == 12
    writer.write(b"two!")
    writer.close()
    reader = gx.recordio.MXRecordIO(str(tmp_path / "b.rec"), "r")
    assert reader.read() == b"one"
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.read() == b"one"
    reader.reset()
    assert [reader.read(), reader.read(), reader.read()] == [b"one", b"two!", None]


def test_corrupt_files_and_misuse_are_clear_errors(tmp_path):
    (tmp_path / "bad.rec").write_bytes(b"\x00" * 12)
    with pytest.raises(gx.recordio.RecordIOError, match="not the start of a record"):
        gx.recordio.MXRecordIO(str(tmp_path / "bad.rec"), "r").read()
    data = (DATA / "mxnet.rec").read_bytes()
    (tmp_path / "cut.rec").write_bytes(data[:30])
    reader = gx.recordio.MXRecordIO(str(tmp_path / "cut.rec"), "r")
    with pytest.raises(gx.recordio.RecordIOError, match="file ends|truncated"):
        for _ in range(10):
            reader.read()
    with pytest.raises(gx.recordio.RecordIOError, match="open for reading"):
        gx.recordio.MXRecordIO(str(DATA / "mxnet.rec"), "r").write(b"x")
    with pytest.raises(gx.recordio.RecordIOError, match="no record has key 5"):
        gx.recordio.MXIndexedRecordIO(str(DATA / "mxnet.idx"), str(DATA / "mxnet.rec"),
                                      "r").read_idx(5)
