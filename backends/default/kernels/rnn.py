"""The RNN kernel (core/ops/rnn.py) and what its backward kernel shares with it: the views of
the flat parameter vector and of the reserve, and one :class:`~.rnn_cells.Direction` per
layer and direction (the cell arithmetic is in :mod:`.rnn_cells`).

Layers run one after the other; layer l > 0 reads the output of layer l - 1, dropped out in
training when ``p`` > 0 (masks from the executor's seeded generator, kept in the reserve
for backward). With ``use_sequence_length``, lengths must be integers in [1, T] (cuDNN's
rule); outputs past a sequence's end are 0."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.rnn import layer_dims, param_layout, reserve_layout

from .base import kernel
from .rnn_cells import CELLS, Direction
from .slicing import concat

# Gluon's parameter concatenation is a Concat (its backward is _backward_Concat)
kernel("_rnn_param_concat")(concat)

__all__ = ["RnnLayout"]


class RnnLayout:
    """Views of one RNN node's arrays: ``inputs`` are the forward node's inputs (data,
    parameters, state, [state_cell], [sequence_length]), ``output`` the final layer's output
    (T, N, D*P), ``reserve`` the flat reserve."""

    def __init__(self, xp, p, inputs: list, output, reserve):
        self.xp, self.p = xp, p
        self.data, self.params, self.state = inputs[0], inputs[1], inputs[2]
        self.cell_state = inputs[3] if p.mode == "lstm" else None
        self.seq_len = inputs[-1] if p.use_sequence_length else None
        self.output = output
        self.seq, self.batch, self.width = self.data.shape
        self.num_dirs, _, self.hidden, self.proj = layer_dims(p)
        self.res = _split(reserve, reserve_layout(p, self.seq, self.batch))
        self.blocks = param_layout(p, self.width)
        self.cell = CELLS[p.mode](p.mode)
        self.active = (xp.empty((self.seq, self.batch, 1), bool)
                       if self.seq_len is not None else None)
        self.steps = xp.arange(self.seq).reshape(-1, 1)
        self.tmp: dict = {}

    # -- per-run inputs -----------------------------------------------------------------------
    def weights(self, params) -> dict:
        """(layer, direction) -> block kind -> view of ``params`` (the parameter vector or
        its gradient)."""
        out: dict = {}
        for b in self.blocks:
            view = params[b.offset:b.offset + b.size].reshape(b.shape)
            out.setdefault((b.layer, b.direction), {})[b.kind] = view
        return out

    def update_active(self) -> None:
        """Check the sequence lengths and mark the steps each sequence covers."""
        if self.seq_len is None:
            return
        lengths = self.seq_len
        bad = (lengths < 1) | (lengths > self.seq) | (lengths != self.xp.floor(lengths))
        if bool(bad.any()):
            raise ValueError(f"sequence_length must hold integers in [1, {self.seq}] (the "
                             f"sequence length of data), got {lengths.tolist()}")
        self.xp.less(self.steps, lengths.reshape(1, -1), out=self.active[..., 0])

    # -- layers ---------------------------------------------------------------------------------
    def layer_output(self, layer: int):
        if layer == self.p.num_layers - 1:
            return self.output
        return self.res[f"l{layer}_output"]

    def layer_input(self, layer: int, train: bool):
        if layer == 0:
            return self.data if self.data.flags.c_contiguous else self.xp.ascontiguousarray(
                self.data)
        if train and self.p.p > 0:
            return self.res[f"l{layer - 1}_dropped"]
        return self.res[f"l{layer - 1}_output"]

    def direction(self, layer: int, d: int, weights: dict, train: bool) -> Direction:
        p, k = self.p, layer * self.num_dirs + d
        prefix = f"l{layer}_d{d}_"
        res = {name[len(prefix):]: arr for name, arr in self.res.items()
               if name.startswith(prefix)}
        y = self.layer_output(layer)[:, :, d * self.proj:(d + 1) * self.proj]
        clip = None
        if p.lstm_state_clip_min is not None:
            clip = (p.lstm_state_clip_min, p.lstm_state_clip_max)
        order = range(self.seq) if d == 0 else range(self.seq - 1, -1, -1)
        return Direction(self.xp, weights[(layer, d)], res, self.layer_input(layer, train), y,
                         self.state[k], None if self.cell_state is None else self.cell_state[k],
                         order, self.active, clip, p.lstm_state_clip_nan,
                         self.tmp.setdefault(k, {}))

    def dropout(self, layer: int, rng) -> None:
        """The input of layer + 1: this layer's output times a fresh mask."""
        keep = 1.0 - self.p.p
        mask = self.res[f"l{layer}_mask"]
        draw = rng.random(mask.shape, dtype=np.float32) < keep
        self.xp.copyto(mask, self.xp.asarray(draw * np.float32(1.0 / keep)), casting="unsafe")
        self.xp.multiply(self.res[f"l{layer}_output"], mask, out=self.res[f"l{layer}_dropped"])


def _split(flat, layout: dict) -> dict:
    """Consecutive views of ``flat`` with the shapes of ``layout``."""
    out, offset = {}, 0
    for name, shape in layout.items():
        n = int(np.prod(shape))
        out[name] = flat[offset:offset + n].reshape(shape)
        offset += n
    return out


@kernel("RNN")
def rnn(call):
    p, xp = call.params, call.xp
    visible = call.outputs[:-1]
    lay = RnnLayout(xp, p, call.inputs, visible[0], call.outputs[-1])
    states = visible[1:]

    def run():
        lay.update_active()
        weights = lay.weights(lay.params)
        train = call.is_train
        for layer in range(p.num_layers):
            dirs = [lay.direction(layer, d, weights, train) for d in range(lay.num_dirs)]
            for direction in dirs:
                lay.cell.forward(direction)
            _finish_layer(lay, layer, dirs, states)
            if train and p.p > 0 and layer < p.num_layers - 1:
                lay.dropout(layer, call.rng)
    return run


def _finish_layer(lay: RnnLayout, layer: int, dirs: list, states: list) -> None:
    """Copy the final states out, then zero the outputs past the sequence ends (until then
    a step past the end holds the state it kept, so the last step holds the final state)."""
    xp = lay.xp
    for d, direction in enumerate(dirs):
        k = layer * lay.num_dirs + d
        last = direction.order[-1]
        if states:
            xp.copyto(states[0][k], direction.y[last])
        if len(states) > 1:
            xp.copyto(states[1][k], direction.res["cell"][last])
    if lay.active is not None:
        out = lay.layer_output(layer)
        xp.multiply(out, lay.active, out=out)
