"""Neural-network layers: FullyConnected, Activation, LeakyReLU, Dropout, BatchNorm, LayerNorm,
softmax, log_softmax and SoftmaxActivation. Convolution, Deconvolution and Pooling live in
``conv``; the loss heads in ``loss``.

Semantics follow MXNet 1.9.1 (checked against it): e.g. BatchNorm keeps 3 outputs (output,
mean, var) of which 1 is visible, stores the inverse standard deviation in ``var``, and keeps
float32 parameters for float16 data.
"""
from __future__ import annotations

import numpy as np

from .common import (Bool, Enum, Float, InferError, Int, OpDef, OptFloat, Shape, ShapeConflict,
                     assign, assign_dtype, fmt, merge, normalize_axis, prod, register_op, same_type)

__all__ = ["OptEnum", "OptBool", "PositiveInt", "tie", "prod", "bn_param_dtype", "SELU_ALPHA",
           "SELU_LAMBDA"]

#: SELU's constants (LeakyReLU act_type='selu'; Klambauer et al. 2017), as MXNet's kernels
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_LAMBDA = 1.0507009873554804934193349852946

F32 = np.dtype("float32")


# -- attribute fields MXNet's nn operators use beyond core/ir/attrs.py ---------------------------
class OptEnum(Enum):
    """One of ``choices`` or None (written "None"), like MXNet's optional enum parameters."""

    kind = "enum or None"

    def parse(self, text):
        return None if text == "None" else super().parse(text)


class OptBool(Bool):
    """A boolean that may be None ("boolean or None" in MXNet's parameter listings)."""

    kind = "bool or None"

    def parse(self, text):
        return None if text == "None" else super().parse(text)


class PositiveInt(Int):
    """An int >= 1 (num_hidden, num_filter, num_group); rejected when the symbol is made."""

    kind = "int >= 1"

    def parse(self, text):
        value = super().parse(text)
        if value < 1:
            raise ValueError(f"{value} is less than 1")
        return value


# -- shape helpers ----------------------------------------------------------------------------

def tie(ins: list, outs: list, n_out: int = 1) -> tuple | None:
    """Give input 0 and the first ``n_out`` outputs one shape (merged); return it."""
    s = ins[0]
    for j in range(n_out):
        try:
            s = merge(s, outs[j])
        except ValueError:
            raise ShapeConflict("out", j, outs[j], s) from None
    if s is not None:
        ins[0] = s
        for j in range(n_out):
            outs[j] = s
    return s


def _tie_type(ins: list, outs: list, n_out: int = 1):
    t = ins[0] if ins[0] is not None else next((o for o in outs[:n_out] if o is not None), None)
    if t is None:
        return None
    ins[0] = t
    for j in range(n_out):
        assign_dtype(outs, j, t, "out")
    return t


def _need_float(t, what: str) -> None:
    if t is not None and t.kind != "f":
        raise InferError(f"{what} needs floating-point data, got {t}")


# -- FullyConnected ---------------------------------------------------------------------------
def _fc_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if not data:
        raise InferError("data must have at least one dimension, got a scalar")
    if p.flatten:
        units, out = prod(data[1:]), (data[0], p.num_hidden)
    else:
        units, out = data[-1], (*data[:-1], p.num_hidden)
    assign(ins, 1, (p.num_hidden, units))
    if not p.no_bias:
        assign(ins, 2, (p.num_hidden,))
    assign(outs, 0, out, "out")
    w_units = ins[1][1]
    if units < 0 <= w_units and (not p.flatten or len(data) == 2):
        assign(ins, 0, (*data[:-1], w_units))
    # the batch dimensions of the data follow the output's (as MXNet infers them), so a
    # begin state of shape (0, units) learns its batch size from the layer it feeds
    lead = outs[0][:1] if p.flatten else outs[0][:-1]
    data = ins[0]
    if any(d < 0 for d in data[:len(lead)]):
        assign(ins, 0, (*lead, *data[len(lead):]))


# -- activations ------------------------------------------------------------------------------
def _elementwise_shape(p, ins, outs):
    tie(ins, outs, len(outs))


def _elementwise_type(p, ins, outs):
    _tie_type(ins, outs, len(outs))


