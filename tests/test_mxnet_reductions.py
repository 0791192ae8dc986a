"""MXNet 1.9.1's reductions and gradient formulas bit for bit (values recorded from the oracle
by tests/data/rest/reductions/make_reductions.py): sums, means, nansums, products and norms
over rows, columns and mixed axes in float32, float16 and float64 (MXNet's sequential Kahan
sums, LAPACK-scaled 2-norms, float16 rounded at every step), their infinities and NaN
(nansum turns NaN after an infinity, two infinite entries make the 2-norm NaN), and the
gradients of broadcasting, tile, repeat and the binary, scalar and unary ops whose
derivatives MXNet rounds in its own order."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

DATA = np.load(Path(__file__).parent / "data" / "rest" / "reductions" / "reductions.npz")
REDUCTIONS = sorted({k.split("/")[0] for k in DATA.files if not k.startswith("grad_")})
GRADIENTS = sorted({k.split("/")[0] for k in DATA.files if k.startswith("grad_")})
#: cases whose forward calls libm (log10, log2): numpy's vectorised loops and libm may differ
#: in the last bit by machine, so only their gradients (a constant over x) are compared
LIBM_FORWARD = {"grad_log10", "grad_log2"}


@pytest.fixture(autouse=True)
def _needs_numba():
    pytest.importorskip("numba", reason="MXNet's sequential reductions are numba's loops "
                                        "(without numba numpy's sums, within rounding)")


def _exact(got, want, what: str) -> None:
    assert got.dtype == want.dtype, what
    np.testing.assert_array_equal(got, want, err_msg=what, strict=True)
    assert np.array_equal(np.signbit(got), np.signbit(want)), f"{what}: signed zeros"


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_matches_mxnet_bit_for_bit(name):
    x = DATA[f"{name}/in0"]
    attrs = ast.literal_eval(str(DATA[f"{name}/attrs"]))
    got = getattr(gx.nd, str(DATA[f"{name}/op"]))(gx.nd.array(x, dtype=x.dtype), **attrs)
    _exact(got.asnumpy(), DATA[f"{name}/out"], name)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_in_a_graph_matches_mxnet(name):
    """The same through a bound executor (the kernel made once, run twice)."""
    x = DATA[f"{name}/in0"]
    attrs = ast.literal_eval(str(DATA[f"{name}/attrs"]))
    sym = getattr(gx.sym, str(DATA[f"{name}/op"]))(gx.sym.Variable("x"), **attrs)
    exe = sym.simple_bind(gx.cpu(), grad_req="null", type_dict={"x": x.dtype}, x=x.shape)
    exe.arg_dict["x"][...] = x
    for _ in range(2):
        _exact(exe.forward()[0].copy(), DATA[f"{name}/out"], name)


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradient_matches_mxnet_bit_for_bit(name):
    sym = gx.sym.load_json(str(DATA[f"{name}/json"]))
    names = sym.list_arguments()
    args = {k: DATA[f"{name}/in_{k}"] for k in names}
    exe = sym.simple_bind(gx.cpu(), grad_req="write", **{k: v.shape for k, v in args.items()})
    for k, v in args.items():
        exe.arg_dict[k][...] = v
    out = exe.forward(is_train=True)[0].copy()
    if name not in LIBM_FORWARD:
        _exact(out, DATA[f"{name}/out"], f"{name} output")
    exe.backward([DATA[f"{name}/og"]])
    for k in names:
        _exact(exe.grad_dict[k], DATA[f"{name}/grad_{k}"], f"{name} gradient of {k}")


def test_kahan_sum_keeps_what_pairwise_float32_loses():
    """The recorded case in words: 1e8 plus eight ones is 100000008 (adding them one by one
    in float32 gives 1e8), and a sum turned infinite stays infinite (the compensation
    resets)."""
    x = gx.nd.array(np.array([[1e8] + [1] * 8, [np.inf, 1, 2] + [0] * 6], np.float32))
    np.testing.assert_array_equal(gx.nd.sum(x, axis=1).asnumpy(), [100000008, np.inf])
    naive = np.float32(1e8)
    for _ in range(8):
        naive += np.float32(1)
    assert naive == np.float32(1e8)


def test_reductions_without_the_loops_stay_numpy_sums(monkeypatch):
    """Where the loops cannot run (no numba: no compiled loop) the kernels fall back to
    numpy's reductions, which agree within rounding (and not bit for bit here)."""
    from graphexec.backends.default.kernels import reducers
    monkeypatch.setattr(reducers, "_loop", lambda *a: None)
    x = DATA["sum_rows_f32/in0"]
    got = gx.nd.sum(gx.nd.array(x), axis=1).asnumpy()
    np.testing.assert_allclose(got, DATA["sum_rows_f32/out"], rtol=1e-5)
    assert not np.array_equal(got, DATA["sum_rows_f32/out"])
    assert reducers.Reduction.build(np, x.shape, x.dtype, (1,), reducers.SUM) is None


