"""Cases for the loss heads (forward only: softmax / sigmoid / identity of the data). Their
gradients are not d(sum(out * head)) (they ignore head gradients), so the finite-difference
check skips them (``grad_inputs=()``); tests/test_ops_nn_grad.py compares them with MXNet."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _case(*args, **kwargs) -> OpCase:
    return OpCase(*args, grad_inputs=(), **kwargs)


def _softmax(x, axis):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_output_twin(x, label, *, multi_output=False, preserve_shape=False, **_):
    """MXNet: softmax over the flattened non-batch axes, axis 1 with multi_output, the last
    axis with preserve_shape."""
    if preserve_shape:
        return _softmax(x, -1)
    if multi_output:
        return _softmax(x, 1)
    return _softmax(np.reshape(x, (x.shape[0], -1)), 1).reshape(x.shape)


def _labels(rng, shape, dtype, index):
    return rng.integers(0, 3, size=shape).astype(dtype) if index == 1 else None


CASES += [
    _case("SoftmaxOutput", [(4, 5), (4,)], softmax_output_twin, gen=_labels),
    _case("Softmax", [(4, 5), (4,)], softmax_output_twin, gen=_labels, id="alias",
          attrs={"grad_scale": 2.0, "normalization": "batch"}),
    _case("SoftmaxOutput", [(2, 3, 4), (2, 3)], softmax_output_twin, gen=_labels, id="3d"),
    _case("SoftmaxOutput", [(2, 3, 4), (2, 4)], softmax_output_twin, gen=_labels,
          attrs={"multi_output": True}, id="multi_output"),
    _case("SoftmaxOutput", [(2, 3, 2, 2), (2, 2, 2)], softmax_output_twin, gen=_labels,
          attrs={"multi_output": True, "use_ignore": True}, id="multi_output_spatial"),
    _case("SoftmaxOutput", [(2, 3, 4), (2, 3)], softmax_output_twin, gen=_labels,
          attrs={"preserve_shape": True}, id="preserve_shape"),
    _case("LogisticRegressionOutput", [(4, 3), (4, 3)],
          lambda x, y, **kw: 1 / (1 + np.exp(-np.asarray(x, np.float64)))),
    _case("LinearRegressionOutput", [(4, 1), (4,)], lambda x, y, **kw: x),
    _case("LinearRegressionOutput", [(4, 2, 3), (4, 6)], lambda x, y, **kw: x,
          id="reshaped_label"),
    _case("MAERegressionOutput", [(4, 3), (4, 3)], lambda x, y, **kw: x,
          attrs={"grad_scale": 0.5}),
    _case("MakeLoss", [(3, 4)], lambda x, **kw: x, attrs={"grad_scale": 0.5}),
    _case("make_loss", [(3, 4)], lambda x: x),
]
