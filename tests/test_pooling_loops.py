"""The native 1-D and 2-D pooling's compiled loops (backends/default/kernels/pool_loops.py): MXNet
1.9.1's numbers bit for bit (values recorded from the oracle by
tests/data/nn/pooling/make_pooling.py: max with NaN, infinities and the lowest value; avg
summing each window in row-major order then dividing, as oneDNN's float32 'valid' pooling,
or dividing each element first, as MXNet's own pooling of float64 and 'full' windows; sum;
padding, strides 1 to 3, whole-map and global pooling; max pooling in training and its
gradient, each dY added at its window's first maximum in row-major output order, ties and
NaN included; the avg and sum gradients, dY / count over each window in the same order),
and the same numbers as the numpy passes they replace (max exactly, sums
and gradients within rounding), the planes split across threads too; max pooling over
channels-last data (the rows loops) against the same MXNet records."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.backends.default.kernels import conv, conv_grad

DATA = np.load(Path(__file__).parent / "data" / "nn" / "pooling" / "pooling.npz")
CASES = sorted({k.split("/")[0] for k in DATA.files if not k.startswith("grad_")})
GRADIENTS = sorted({k.split("/")[0] for k in DATA.files if k.startswith("grad_")})
S = gx.sym


@pytest.fixture(autouse=True)
def _needs_numba():
    pytest.importorskip("numba", reason="the pooling loops are numba's (without numba the "
                                        "numpy passes run: max exact, sums within rounding)")


def _attrs(name: str) -> dict:
    return ast.literal_eval(str(DATA[f"{name}/attrs"]))


@pytest.mark.parametrize("name", CASES)
def test_pooling_matches_mxnet_bit_for_bit(name):
    x, want = DATA[f"{name}/in"], DATA[f"{name}/out"]
    exe = S.Pooling(S.Variable("x"), **_attrs(name)).simple_bind(
        gx.cpu(), grad_req="null", x=x.shape, type_dict={"x": x.dtype})
    exe.arg_dict["x"][...] = x
    got = exe.forward(is_train=False)[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, strict=True)


@pytest.mark.parametrize("name", GRADIENTS)
def test_pooling_training_and_gradient_match_mxnet_bit_for_bit(name):
    x, og = DATA[f"{name}/in"], DATA[f"{name}/og"]
    exe = S.Pooling(S.Variable("x"), **_attrs(name)).simple_bind(
        gx.cpu(), x=x.shape, type_dict={"x": x.dtype})
    exe.arg_dict["x"][...] = x
    np.testing.assert_array_equal(exe.forward(is_train=True)[0], DATA[f"{name}/out"],
                                  strict=True)
    exe.backward(gx.nd.array(og, dtype=og.dtype))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), DATA[f"{name}/grad"],
                                  strict=True)


def test_the_loops_run(monkeypatch):
    """The recorded cases go through the compiled loops (not the numpy passes)."""
    taken = []
    real = conv._compiled_pooling
    monkeypatch.setattr(conv, "_compiled_pooling", lambda *a: taken.append(real(*a)) or taken[-1])
    for name in CASES:
        gx.nd.Pooling(gx.nd.array(DATA[f"{name}/in"]), **_attrs(name))
    assert len(taken) == len(CASES) and all(f is not None for f in taken)
    taken.clear()
    backward = []
    real_backward = conv_grad._compiled_pooling_backward
    monkeypatch.setattr(conv_grad, "_compiled_pooling_backward",
                        lambda *a: backward.append(real_backward(*a)) or backward[-1])
    test_pooling_training_and_gradient_match_mxnet_bit_for_bit(
        next(n for n in GRADIENTS if n.startswith("grad_max_")))
    assert taken and all(f is not None for f in taken)
    assert backward and all(f is not None for f in backward)


PATH_CASES = {
    "max 3x3/2 large (two parts)": (dict(kernel=(3, 3), stride=(2, 2), pool_type="max"),
                                    (1, 64, 49, 49)),
    "avg 3x3/1 pad 1 large (two parts)": (dict(kernel=(3, 3), pad=(1, 1), pool_type="avg"),
                                          (2, 40, 41, 41)),
    "max 2x2/2 odd map": (dict(kernel=(2, 2), stride=(2, 2), pool_type="max"), (2, 3, 9, 11)),
    "max 3x2 stride (1, 3) pad (1, 0)": (dict(kernel=(3, 2), stride=(1, 3), pad=(1, 0),
                                              pool_type="max"), (1, 3, 8, 13)),
    "sum 2x3/1 pad (0, 1)": (dict(kernel=(2, 3), pad=(0, 1), pool_type="sum"), (2, 2, 7, 6)),
    "avg 4x4 stride 4 full": (dict(kernel=(4, 4), stride=(4, 4), pool_type="avg",
                                   pooling_convention="full"), (1, 2, 10, 10)),
    "avg 1x1 map global": (dict(kernel=(1, 1), global_pool=True, pool_type="avg"), (3, 5, 1, 1)),
    "max kernel larger than the map, pad": (dict(kernel=(5, 5), pad=(2, 2), pool_type="max"),
                                            (1, 2, 3, 3)),
    "max 1-D 3/2 pad 1": (dict(kernel=(3,), stride=(2,), pad=(1,), pool_type="max"),
                          (2, 3, 19)),
    "avg 1-D 4/1 pad 2 full": (dict(kernel=(4,), pad=(2,), pool_type="avg",
                                    pooling_convention="full"), (2, 3, 12)),
}


@pytest.mark.parametrize("case", sorted(PATH_CASES))
def test_training_loops_equal_the_numpy_passes(case, monkeypatch):
    """Pooling in training: the same outputs as the numpy passes (max exactly), gradients
    within rounding (the numpy path adds overlapping windows' dY offset by offset, the loops
    output by output, as MXNet)."""
    kw, shape = PATH_CASES[case]
    x = np.random.default_rng(6).standard_normal(shape).astype("float32")
    if kw["pool_type"] == "max":
        x.reshape(-1)[::11] = np.nan
        x.reshape(-1)[4::7] = x.reshape(-1)[5::7]
    og = np.random.default_rng(7).standard_normal(
        S.Pooling(S.Variable("x"), **kw).infer_shape(x=shape)[1][0]).astype("float32")

    def train():
        exe = S.Pooling(S.Variable("x"), **kw).simple_bind(gx.cpu(), x=shape)
        exe.arg_dict["x"][...] = x
        y = exe.forward(is_train=True)[0].copy()
        exe.backward(gx.nd.array(og))
        return y, exe.grad_dict["x"].asnumpy().copy()
    y, g = train()
    monkeypatch.setattr(conv, "_compiled_pooling", lambda *a: None)
    monkeypatch.setattr(conv_grad, "_compiled_pooling_backward", lambda *a: None)
    y0, g0 = train()
    np.testing.assert_allclose(y, y0, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g, g0, rtol=1e-5, atol=1e-5)
    if kw["pool_type"] == "max":
        np.testing.assert_array_equal(y, y0)
        assert g.sum() == pytest.approx(og.sum(), rel=1e-4)  # each dY lands once


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(PATH_CASES))
def test_loops_equal_the_numpy_passes(case, dtype, monkeypatch):
    kw, shape = PATH_CASES[case]
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    x.reshape(-1)[::11] = np.nan
    x.reshape(-1)[3::19] = -np.inf

    def forward():
        exe = S.Pooling(S.Variable("x"), **kw).simple_bind(gx.cpu(), grad_req="null",
                                                          x=shape, type_dict={"x": dtype})
        exe.arg_dict["x"][...] = x
        return exe.forward(is_train=False)[0].copy()
    got = forward()
    monkeypatch.setattr(conv, "_compiled_pooling", lambda *a: None)
    want = forward()
    if kw["pool_type"] == "max":
        np.testing.assert_array_equal(got, want)
        assert not np.isnan(got).any()
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_channels_last_float16_and_lp_keep_the_numpy_passes(monkeypatch):
    taken = []
    real = conv._compiled_pooling
    monkeypatch.setattr(conv, "_compiled_pooling", lambda *a: taken.append(real(*a)) or taken[-1])
    x = np.random.default_rng(1).standard_normal((1, 6, 6, 3))
    gx.nd.Pooling(gx.nd.array(x), kernel=(3, 3), layout="NHWC")
    gx.nd.Pooling(gx.nd.array(x.transpose(0, 3, 1, 2), dtype="float16"), kernel=(3, 3))
    gx.nd.Pooling(gx.nd.array(x.transpose(0, 3, 1, 2)), kernel=(3, 3), pool_type="lp",
                  p_value=2)
    assert taken == [None, None, None]


def _channels_last(a: np.ndarray) -> np.ndarray:
    """``a`` (N, C, H, W) as an (N, C, H, W) array stored N x H x W x C."""
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _rows_args(name: str, shape: tuple):
    """The Pooling node's parameters and geometry for the recorded case ``name``."""
    from graphexec.core.ops.conv import pool_geometry
    exe = S.Pooling(S.Variable("x"), **_attrs(name)).simple_bind(gx.cpu(), grad_req="null",
                                                                  x=shape)
    p = next(n for n in exe._plan.graph.indexed.nodes if n.op is not None).params
    return p, pool_geometry(p, shape)[0]


