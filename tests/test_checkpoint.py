"""MXNet's ``.params`` binary (``graphexec.core.symbol.ndarray_io``) and checkpoints (``gx.model``).

Files under tests/data/checkpoint were written by MXNet 1.9.1 (``make_params_cases.py``);
``nd_loaded.npz`` holds what MXNet itself read back from each of them."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.attrs import DType
from graphexec.core.ir.errors import GraphexecError, ParamsFormatError
from graphexec.core.ir.graph import Entry, Node
from graphexec.core.ops.registry import OpDef
from graphexec.core.symbol import ndarray_io
from graphexec.core.symbol.symbol import Symbol

DATA = Path(__file__).parent / "data" / "checkpoint"
MXNET_LOADED = dict(np.load(DATA / "nd_loaded.npz"))
READABLE_BY_MXNET = sorted({k.split("/")[0] for k in MXNET_LOADED})
WRITTEN_BY_ND_SAVE = ["nd_dtypes", "nd_list", "nd_empty_dict", "lenet_small-0003"]


def params(stem: str) -> Path:
    return DATA / f"{stem}.params"


def as_items(loaded):
    return loaded.items() if isinstance(loaded, dict) else enumerate(loaded)


# -- reading ----------------------------------------------------------------------------------
@pytest.mark.parametrize("stem", READABLE_BY_MXNET)
def test_load_matches_what_mxnet_reads(stem):
    got = {f"{stem}/{k}": v for k, v in as_items(ndarray_io.load(params(stem)))}
    want = {k: v for k, v in MXNET_LOADED.items() if k.startswith(stem + "/")}
    assert list(got) == list(want)
    for key, arr in got.items():
        assert arr.dtype == want[key].dtype and arr.shape == want[key].shape, key
        np.testing.assert_array_equal(arr, want[key], err_msg=key)


def test_load_returns_list_or_dict():
    assert isinstance(ndarray_io.load(params("nd_list")), list)
    assert ndarray_io.load(params("nd_empty_dict")) == []
    lenet = ndarray_io.load(params("lenet_small-0003"))
    assert list(lenet)[:2] == ["arg:conv1_weight", "arg:conv1_bias"]
    assert lenet["arg:conv1_weight"].flags.writeable


def test_load_zero_d_array_written_by_mxnet_v2():
    # MXNet 1.9.1 writes this but cannot read it back; the data is all there
    (value,) = ndarray_io.load(params("nd_scalar_v2")).values()
    assert value.shape == () and value.dtype == np.float32 and value == 3.0


@pytest.mark.parametrize("stem, kind", [("nd_row_sparse", "row_sparse"), ("nd_csr", "csr")])
def test_sparse_storage_is_rejected(stem, kind):
    message = rf"{stem}\.params: array 0 of 1: {kind} \(sparse\) storage is not supported"
    with pytest.raises(ParamsFormatError, match=message):
        ndarray_io.load(params(stem))


# -- writing -----------------------------------------------------------------------------------
@pytest.mark.parametrize("stem", WRITTEN_BY_ND_SAVE)
def test_save_is_byte_identical_to_mx_nd_save(stem, tmp_path):
    ndarray_io.save(tmp_path / "out.params", ndarray_io.load(params(stem)))
    assert (tmp_path / "out.params").read_bytes() == params(stem).read_bytes()


def test_save_np_shape_matches_mx_npx_save(tmp_path):
    ndarray_io.save(tmp_path / "out.params", ndarray_io.load(params("nd_np_shape")))
    assert (tmp_path / "out.params").read_bytes() == params("nd_np_shape").read_bytes()


def test_save_v2_zero_d_like_mxnet_when_asked(tmp_path):
    data = ndarray_io.load(params("nd_scalar_v2"))
    ndarray_io.save(tmp_path / "out.params", data, np_shape=False)
    assert (tmp_path / "out.params").read_bytes() == params("nd_scalar_v2").read_bytes()


def array_magic(path: Path) -> int:
    return struct.unpack_from("<I", path.read_bytes(), 24)[0]


def test_zero_d_arrays_switch_the_file_to_v3(tmp_path):
    ndarray_io.save(tmp_path / "a.params", {"s": np.float64(2.5), "v": np.ones(2, "f4")})
    ndarray_io.save(tmp_path / "b.params", {"v": np.ones(2, "f4")}, np_shape=True)
    ndarray_io.save(tmp_path / "c.params", {"v": np.ones(2, "f4")})
    assert array_magic(tmp_path / "a.params") == ndarray_io.V3_MAGIC
    assert array_magic(tmp_path / "b.params") == ndarray_io.V3_MAGIC
    assert array_magic(tmp_path / "c.params") == ndarray_io.V2_MAGIC
    back = ndarray_io.load(tmp_path / "a.params")
    assert back["s"].shape == () and back["s"] == 2.5


def test_save_accepts_any_layout_and_byte_order(tmp_path):
    base = np.arange(24, dtype="f8").reshape(4, 6)
    data = {"fortran": np.asfortranarray(base), "strided": base[::2, ::3],
            "big_endian": base.astype(">f4"), "bool": base > 7, "empty": np.zeros((2, 0, 3), "i8")}
    ndarray_io.save(tmp_path / "x.params", data)
    back = ndarray_io.load(tmp_path / "x.params")
    for key, arr in data.items():
        np.testing.assert_array_equal(back[key], arr)
        assert back[key].dtype == arr.dtype.newbyteorder("=")
    ndarray_io.save(tmp_path / "one.params", base)
    np.testing.assert_array_equal(ndarray_io.load(tmp_path / "one.params")[0], base)


@pytest.mark.parametrize("data, fragment", [
    ({"x": np.zeros(2, "int16")}, "dtype int16 cannot be stored"),
    ({"x": np.zeros(2, "complex64")}, "dtype complex64 cannot be stored"),
    ({1: np.zeros(2)}, "keys must be strings"),
    ({"x": [1.0, 2.0]}, "'x': expected a numpy or cupy array, got list"),
])
def test_save_rejects_what_mxnet_cannot_hold(tmp_path, data, fragment):
    with pytest.raises(ParamsFormatError, match=fragment):
        ndarray_io.save(tmp_path / "x.params", data)


# -- corrupt files -------------------------------------------------------------------------------
def corrupt(tmp_path: Path, stem: str, offset: int, fmt: str, value: int) -> Path:
    raw = bytearray(params(stem).read_bytes())
    struct.pack_into(fmt, raw, offset, value)
    out = tmp_path / f"{stem}.params"
    out.write_bytes(bytes(raw))
    return out


# nd_list: header 24 bytes; array 0 = magic@24 stype@28 ndim@32 dims@36,44 ctx@52 flag@60
@pytest.mark.parametrize("offset, fmt, value, fragment", [
    (0, "<Q", 0x113, "not an MXNet NDArray file: starts with 0x113, expected the list magic"),
    (16, "<Q", 10 ** 9, "announces 1000000000 arrays"),
    (24, "<I", 1000, "array 0 of 2: expected an array magic (0xf993fac9) or a number of dim"),
    (28, "<i", 7, "array 0 of 2: unknown storage type 7; expected dense storage (0)"),
    (32, "<i", 99, "array 0 of 2: expected an array magic"),
    (36, "<q", 10 ** 12, "array 0 of 2: shape (1000000000000, 2) of float16 needs"),
    (44, "<q", -2, "negative dimension in shape (2, -2)"),
    (52, "<i", 77, "array 0 of 2: expected a context after shape (2, 2)"),
    (60, "<i", 9, "array 0 of 2: unknown type flag 9, expected one of 0 (float32)"),
    (60, "<i", 12, "bfloat16 has no numpy equivalent"),
    (112, "<Q", 1, "key table: the file names 1 keys for 2 arrays"),
])
def test_corrupt_fields_are_named(tmp_path, offset, fmt, value, fragment):
    path = corrupt(tmp_path, "nd_list", offset, fmt, value)
    with pytest.raises(ParamsFormatError) as info:
        ndarray_io.load(path)
    assert str(info.value).startswith(str(path))
    assert fragment in str(info.value)


def test_every_truncation_is_reported(tmp_path):
    raw = params("nd_dtypes").read_bytes()
    path = tmp_path / "cut.params"
    for cut in range(len(raw)):
        path.write_bytes(raw[:cut])
        with pytest.raises(ParamsFormatError, match="truncated|announces|exceeds"):
            ndarray_io.load(path)


def test_random_corruption_never_escapes_as_another_error(tmp_path):
    raw = params("nd_dtypes").read_bytes()
    rng = np.random.default_rng(0)
    path = tmp_path / "noise.params"
    for _ in range(300):
        damaged = bytearray(raw)
        for pos in rng.integers(0, len(raw), size=3):
            damaged[pos] = int(rng.integers(0, 256))
        path.write_bytes(bytes(damaged))
        try:
            ndarray_io.load(path)
        except ParamsFormatError:
            pass


def test_duplicate_keys_and_bad_key_bytes(tmp_path):
    raw = params("nd_list").read_bytes()[:-8]  # drop "0 keys"
    keys = struct.pack("<Q", 2) + 2 * (struct.pack("<Q", 1) + b"k")
    (tmp_path / "dup.params").write_bytes(raw + keys)
    with pytest.raises(ParamsFormatError, match=r"key 1 of 2: key 1 \('k'\) appears twice"):
        ndarray_io.load(tmp_path / "dup.params")
    bad = struct.pack("<Q", 2) + struct.pack("<Q", 1) + b"\xff" + struct.pack("<Q", 1) + b"k"
    (tmp_path / "utf.params").write_bytes(raw + bad)
    with pytest.raises(ParamsFormatError, match="key 0 of 2: key bytes .* are not UTF-8"):
        ndarray_io.load(tmp_path / "utf.params")


def test_missing_file(tmp_path):
    with pytest.raises(ParamsFormatError, match="cannot read parameter file .*nope.params"):
        ndarray_io.load(tmp_path / "nope.params")


# -- checkpoints ----------------------------------------------------------------------------------
META = json.loads((DATA / "meta.json").read_text())
PREFIX = str(DATA / META["prefix"])


def test_gx_model_exposes_nd_load_and_save(tmp_path):
    gx.model.nd_save(tmp_path / "a.params", [np.ones(2, "f4")])
    np.testing.assert_array_equal(gx.model.nd_load(tmp_path / "a.params")[0], np.ones(2))


def test_load_params_strips_prefixes():
    arg_params, aux_params = gx.model.load_params(PREFIX, META["epoch"])
    args = [a for a in META["list_arguments"] if a not in ("data", "softmax_label")]
    assert list(arg_params) == args
    assert list(aux_params) == META["list_auxiliary_states"]
    assert arg_params["conv1_weight"].shape == (6, 1, 5, 5)


def test_save_checkpoint_writes_mxnet_bytes(tmp_path):
    arg_params, aux_params = gx.model.load_params(PREFIX, META["epoch"])
    prefix = str(tmp_path / "copy")
    gx.model.save_checkpoint(prefix, META["epoch"], None, arg_params, aux_params)
    saved = Path(gx.model.params_file(prefix, META["epoch"]))
    assert saved.name == "copy-0003.params"
    assert saved.read_bytes() == Path(gx.model.params_file(PREFIX, META["epoch"])).read_bytes()
    assert not Path(gx.model.symbol_file(prefix)).exists()


def small_symbol():
    x = gx.sym.Variable("x")
    return gx.sym.relu(x * 2, name="act") + gx.sym.Variable("b")


def test_checkpoint_round_trip(tmp_path):
    prefix = str(tmp_path / "net")
    sym = small_symbol()
    arg_params = {"x": np.arange(3, dtype="f4"), "b": np.ones(3, "f8")}
    gx.model.save_checkpoint(prefix, 12, sym, arg_params, {})
    sym2, args2, aux2 = gx.model.load_checkpoint(prefix, 12)
    assert sym2.tojson() == sym.tojson() and aux2 == {}
    assert list(args2) == ["x", "b"] and args2["b"].dtype == np.float64
    np.testing.assert_array_equal(args2["x"], arg_params["x"])


def test_missing_epoch_names_the_saved_ones(tmp_path):
    prefix = str(tmp_path / "net")
    for epoch in (1, 7):
        gx.model.save_checkpoint(prefix, epoch, small_symbol(), {"x": np.ones(1, "f4")}, {})
    with pytest.raises(ParamsFormatError, match=r"net-0003.params' does not exist; epochs "
                                                r"saved under this prefix: 1, 7"):
        gx.model.load_checkpoint(prefix, 3)
    with pytest.raises(GraphexecError, match="cannot read symbol file"):
        gx.model.load_checkpoint(str(tmp_path / "other"), 1)


@pytest.mark.parametrize("data, fragment", [
    ({"conv_weight": np.ones(2)}, "key 'conv_weight' is not of the form 'arg:<name>'"),
    ({"opt:state": np.ones(2)}, "key 'opt:state' is not of the form"),
    ([np.ones(2)], "holds a list of 1 unnamed arrays"),
])
def test_bad_checkpoint_keys(tmp_path, data, fragment):
    prefix = str(tmp_path / "bad")
    ndarray_io.save(gx.model.params_file(prefix, 0), data)
    with pytest.raises(ParamsFormatError, match=fragment):
        gx.model.load_params(prefix, 0)


def test_empty_checkpoint_has_no_params(tmp_path):
    prefix = str(tmp_path / "empty")
    gx.model.save_checkpoint(prefix, 0, small_symbol(), {}, {})
    assert gx.model.load_params(prefix, 0) == ({}, {})


AMP_CAST = OpDef("amp_cast", params={"dtype": DType()})
AMP_MULTICAST = OpDef("amp_multicast", inputs=("data0", "data1"), outputs=("out0", "out1"))


def with_amp_casts():
    """x -> amp_cast -> relu; (relu, y) -> amp_multicast -> elemwise_add of both outputs."""
    x, y = gx.sym.Variable("x"), gx.sym.Variable("y")
    cast = Node(AMP_CAST, "cast0", {"dtype": "float16"}, AMP_CAST.parse({"dtype": "float16"}),
                [x.outputs[0]])
    act = gx.sym.relu(Symbol([Entry(cast)]), name="act")
    multi = Node(AMP_MULTICAST, "mc0", {}, AMP_MULTICAST.parse({}),
                 [act.outputs[0], y.outputs[0]])
    return gx.sym.elemwise_add(Symbol([Entry(multi, 0)]), Symbol([Entry(multi, 1)]), name="add")


def test_save_checkpoint_removes_amp_casts(tmp_path):
    prefix = str(tmp_path / "amp")
    gx.model.save_checkpoint(prefix, 0, with_amp_casts(), {}, {})
    text = Path(gx.model.symbol_file(prefix)).read_text()
    assert "amp_" not in text
    with gx.name.NameManager():
        x, y = gx.sym.Variable("x"), gx.sym.Variable("y")
        plain = gx.sym.elemwise_add(gx.sym.relu(x, name="act"), y, name="add")
    assert text == plain.tojson()
    gx.model.save_checkpoint(prefix, 0, with_amp_casts(), {}, {}, remove_amp_cast=False)
    assert '"op": "amp_multicast"' in Path(gx.model.symbol_file(prefix)).read_text()


def test_lenet_checkpoint_matches_mxnet():
    # needs Convolution, Pooling, BatchNorm, FullyConnected and SoftmaxOutput kernels
    expected = np.load(DATA / "expected.npz")
    sym, arg_params, aux_params = gx.model.load_checkpoint(PREFIX, META["epoch"])
    assert sym.list_arguments() == META["list_arguments"]
    assert sym.list_auxiliary_states() == META["list_auxiliary_states"]
    data = expected["data"]
    args = dict(arg_params, data=data, softmax_label=np.zeros(data.shape[0], "f4"))
    exe = sym.bind(gx.cpu(), args, aux_states=aux_params, grad_req="null")
    out = exe.forward(is_train=META["is_train"])[0]
    np.testing.assert_allclose(out, expected["out0"], rtol=1e-5, atol=1e-6)


def test_lenet_checkpoint_round_trip_is_byte_identical(tmp_path):
    sym, arg_params, aux_params = gx.model.load_checkpoint(PREFIX, META["epoch"])
    prefix = str(tmp_path / META["prefix"])
    gx.model.save_checkpoint(prefix, META["epoch"], sym, arg_params, aux_params)
    for name in (gx.model.symbol_file(PREFIX), gx.model.params_file(PREFIX, META["epoch"])):
        assert (tmp_path / Path(name).name).read_bytes() == Path(name).read_bytes(), name
