"""Max pooling's treatment of NaN, -inf and the dtype's lowest value, as MXNet 1.9.1 gives it
(values recorded from the oracle: ``mx.nd.Pooling`` under autograd, float32, CPU, its default
oneDNN kernels, ``MXNET_SUBGRAPH_BACKEND=NONE``): each window is a running maximum from the
lowest value that takes an element only when it is greater, so NaN never wins and a window of
NaN or -inf gives the lowest value; the gradient goes to the first maximum, to the window's
first position where no element is above the lowest value. The native kernels: inference
(axis passes, one reduction over the windows), training (the workspace), global pooling, 1-D
and channel-last layouts; the ``torch`` strategy's 2-D pooling (the native kernels where numba
is installed; else PyTorch's, whose maximum takes NaN: its data goes through ``nan_to_num``
first). ONNX Runtime's MaxPool (the ``onnxrt``
strategy) keeps its own rule (README)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import graphexec as gx

NAN, INF = np.nan, np.inf
LOW = float(np.finfo(np.float32).min)

# name: (data, Pooling parameters, MXNet's output, MXNet's data gradient for the head
# gradient 1, 2, 3, ... over the output)
CASES = {
    "nan first": ([[NAN, 1], [2, 0]], dict(kernel=(2, 2), stride=(2, 2)), [2], [0, 0, 1, 0]),
    "nan inside": ([[1, NAN], [2, 0]], dict(kernel=(2, 2), stride=(2, 2)), [2], [0, 0, 1, 0]),
    "all nan": ([[NAN, NAN], [NAN, NAN]], dict(kernel=(2, 2), stride=(2, 2)), [LOW],
                [1, 0, 0, 0]),
    "all -inf": ([[-INF, -INF], [-INF, -INF]], dict(kernel=(2, 2), stride=(2, 2)), [LOW],
                 [1, 0, 0, 0]),
    "lowest": ([[LOW, LOW], [LOW, LOW]], dict(kernel=(2, 2), stride=(2, 2)), [LOW],
               [1, 0, 0, 0]),
    "ties": ([[3, 3], [3, 1]], dict(kernel=(2, 2), stride=(2, 2)), [3], [1, 0, 0, 0]),
    "inf": ([[INF, 1], [NAN, 2]], dict(kernel=(2, 2), stride=(2, 2)), [INF], [1, 0, 0, 0]),
    "padding": ([[NAN, -1, -2], [-3, -4, -5], [-6, -7, -8]],
                dict(kernel=(2, 2), stride=(2, 2), pad=(1, 1)), [LOW, -1, -3, -4],
                [0, 2, 0, 3, 4, 0, 0, 0, 0]),
    "overlapping": ([[NAN, 5, 1], [2, NAN, 4], [0, 3, NAN]],
                    dict(kernel=(2, 2), stride=(1, 1)), [5, 5, 3, 4],
                    [0, 3, 0, 0, 0, 4, 0, 3, 0]),
    "global": ([[NAN, -1, -2], [-3, -4, -5], [-6, -7, -8]],
               dict(kernel=(1, 1), global_pool=True), [-1], [0, 1, 0, 0, 0, 0, 0, 0, 0]),
    "global all nan": ([[NAN, NAN], [NAN, NAN]], dict(kernel=(1, 1), global_pool=True), [LOW],
                       [1, 0, 0, 0]),
}


#: where numba is installed the ``torch`` strategy's max pooling runs the native loops
HAS_NUMBA = importlib.util.find_spec("numba") is not None
BACKENDS = ["NONE", pytest.param("torch", marks=pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="the torch strategy needs PyTorch"))]


def _bind(shape, dtype=np.float32, grad_req="write", backend="NONE", **params):
    data = gx.sym.Variable("data")
    return gx.sym.Pooling(data, pool_type="max", **params).simple_bind(
        gx.cpu(), grad_req=grad_req, backend=backend, data=shape, type_dict={"data": dtype})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_training_forward_and_gradient_match_mxnet(name, backend):
    data, params, want_out, want_grad = CASES[name]
    x = np.array(data, np.float32)[None, None]
    exe = _bind(x.shape, backend=backend, **params)
    exe.arg_dict["data"][...] = x
    out = exe.forward(is_train=True)[0]
    np.testing.assert_array_equal(out.reshape(-1), np.array(want_out, np.float32))
    exe.backward([np.arange(1, out.size + 1, dtype=np.float32).reshape(out.shape)])
    if backend == "torch" and name == "padding" and not HAS_NUMBA:
        # known difference: a padded border window none of whose elements is above the
        # lowest value sends its gradient to its first element under PyTorch's kernel (the
        # strategy's max pooling without numba), to the padding (nowhere) under MXNet's
        want_grad = [1] + want_grad[1:]
    np.testing.assert_array_equal(exe.grad_dict["data"].reshape(-1),
                                  np.array(want_grad, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_inference_matches_mxnet(name, backend):
    data, params, want_out, _ = CASES[name]
    x = np.array(data, np.float32)[None, None]
    exe = _bind(x.shape, grad_req="null", backend=backend, **params)
    exe.arg_dict["data"][...] = x
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].reshape(-1),
                                  np.array(want_out, np.float32))


def test_whole_window_reduction_skips_nan():
    """More kernel offsets than windows: one reduction over the windows' view."""
    x = np.array([[1, NAN, 3], [NAN, 9, NAN], [2, 4, -INF]], np.float32)[None, None]
    exe = _bind(x.shape, grad_req="null", kernel=(3, 3), stride=(1, 1))
    exe.arg_dict["data"][...] = x
    assert exe.forward(is_train=False)[0].reshape(-1).tolist() == [9]
    exe.arg_dict["data"][...] = np.full(x.shape, NAN, np.float32)
    assert exe.forward(is_train=False)[0].reshape(-1).tolist() == [LOW]


