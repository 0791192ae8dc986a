"""The native Pooling's ways of visiting windows: one spatial axis at a time (one call per
kernel offset along that axis), one reduction over a strided view of the windows where
there are more offsets than windows (a last pooling over the whole map), and, for max
pooling in training (whose workspace records each window's argmax), one call per kernel
offset. They give the same numbers (max exactly; sums within rounding of float64 sums),
padding, 'full' windows, count_include_pad, 1-D to 3-D, channels-last layouts and float16
included. The compiled plane loops are set aside here (tests/test_pooling_loops.py)."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx
from graphexec.backends.default.kernels import conv

S = gx.sym
X = S.Variable("x")


@pytest.fixture(autouse=True)
def _numpy_passes(monkeypatch):
    """These tests are about the numpy passes: the compiled loops, which 2-D channel-first
    float32/float64 poolings take where numba is installed, are tested in
    tests/test_pooling_loops.py."""
    monkeypatch.setattr(conv, "_compiled_pooling", lambda *a: None)

CASES = {
    "avg 13x13 whole map": (dict(kernel=(13, 13), pool_type="avg"), (2, 5, 13, 13)),
    "max 7x7 whole map": (dict(kernel=(7, 7), pool_type="max"), (2, 4, 7, 7)),
    "max 3x3 on 4x4": (dict(kernel=(3, 3), pool_type="max"), (1, 3, 4, 4)),
    "avg padded, pad excluded": (dict(kernel=(4, 4), stride=(2, 2), pad=(1, 1), pool_type="avg",
                                      count_include_pad=False), (2, 3, 5, 5)),
    "avg padded, pad counted": (dict(kernel=(4, 4), stride=(2, 2), pad=(1, 1), pool_type="avg"),
                                (2, 3, 5, 5)),
    "max full": (dict(kernel=(5, 5), stride=(3, 3), pool_type="max",
                      pooling_convention="full"), (1, 2, 7, 7)),
    "sum 1-D": (dict(kernel=(6,), pool_type="sum"), (2, 3, 8)),
    "lp 2 3-D": (dict(kernel=(3, 3, 3), pool_type="lp", p_value=2), (1, 2, 4, 4, 4)),
    "max NHWC": (dict(kernel=(5, 5), pool_type="max", layout="NHWC"), (2, 6, 6, 3)),
}


def _forward(kw, shape, dtype):
    exe = S.Pooling(X, name="p", **kw).simple_bind(gx.cpu(), grad_req="null", x=shape,
                                                   type_dict={"x": dtype})
    exe.arg_dict["x"][...] = np.random.default_rng(4).standard_normal(shape)
    return exe.forward()[0].copy()


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_window_reduction_matches_the_offsets(case, dtype, monkeypatch):
    kw, shape = CASES[case]
    taken = []
    real = conv._window_reduction
    monkeypatch.setattr(conv, "_window_reduction",
                        lambda *a: taken.append(real(*a)) or taken[-1])
    got = _forward(kw, shape, dtype)
    assert taken and taken[-1] is not None, "the reduction was not taken"
    monkeypatch.setattr(conv, "_window_reduction", lambda *a: None)
    want = _forward(kw, shape, dtype)
    if kw["pool_type"] == "max":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-6 if dtype == "float32" else 2e-3
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_many_windows_go_axis_by_axis(monkeypatch):
    """3x3 windows over a 9x9 map (49 windows, 9 offsets): the passes along each axis."""
    taken = []
    real = conv._window_reduction
    monkeypatch.setattr(conv, "_window_reduction",
                        lambda *a: taken.append(real(*a)) or taken[-1])
    _forward(dict(kernel=(3, 3), pool_type="max"), (1, 2, 9, 9), "float32")
    assert taken == [None]


AXIS_CASES = {
    "max 3x3/2 pad 1": (dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1)), (2, 3, 11, 9)),
    "max 3x3/2 full": (dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full"),
                       (1, 4, 10, 10)),
    "max 2x3 stride (1, 2)": (dict(kernel=(2, 3), stride=(1, 2)), (2, 2, 7, 9)),
    "max 3-D": (dict(kernel=(2, 2, 3), stride=(1, 2, 1)), (1, 2, 5, 6, 7)),
    "max 1-D": (dict(kernel=(3,), stride=(2,), pad=(1,)), (2, 3, 9)),
    "max NHWC": (dict(kernel=(3, 3), stride=(2, 2), layout="NHWC"), (2, 9, 9, 3)),
}


@pytest.mark.parametrize("case", sorted(AXIS_CASES))
def test_max_pooling_axis_passes_equal_the_offsets_of_training(case):
    """The same max pooling forward at inference (axis by axis) and in training (every
    offset, the argmax recorded): equal outputs; NaN never wins in either (as MXNet's: the
    numbers of the data with its NaN replaced by the lowest float32)."""
    kw, shape = AXIS_CASES[case]
    exe = S.Pooling(X, name="p", pool_type="max", **kw).simple_bind(gx.cpu(), x=shape)
    x = np.random.default_rng(2).standard_normal(shape).astype("f4")
    x.reshape(-1)[::17] = np.nan
    exe.arg_dict["x"][...] = x
    inference = exe.forward(is_train=False)[0].copy()
    training = exe.forward(is_train=True)[0].copy()
    np.testing.assert_array_equal(inference, training)
    exe.arg_dict["x"][...] = np.where(np.isnan(x), np.finfo("f4").min, x)
    np.testing.assert_array_equal(inference, exe.forward(is_train=False)[0])
    assert not np.isnan(inference).any()


def _windows_reference(x, kernel, stride, pad, reduce):
    """Every window of ``x`` (N, C, *spatial) zero-padded by ``pad``, reduced in float64."""
    nd = len(kernel)
    xp = np.pad(x.astype("f8"), [(0, 0), (0, 0)] + [(q, q) for q in pad])
    view = np.lib.stride_tricks.sliding_window_view(xp, kernel, axis=tuple(range(2, 2 + nd)))
    view = view[(slice(None), slice(None), *(slice(None, None, s) for s in stride))]
    return reduce(view, axis=tuple(range(2 + nd, 2 + 2 * nd)))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kw,shape,reduce", [
    (dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg"), (2, 3, 8, 9), np.mean),
    (dict(kernel=(2, 2), stride=(2, 2), pad=(0, 0), pool_type="sum"), (2, 3, 8, 10), np.sum),
    (dict(kernel=(3, 2, 2), stride=(1, 1, 2), pad=(0, 0, 0), pool_type="avg"), (1, 2, 5, 4, 6),
     np.mean),
    (dict(kernel=(3, 3), stride=(2, 2), pad=(0, 0), pool_type="lp", p_value=2), (1, 2, 9, 9),
     lambda w, axis: np.sqrt((w * w).sum(axis=axis))),
], ids=["avg 3x3/1 pad", "sum 2x2/2", "avg 3-D", "lp2 3x3/2"])
def test_sum_pooling_axis_passes_match_float64_windows(kw, shape, reduce, dtype):
    got = _forward(kw, shape, dtype)
    x = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    want = _windows_reference(x, kw["kernel"], kw["stride"], kw["pad"], reduce)
    tol = 1e-5 if dtype == "float32" else 3e-3
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
