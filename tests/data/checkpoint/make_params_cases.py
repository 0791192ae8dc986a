"""Regenerate the ``.params`` corpus with a real MXNet 1.9.1 (not run by the tests).

    /path/to/mxnet-venv/bin/python tests/data/checkpoint/make_params_cases.py [REFCASES_DIR]

Writes, next to this script:
* ``lenet_small-symbol.json``, ``lenet_small-0003.params``, ``expected.npz``, ``meta.json``:
  the reference checkpoint (copied from REFCASES_DIR/checkpoint_lenet);
* ``nd_*.params``: files written by ``mx.nd.save`` / ``mx.npx.save``, plus two written by
  hand in the pre-V2 layouts (V1 magic, and no magic at all) that MXNet 1.9.1 still reads;
* ``nd_loaded.npz``: what ``mx.nd.load`` (``mx.npx.load`` for V3 files) returned for each file,
  keyed ``<file stem>/<key or index>``; files MXNet cannot read have no entries.
"""
import os
import shutil
import struct
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"]


def nd(values, dtype):
    return mx.nd.array(np.asarray(values), dtype=dtype)


def write_mxnet_files():
    rng = np.random.default_rng(0)
    dtypes = {f"{d}:{i}": nd((rng.standard_normal(shape) * 5), d)
              for i, (d, shape) in enumerate(zip(DTYPES, [(2, 3), (4,), (1, 2, 3), (5,),
                                                          (2, 2), (3, 1), (2,), (2, 2, 2, 1)]))}
    dtypes["empty (0, 3)"] = mx.nd.array(np.zeros((0, 3), "f4"))
    dtypes["ключ"] = nd([1.5], "float32")
    mx.nd.save(path("nd_dtypes"), dtypes)
    mx.nd.save(path("nd_list"), [nd([[1, 2], [3, 4]], "float16"), nd([7], "int64")])
    mx.nd.save(path("nd_empty_dict"), {})
    mx.nd.save(path("nd_scalar_v2"), {"s": mx.nd.array(np.float32(3))})
    mx.nd.save(path("nd_row_sparse"), {"r": mx.nd.sparse.row_sparse_array(
        (np.ones((1, 2), "f4"), [1]), shape=(3, 2))})
    mx.nd.save(path("nd_csr"), {"c": mx.nd.sparse.csr_matrix(np.eye(2, dtype="f4"))})
    with mx.util.np_shape(True), mx.util.np_array(True):
        mx.npx.save(path("nd_np_shape"), {"zero_d": mx.np.array(5.0),
                                          "empty": mx.np.ones((2, 0, 4), dtype="int32"),
                                          "m": mx.np.array([[1.0, 2.0]])})


def write_legacy_files():
    def header(n):
        return struct.pack("<QQQ", 0x112, 0, n)

    def keys(names):
        return struct.pack("<Q", len(names)) + b"".join(
            struct.pack("<Q", len(k)) + k.encode() for k in names)
    ctx_f32, ctx_f64 = struct.pack("<iii", 1, 0, 0), struct.pack("<iii", 2, 1, 1)
    v1 = (struct.pack("<II2q", 0xF993FAC8, 2, 2, 3) + ctx_f32
          + np.arange(6, dtype="<f4").tobytes())
    v0 = struct.pack("<III", 2, 3, 2) + ctx_f64 + np.arange(6, dtype="<f8").tobytes()
    with open(path("nd_legacy_v1"), "wb") as f:
        f.write(header(1) + v1 + keys(["v1"]))
    with open(path("nd_legacy_v0"), "wb") as f:
        f.write(header(1) + v0 + keys(["v0 (gpu context)"]))


def record_loads():
    loaded = {}
    for name in sorted(os.listdir(HERE)):
        if not name.startswith("nd_") or not name.endswith(".params"):
            continue
        try:
            if name == "nd_np_shape.params":
                with mx.util.np_shape(True), mx.util.np_array(True):
                    got = {k: v.as_nd_ndarray() for k, v in mx.npx.load(path(name[:-7])).items()}
            else:
                got = mx.nd.load(path(name[:-7]))
        except mx.base.MXNetError as exc:
            print(f"{name}: MXNet cannot load it: {str(exc).splitlines()[-1]}")
            continue
        items = got.items() if isinstance(got, dict) else enumerate(got)
        for key, value in items:
            if value.stype != "default":
                print(f"{name}: {key} is {value.stype}")
                continue
            loaded[f"{name[:-7]}/{key}"] = value.asnumpy()
    np.savez(os.path.join(HERE, "nd_loaded.npz"), **loaded)


def path(stem):
    return os.path.join(HERE, stem + ".params")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/refcases"
    for name in ["lenet_small-symbol.json", "lenet_small-0003.params", "expected.npz",
                 "meta.json"]:
        shutil.copyfile(os.path.join(root, "checkpoint_lenet", name), os.path.join(HERE, name))
    write_mxnet_files()
    write_legacy_files()
    record_loads()


if __name__ == "__main__":
    main()
