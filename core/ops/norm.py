"""Normalisation layers of MXNet's vision models: ``InstanceNorm``, ``GroupNorm``,
``L2Normalization`` (modes instance, channel, spatial) and ``LRN``.

As MXNet 1.9.1 (checked against it, tests/data/vision/geometry):

- ``InstanceNorm(data, gamma, beta)``: per (sample, channel) over the spatial axes; hidden
  outputs ``mean`` and ``var`` (the biased variance), both (N, C);
- ``GroupNorm(data, gamma, beta)``: the channels split in ``num_groups`` groups normalised
  per (sample, group); ``gamma`` and ``beta`` hold one value per *group*; outputs ``mean``
  and ``std`` (sqrt(var + eps)), (N, num_groups), visible with ``output_mean_var``;
- ``L2Normalization``: data / sqrt(sum of squares + eps) over every axis but the first
  (instance), the channel axis (channel) or the spatial axes (spatial); hidden output
  ``norm``: (N,), the data's shape with 1 channel, (N, C);
- ``LRN``: data * (knorm + alpha / nsize * sum of squares over the channels c - h .. c + h,
  h = (nsize - 1) // 2) ^ -beta: an even nsize sums nsize - 1 channels (measured: MXNet
  1.9.1 with and without oneDNN); hidden output ``tmp_norm`` (the data's shape).

Each gradient is one ``_backward_<op>`` node reading the output gradient, the data, gamma
where there is one, and the forward outputs it needs.
"""
from __future__ import annotations

from ..ir.graph import Entry
from .common import (Bool, Enum, Float, InferError, OpDef, assign, fmt, register_op,
                     same_type)
from .nn import PositiveInt, tie
from .tensor_grad import backward_op, forward_params

__all__ = ["l2_reduce_axes"]


def _at_least(data: tuple, n: int, op: str, why: str = "") -> None:
    if len(data) < n:
        raise InferError(f"{op} needs data with at least {n} dimensions{why}, got {fmt(data)}")


def _instance_norm_shape(p, ins, outs):
    data = tie(ins, outs)
    if data is None:
        return
    _at_least(data, 3, "InstanceNorm", " (batch, channel, spatial...)")
    for i in (1, 2):
        assign(ins, i, (data[1],))
    for j in (1, 2):
        assign(outs, j, data[:2], "out")


def _group_norm_shape(p, ins, outs):
    data = tie(ins, outs)
    g = p.num_groups
    for i in (1, 2):
        assign(ins, i, (g,))
    if data is None:
        return
    _at_least(data, 2, "GroupNorm", " (batch, channel, ...)")
    if data[1] >= 0 and data[1] % g:
        raise InferError(f"the channels ({data[1]}) must be divisible by num_groups ({g})")
    for j in (1, 2):
        assign(outs, j, (data[0], g), "out")


def l2_reduce_axes(mode: str, ndim: int) -> tuple:
    """The axes L2Normalization sums the squares over."""
    return {"instance": tuple(range(1, ndim)), "channel": (1,),
            "spatial": tuple(range(2, ndim))}[mode]


def _l2_shape(p, ins, outs):
    data = tie(ins, outs)
    if data is None:
        return
    if p.mode == "instance":
        _at_least(data, 2, "L2Normalization", " (batch, features...) in mode 'instance'")
        norm = data[:1]
    else:
        _at_least(data, 3, "L2Normalization", f" (batch, channel, spatial...) in mode "
                                              f"'{p.mode}'")
        norm = (data[0], 1, *data[2:]) if p.mode == "channel" else data[:2]
    assign(outs, 1, norm, "out")


def _lrn_shape(p, ins, outs):
    data = tie(ins, outs, 2)
    if data is not None:
        _at_least(data, 2, "LRN", " (batch, channel, ...)")


def _rule(op_name: str, which):
    """A gradient rule: one ``op_name`` node reading ``which(node, ograds)``."""
    def rule(g, node, ograds):
        grads = g.outputs(g.backward_node(node, op_name, which(node, ograds)))
        return grads + [None] * (len(node.inputs) - len(grads))
    return rule


def _declare() -> None:
    register_op(OpDef(
        "InstanceNorm", params={"eps": Float(1e-3)}, inputs=("data", "gamma", "beta"),
        outputs=("output", "mean", "var"), num_visible=1, infer_shape=_instance_norm_shape,
        infer_type=same_type, traits=("normalization",),
        gradient=_rule("_backward_InstanceNorm", lambda n, og: [
            og[0], n.inputs[0], n.inputs[1], Entry(n, 1), Entry(n, 2)])))
    backward_op("_backward_InstanceNorm", inputs=("ograd", "data", "gamma", "mean", "var"),
                outputs=3, params=forward_params("InstanceNorm"))
    register_op(OpDef(
        "GroupNorm", params={"num_groups": PositiveInt(1), "eps": Float(1e-5),
                             "output_mean_var": Bool(False)},
        inputs=("data", "gamma", "beta"), outputs=("output", "mean", "std"),
        num_visible=lambda p: 3 if p.output_mean_var else 1, infer_shape=_group_norm_shape,
        infer_type=same_type, traits=("normalization",),
        gradient=_rule("_backward_GroupNorm", lambda n, og: [
            og[0], n.inputs[0], n.inputs[1], Entry(n, 1), Entry(n, 2)])))
    backward_op("_backward_GroupNorm", inputs=("ograd", "data", "gamma", "mean", "std"),
                outputs=3, params=forward_params("GroupNorm"))
    register_op(OpDef(
        "L2Normalization", params={"eps": Float(1e-10),
                                   "mode": Enum(("channel", "instance", "spatial"), "instance")},
        outputs=("output", "norm"), num_visible=1, infer_shape=_l2_shape, infer_type=same_type,
        traits=("normalization",),
        gradient=_rule("_backward_L2Normalization",
                       lambda n, og: [og[0], Entry(n, 0), Entry(n, 1)])))
    backward_op("_backward_L2Normalization", inputs=("ograd", "out", "norm"),
                params=forward_params("L2Normalization"))
    register_op(OpDef(
        "LRN", params={"alpha": Float(1e-4), "beta": Float(0.75), "knorm": Float(2.0),
                       "nsize": PositiveInt()},
        outputs=("output", "tmp_norm"), num_visible=1, infer_shape=_lrn_shape,
        infer_type=same_type, traits=("normalization",),
        gradient=_rule("_backward_LRN", lambda n, og: [og[0], n.inputs[0], Entry(n, 1)])))
    backward_op("_backward_LRN", inputs=("ograd", "data", "tmp_norm"),
                params=forward_params("LRN"))


_declare()
