"""The arithmetic of the RNN kernels (core/ops/rnn.py): one :class:`Direction` per layer and
direction holds its weights, its part of the reserve and its buffers; the cell classes run
its time steps forward (:meth:`~Cell.forward`) and backward (:meth:`~Cell.backward`).

A direction's input projection ``x @ W_i2h.T + bias`` for all T steps is one GEMM into the
``gates`` buffer before the loop; each step then adds ``h @ W_h2h.T`` and applies the gate
activations in place, so the reserve keeps the activated gates that backward needs. Backward
walks the steps in reverse processing order and keeps, per step, the gradient of the gate
pre-activations (``dpre``; ``dhw`` where GRU's recurrent part differs; ``dproj`` for LSTMP);
the caller turns them into weight and input gradients with a few large GEMMs. With sequence
lengths, a step past a sequence's end keeps its state (a reverse direction starts at the
sequence's last step) and contributes no gradient.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import special

__all__ = ["Direction", "CELLS"]


@dataclass
class Direction:
    """One layer in one direction: weights ``w`` (views of the parameter vector by block
    kind), reserve views ``res``, the layer input ``x`` (T, N, I) and output slice ``y``
    (T, N, P), the begin states, the processing ``order`` of the steps and, with sequence
    lengths, ``active`` (T, N, 1) booleans."""

    xp: Any
    w: dict
    res: dict
    x: Any
    y: Any
    h0: Any
    c0: Any
    order: range
    active: Any = None
    clip: tuple | None = None
    clip_nan: bool = False
    tmp: dict = field(default_factory=dict)

    def buffer(self, name: str, shape: tuple):
        """A scratch array of the output dtype, kept between runs."""
        arr = self.tmp.get(name)
        if arr is None or arr.shape != shape:
            arr = self.tmp[name] = self.xp.empty(shape, self.y.dtype)
        return arr

    def input_gemm(self, bias) -> Any:
        """gates[t] = x[t] @ W_i2h.T + bias for every step, in one GEMM."""
        xp, gates = self.xp, self.res["gates"]
        t, n, width = self.x.shape
        xp.matmul(self.x.reshape(t * n, width), self.w["i2h_weight"].T,
                  out=gates.reshape(t * n, -1))
        xp.add(gates, bias, out=gates)
        return gates

    def shifted(self, seq, first):
        """(T, N, F): at each step, what ``seq`` held before it in processing order
        (``first`` at the first step, and where the previous step was past the end)."""
        xp = self.xp
        out = xp.empty(seq.shape, seq.dtype)
        if self.order.step > 0:
            out[0], out[1:] = first, seq[:-1]
            prev_active = None if self.active is None else self.active[:-1]
            body = out[1:]
        else:
            out[-1], out[:-1] = first, seq[1:]
            prev_active = None if self.active is None else self.active[1:]
            body = out[:-1]
        if prev_active is not None:
            xp.copyto(body, xp.broadcast_to(first, body.shape), where=~prev_active)
        return out

    def keep_inactive(self, t: int, new, old) -> None:
        """``new`` (written this step) goes back to ``old`` where the sequence has ended."""
        if self.active is not None:
            self.xp.copyto(new, old, where=~self.active[t])


def _sigmoid(xp, x) -> None:
    special(xp).expit(x, out=x)


class Cell:
    """Forward and backward of one cell type over one :class:`Direction`."""

    gates = 1
    #: whether the recurrent pre-activations' gradient differs from the input ones (GRU)
    split_recurrent = False

    def __init__(self, mode: str):
        self.mode = mode

    def bias(self, d: Direction):
        return d.w["i2h_bias"] + d.w["h2h_bias"]

    def backward(self, d: Direction, dy, dh, dc, grads: dict) -> None:
        """Walk the steps backward. ``dy``: the output gradient (T, N, P), zero past the
        sequence ends; ``dh`` / ``dc``: the gradients of the final states, updated in place
        to those of the begin states; ``grads`` receives per step ``dpre`` (and ``dhw``,
        ``dproj``)."""
        xp, wh = d.xp, d.w["h2h_weight"]
        rec = grads.get("dhw", grads["dpre"])
        for k in range(len(d.order) - 1, -1, -1):
            t = d.order[k]
            g_h = dh + dy[t]
            direct = self.step_back(d, k, t, g_h, dc, grads)
            new_dh = rec[t] @ wh
            if direct is not None:
                new_dh += direct
            if d.active is not None:
                for seq in grads.values():
                    xp.multiply(seq[t], d.active[t], out=seq[t])
                new_dh = xp.where(d.active[t], new_dh, dh)
            dh[...] = new_dh


class Plain(Cell):
    """rnn_relu / rnn_tanh: h' = act(W_i2h x + b_i2h + W_h2h h + b_h2h)."""

    def forward(self, d: Direction) -> None:
        xp = d.xp
        gates = d.input_gemm(self.bias(d))
        wh_t = d.w["h2h_weight"].T
        h = d.h0
        for t in d.order:
            g = gates[t]
            g += xp.matmul(h, wh_t, out=d.buffer("hw", g.shape))
            if self.mode == "rnn_tanh":
                xp.tanh(g, out=g)
            else:
                xp.maximum(g, 0, out=g)
            xp.copyto(d.y[t], g)
            d.keep_inactive(t, d.y[t], h)
            h = d.y[t]

    def step_back(self, d, k, t, g_h, dc, grads):
        act, dpre = d.res["gates"][t], grads["dpre"][t]
        if self.mode == "rnn_tanh":
            d.xp.multiply(g_h, 1 - act * act, out=dpre)
        else:
            d.xp.multiply(g_h, act > 0, out=dpre)
        return None


