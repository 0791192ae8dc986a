"""Variable-length sequences: SequenceMask, SequenceLast and SequenceReverse.

Data holds sequences along ``axis`` (0: (T, N, ...), 1: (N, T, ...); SequenceReverse takes 0
only, as MXNet) and ``sequence_length`` (N,) gives each one's length when
``use_sequence_length`` (lengths are truncated to integers, as MXNet reads them); without it
every sequence is T long. SequenceMask sets the steps past a sequence's end to ``value``;
SequenceLast takes each sequence's last step; SequenceReverse reverses the first ``length``
steps and leaves the rest. Their backward operators (``_backward_<op>``) read the output
gradient and the lengths; the lengths get a zero gradient.

On purpose unlike MXNet 1.9.1: SequenceLast with a length of 0 reads step -1 there (garbage);
here lengths outside [1, T] raise, as do SequenceReverse lengths above T.
"""
from __future__ import annotations

from .common import (Bool, Float, InferError, Int, OpDef, assign, first_input_type, fmt,
                     register_op)
from .tensor_grad import backward_op, forward_params

__all__ = ["batch_axis"]


def _inputs(p) -> list[str]:
    return ["data", "sequence_length"] if p.use_sequence_length else ["data"]


def batch_axis(p, data: tuple, op: str) -> int:
    """The axis holding the batch (the other of axes 0 and 1)."""
    allowed = (0,) if op == "SequenceReverse" else (0, 1)
    if p.axis not in allowed:
        raise InferError(f"axis={p.axis}: {op} takes the sequence along axis "
                         f"{' or '.join(map(str, allowed))}")
    if len(data) < 2:
        raise InferError(f"data must have at least 2 dimensions (sequence and batch), got "
                         f"{fmt(data)}")
    return 1 - p.axis


def _shape_rule(op: str):
    def rule(p, ins, outs):
        data = ins[0]
        if data is None:
            if op != "SequenceLast" and outs[0] is not None:
                assign(ins, 0, outs[0])
            return
        b = batch_axis(p, data, op)
        if p.use_sequence_length:
            assign(ins, 1, (data[b],))
        if op == "SequenceLast":
            out = data[1:] if p.axis == 0 else data[:1] + data[2:]
        else:
            out = data
        assign(outs, 0, out, "out")
    return rule


def _gradient(g, node, ograds):
    inputs = [ograds[0]] + node.inputs[1:]
    return g.outputs(g.backward_node(node, f"_backward_{node.op.name}", inputs))


def _declare() -> None:
    base = {"use_sequence_length": Bool(False), "axis": Int(0)}
    for op, extra in (("SequenceMask", {"value": Float(0.0)}), ("SequenceLast", {}),
                      ("SequenceReverse", {})):
        register_op(OpDef(op, params={**base, **extra}, inputs=_inputs,
                          infer_shape=_shape_rule(op), infer_type=first_input_type,
                          gradient=_gradient))
        backward_op(f"_backward_{op}", params=forward_params(op),
                    inputs=lambda p: ["ograd", "sequence_length"] if p.use_sequence_length
                    else ["ograd"],
                    outputs=lambda p: ["output0", "output1"] if p.use_sequence_length
                    else ["output"])


_declare()
