"""Cases for the loss heads (forward only: softmax / sigmoid / identity of the data)."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


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
    OpCase("SoftmaxOutput", [(4, 5), (4,)], softmax_output_twin, gen=_labels),
    OpCase("Softmax", [(4, 5), (4,)], softmax_output_twin, gen=_labels, id="alias",
           attrs={"grad_scale": 2.0, "normalization": "batch"}),
    OpCase("SoftmaxOutput", [(2, 3, 4), (2, 3)], softmax_output_twin, gen=_labels, id="3d"),
    OpCase("SoftmaxOutput", [(2, 3, 4), (2, 4)], softmax_output_twin, gen=_labels,
           attrs={"multi_output": True}, id="multi_output"),
    OpCase("SoftmaxOutput", [(2, 3, 2, 2), (2, 2, 2)], softmax_output_twin, gen=_labels,
           attrs={"multi_output": True, "use_ignore": True}, id="multi_output_spatial"),
    OpCase("SoftmaxOutput", [(2, 3, 4), (2, 3)], softmax_output_twin, gen=_labels,
           attrs={"preserve_shape": True}, id="preserve_shape"),
    OpCase("LogisticRegressionOutput", [(4, 3), (4, 3)],
           lambda x, y, **kw: 1 / (1 + np.exp(-np.asarray(x, np.float64)))),
    OpCase("LinearRegressionOutput", [(4, 1), (4,)], lambda x, y, **kw: x),
    OpCase("LinearRegressionOutput", [(4, 2, 3), (4, 6)], lambda x, y, **kw: x,
           id="reshaped_label"),
    OpCase("MAERegressionOutput", [(4, 3), (4, 3)], lambda x, y, **kw: x,
           attrs={"grad_scale": 0.5}),
    OpCase("MakeLoss", [(3, 4)], lambda x, **kw: x, attrs={"grad_scale": 0.5}),
    OpCase("make_loss", [(3, 4)], lambda x: x),
]