class Lstm(Cell):
    """Gates i, f, g, o; c' = f c + i g (clipped when asked); h' = o tanh(c'), projected by
    W_h2r for LSTMP."""

    gates = 4

    def forward(self, d: Direction) -> None:
        xp = d.xp
        gates = d.input_gemm(self.bias(d))
        n_h = d.c0.shape[-1]
        wh_t = d.w["h2h_weight"].T
        proj = d.w.get("h2r_weight")
        cell, tcell = d.res["cell"], d.res["tanh_cell"]
        h, c = d.h0, d.c0
        for t in d.order:
            g = gates[t]
            g += xp.matmul(h, wh_t, out=d.buffer("hw", g.shape))
            _sigmoid(xp, g[:, :2 * n_h])
            xp.tanh(g[:, 2 * n_h:3 * n_h], out=g[:, 2 * n_h:3 * n_h])
            _sigmoid(xp, g[:, 3 * n_h:])
            i, f, gg, o = (g[:, k * n_h:(k + 1) * n_h] for k in range(4))
            xp.multiply(f, c, out=cell[t])
            cell[t] += xp.multiply(i, gg, out=d.buffer("ig", i.shape))
            self._clip(d, cell[t])
            d.keep_inactive(t, cell[t], c)
            xp.tanh(cell[t], out=tcell[t])
            hidden = d.res["hidden"][t] if proj is not None else d.y[t]
            xp.multiply(o, tcell[t], out=hidden)
            if proj is not None:
                xp.matmul(hidden, proj.T, out=d.y[t])
            d.keep_inactive(t, d.y[t], h)
            h, c = d.y[t], cell[t]

    @staticmethod
    def _clip(d: Direction, c) -> None:
        if d.clip is None:
            return
        low, high = d.clip
        if d.clip_nan:  # fmin/fmax return the number: a NaN becomes the upper bound
            d.xp.fmin(c, high, out=c)
            d.xp.fmax(c, low, out=c)
        else:
            d.xp.clip(c, low, high, out=c)

    def step_back(self, d, k, t, g_h, dc, grads):
        xp = d.xp
        n_h = d.c0.shape[-1]
        g = d.res["gates"][t]
        i, f, gg, o = (g[:, j * n_h:(j + 1) * n_h] for j in range(4))
        tc = d.res["tanh_cell"][t]
        proj = d.w.get("h2r_weight")
        if proj is not None:
            xp.copyto(grads["dproj"][t], g_h)
            g_h = g_h @ proj
        dpre = grads["dpre"][t]
        di, df, dg, do = (dpre[:, j * n_h:(j + 1) * n_h] for j in range(4))
        xp.multiply(g_h, tc, out=do)
        dcell = dc + g_h * o * (1 - tc * tc)
        if d.clip is not None:  # a clipped value passes no gradient
            c = d.res["cell"][t]
            dcell *= (c > d.clip[0]) & (c < d.clip[1])
        xp.multiply(dcell, gg, out=di)
        xp.multiply(dcell, self._c_prev(d, k), out=df)
        xp.multiply(dcell, i, out=dg)
        new_dc = dcell * f
        di *= i * (1 - i)
        df *= f * (1 - f)
        dg *= 1 - gg * gg
        do *= o * (1 - o)
        if d.active is not None:
            new_dc = xp.where(d.active[t], new_dc, dc)
        dc[...] = new_dc
        return None

    @staticmethod
    def _c_prev(d: Direction, k: int):
        # past a sequence's end the stored cell keeps its state, so the previous step's
        # value is right whether or not that step was active
        return d.c0 if k == 0 else d.res["cell"][d.order[k - 1]]