def test_one_dimensional_windows():
    """MXNet 1.9.1: [nan, 1, nan, nan] with windows of 2 gives [1, lowest]; the gradient of
    the window without a number goes to its first position."""
    x = np.array([[[NAN, 1, NAN, NAN]]], np.float32)
    exe = _bind(x.shape, kernel=(2,), stride=(2,))
    exe.arg_dict["data"][...] = x
    out = exe.forward(is_train=True)[0]
    np.testing.assert_array_equal(out.reshape(-1), [1, LOW])
    exe.backward([np.array([[[1, 2]]], np.float32)])
    np.testing.assert_array_equal(exe.grad_dict["data"].reshape(-1), [0, 1, 2, 0])


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_dtypes_give_their_lowest_value(dtype):
    x = np.full((1, 1, 2, 2), NAN, dtype)
    exe = _bind(x.shape, dtype=dtype, grad_req="null", kernel=(2, 2), stride=(2, 2))
    exe.arg_dict["data"][...] = x
    out = exe.forward(is_train=False)[0]
    assert out.dtype == dtype and out.reshape(-1).tolist() == [np.finfo(dtype).min]


def test_channel_last_layout():
    """NHWC: the same numbers per channel; the backward finds each window's maximum again
    (no workspace) by comparing with the output."""
    planes = np.array([[[NAN, 1], [2, 0]], [[NAN, NAN], [NAN, NAN]]], np.float32)  # (C, H, W)
    x = planes.transpose(1, 2, 0)[None]  # (1, H, W, C)
    exe = _bind(x.shape, kernel=(2, 2), stride=(2, 2), layout="NHWC")
    exe.arg_dict["data"][...] = x
    out = exe.forward(is_train=True)[0]
    np.testing.assert_array_equal(out.reshape(-1), [2, LOW])
    exe.backward([np.array([5, 7], np.float32).reshape(out.shape)])
    grad = exe.grad_dict["data"][0].transpose(2, 0, 1)
    np.testing.assert_array_equal(grad[0], [[0, 0], [5, 0]])
    np.testing.assert_array_equal(grad[1], [[7, 0], [0, 0]])
