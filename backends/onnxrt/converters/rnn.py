"""RNN -> one ONNX LSTM / GRU / RNN node per layer, and ``_rnn_param_concat`` -> Concat.

Each layer's weights are cut out of MXNet's flat parameter vector with Slice and reshaped
(the layout of core/ops/rnn.py: ``param_layout``); the gate rows are reordered from MXNet's
to ONNX's with one Gather (LSTM i f g o -> i o f c, GRU r z n -> z r h) and both directions
stacked; ONNX Runtime folds all of it when the parameters are initializers. GRU uses
``linear_before_reset=1`` (MXNet applies the reset gate to ``W_hn h + b_hn``). A layer's
output Y (T, D, N, H) is transposed to (T, N, D*H), the input of the next layer; the final
states of the layers are concatenated. ``sequence_length`` becomes ``sequence_lens``.
Inference semantics: no dropout between layers. Not expressible in ONNX: LSTMP projections
and MXNet's state clipping (ONNX's ``clip`` bounds the gate inputs, not the cell state).
"""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.rnn import layer_dims, param_layout

from ..convert import ConvertCall, converter, onnx_dtype

_ONNX_OP = {"lstm": "LSTM", "gru": "GRU", "rnn_relu": "RNN", "rnn_tanh": "RNN"}
#: per mode, the MXNet gate index of each ONNX gate position
_GATE_ORDER = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2), "rnn_relu": (0,), "rnn_tanh": (0,)}


def _supports(node, shapes) -> "bool | str":
    p = node.params
    if p.projection_size:
        return "LSTM with projection_size (LSTMP) has no ONNX equivalent"
    if p.lstm_state_clip_min is not None:
        return "RNN state clipping (lstm_state_clip_min/max) has no ONNX equivalent"
    if not shapes or shapes[0] is None:
        return "the data shape is needed to cut the parameter vector"
    return True


def _gate_rows(mode: str, hidden: int) -> np.ndarray:
    """Row indices taking a (G*H, ...) block from MXNet's gate order to ONNX's."""
    return np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in _GATE_ORDER[mode]])


class _Weights:
    """Slices of the flat parameter vector, as ONNX's W, R and B of one layer."""

    def __init__(self, c: ConvertCall):
        self.c = c
        self.blocks = {(b.layer, b.direction, b.kind): b
                       for b in param_layout(c.p, c.in_shapes[0][2])}
        _, _, hidden, _ = layer_dims(c.p)
        self.rows = c.b.ints(_gate_rows(c.p.mode, hidden), c.hint("gates"))

    def block(self, layer: int, d: int, kind: str) -> str:
        b, c = self.blocks[(layer, d, kind)], self.c
        flat = c.b.one("Slice", [c.inputs[1], c.b.ints([b.offset], c.hint("from")),
                                 c.b.ints([b.offset + b.size], c.hint("to"))],
                       hint=c.hint(b.name))
        shaped = c.b.one("Reshape", [flat, c.b.ints(b.shape, c.hint("shape"))],
                         hint=c.hint(b.name))
        return c.b.one("Gather", [shaped, self.rows], hint=c.hint(b.name), axis=0)

    def stacked(self, layer: int, dirs: int, kinds: tuple) -> str:
        """[D, ...] of the (concatenated) blocks ``kinds`` of each direction."""
        c, per_dir = self.c, []
        for d in range(dirs):
            parts = [self.block(layer, d, k) for k in kinds]
            joined = parts[0] if len(parts) == 1 else c.b.one("Concat", parts,
                                                               hint=c.hint("bias"), axis=0)
            per_dir.append(c.b.one("Unsqueeze", [joined, c.b.ints([0], c.hint("d"))],
                                   hint=c.hint("dir")))
        return per_dir[0] if dirs == 1 else c.b.one("Concat", per_dir, hint=c.hint("dirs"),
                                                    axis=0)


def _states(c: ConvertCall, index: int, layer: int, dirs: int) -> str:
    """Rows [layer*D, (layer+1)*D) of a begin-state input."""
    return c.b.one("Slice", [c.inputs[index], c.b.ints([layer * dirs], c.hint("s0")),
                             c.b.ints([(layer + 1) * dirs], c.hint("s1"))],
                   hint=c.hint(f"state{index}_l{layer}"))


@converter("RNN", supports=_supports)
def _rnn(c: ConvertCall) -> None:
    p, b = c.p, c.b
    dirs, _, hidden, _ = layer_dims(p)
    seq, batch, _ = c.in_shapes[0]
    w = _Weights(c)
    lens = ""
    if p.use_sequence_length:
        lens = b.one("Cast", [c.inputs[-1]], hint=c.hint("lens"), to=onnx_dtype(np.int32))
    x, finals = c.x, []
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
    if p.mode == "gru":
        attrs["linear_before_reset"] = 1
    if p.mode.startswith("rnn_"):
        attrs["activations"] = ["Relu" if p.mode == "rnn_relu" else "Tanh"] * dirs
    n_out = 3 if p.mode == "lstm" else 2
    for layer in range(p.num_layers):
        ins = [x, w.stacked(layer, dirs, ("i2h_weight",)), w.stacked(layer, dirs, ("h2h_weight",)),
               w.stacked(layer, dirs, ("i2h_bias", "h2h_bias")), lens, _states(c, 2, layer, dirs)]
        if p.mode == "lstm":
            ins.append(_states(c, 3, layer, dirs))
        outs = b.add(_ONNX_OP[p.mode], ins, [b.fresh(c.hint(f"l{layer}"))
                                             for _ in range(n_out)], **attrs)
        y = b.one("Transpose", [outs[0]], hint=c.hint("y"), perm=[0, 2, 1, 3])
        last = layer == p.num_layers - 1
        x = b.one("Reshape", [y, b.ints([seq, batch, dirs * hidden], c.hint("y"))],
                  c.out if last else None, hint=c.hint("y"))
        finals.append(outs[1:])
    for j, out in enumerate(c.outputs[1:c.node.num_visible_outputs]):  # not the reserve
        parts = [f[j] for f in finals]
        if len(parts) == 1:
            b.one("Identity", parts, out)
        else:
            b.one("Concat", parts, out, axis=0)


@converter("_rnn_param_concat")
def _param_concat(c: ConvertCall) -> None:
    c.b.one("Concat", list(c.inputs), c.out, axis=c.p.dim)
