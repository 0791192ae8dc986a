"""SVMOutput and the CTC loss (``CTCLoss``, aliases ``ctc_loss``, ``_contrib_CTCLoss``,
``_contrib_ctc_loss``), as MXNet 1.9.1 declares them.

SVMOutput is a loss head (``loss`` trait): its forward is the identity and its backward
(``_backward_SVMOutput``, reading label and output, MXNet's order) writes the L2-SVM gradient,
or the L1-SVM one with ``use_linear``, without reading a head gradient. Each row's label is a
class index; only the first ``batch`` labels are read (MXNet flattens the data to
(batch, rest) and reads ``label[row]``).

CTCLoss takes unnormalised activations (T, N, C), labels (N, L) and, with
``use_data_lengths`` / ``use_label_lengths``, per-sample lengths; it applies a softmax over
C and returns the negative log-likelihood per sample. ``blank_label='first'`` reserves class 0
(labels are padded with 0), ``'last'`` reserves class C-1 (padding -1). Like MXNet's, its
forward also computes the gradient of the loss as a hidden second output (zero past each
sample's data length; a sample whose labels cannot be aligned costs 0 with a zero
gradient, as MXNet's warp-ctc kernel returns); ``_backward_ctc_loss`` (ograds, outputs)
scales it by the head gradient of each sample.
"""
from __future__ import annotations

from ..ir.graph import Entry
from .common import (Bool, Enum, Float, InferError, OpDef, assign, assign_dtype, fmt,
                     register_op)
from .nn_grad import backward_op

__all__ = ["ctc_input_names"]


# -- SVMOutput ------------------------------------------------------------------------------------
def _svm_shape(p, ins, outs):
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return
    if len(data) < 2:
        raise InferError(f"data {fmt(data)} must have a batch axis and a class axis")
    assign(ins, 0, data)
    assign(ins, 1, tuple(data[:-1]))
    assign(outs, 0, data, "out")


def _svm_type(p, ins, outs):
    if ins[0] is None:
        return
    if ins[0].kind != "f":
        raise InferError(f"data has dtype {ins[0]}; SVMOutput needs floating-point data")
    assign_dtype(outs, 0, ins[0], "out")
    if ins[1] is None:
        ins[1] = ins[0]


def _svm_grad(g, node, ograds):
    bw = g.backward_node(node, "_backward_SVMOutput", [node.inputs[1], Entry(node, 0)])
    return g.outputs(bw)


# -- CTCLoss --------------------------------------------------------------------------------------
def ctc_input_names(p) -> list[str]:
    """data, label, then the length inputs the attributes ask for (MXNet's order)."""
    return (["data", "label"] + (["data_lengths"] if p.use_data_lengths else [])
            + (["label_lengths"] if p.use_label_lengths else []))


def _vector_of(ins, k: int, batch: int, what: str) -> None:
    s = ins[k]
    if s is not None and (len(s) != 1 or (s[0] >= 0 and batch >= 0 and s[0] != batch)):
        raise InferError(f"{what} {fmt(s)} must be a vector of one length per sample "
                         f"({batch},)")
    assign(ins, k, (batch,))


def _ctc_shape(p, ins, outs):
    data, label = ins[0], ins[1]
    if data is not None and len(data) != 3:
        raise InferError(f"data {fmt(data)} must have 3 dimensions (time, batch, alphabet)")
    if label is not None and len(label) != 2:
        raise InferError(f"label {fmt(label)} must have 2 dimensions (batch, max labels)")
    if data is None:
        return
    if label is not None and min(label[0], data[1]) >= 0 and label[0] != data[1]:
        raise InferError(f"label {fmt(label)} and data {fmt(data)} disagree on the batch "
                         f"size: {label[0]} != {data[1]}")
    if label is not None and min(label[1], data[0]) >= 0 and label[1] > data[0]:
        raise InferError(f"label {fmt(label)}: the max number of labels ({label[1]}) "
                         f"cannot exceed the sequence length of data {fmt(data)} ({data[0]})")
    for k, name in enumerate(ctc_input_names(p)[2:], start=2):
        _vector_of(ins, k, data[1], name)
    assign(outs, 0, (data[1],), "out")
    assign(outs, 1, data, "out")


def _ctc_type(p, ins, outs):
    if ins[0] is None:
        return
    if ins[0].kind != "f":
        raise InferError(f"data has dtype {ins[0]}; CTCLoss needs floating-point "
                         f"activations")
    assign_dtype(outs, 0, ins[0], "out")
    assign_dtype(outs, 1, ins[0], "out")
    for k in range(1, len(ins)):
        if ins[k] is None:
            ins[k] = ins[0]


def _ctc_grad(g, node, ograds):
    bw = g.backward_node(node, "_backward_ctc_loss", [*ograds, Entry(node, 0), Entry(node, 1)])
    return g.outputs(bw)


def _declare() -> None:
    register_op(OpDef(
        "SVMOutput", inputs=("data", "label"), infer_shape=_svm_shape, infer_type=_svm_type,
        params={"margin": Float(1.0), "regularization_coefficient": Float(1.0),
                "use_linear": Bool(False)},
        gradient=_svm_grad, traits=("loss",)))
    backward_op("_backward_SVMOutput", "SVMOutput", ("label", "out"), 2)
    register_op(OpDef(
        "CTCLoss", aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
        params={"use_data_lengths": Bool(False), "use_label_lengths": Bool(False),
                "blank_label": Enum(("first", "last"), "first")},
        inputs=ctc_input_names, outputs=("output0", "output1"), num_visible=1,
        infer_shape=_ctc_shape, infer_type=_ctc_type, gradient=_ctc_grad))
    backward_op("_backward_ctc_loss", "CTCLoss",
                ("ograd", "ograd_grad", "loss", "grad"),
                lambda p: [f"output{k}" for k in range(len(ctc_input_names(p)))])


_declare()
