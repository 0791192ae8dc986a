"""Bounded property-based fuzzing (issue #15) of the symbol JSON and ``.params`` loaders and of
the arguments of bind / simple_bind / forward / backward / reshape / copy_params_from: every
failure is a GraphexecError naming what is wrong, nothing hangs, nothing allocates beyond
what the input declares, and an executor stays usable after an error."""
from __future__ import annotations

import io
import json
import signal
import struct
import tracemalloc
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphexec as gx
from graphexec.core.symbol import ndarray_io

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None)

ODD_NUMBERS = st.sampled_from([0, -1, 1, 2, 2 ** 31, 2 ** 63, -2 ** 63, 10 ** 30, True, 1.5,
                               float("nan"), float("inf")])
ODD_TEXT = st.sampled_from(["", "1e400", "nan", "inf", "-inf", "(1, 2)", "(-1,)", "[0]",
                            "None", "True", "\x00", "\udcff", "9" * 40, "float32", "(3, 3"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | ODD_NUMBERS | ODD_TEXT | st.integers(-3, 10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ODD_TEXT, inner, max_size=3),
    max_leaves=6)


@contextmanager
def bounded(seconds: int = 60):
    """Fail instead of hanging (a guard, not a timing assertion)."""
    def stop(*_):
        raise AssertionError(f"ran for more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def allocating_at_most(limit: int):
    tracemalloc.start()
    try:
        yield
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak <= limit, f"allocated {peak} bytes, more than {limit}"


# -- symbol JSON --------------------------------------------------------------------------------
def _net() -> gx.sym.Symbol:
    data = gx.sym.Variable("data", shape=(2, 3, 4, 4), dtype="float32", lr_mult=1.0)
    conv = gx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    bn = gx.sym.BatchNorm(conv, name="bn")
    fc = gx.sym.FullyConnected(gx.sym.Activation(bn, act_type="relu"), num_hidden=3, name="fc")
    return gx.sym.SoftmaxOutput(fc * 2 + 1, name="softmax")


def _bases() -> list:
    """The network's JSON, and the same partitioned (a region node with its subgraph)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parted = _net().optimize_for("default", op_names={"Activation", "_mul_scalar",
                                                          "_plus_scalar", "FullyConnected"})
    return [json.loads(_net().tojson()), json.loads(parted.tojson())]


BASES = _bases()


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON document."""
    yield prefix, value
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from _paths(inner, prefix + (key,))


ATTR_TEXT = ODD_TEXT | st.sampled_from(["(3, 3)", "(1, 1)", "(0, 0)", "(2, 2, 2)", "relu",
                                        "tanh", "0", "1", "4", "-3", "true", "(1,)"])


def _retouch(draw, doc) -> bool:
    """A gentle mutation: one attribute value, or one input rewired to any node (forward
    references and cycles included); False when the document has no such place."""
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    nodes = [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []
    if not nodes:
        return False
    node = nodes[draw(st.integers(0, len(nodes) - 1))]
    attrs, inputs = node.get("attrs"), node.get("inputs")
    if isinstance(attrs, dict) and attrs and draw(st.booleans()):
        attrs[draw(st.sampled_from(sorted(attrs)))] = draw(ATTR_TEXT)
    elif isinstance(inputs, list) and inputs and isinstance(inputs[0], list) and inputs[0]:
        inputs[0][0] = draw(st.integers(-1, len(nodes) + 1))
    else:
        return False
    return True


@st.composite
def mutated_documents(draw):
    doc = json.loads(json.dumps(BASES[draw(st.integers(0, len(BASES) - 1))]))
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()) and _retouch(draw, doc):
            continue
        paths = list(_paths(doc))[1:]
        path, _ = paths[draw(st.integers(0, len(paths) - 1))]
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.append(parent[path[-1]])
    return json.dumps(doc)


def _small_enough(sym) -> bool:
    """Whether every argument shape is decided and small (the fuzz binds it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args, outs, aux = sym.infer_shape(data=(2, 3, 4, 4))
    shapes = (args or []) + (outs or []) + (aux or [])
    return args is not None and all(np.prod(s, dtype=object) < 10 ** 5 for s in shapes)


@FUZZ
@given(mutated_documents())
def test_fuzzed_symbol_json(text):
    with bounded():
        try:
            sym = gx.sym.load_json(text)
        except gx.GraphexecError as exc:
            assert "<string>" in str(exc)
            return
        assert gx.sym.load_json(sym.tojson()).tojson() == sym.tojson()
        try:
            if "data" not in sym.list_arguments() or not _small_enough(sym):
                return
            exe = sym.simple_bind(gx.cpu(), data=(2, 3, 4, 4))
            exe.forward(is_train=True)
            exe.backward([np.ones(o.shape, o.dtype) for o in exe.outputs])
        except gx.GraphexecError:
            pass


# -- .params ------------------------------------------------------------------------------------
def _params_bytes() -> bytes:
    """A valid file of four arrays (one empty) with keys, written by hand."""
    buf = io.BytesIO()
    arrays = {"arg:w": np.arange(6, dtype="f4").reshape(2, 3), "aux:m": np.ones(3, "f8"),
              "arg:i": np.array([1, 2], "i8"), "arg:e": np.zeros((0, 5), "f4")}
    buf.write(struct.pack("<QQQ", ndarray_io.LIST_MAGIC, 0, len(arrays)))
    for arr in arrays.values():
        buf.write(struct.pack(f"<Iii{arr.ndim}q", ndarray_io.V2_MAGIC, 0, arr.ndim, *arr.shape))
        flag = {np.dtype(v): k for k, v in ndarray_io.TYPE_FLAGS.items()}[arr.dtype]
        buf.write(struct.pack("<iii", 1, 0, flag) + arr.tobytes())
    buf.write(struct.pack("<Q", len(arrays)))
    for key in arrays:
        buf.write(struct.pack("<Q", len(key)) + key.encode())
    return buf.getvalue()


PARAMS = _params_bytes()
WORDS = st.sampled_from([0, 1, 2, 7, 12, 31, 32, 33, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1,
                         2 ** 62, 2 ** 63, 2 ** 64 - 1, ndarray_io.V1_MAGIC, ndarray_io.V3_MAGIC])


@st.composite
def mutated_params(draw):
    data = bytearray(PARAMS)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["word4", "word8", "byte", "truncate", "append"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "word4" and pos + 4 <= len(data):
            data[pos:pos + 4] = struct.pack("<I", draw(WORDS) % 2 ** 32)
        elif kind == "word8" and pos + 8 <= len(data):
            data[pos:pos + 8] = struct.pack("<Q", draw(WORDS) % 2 ** 64)
        elif kind == "byte" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "append":
            data += draw(st.binary(max_size=16))
    return bytes(data)


@FUZZ
@given(content=mutated_params())
def test_fuzzed_params_files(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("p") / "x.params"
    path.write_bytes(content)
    with bounded(), allocating_at_most(2 * len(content) + 2 ** 20):
        try:
            loaded = ndarray_io.load(str(path))
        except gx.ParamsFormatError as exc:
            assert str(path) in str(exc)
            return
    arrays = loaded.values() if isinstance(loaded, dict) else loaded
    assert all(isinstance(a, np.ndarray) for a in arrays)


# -- API arguments ------------------------------------------------------------------------------
ODD_ARRAYS = st.sampled_from([np.zeros((2, 4), "c8"), np.array([["a"] * 4] * 2),
                              np.zeros((4, 2), "f4"), np.zeros((2, 4, 1), "f4"),
                              np.zeros((0, 4), "f4"), np.float32(1), np.zeros((2, 4), object)])
ODD = st.one_of(st.none(), ODD_NUMBERS, ODD_TEXT, ODD_ARRAYS,
                st.lists(st.integers(-2, 3), max_size=3), st.tuples(ODD_NUMBERS, ODD_NUMBERS),
                st.dictionaries(ODD_TEXT, st.integers(), max_size=2))

CALLS = {
    "simple_bind shape": lambda s, e, v: s.simple_bind(gx.cpu(), x=v),
    "simple_bind type_dict": lambda s, e, v: s.simple_bind(gx.cpu(), x=(2, 4),
                                                           type_dict={"x": v}),
    "simple_bind grad_req": lambda s, e, v: s.simple_bind(gx.cpu(), x=(2, 4), grad_req=v),
    "simple_bind ctx": lambda s, e, v: s.simple_bind(v, x=(2, 4)),
    "simple_bind backend": lambda s, e, v: s.simple_bind(gx.cpu(), x=(2, 4), backend=v),
    "simple_bind backend_options": lambda s, e, v: s.simple_bind(
        gx.cpu(), x=(2, 4), backend="default", backend_options=v),
    "bind args": lambda s, e, v: s.bind(gx.cpu(), {**e.arg_dict, "x": v}),
    "bind args list": lambda s, e, v: s.bind(gx.cpu(), v),
    "bind args_grad": lambda s, e, v: s.bind(gx.cpu(), e.arg_dict, args_grad=v),
    "forward": lambda s, e, v: e.forward(x=v),
    "forward is_train": lambda s, e, v: e.forward(is_train=v, x=v),
    "backward": lambda s, e, v: e.backward(v),
    "reshape": lambda s, e, v: e.reshape(x=v),
    "copy_params_from": lambda s, e, v: e.copy_params_from(v),
    "copy_params_from value": lambda s, e, v: e.copy_params_from({"fc_weight": v}),
    "infer_shape": lambda s, e, v: s.infer_shape(x=v),
    "infer_type": lambda s, e, v: s.infer_type(x=v),
    "monitor": lambda s, e, v: (e.set_monitor_callback(v), e.forward()),
}


@pytest.fixture(scope="module")
def executor():
    sym = gx.sym.FullyConnected(gx.sym.Variable("x"), num_hidden=3, name="fc")
    exe = sym.simple_bind(gx.cpu(), x=(2, 4))
    exe.arg_dict["fc_weight"][:] = 1
    return sym, exe


def _declared_bytes(value) -> int:
    """What a shape given as ``value`` may make a bind allocate: its arrays (data, gradient,
    the weight of a 3-unit layer over it, outputs) as float64, generously."""
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in value):
        return 0
    return 64 * int(np.prod([abs(int(d)) for d in value], dtype=object)) * 8


@FUZZ
@given(call=st.sampled_from(sorted(CALLS)), value=ODD)
def test_fuzzed_api_arguments(executor, call, value):
    sym, exe = executor
    with bounded(), allocating_at_most(2 ** 26 + _declared_bytes(value)), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exe.forward(is_train=True)
            CALLS[call](sym, exe, value)
        except gx.GraphexecError as exc:
            assert str(exc)
    exe.set_monitor_callback(None)
    exe.copy_params_from({"fc_weight": np.ones((3, 4), "f4"), "fc_bias": np.zeros(3, "f4")})
    out = exe.forward(x=np.ones((2, 4), "f4"))[0]  # still usable, still right
    np.testing.assert_array_equal(out, np.full((2, 3), 4.0))
