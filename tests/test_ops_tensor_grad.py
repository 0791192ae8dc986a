"""Gradients of the tensor, slicing, matrix, reduce and indexing families beyond the
finite-difference check (tests/test_op_gradients.py): MXNet 1.9.1's backward results and
backward graphs for the tricky cases (repeated and out-of-range indices, every index mode,
ties in max/min, a zero in prod, NaNs, Concat/split, slices with steps, Pad, UpSampling,
transposed products), recorded by tests/data/tensor/generate_grad.py; zero gradients of
index inputs and index-valued ops; where this implementation departs from MXNet."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.passes.gradient import NoGradientError

DATA = pathlib.Path(__file__).parent / "data" / "tensor"
REFERENCE = json.loads((DATA / "grad_reference.json").read_text())


@pytest.fixture(scope="module")
def arrays():
    with np.load(DATA / "grad_reference.npz") as npz:
        return dict(npz)


def _run(name: str, arrays: dict):
    """Bind the reference case as MXNet did, run one training forward and backward."""
    meta = REFERENCE[name]
    sym = gx.sym.load_json(meta["symbol"])
    args = {f"in{i}": arrays[f"{name}:in{i}"].copy() for i in range(meta["inputs"])}
    grads = {n: np.zeros_like(args[n]) for n, req in meta["grad_req"].items() if req == "write"}
    exe = sym.bind(gx.cpu(), args, args_grad=grads, grad_req=meta["grad_req"])
    exe.forward(is_train=True)
    exe.backward([arrays[f"{name}:head{i}"] for i in range(meta["heads"])])
    return exe


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_gradients_match_mxnet(name, arrays):
    exe = _run(name, arrays)
    for arg, req in REFERENCE[name]["grad_req"].items():
        if req == "null":
            continue
        got, want = exe.grad_dict[arg], arrays[f"{name}:grad:{arg}"]
        assert got.shape == want.shape and got.dtype == want.dtype, (name, arg)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{name}: {arg}")


def _structure(debug_str: str) -> list[str]:
    """The graph of a debug_str: nodes, their inputs, control deps and attribute names
    (attribute values are spelt differently, e.g. true / True)."""
    lines, in_attrs = [], False
    for raw in debug_str.splitlines():
        line = raw.strip()
        if not line or line.startswith("Total"):
            continue
        if line.endswith(":") or line.startswith(("Op:", "Variable:", "-")):
            in_attrs = line == "Attrs:"
        elif in_attrs:
            line = line.split("=", 1)[0]
        lines.append(line)
    return lines


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_backward_graph_matches_mxnet(name, arrays):
    exe = _run(name, arrays)
    assert _structure(exe.debug_str()) == _structure(REFERENCE[name]["debug_str"])


# -- zero gradients ---------------------------------------------------------------------------
def _grads(sym, inputs: dict, grad_req="write"):
    grads = {n: np.full_like(a, 7) for n, a in inputs.items()}
    exe = sym.bind(gx.cpu(), dict(inputs), args_grad=grads, grad_req=grad_req)
    outs = exe.forward(is_train=True)
    exe.backward([np.ones(o.shape, o.dtype) for o in outs])
    return exe.grad_dict


@pytest.mark.parametrize("op,attrs", [("argmax", {"axis": 1}), ("argmin", {}),
                                      ("one_hot", {"depth": 4})])
def test_index_valued_ops_have_zero_gradient(op, attrs):
    x = np.array([[0.0, 2.0, 1.5], [3.0, 1.0, 2.0]])
    grads = _grads(getattr(gx.sym, op)(gx.sym.var("x"), **attrs), {"x": x})
    assert grads["x"].shape == x.shape and not grads["x"].any()


@pytest.mark.parametrize("op,attrs,shapes", [
    ("take", {"mode": "wrap"}, [(4, 3), (2, 2)]),
    ("pick", {"axis": 0}, [(4, 3), (3,)]),
    ("gather_nd", {}, [(4, 3), (2, 5)]),
])
def test_index_inputs_get_zero_gradient(op, attrs, shapes):
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shapes[0])
    index = np.floor(rng.uniform(0, 3, size=shapes[1]))
    sym = getattr(gx.sym, op)(gx.sym.var("a"), gx.sym.var("i"), **attrs)
    grads = _grads(sym, {"a": data, "i": index})
    assert not grads["i"].any() and grads["a"].any()


def test_embedding_data_gradient_is_zero():
    """MXNet refuses grad_req 'write' for Embedding's data; here it is a zero gradient."""
    sym = gx.sym.Embedding(gx.sym.var("d"), gx.sym.var("w"), input_dim=4, output_dim=2)
    grads = _grads(sym, {"d": np.array([1.0, 1.0, 3.0]), "w": np.ones((4, 2))})
    assert not grads["d"].any()
    np.testing.assert_array_equal(grads["w"], [[0, 0], [2, 2], [0, 0], [1, 1]])


def test_embedding_weight_gradient_accumulates_with_grad_req_add():
    sym = gx.sym.Embedding(gx.sym.var("d"), gx.sym.var("w"), input_dim=3, output_dim=2)
    w_grad = np.ones((3, 2), "float32")
    exe = sym.bind(gx.cpu(), {"d": np.array([2, 2, 0], "int32"), "w": np.ones((3, 2), "float32")},
                   args_grad={"w": w_grad}, grad_req={"d": "null", "w": "add"})
    exe.forward(is_train=True)
    exe.backward([np.ones((3, 2), "float32")])
    np.testing.assert_array_equal(exe.grad_dict["w"], [[2, 2], [1, 1], [3, 3]])


def test_gather_nd_negative_indices_credit_the_wrapped_element():
    """Forward reads data[-1] as the last row; the gradient goes there too (MXNet 1.9.1's
    backward mishandles negative indices)."""
    sym = gx.sym.gather_nd(gx.sym.var("a"), gx.sym.var("i"))
    grads = _grads(sym, {"a": np.zeros((4, 3)), "i": np.array([[-1, 3, 3], [0, -3, 0]], "f8")})
    want = np.zeros((4, 3))
    want[3, 0] = 3
    np.testing.assert_array_equal(grads["a"], want)


def test_argmax_channel_is_not_differentiable():
    sym = gx.sym.argmax_channel(gx.sym.var("x"))
    with pytest.raises(NoGradientError, match="argmax_channel"):
        sym.simple_bind(gx.cpu(), x=(2, 3))
    exe = sym.simple_bind(gx.cpu(), grad_req="null", x=(2, 3))
    assert exe.forward()[0].shape == (2,)


def test_multi_output_backward_with_grad_req_add():
    """Concat's backward writes one gradient per input; 'add' accumulates into each."""
    a, b = gx.sym.var("a"), gx.sym.var("b")
    sym = gx.sym.Concat(a, b, dim=0)
    grads = {"a": np.ones((1, 2)), "b": np.full((2, 2), 5.0)}
    exe = sym.bind(gx.cpu(), {"a": np.zeros((1, 2)), "b": np.zeros((2, 2))}, args_grad=grads,
                   grad_req="add")
    exe.forward(is_train=True)
    exe.backward([np.arange(6.0).reshape(3, 2)])
    np.testing.assert_array_equal(exe.grad_dict["a"], [[1, 2]])
    np.testing.assert_array_equal(exe.grad_dict["b"], [[7, 8], [9, 10]])
