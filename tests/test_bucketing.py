"""BucketingExecutor: an unrolled LSTM trained over two sequence lengths sharing parameters,
against MXNet 1.9.1 (tests/data/bucketing/lstm_case.npz, made by make_lstm_case.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import graphexec as gx

HERE = Path(__file__).parent / "data" / "bucketing"
sys.path.insert(0, str(HERE))
from lstm_sym import BATCH, HIDDEN, INPUT, PARAMS, lstm_symbol  # noqa: E402

REF = dict(np.load(HERE / "lstm_case.npz"))


def _shapes(key):
    return dict(data=(BATCH, key, INPUT), softmax_label=(BATCH, key), init_h=(BATCH, HIDDEN),
                init_c=(BATCH, HIDDEN))


def test_lstm_buckets_share_parameters_and_match_mxnet():
    be = gx.BucketingExecutor(lambda n: lstm_symbol(gx.sym, n), default_bucket_key=5)
    default = be.bind(**_shapes(5))
    assert be.param_names == list(PARAMS)
    for n in PARAMS:
        be.arg_params[n][...] = REF[f"param:{n}"]
    for key in (5, 3):
        inputs = {n: REF[f"len{key}:in:{n}"] for n in ("data", "softmax_label", "init_h", "init_c")}
        out = be.forward(key, is_train=True, **inputs)[0]
        be.backward()
        np.testing.assert_allclose(out, REF[f"len{key}:out0"], rtol=1e-5, atol=1e-6)
        for n in PARAMS:
            np.testing.assert_allclose(be.grad_params[n], REF[f"len{key}:grad:{n}"], rtol=1e-4,
                                       atol=1e-6, err_msg=f"len{key} grad {n}")
    short = be.execs[3]
    for n in PARAMS:
        assert short.arg_dict[n] is default.arg_dict[n]
        assert short.grad_dict[n] is default.grad_dict[n]
    assert np.shares_memory(short.arg_dict["data"], default.arg_dict["data"])
    assert all(any(b is p for _, p in default._shared_pool) for b in short._plan.pool)


def test_bucketing_errors():
    be = gx.BucketingExecutor(lambda n: lstm_symbol(gx.sym, n), default_bucket_key=5)
    import pytest
    with pytest.raises(gx.BindError, match="bind\\(\\) the default bucket"):
        be.switch_bucket(3, **_shapes(3))
    be.bind(**_shapes(5))
    with pytest.raises(gx.BindError, match="bucket 4 is not bound yet"):
        be.switch_bucket(4)
    bad = gx.BucketingExecutor(lambda n: 3, default_bucket_key=5)
    with pytest.raises(gx.BindError, match="must return a Symbol"):
        bad.bind(data=(1,))
