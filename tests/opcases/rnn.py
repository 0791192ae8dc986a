"""Cases for RNN and _rnn_param_concat (core/ops/rnn.py). The twin runs each sequence on its
own, step by step, over its own length (what use_sequence_length means), with the parameter
vector walked in MXNet's order (weights of every layer and direction, then biases)."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sig(x):
    return 1 / (1 + np.exp(-x))


class _Params:
    """The flat vector cut into per-(layer, direction) weights, then biases."""

    def __init__(self, flat, mode, layers, dirs, width, hidden, proj):
        g, pos = GATES[mode], 0

        def take(shape):
            nonlocal pos
            n = int(np.prod(shape))
            out = flat[pos:pos + n].reshape(shape)
            pos += n
            return out
        self.w = {}
        for layer in range(layers):
            cols = width if layer == 0 else dirs * proj
            for d in range(dirs):
                wx, wh = take((g * hidden, cols)), take((g * hidden, proj))
                wr = take((proj, hidden)) if proj != hidden else None
                self.w[layer, d] = [wx, wh, wr]
        for layer in range(layers):
            for d in range(dirs):
                self.w[layer, d] += [take((g * hidden,)), take((g * hidden,))]
        assert pos == flat.size, (pos, flat.size)


def _step(mode, w, x, h, c, clip):
    wx, wh, wr, bx, bh = w
    if mode == "gru":
        a, b = wx @ x + bx, wh @ h + bh
        n_h = h.size
        r, z = _sig(a[:n_h] + b[:n_h]), _sig(a[n_h:2 * n_h] + b[n_h:2 * n_h])
        n = np.tanh(a[2 * n_h:] + r * b[2 * n_h:])
        return (1 - z) * n + z * h, None
    pre = wx @ x + bx + wh @ h + bh
    if mode != "lstm":
        return (np.tanh(pre) if mode == "rnn_tanh" else np.maximum(pre, 0)), None
    n_h = c.size
    i, f, o = _sig(pre[:n_h]), _sig(pre[n_h:2 * n_h]), _sig(pre[3 * n_h:])
    c = f * c + i * np.tanh(pre[2 * n_h:3 * n_h])
    if clip is not None:
        c = np.clip(c, *clip)
    h = o * np.tanh(c)
    return (wr @ h if wr is not None else h), c


def _run_sequence(mode, params, xs, h0, c0, layers, dirs, clip):
    """One sequence (steps, width): the outputs and final states of every layer."""
    hs, cs = [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            h, c = h0[k], (c0[k] if c0 is not None else None)
            seq = []
            for x in (xs if d == 0 else xs[::-1]):
                h, c = _step(mode, params.w[layer, d], x, h, c, clip)
                seq.append(h)
            outs.append(np.array(seq if d == 0 else seq[::-1]))
            hs.append(h)
            cs.append(c)
        xs = np.concatenate(outs, axis=-1)
    return xs, hs, cs


def _rnn(*ins, state_size, num_layers, mode, bidirectional=False, state_outputs=False,
         projection_size=None, lstm_state_clip_min=None, lstm_state_clip_max=None,
         lstm_state_clip_nan=False, use_sequence_length=False, p=0.0):
    data, flat, state = (np.asarray(a, np.float64) for a in ins[:3])
    cell = np.asarray(ins[3], np.float64) if mode == "lstm" else None
    steps, batch, width = data.shape
    dirs, proj = (2 if bidirectional else 1), projection_size or state_size
    lengths = ins[-1].astype(int) if use_sequence_length else [steps] * batch
    params = _Params(flat, mode, num_layers, dirs, width, state_size, proj)
    clip = None if lstm_state_clip_min is None else (lstm_state_clip_min, lstm_state_clip_max)
    out = np.zeros((steps, batch, dirs * proj))
    hy, cy = np.zeros(state.shape), (np.zeros(cell.shape) if cell is not None else None)
    for b in range(batch):
        ys, hs, cs = _run_sequence(mode, params, data[:lengths[b], b], state[:, b],
                                   None if cell is None else cell[:, b], num_layers, dirs, clip)
        out[:lengths[b], b] = ys
        hy[:, b] = hs
        if cy is not None:
            cy[:, b] = cs
    if not state_outputs:
        return out
    return [out, hy] + ([cy] if mode == "lstm" else [])


def _rnn_case(mode, steps=3, batch=2, width=3, hidden=4, layers=1, bidir=False, proj=None,
              seq_len=None, case_id="", **extra):
    dirs = 2 if bidir else 1
    p_size = proj or hidden
    g = GATES[mode]
    n = 0
    for layer in range(layers):
        cols = width if layer == 0 else dirs * p_size
        n += dirs * (g * hidden * (cols + p_size + 2) + (p_size * hidden if proj else 0))
    shapes = [(steps, batch, width), (n,), (layers * dirs, batch, p_size)]
    if mode == "lstm":
        shapes.append((layers * dirs, batch, hidden))
    attrs = {"state_size": hidden, "num_layers": layers, "mode": mode, "bidirectional": bidir,
             "state_outputs": True, **extra}
    if proj:
        attrs["projection_size"] = proj
    if seq_len is not None:
        shapes.append((batch,))
        attrs["use_sequence_length"] = True
    last = len(shapes) - 1

    def gen(rng, shape, dtype, index):
        if seq_len is not None and index == last:
            return np.array(seq_len, dtype)
        return None
    grads = tuple(range(last if seq_len is not None else last + 1))
    return OpCase("RNN", shapes, _rnn, attrs=attrs, gen=gen, low=-0.8, high=0.8,
                  dtypes=("float32", "float64"), rtol=1e-4, atol=1e-5, id=case_id,
                  grad_inputs=grads)


CASES += [
    _rnn_case("rnn_tanh", case_id="tanh"),
    _rnn_case("rnn_relu", layers=2, bidir=True, case_id="relu-l2-bidir"),
    _rnn_case("lstm", case_id="lstm"),
    _rnn_case("lstm", layers=2, bidir=True, case_id="lstm-l2-bidir"),
    _rnn_case("gru", layers=2, case_id="gru-l2"),
    _rnn_case("gru", bidir=True, case_id="gru-bidir"),
    _rnn_case("lstm", hidden=5, proj=3, layers=2, bidir=True, case_id="lstmp-l2-bidir"),
    _rnn_case("lstm", case_id="clip", lstm_state_clip_min=-0.2, lstm_state_clip_max=0.3),
    _rnn_case("lstm", steps=4, batch=3, bidir=True, seq_len=(4, 2, 1), case_id="lstm-seqlen"),
    _rnn_case("gru", steps=4, batch=3, layers=2, seq_len=(3, 4, 1), case_id="gru-seqlen"),
    _rnn_case("rnn_tanh", steps=4, batch=2, bidir=True, seq_len=(2, 4), case_id="tanh-seqlen"),
    OpCase("RNN", [(2, 1, 2), (12,), (1, 1, 2)], _rnn, id="no-state-outputs",
           attrs={"state_size": 2, "num_layers": 1, "mode": "rnn_tanh"},
           dtypes=("float32", "float64"), low=-1, high=1),
]


def _param_concat(*xs, dim=1):
    return np.concatenate(xs, axis=dim)


CASES += [
    OpCase("_rnn_param_concat", [(6,), (4,), (3,)], _param_concat, attrs={"dim": 0}),
    OpCase("_rnn_param_concat", [(2, 3), (2, 5)], _param_concat, id="dim1"),
]