def _lrelu_inputs(p):
    return ["data", "gamma"] if p.act_type == "prelu" else ["data"]


def _lrelu_outputs(p):
    return ["output", "mask"] if p.act_type == "rrelu" else ["output"]


def _lrelu_shape(p, ins, outs):
    data = tie(ins, outs, len(outs))
    if p.act_type != "prelu" or data is None:
        return
    if len(data) < 2:
        raise InferError(f"prelu needs data with a channel axis (at least 2 dimensions), got "
                         f"{fmt(data)}")
    gamma = ins[1]
    if gamma is not None and len(gamma) > 1:
        # a gamma of several dimensions applies to the leading axes of data (MXNet 1.9.1)
        if len(gamma) > len(data) or any(g >= 0 and d >= 0 and g != d
                                         for g, d in zip(gamma, data)):
            raise InferError(f"prelu gamma {fmt(gamma)} must match the leading axes of data "
                             f"{fmt(data)}")
        return
    if gamma != (1,):
        assign(ins, 1, (data[1],))


def _lrelu_type(p, ins, outs):
    same_type(p, ins, outs)


# -- Dropout ----------------------------------------------------------------------------------
def _dropout_shape(p, ins, outs):
    data = tie(ins, outs)
    if data is None:
        return
    mask = list(data)
    for a in p.axes:
        mask[normalize_axis(a, len(data), "Dropout axes entry")] = 1
    assign(outs, 1, tuple(mask), "out")


def _dropout_type(p, ins, outs):
    _tie_type(ins, outs, 2)


# -- softmax family ---------------------------------------------------------------------------
def _softmax_inputs(p):
    return ["data", "length"] if p.use_length else ["data"]


def _softmax_shape(p, ins, outs):
    data = tie(ins, outs)
    if data is None:
        return
    axis = normalize_axis(p.axis, len(data))
    if p.use_length:
        assign(ins, 1, data[:axis] + data[axis + 1:])


def _log_softmax_shape(p, ins, outs):
    if p.use_length:
        raise InferError("use_length=True is not supported: log_softmax takes no length input")
    _softmax_shape(p, ins, outs)


def _softmax_type(p, ins, outs):
    data = ins[0]
    if data is None and outs[0] is not None and p.dtype is None:
        ins[0] = data = outs[0]
    _need_float(data, "softmax")
    if data is not None:
        assign_dtype(outs, 0, np.dtype(p.dtype) if p.dtype else data, "out")
    # length may have any dtype: MXNet's type rule leaves it free (its kernel reads it as is)


def _softmax_activation_shape(p, ins, outs):
    data = tie(ins, outs)
    if p.mode == "channel" and data is not None and len(data) < 3:
        raise InferError(f"Input needs at least 3 dimensions when mode=channel, got "
                         f"{fmt(data)}")


# -- BatchNorm / LayerNorm --------------------------------------------------------------------
def bn_param_dtype(data_dtype: np.dtype) -> np.dtype:
    """gamma, beta, moving stats, mean and var are float32 for float16 data (as MXNet)."""
    return F32 if data_dtype == np.float16 else data_dtype


def _channels(p, ins: list, idx: range) -> int:
    """The channel count from the data or from any per-channel input already known."""
    data = ins[0]
    c = -1
    if data is not None:
        c = data[normalize_axis(p.axis, len(data), "Channel axis")]
    for i in idx:
        s = ins[i]
        if s is not None and len(s) == 1 and s[0] >= 0 and c < 0:
            c = s[0]
    return c


def _bn_shape(p, ins, outs):
    data = tie(ins, outs)
    c = _channels(p, ins, range(1, 5))
    if c < 0:
        return
    for i in range(1, 5):
        assign(ins, i, (c,))
    if data is None:
        return
    for j in (1, 2):
        assign(outs, j, (c,), "out")


def _bn_type(p, ins, outs):
    data = _tie_type(ins, outs)
    if data is None:
        return
    _need_float(data, "BatchNorm")
    param = bn_param_dtype(data)
    for i in range(1, 5):
        assign_dtype(ins, i, param)
    for j in (1, 2):
        assign_dtype(outs, j, param, "out")