MAX_2D = [n for n in CASES if n.startswith("max_") and "1d" not in n and "global" not in n]
MAX_2D_GRADIENTS = [n for n in GRADIENTS if n.startswith("grad_max_") and "1d" not in n]


@pytest.mark.parametrize("name", MAX_2D)
def test_max_pooling_over_channels_last_data_matches_mxnet_bit_for_bit(name):
    """The rows loop (each output pixel's channels at once) over data stored channels-last
    gives MXNet's maxima, NaN, infinities and the lowest value included."""
    x, want = DATA[f"{name}/in"], DATA[f"{name}/out"]
    p, geo = _rows_args(name, x.shape)
    out = _channels_last(np.empty(want.shape, want.dtype))
    run = conv._compiled_max_rows(p, _channels_last(x), out, None, geo)
    assert run is not None
    run()
    np.testing.assert_array_equal(out, want, strict=True)


@pytest.mark.parametrize("name", MAX_2D_GRADIENTS)
def test_max_pooling_gradient_over_channels_last_data_matches_mxnet_bit_for_bit(name):
    """The rows loops in training: the workspace's first maxima (written channels-last) and
    the gradient adding each dY there, as MXNet."""
    x, og, want = DATA[f"{name}/in"], DATA[f"{name}/og"], DATA[f"{name}/out"]
    p, geo = _rows_args(name, x.shape)
    out = _channels_last(np.empty(want.shape, want.dtype))
    ws = _channels_last(np.empty(want.shape, np.int32))
    conv._compiled_max_rows(p, _channels_last(x), out, ws, geo)()
    np.testing.assert_array_equal(out, want, strict=True)
    dx = _channels_last(np.empty(x.shape, x.dtype))
    run = conv_grad._compiled_max_rows_backward(p, og, ws, dx, geo)
    assert run is not None
    run()
    np.testing.assert_array_equal(dx, DATA[f"{name}/grad"], strict=True)