class Gru(Cell):
    """Gates r, z, n: r = sig(W_r x + U_r h + b), z likewise,
    n = tanh(W_n x + b_in + r (U_n h + b_hn)), h' = (1 - z) n + z h."""

    gates = 3
    split_recurrent = True

    def bias(self, d: Direction):
        return d.w["i2h_bias"]

    def forward(self, d: Direction) -> None:
        xp = d.xp
        gates = d.input_gemm(self.bias(d))
        n_h = d.h0.shape[-1]
        wh_t, bh = d.w["h2h_weight"].T, d.w["h2h_bias"]
        hn = d.res["hn"]
        h = d.h0
        for t in d.order:
            g = gates[t]
            hw = xp.matmul(h, wh_t, out=d.buffer("hw", g.shape))
            hw += bh
            g[:, :2 * n_h] += hw[:, :2 * n_h]
            _sigmoid(xp, g[:, :2 * n_h])
            r, z, n = (g[:, k * n_h:(k + 1) * n_h] for k in range(3))
            xp.copyto(hn[t], hw[:, 2 * n_h:])
            n += r * hn[t]
            xp.tanh(n, out=n)
            y = d.y[t]
            xp.subtract(h, n, out=y)
            y *= z
            y += n
            d.keep_inactive(t, y, h)
            h = y

    def step_back(self, d, k, t, g_h, dc, grads):
        xp = d.xp
        n_h = d.h0.shape[-1]
        g = d.res["gates"][t]
        r, z, n = (g[:, j * n_h:(j + 1) * n_h] for j in range(3))
        h_prev = d.res["h_prev"][t]
        dpre, dhw = grads["dpre"][t], grads["dhw"][t]
        dr, dz, dn = (dpre[:, j * n_h:(j + 1) * n_h] for j in range(3))
        xp.multiply(g_h, 1 - z, out=dn)
        dn *= 1 - n * n
        xp.multiply(g_h, h_prev - n, out=dz)
        dz *= z * (1 - z)
        xp.multiply(dn, d.res["hn"][t], out=dr)
        dr *= r * (1 - r)
        xp.copyto(dhw[:, :2 * n_h], dpre[:, :2 * n_h])
        xp.multiply(dn, r, out=dhw[:, 2 * n_h:])
        return g_h * z


CELLS = {"rnn_relu": Plain, "rnn_tanh": Plain, "lstm": Lstm, "gru": Gru}
