"""Cases for the nn family (FullyConnected, activations, Dropout, softmax family, BatchNorm,
LayerNorm). Twins are float64 numpy written from the definitions. Random training-mode
Dropout / rrelu are checked by tests/test_ops_nn.py (statistics), not here.

Gradients (tests/test_op_gradients.py, finite differences with training forwards) are
checked on every case except those whose training forward is random (Dropout with p > 0,
rrelu) and those with visible mean/var/std outputs, whose head gradients MXNet ignores;
tests/test_ops_nn_grad.py covers them."""
from __future__ import annotations

import math

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
S = (3, 4)
_erf = np.vectorize(math.erf)


def _f64(*xs):
    return [np.asarray(x, np.float64) for x in xs]


def fc_twin(x, w, b=None, *, num_hidden, no_bias=False, flatten=True):
    x, w = _f64(x, w)
    if flatten:
        x = x.reshape(x.shape[0], -1)
    out = np.einsum("...i,hi->...h", x, w)
    return out if b is None else out + np.asarray(b, np.float64)


CASES += [
    OpCase("FullyConnected", [(2, 3, 4), (5, 12), (5,)], fc_twin, attrs={"num_hidden": 5}),
    OpCase("FullyConnected", [(2, 3, 4), (5, 4), (5,)], fc_twin, id="no_flatten",
           attrs={"num_hidden": 5, "flatten": False}),
    OpCase("FullyConnected", [(3, 4), (2, 4)], fc_twin, id="no_bias",
           attrs={"num_hidden": 2, "no_bias": True}),
]

_ACT = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}
for _t, _fn in _ACT.items():
    CASES.append(OpCase("Activation", [S], lambda x, act_type, _fn=_fn: _fn(*_f64(x)),
                        attrs={"act_type": _t}, id=_t, low=-4, high=4))

_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


def lrelu_twin(x, gamma=None, *, act_type="leaky", slope=0.25, lower_bound=0.125,
               upper_bound=0.334):
    (x,) = _f64(x)
    neg = {
        "leaky": lambda: slope * x,
        "elu": lambda: slope * (np.exp(x) - 1),
        "selu": lambda: _SELU[0] * (np.exp(x) - 1),
        "rrelu": lambda: x * (lower_bound + upper_bound) / 2,
        "prelu": lambda: x * (np.asarray(gamma, np.float64).reshape(
            [1, -1] + [1] * (x.ndim - 2)) if gamma.shape[0] > 1 else gamma[0]),
    }
    if act_type == "gelu":
        return 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    y = np.where(x > 0, x, neg[act_type]())
    if act_type == "selu":
        return _SELU[1] * y
    if act_type == "rrelu":
        return [y, np.full(x.shape, (lower_bound + upper_bound) / 2)]
    return y


CASES += [
    OpCase("LeakyReLU", [S], lrelu_twin, attrs={"slope": 0.1}, id="leaky"),
    OpCase("LeakyReLU", [S], lrelu_twin, attrs={"act_type": "elu", "slope": 0.7}, id="elu"),
    # MXNet's selu gradient is not the derivative (see kernels/nn_grad.py): checked against
    # MXNet in test_ops_nn_grad.py instead of by finite differences
    OpCase("LeakyReLU", [S], lrelu_twin, attrs={"act_type": "selu"}, id="selu",
           grad_inputs=()),
    OpCase("LeakyReLU", [S], lrelu_twin, attrs={"act_type": "gelu"}, id="gelu"),
    OpCase("LeakyReLU", [(2, 3, 4), (3,)], lrelu_twin, attrs={"act_type": "prelu"}, id="prelu"),
    OpCase("LeakyReLU", [(2, 3), (1,)], lrelu_twin, attrs={"act_type": "prelu"},
           id="prelu_scalar_gamma"),
    OpCase("LeakyReLU", [S], lrelu_twin, attrs={"act_type": "rrelu"}, id="rrelu_inference",
           grad_inputs=()),
]

CASES += [
    OpCase("Dropout", [S], lambda x, **kw: x, attrs={"p": 0.3}, id="inference", grad_inputs=()),
    OpCase("Dropout", [S], lambda x, **kw: x, attrs={"p": 0.0, "mode": "always"},
           id="always_p0", is_train=True),
]


def softmax_twin(x, length=None, *, axis=-1, temperature=None, dtype=None, use_length=False,
                 log=False):
    (x,) = _f64(x)
    x = x / (temperature or 1.0)
    axis %= x.ndim
    valid = np.ones(x.shape, bool)
    if use_length:
        pos = np.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)])
        valid = pos < np.expand_dims(length, axis)
    e = np.where(valid, np.exp(x - np.where(valid, x, -np.inf).max(axis, keepdims=True)), 0)
    total = e.sum(axis, keepdims=True)
    if log:
        return np.log(e / total)
    return e / np.where(total == 0, 1, total)