@pytest.mark.parametrize("op,scalar,expected", [
    ("broadcast_power", None, lambda og, x, b, y: (og * (x ** (b - 1) * b),
                                                   og * (y * np.log(x)))),
    ("broadcast_hypot", None, lambda og, x, b, y: (og * (x / y), og * (b / y))),
    ("_power_scalar", 1.7, lambda og, x, s, y: (og * (x ** (s - 1) * s),)),
    ("_rpower_scalar", 1.7, lambda og, x, s, y: (og * (y * np.float32(np.log(1.7))),)),
    ("_hypot_scalar", 1.7, lambda og, x, s, y: (og * (x / np.hypot(x, s)),)),
    ("cbrt", None, lambda og, x, s, y: (og * (1 / (3 * (y * y))),)),
    ("rcbrt", None, lambda og, x, s, y: (og * (-1 / (3 * np.cbrt(x) * x)),)),
    ("arcsinh", None, lambda og, x, s, y: (og * (1 / np.hypot(x, 1)),)),
])
def test_derivatives_are_rounded_in_mxnets_order(op, scalar, expected):
    """Derivatives that go through libm (pow, log, hypot, cbrt), whose last bit depends on
    the machine's library: the output gradient times MXNet's derivative, each operation
    rounded where MXNet rounds it (power_grad x^(b-1) * b, power_rgrad y * log(x),
    hypot_grad x / hypot, cbrt_grad 1 / (3 y^2), rcbrt_grad -1 / (3 cbrt(x) x), arcsinh_grad
    1 / hypot(x, 1)), with numpy's functions on both sides."""
    rng = np.random.default_rng(4)
    x = rng.uniform(0.1, 0.9, (3, 8)).astype(np.float32)
    og = rng.standard_normal((3, 8)).astype(np.float32)
    a = gx.sym.Variable("a")
    if op.startswith("broadcast_"):
        b = rng.uniform(0.1, 0.9, (1, 8)).astype(np.float32)
        sym, args = getattr(gx.sym, op)(a, gx.sym.Variable("b")), {"a": x, "b": b}
    elif scalar is not None:
        b = np.float32(scalar)
        sym, args = getattr(gx.sym._internal, op)(a, scalar=scalar), {"a": x}
    else:
        b = None
        sym, args = getattr(gx.sym, op)(a), {"a": x}
    exe = sym.simple_bind(gx.cpu(), grad_req="write", **{k: v.shape for k, v in args.items()})
    for k, v in args.items():
        exe.arg_dict[k][...] = v
    y = exe.forward(is_train=True)[0].copy()
    exe.backward([og])
    want = expected(og, x, b, y)
    _exact(exe.grad_dict["a"], want[0], f"{op} gradient of a")
    if len(want) > 1:
        _exact(exe.grad_dict["b"], want[1].sum(axis=0, keepdims=True, dtype=np.float64)
               .astype(np.float32), f"{op} gradient of b")