def _ln_shape(p, ins, outs):
    data = tie(ins, outs)
    if data is None:
        return
    if not data:
        raise InferError("LayerNorm needs data with at least one dimension, got a scalar")
    axis = normalize_axis(p.axis, len(data), "Channel axis")
    for i in (1, 2):
        assign(ins, i, (data[axis],))
    stat = data[:axis] + (1,) + data[axis + 1:]
    for j in (1, 2):
        assign(outs, j, stat, "out")


def _ln_type(p, ins, outs):
    same_type(p, ins, outs)
    _need_float(ins[0], "LayerNorm")


# -- declarations -----------------------------------------------------------------------------
def _visible_mean_var(p):
    return 3 if p.output_mean_var else 1


def _declare() -> None:
    register_op(OpDef(
        "FullyConnected", params={"num_hidden": PositiveInt(), "no_bias": Bool(False),
                                  "flatten": Bool(True)},
        inputs=lambda p: ["data", "weight"] if p.no_bias else ["data", "weight", "bias"],
        infer_shape=_fc_shape, infer_type=same_type))
    register_op(OpDef(
        "Activation", params={"act_type": Enum(("relu", "sigmoid", "softrelu", "softsign",
                                                 "tanh"))},
        infer_shape=_elementwise_shape, infer_type=_elementwise_type,
        traits=("elementwise", "unary", "activation"), inplace=((0, 0),), named_inputs=False))
    register_op(OpDef(
        "LeakyReLU", params={"act_type": Enum(("elu", "gelu", "leaky", "prelu", "rrelu", "selu"),
                                              "leaky"),
                             "slope": Float(0.25), "lower_bound": Float(0.125),
                             "upper_bound": Float(0.334)},
        inputs=_lrelu_inputs, outputs=_lrelu_outputs, infer_shape=_lrelu_shape,
        infer_type=_lrelu_type, traits=("activation",),
        random=lambda p: p.act_type == "rrelu",
        input_var_attrs={"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}))
    register_op(OpDef(
        "Dropout", params={"p": Float(0.5), "mode": Enum(("always", "training"), "training"),
                           "axes": Shape(()), "cudnn_off": OptBool(False)},
        outputs=("output", "mask"), num_visible=1, infer_shape=_dropout_shape,
        infer_type=_dropout_type, random=True))
    softmax_params = {"axis": Int(-1), "temperature": OptFloat(None),
                      "dtype": OptEnum(("float16", "float32", "float64"), None),
                      "use_length": OptBool(False)}
    register_op(OpDef("softmax", params=softmax_params, inputs=_softmax_inputs,
                      infer_shape=_softmax_shape, infer_type=_softmax_type,
                      traits=("softmax",)))
    register_op(OpDef("log_softmax", params=softmax_params, infer_shape=_log_softmax_shape,
                      infer_type=_softmax_type, traits=("softmax",)))
    register_op(OpDef("SoftmaxActivation",
                      params={"mode": Enum(("channel", "instance"), "instance")},
                      infer_shape=_softmax_activation_shape, infer_type=_elementwise_type,
                      traits=("softmax",), named_inputs=False))
    register_op(OpDef(
        "BatchNorm", params={"eps": Float(1e-3), "momentum": Float(0.9), "fix_gamma": Bool(True),
                             "use_global_stats": Bool(False), "output_mean_var": Bool(False),
                             "axis": Int(1), "cudnn_off": Bool(False),
                             "min_calib_range": OptFloat(None), "max_calib_range": OptFloat(None)},
        inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
        aux=("moving_mean", "moving_var"), outputs=("output", "mean", "var"),
        num_visible=_visible_mean_var, infer_shape=_bn_shape, infer_type=_bn_type,
        traits=("normalization",),
        input_var_attrs={"moving_mean": {"__init__": '["zero", {}]'},
                         "moving_var": {"__init__": '["one", {}]'}}))
    register_op(OpDef(
        "LayerNorm", params={"axis": Int(-1), "eps": Float(1e-5), "output_mean_var": Bool(False)},
        inputs=("data", "gamma", "beta"), outputs=("output", "mean", "std"),
        num_visible=_visible_mean_var, infer_shape=_ln_shape, infer_type=_ln_type,
        traits=("normalization",)))


_declare()
