"""The native Pooling's two ways of visiting windows: one vectorised call per kernel offset
over all the windows (most poolings), or one reduction over a strided view of the windows
where there are more offsets than windows (a last pooling over the whole map). Both give
the same numbers (max exactly; sums within rounding), padding, 'full' windows,
count_include_pad, 1-D to 3-D, channels-last layouts and float16 included."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx
from graphexec.backends.default.kernels import conv

S = gx.sym
X = S.Variable("x")

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


def test_many_windows_keep_the_offsets(monkeypatch):
    """3x3 windows over a 9x9 map (49 windows, 9 offsets): one call per offset."""
    taken = []
    real = conv._window_reduction
    monkeypatch.setattr(conv, "_window_reduction",
                        lambda *a: taken.append(real(*a)) or taken[-1])
    _forward(dict(kernel=(3, 3), pool_type="max"), (1, 2, 9, 9), "float32")
    assert taken == [None]