def _lengths(rng, shape, dtype, index):
    return rng.integers(0, 5, size=shape).astype("int32") if index == 1 else None


CASES += [
    OpCase("softmax", [(3, 5)], softmax_twin),
    OpCase("softmax", [(3, 5)], softmax_twin, attrs={"axis": 0, "temperature": 2.0},
           id="axis0_temperature"),
    OpCase("softmax", [(3, 5)], softmax_twin, attrs={"dtype": "float64"}, id="out_float64",
           dtypes=("float16", "float32")),
    OpCase("softmax", [(2, 4, 3), (2, 3)], softmax_twin, gen=_lengths, id="length",
           attrs={"axis": 1, "use_length": True}, grad_inputs=(0,)),
    OpCase("log_softmax", [(2, 4, 3)], lambda x, **kw: softmax_twin(x, log=True, **kw),
           attrs={"axis": 1, "temperature": 0.5}),
    OpCase("SoftmaxActivation", [(2, 3, 4)], lambda x, **kw: softmax_twin(x, axis=-1)),
    OpCase("SoftmaxActivation", [(2, 3, 2, 2)], lambda x, mode: softmax_twin(x, axis=1),
           attrs={"mode": "channel"}, id="channel"),
]


def bn_twin(train: bool):
    def twin(x, gamma, beta, mean, var, *, eps=1e-3, fix_gamma=True, use_global_stats=False,
             output_mean_var=False, axis=1, **_):
        x, gamma, beta, mean, var = _f64(x, gamma, beta, mean, var)
        axis %= x.ndim
        moved = np.moveaxis(x, axis, -1)
        if train and not use_global_stats:
            mean, var = moved.reshape(-1, x.shape[axis]).mean(0), moved.reshape(
                -1, x.shape[axis]).var(0)
        invstd = 1 / np.sqrt(var + eps)
        g = 1.0 if fix_gamma else gamma
        y = np.moveaxis((moved - mean) * invstd * g + beta, -1, axis)
        return [y, mean, invstd] if output_mean_var else y
    return twin


def _bn_inputs(rng, shape, dtype, index):
    """Per-channel inputs are float32 for float16 data (MXNet's rule); variances positive."""
    if index == 0:
        return None
    pdt = "float32" if dtype == "float16" else dtype
    low = 0.5 if index == 4 else -1.0
    return rng.uniform(low, 2.0, size=shape).astype(pdt)


_BN = [((2, 3, 4, 4), {}, False, "inference"),
       ((2, 3, 4, 4), {"fix_gamma": False, "eps": 1e-5}, False, "inference_gamma"),
       ((4, 3, 2, 2), {"fix_gamma": False, "output_mean_var": True}, True, "train_mean_var"),
       ((4, 3, 2, 2), {"fix_gamma": False, "use_global_stats": True, "output_mean_var": True},
        True, "train_global_stats"),
       ((4, 2, 3), {"axis": -1, "fix_gamma": False}, True, "train_axis_last"),
       ((6, 3), {}, True, "train_2d")]
for _shape, _attrs, _train, _id in _BN:
    _c = _shape[_attrs.get("axis", 1)]
    _batch_stats = _attrs.get("output_mean_var") and not _attrs.get("use_global_stats")
    CASES.append(OpCase("BatchNorm", [_shape] + [(_c,)] * 4, bn_twin(_train), attrs=_attrs,
                        gen=_bn_inputs, is_train=_train, id=_id,
                        grad_inputs=() if _batch_stats else (0, 1, 2)))


def ln_twin(x, gamma, beta, *, axis=-1, eps=1e-5, output_mean_var=False):
    x, gamma, beta = _f64(x, gamma, beta)
    axis %= x.ndim
    shape = [1] * x.ndim
    shape[axis] = -1
    mean = x.mean(axis, keepdims=True)
    std = np.sqrt(x.var(axis, keepdims=True) + eps)
    y = (x - mean) / std * gamma.reshape(shape) + beta.reshape(shape)
    return [y, mean, std] if output_mean_var else y


CASES += [
    OpCase("LayerNorm", [(2, 3, 5), (5,), (5,)], ln_twin),
    OpCase("LayerNorm", [(4, 3), (4,), (4,)], ln_twin, attrs={"axis": 0, "output_mean_var": True},
           id="axis0_mean_std", grad_inputs=()),
    OpCase("LayerNorm", [(3, 4, 2), (4,), (4,)], ln_twin, attrs={"axis": 1, "eps": 0.01},
           id="axis1"),
]
