"""Recurrent layers: MXNet's fused ``RNN`` operator and ``_rnn_param_concat`` (the Concat that
Gluon's RNN layers use to build RNN's flat parameter vector).

``RNN`` runs ``num_layers`` layers of one cell type (``mode``: ``rnn_relu``, ``rnn_tanh``,
``lstm``, ``gru``) over data laid out (T, N, C), each layer forwards or in both directions
(``bidirectional``, outputs concatenated). Inputs: data, parameters (one flat vector),
state (L*D, N, P), state_cell for LSTM (L*D, N, H), sequence_length (N,) with
``use_sequence_length``. Outputs: output (T, N, D*P) and, with ``state_outputs``, the final
states in the order (layer 0 forward, layer 0 backward, layer 1 forward, ...). P is
``projection_size`` for LSTMP (LSTM only) and ``state_size`` otherwise. One hidden output,
``reserve``, holds what a training forward keeps for backward (gate activations, cell
states, layer outputs, dropout masks); inference leaves it unwritten.

The parameter vector is MXNet's layout (checked against MXNet 1.9.1 on arange parameters):
every weight first, layer-major, then direction (forward, backward), each ``i2h_weight``
(G*H, in), ``h2h_weight`` (G*H, P) and, with a projection, ``h2r_weight`` (P, H); then every
bias in the same order, each ``i2h_bias`` (G*H) and ``h2h_bias`` (G*H). G is the gate count:
LSTM gates i, f, g, o; GRU gates r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
Layer l > 0 reads D*P inputs. ``p`` drops out the outputs of every layer but the last in
training (graphexec's seeded generator, masks scaled by 1 / (1 - p)).

Differences from MXNet 1.9.1 on purpose (its CPU kernels; its GPU kernels agree with
graphexec): ``lstm_state_clip_min/max`` and ``sequence_length`` are silently ignored by its
float32 CPU kernel and rejected by its float64 one. graphexec clips the cell state after
each update, before tanh (with ``lstm_state_clip_nan`` a NaN becomes
``lstm_state_clip_max`` instead of spreading; a clipped value passes no gradient), and runs
each sequence over its own length (outputs past it are 0, the state outputs are the states
at its last step, the backward direction starts there), as cuDNN does. LSTMP trains here (MXNet's CPU kernel refuses: "No training support for LSTM with
projection on CPU").
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Entry
from .common import (Bool, Enum, Float, InferError, Int, OpDef, OptFloat, OptInt, ShapeConflict,
                     assign, assign_dtype, fmt, register_op)
from .registry import get_op
from .tensor_grad import backward_op, forward_params

__all__ = ["GATES", "Block", "param_layout", "param_size", "layer_dims", "reserve_layout",
           "backward_inputs",
           "state_shapes"]

#: gates per cell type
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


@dataclass(frozen=True)
class Block:
    """One weight or bias of the flat parameter vector: ``kind`` is ``i2h_weight``,
    ``h2h_weight``, ``h2r_weight``, ``i2h_bias`` or ``h2h_bias``."""

    layer: int
    direction: int
    kind: str
    offset: int
    shape: tuple

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def name(self) -> str:
        return f"l{self.layer}_d{self.direction}_{self.kind}"


def layer_dims(p) -> tuple[int, int, int, int]:
    """(directions, gates, state size H, projected size P)."""
    h = p.state_size
    return (2 if p.bidirectional else 1), GATES[p.mode], h, (p.projection_size or h)


def param_layout(p, input_size: int) -> list[Block]:
    """Every block of the flat parameter vector, in MXNet's order, for data with
    ``input_size`` features."""
    d, g, h, proj = layer_dims(p)
    shapes = []
    for layer in range(p.num_layers):
        width = input_size if layer == 0 else d * proj
        for direction in range(d):
            shapes.append((layer, direction, "i2h_weight", (g * h, width)))
            shapes.append((layer, direction, "h2h_weight", (g * h, proj)))
            if p.projection_size:
                shapes.append((layer, direction, "h2r_weight", (proj, h)))
    for layer in range(p.num_layers):
        for direction in range(d):
            shapes += [(layer, direction, "i2h_bias", (g * h,)),
                       (layer, direction, "h2h_bias", (g * h,))]
    blocks, offset = [], 0
    for layer, direction, kind, shape in shapes:
        block = Block(layer, direction, kind, offset, shape)
        blocks.append(block)
        offset += block.size
    return blocks


def param_size(p, input_size: int) -> int:
    """Length of the flat parameter vector (MXNet's GetRnnParamSize)."""
    last = param_layout(p, input_size)[-1]
    return last.offset + last.size


def state_shapes(p, batch: int) -> tuple[tuple, tuple]:
    """Shapes of ``state`` and ``state_cell`` (and of the state outputs)."""
    d, _, h, proj = layer_dims(p)
    return (p.num_layers * d, batch, proj), (p.num_layers * d, batch, h)


def reserve_layout(p, seq: int, batch: int) -> dict[str, tuple]:
    """What a training forward keeps for backward, name -> shape, in the order the reserve
    output holds them: per layer and direction the post-activation gates (T, N, G*H), for
    LSTM the cell states and their tanh, for LSTMP the unprojected hidden states, for GRU the
    recurrent part of the n gate; per layer but the last its output and, with dropout, the
    mask and the dropped output."""
    d, g, h, proj = layer_dims(p)
    out: dict[str, tuple] = {}
    for layer in range(p.num_layers):
        for direction in range(d):
            key = f"l{layer}_d{direction}"
            out[f"{key}_gates"] = (seq, batch, g * h)
            if p.mode == "lstm":
                out[f"{key}_cell"] = (seq, batch, h)
                out[f"{key}_tanh_cell"] = (seq, batch, h)
                if p.projection_size:
                    out[f"{key}_hidden"] = (seq, batch, h)
            elif p.mode == "gru":
                out[f"{key}_hn"] = (seq, batch, h)
        if layer < p.num_layers - 1:
            out[f"l{layer}_output"] = (seq, batch, d * proj)
            if p.p > 0:
                out[f"l{layer}_mask"] = (seq, batch, d * proj)
                out[f"l{layer}_dropped"] = (seq, batch, d * proj)
    return out


def _reserve_size(p, seq: int, batch: int) -> int:
    total = 0
    for shape in reserve_layout(p, seq, batch).values():
        total += shape[0] * shape[1] * shape[2]
    return total


# -- declaration ------------------------------------------------------------------------------
def _inputs(p) -> list[str]:
    names = ["data", "parameters", "state"]
    if p.mode == "lstm":
        names.append("state_cell")
    if p.use_sequence_length:
        names.append("sequence_length")
    return names


def _visible_outputs(p) -> list[str]:
    if not p.state_outputs:
        return ["output"]
    return ["output", "state_output"] + (["statecell_output"] if p.mode == "lstm" else [])


def _check_params(p) -> None:
    """The attribute combinations MXNet's kernels reject, as sentences."""
    if p.projection_size is not None:
        if p.mode != "lstm":
            raise InferError(f"projection_size={p.projection_size} needs mode='lstm' "
                             f"(LSTMP), got mode={p.mode!r}")
        if not 0 < p.projection_size <= p.state_size:
            raise InferError(f"projection_size={p.projection_size} must be in [1, state_size="
                             f"{p.state_size}]")
    clip = (p.lstm_state_clip_min, p.lstm_state_clip_max)
    if clip != (None, None):
        if p.mode != "lstm":
            raise InferError(f"lstm_state_clip_min/max apply to mode='lstm' only, got "
                             f"mode={p.mode!r}")
        if None in clip or clip[0] > clip[1]:
            raise InferError(f"lstm_state_clip_min={clip[0]} and lstm_state_clip_max={clip[1]}"
                             f": give both, with min <= max")
    if p.state_size < 1 or p.num_layers < 1:
        raise InferError(f"state_size={p.state_size} and num_layers={p.num_layers} must be "
                         f">= 1")
    if not 0 <= p.p < 1:
        raise InferError(f"p={p.p} (dropout between layers) must be in [0, 1)")


def _expect(ins: list, k: int, want: tuple, what: str) -> None:
    try:
        assign(ins, k, want)
    except ShapeConflict:
        raise InferError(f"{what} has shape {fmt(ins[k])}, expected {fmt(want)}") from None


def _shape(p, ins, outs):
    _check_params(p)
    data = ins[0]
    if data is None:
        return
    if len(data) != 3:
        raise InferError(f"data must be 3-D (sequence length, batch, input size), got "
                         f"{fmt(data)}")
    seq, batch, width = data
    d, _, h, proj = layer_dims(p)
    state, cell = state_shapes(p, batch)
    _expect(ins, 2, state, f"state (num_layers*directions, batch, "
                           f"{'projection_size' if p.projection_size else 'state_size'})")
    if p.mode == "lstm":
        _expect(ins, 3, cell, "state_cell (num_layers*directions, batch, state_size)")
    if p.use_sequence_length:
        _expect(ins, len(ins) - 1, (batch,), "sequence_length (batch,)")
    if width >= 0:
        _check_param_size(p, ins, width)
    assign(outs, 0, (seq, batch, d * proj), "out")
    for j in range(1, len(outs) - 1):
        assign(outs, j, state if j == 1 else cell, "out")
    if seq >= 0 and batch >= 0:
        assign(outs, len(outs) - 1, (_reserve_size(p, seq, batch),), "out")


def _check_param_size(p, ins: list, width: int) -> None:
    want = param_size(p, width)
    have = ins[1]
    if have is not None and len(have) == 1 and have[0] >= 0 and have[0] != want:
        extra = f", projection_size={p.projection_size}" if p.projection_size else ""
        raise InferError(
            f"parameters has {have[0]} elements; mode={p.mode!r}, num_layers={p.num_layers}, "
            f"state_size={p.state_size}, bidirectional={p.bidirectional}{extra} on data "
            f"with {width} features need {want}")
    _expect(ins, 1, (want,), "parameters")


def _type(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if data.kind != "f":
        raise InferError(f"data must be floating point, got {data}")
    seq_len = len(ins) - 1 if p.use_sequence_length else None
    for k in range(1, len(ins)):
        if k != seq_len:
            assign_dtype(ins, k, data)
    for j in range(len(outs)):
        assign_dtype(outs, j, data, "out")


def _declare() -> None:
    register_op(OpDef(
        "RNN", params={"state_size": Int(), "num_layers": Int(), "bidirectional": Bool(False),
                       "mode": Enum(tuple(GATES)), "p": Float(0.0),
                       "state_outputs": Bool(False), "projection_size": OptInt(None),
                       "lstm_state_clip_min": OptFloat(None),
                       "lstm_state_clip_max": OptFloat(None),
                       "lstm_state_clip_nan": Bool(False), "use_sequence_length": Bool(False)},
        inputs=_inputs, outputs=lambda p: _visible_outputs(p) + ["reserve"],
        num_visible=lambda p: len(_visible_outputs(p)), infer_shape=_shape, infer_type=_type,
        random=lambda p: p.p > 0 and p.num_layers > 1, traits=("rnn",)))

    concat = get_op("Concat")
    register_op(OpDef("_rnn_param_concat", variadic="num_args", inputs=concat._inputs,
                      params={"num_args": Int(), "dim": Int(1)},
                      infer_shape=concat.infer_shape_fn, infer_type=concat.infer_type_fn,
                      gradient=concat.gradient))


# -- gradient ---------------------------------------------------------------------------------
def backward_inputs(p) -> list[str]:
    """MXNet's order (RNNGrad), then sequence_length and the reserve."""
    names = ["data", "parameters", "state", "output", "ograd"]
    if p.state_outputs:
        names += ["state_output", "ograd_state"]
    if p.mode == "lstm":
        names.append("state_cell")
        if p.state_outputs:
            names += ["statecell_output", "ograd_statecell"]
    if p.use_sequence_length:
        names.append("sequence_length")
    return names + ["reserve"]


def _gradient(g, node, ograds):
    """One ``_backward_RNN`` node; its output k is the gradient of input k (sequence_length's
    is zeros)."""
    p, ins = node.params, node.inputs
    heads = [ins[0], ins[1], ins[2], Entry(node, 0), ograds[0]]
    if p.state_outputs:
        heads += [Entry(node, 1), ograds[1]]
    if p.mode == "lstm":
        heads.append(ins[3])
        if p.state_outputs:
            heads += [Entry(node, 2), ograds[2]]
    if p.use_sequence_length:
        heads.append(ins[-1])
    heads.append(Entry(node, node.num_outputs - 1))
    return g.outputs(g.backward_node(node, "_backward_RNN", heads))


def _declare_gradient() -> None:
    backward_op("_backward_RNN", inputs=backward_inputs, params=forward_params("RNN"),
                outputs=lambda p: [f"output{k}" for k in range(len(_inputs(p)))])
    get_op("RNN").gradient = _gradient


_declare()
_declare_gradient()
