"""Record MXNet 1.9.1's forward outputs and gradients of the detection operators on small
cases, edge cases included, and how it answers bad input (tests/test_vision_detection.py
replays them).

Run with a python that has mxnet==1.9.1 (numpy < 1.24); writes detection.json and
detection.npz next to this script:
    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=2 /path/to/mxvenv/bin/python make_detection.py
"""
import os

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import json  # noqa: E402
import sys  # noqa: E402
import zlib  # noqa: E402

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from detection_cases import ERRORS, MENTIONS, build_cases  # noqa: E402


def _function(op):
    if op.startswith("_contrib_"):
        return getattr(mx.sym.contrib, op[len("_contrib_"):])
    return getattr(mx.sym, op)


def _symbol(op, n_inputs, attrs):
    names = ["in%d" % k for k in range(n_inputs)]
    return _function(op)(*[mx.sym.var(n) for n in names], **attrs), names


def _record(name, spec, arrays):
    sym, names = _symbol(spec["op"], len(spec["inputs"]), spec["attrs"])
    ins = [np.asarray(a) for a in spec["inputs"]]
    grads = spec.get("grad", ())
    req = {n: ("write" if k in grads else "null") for k, n in enumerate(names)}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, type_dict={n: a.dtype for n, a in
                                                             zip(names, ins)},
                          **{n: a.shape for n, a in zip(names, ins)})
    for n, a in zip(names, ins):
        exe.arg_dict[n][:] = a
    outs = exe.forward(is_train=bool(grads))
    for k, a in enumerate(ins):
        arrays["%s/in%d" % (name, k)] = a
    for k, o in enumerate(outs):
        arrays["%s/out%d" % (name, k)] = o.asnumpy()
    if grads:
        rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
        heads = [rng.standard_normal(o.shape).astype(o.dtype) for o in outs]
        exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
        for k, h in enumerate(heads):
            arrays["%s/hg%d" % (name, k)] = h
        for k in grads:
            arrays["%s/grad%d" % (name, k)] = exe.grad_dict[names[k]].asnumpy()
    return {"op": spec["op"], "attrs": {k: str(v) for k, v in spec["attrs"].items()},
            "symbol_json": sym.tojson(), "grad_inputs": [names[k] for k in grads],
            "inputs": [{"name": n, "shape": list(a.shape), "dtype": a.dtype.name}
                       for n, a in zip(names, ins)],
            "tolerance": spec.get("tol", {}), "note": spec.get("note", "")}


def _error(name, spec):
    names = ["in%d" % k for k in range(len(spec["inputs"]))]
    rng = np.random.RandomState(0)
    args = {}
    for n, item in zip(names, spec["inputs"]):
        arr = np.asarray(item) if not isinstance(item, tuple) else \
            rng.uniform(0.1, 1.0, item).astype("float32")
        args[n] = mx.nd.array(arr, dtype=arr.dtype)
    try:
        sym, names = _symbol(spec["op"], len(spec["inputs"]), spec["attrs"])
        outs = sym.bind(mx.cpu(), args).forward()
        mx.nd.waitall()
        [o.asnumpy() for o in outs]
        outcome, message = "accepted", ""
    except Exception as exc:  # noqa: BLE001 - MXNetError and friends: we record the text
        outcome, message = "exception", str(exc).split("Stack trace")[0].strip()[-600:]
    inputs = [{"name": n, "shape": list(np.shape(item)) if not isinstance(item, tuple)
               else list(item), "values": None if isinstance(item, tuple)
               else np.asarray(item).tolist(), "dtype": "float32" if isinstance(item, tuple)
               else np.asarray(item).dtype.name} for n, item in zip(names, spec["inputs"])]
    return {"op": spec["op"], "attrs": {k: str(v) for k, v in spec["attrs"].items()},
            "inputs": inputs, "outcome": outcome, "message": message,
            "mentions": MENTIONS.get(name, []), "note": spec.get("note", "")}


def main():
    arrays, cases = {}, {}
    for name, spec in build_cases().items():
        cases[name] = _record(name, spec, arrays)
    errors = {name: _error(name, spec) for name, spec in ERRORS.items()}
    meta = {"mxnet": mx.__version__, "cases": cases, "errors": errors}
    with open(os.path.join(HERE, "detection.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, "detection.npz"), **arrays)
    print("%d cases, %d error cases" % (len(cases), len(errors)))


if __name__ == "__main__":
    main()
