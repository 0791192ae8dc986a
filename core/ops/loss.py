"""Loss heads: SoftmaxOutput (alias Softmax), LinearRegressionOutput, LogisticRegressionOutput,
MAERegressionOutput, MakeLoss and make_loss.

Every op here carries the ``loss`` trait: their gradient rules never read the output
gradient, so the gradient pass asks for no head gradient (and given ones are ignored), as
MXNet does. Their forward is a softmax, a sigmoid or the identity; the label only matters to
the gradient. Backward nodes as MXNet 1.9.1 builds them: ``_backward_SoftmaxOutput`` (out,
label), ``_backward_linear_reg_out`` / ``_logistic_reg_out`` / ``_mae_reg_out`` (label, out),
each with a label-gradient output that is never written; ``_backward_MakeLoss`` without
inputs (the data with normalization='valid'); make_loss's gradient is ``ones_like(data)``.
"""
from __future__ import annotations

from ..ir.graph import Entry
from .common import (Bool, Enum, Float, InferError, OpDef, ShapeConflict, fmt, known, merge,
                     register_op, same_shape, same_type)
from .nn import prod, tie
from .nn_grad import backward_op
from .registry import get_op

__all__ = ["softmax_label_shapes", "regression_label_shape"]

_NORMALIZATION = ("batch", "null", "valid")


def softmax_label_shapes(p, data: tuple) -> list[tuple]:
    """Label shapes SoftmaxOutput accepts for ``data``, the one it infers first."""
    if p.multi_output:
        spatial = data[2:]
        return [(data[0], prod(spatial)), (data[0], *spatial), data]
    return [data[:-1], data]


def _fits(label: tuple, want: tuple) -> bool:
    try:
        merge(label, want)
    except ValueError:
        return False
    return True


def _softmax_output_shape(p, ins, outs):
    data = tie(ins, outs)
    if data is None:
        return
    choices = softmax_label_shapes(p, data)
    label = ins[1]
    if label is None:
        ins[1] = choices[0]
        return
    for want in choices:
        if _fits(label, want):
            ins[1] = merge(label, want)
            return
    if p.multi_output:
        raise InferError(f"Expecting {fmt(choices[0])} or {fmt(choices[1])}. But got "
                         f"{fmt(label)} as the label of data {fmt(data)}")
    raise ShapeConflict("in", 1, label, choices[0])


def regression_label_shape(data: tuple) -> tuple:
    """The label shape inferred for a regression output: the data's, or (n,) for (n, 1)."""
    return (data[0],) if len(data) == 2 and data[1] == 1 else data


def _regression_shape(p, ins, outs):
    data = tie(ins, outs)
    if data is None:
        return
    label, want = ins[1], regression_label_shape(data)
    if label is None or _fits(label, want):
        ins[1] = merge(label, want)
        return
    # MXNet accepts any label with the data's batch size and element count, e.g. (4, 6)
    # for data (4, 2, 3); unknown dims leave the check to later sweeps
    if known(label) and known(data) and label and label[0] == data[0] \
            and prod(label) == prod(data):
        return
    if known(label) and known(data):
        raise ShapeConflict("in", 1, label, want)


_REGRESSION_BACKWARD = {"LinearRegressionOutput": "_backward_linear_reg_out",
                        "LogisticRegressionOutput": "_backward_logistic_reg_out",
                        "MAERegressionOutput": "_backward_mae_reg_out"}


def _softmax_output_grad(g, node, ograds):
    return g.outputs(g.backward_node(node, "_backward_SoftmaxOutput",
                                     [Entry(node, 0), node.inputs[1]]))


def _regression_grad(g, node, ograds):
    return g.outputs(g.backward_node(node, _REGRESSION_BACKWARD[node.op.name],
                                     [node.inputs[1], Entry(node, 0)]))


def _make_loss_grad(g, node, ograds):
    inputs = [node.inputs[0]] if node.params.normalization == "valid" else []
    return [Entry(g.backward_node(node, "_backward_MakeLoss", inputs), 0)]


def _make_loss_fn_grad(g, node, ograds):
    return [Entry(g.make("ones_like", f"{node.name}_backward", [node.inputs[0]],
                         control_deps=[node]), 0)]


def _declare_backward() -> None:
    backward_op("_backward_SoftmaxOutput", "SoftmaxOutput", ("out", "label"), 2)
    rules = {"SoftmaxOutput": _softmax_output_grad, "MakeLoss": _make_loss_grad,
                   "make_loss": _make_loss_fn_grad}
    for name, bw in _REGRESSION_BACKWARD.items():
        backward_op(bw, name, ("label", "out"), 2)
        rules[name] = _regression_grad
    backward_op("_backward_MakeLoss", "MakeLoss",
                lambda p: ["data"] if p.normalization == "valid" else [], 1)
    for name, rule in rules.items():
        get_op(name).gradient = rule


def _declare() -> None:
    register_op(OpDef(
        "SoftmaxOutput", aliases=("Softmax",),
        params={"grad_scale": Float(1.0), "ignore_label": Float(-1.0),
                "multi_output": Bool(False), "use_ignore": Bool(False),
                "preserve_shape": Bool(False), "normalization": Enum(_NORMALIZATION, "null"),
                "out_grad": Bool(False), "smooth_alpha": Float(0.0)},
        inputs=("data", "label"), infer_shape=_softmax_output_shape, infer_type=same_type,
        traits=("loss",)))
    for name in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
        register_op(OpDef(name, params={"grad_scale": Float(1.0)}, inputs=("data", "label"),
                          infer_shape=_regression_shape, infer_type=same_type,
                          traits=("loss",)))
    register_op(OpDef(
        "MakeLoss", params={"grad_scale": Float(1.0), "valid_thresh": Float(0.0),
                            "normalization": Enum(_NORMALIZATION, "null")},
        infer_shape=same_shape, infer_type=same_type, traits=("loss",), inplace=((0, 0),)))
    register_op(OpDef("make_loss", outputs=("loss",), infer_shape=same_shape,
                      infer_type=same_type, traits=("loss",), inplace=((0, 0),),
                      named_inputs=False))


_declare()
_declare_backward()
