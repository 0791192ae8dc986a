"""The arithmetic of the RNN kernels (core/ops/rnn.py): one :class:`Direction` per layer and
direction holds its weights, its part of the reserve and its buffers; the cell classes run
its time steps forward (:meth:`~Cell.forward`) and backward (:meth:`~Cell.backward`).

A direction's input projection ``x @ W_i2h.T + bias`` for all T steps is one GEMM into the
``gates`` buffer before the loop; each step then adds ``h @ W_h2h.T`` and applies the gate
activations in place, so the reserve keeps the activated gates that backward needs. The
steps of a loop work on a range of hidden units, one range per thread (see
:mod:`graphexec.core.runtime.blas_threads`): gates are seen
as (N, G, H) and sliced on the last axis. Backward walks the steps in reverse processing
order and keeps, per step, the gradient of the gate pre-activations (``dpre``; ``dhw`` where
GRU's recurrent part differs; ``dproj`` for LSTMP); the caller turns them into weight and
input gradients with a few large GEMMs. With sequence lengths, a step past a sequence's end
keeps its state (a reverse direction starts at the sequence's last step) and contributes no
gradient.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphexec.core.runtime.blas_threads import matmul_rows, run_parts, split

from .base import special

__all__ = ["Direction", "CELLS"]

#: the fewest hidden units worth a thread of their own
MIN_UNITS = 64


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
        matmul_rows(xp, self.x.reshape(t * n, width), self.w["i2h_weight"].T,
                    gates.reshape(t * n, -1), bias=bias)
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


def _units(seq_t, gates: int, u: slice):
    """(N, G*H) seen as (N, G, H), units ``u`` of every gate."""
    return seq_t.reshape(seq_t.shape[0], gates, -1)[:, :, u]


class Cell:
    """Forward and backward of one cell type over one :class:`Direction`: subclasses give
    one forward step on a range of units (``step``) and one backward step (``step_back``)."""

    gates = 1
    #: whether the recurrent pre-activations' gradient differs from the input ones (GRU)
    split_recurrent = False

    def __init__(self, mode: str):
        self.mode = mode

    def bias(self, d: Direction):
        return d.w["i2h_bias"] + d.w["h2h_bias"]

    def _parts(self, d: Direction) -> list[tuple[int, int]]:
        """Ranges of hidden units, one per thread; one range for LSTMP (its projection
        reads every unit)."""
        units = d.res["gates"].shape[-1] // self.gates
        return [(0, units)] if "h2r_weight" in d.w else split(d.xp, units, MIN_UNITS)

    def forward(self, d: Direction) -> None:
        d.input_gemm(self.bias(d))
        parts = self._parts(d)
        w_t = d.w["h2h_weight"].T  # (P, G*H)
        slices = []
        for j, (u0, u1) in enumerate(parts):  # contiguous columns: 1.7x faster per step
            cols = d.buffer(f"wh{j}", (w_t.shape[0], self.gates * (u1 - u0)))
            d.xp.copyto(cols.reshape(w_t.shape[0], self.gates, -1),
                        _units(w_t, self.gates, slice(u0, u1)))
            slices.append(cols)
        run_parts(d.xp, parts, lambda j, u0, u1, sync: self.loop(d, j, slice(u0, u1),
                                                                 slices[j], sync))

    def loop(self, d: Direction, j: int, u: slice, wh, sync) -> None:
        """The steps of the units ``u``; ``wh`` holds their columns of W_h2h^T."""
        xp, gates = d.xp, d.res["gates"]
        hw = d.buffer(f"hw{j}", (d.y.shape[1], wh.shape[1]))
        out_u = slice(None) if "h2r_weight" in d.w else u
        h, c = d.h0, d.c0
        for t in d.order:
            xp.matmul(h, wh, out=hw)
            c = self.step(d, t, _units(gates[t], self.gates, u),
                          hw.reshape(hw.shape[0], self.gates, -1), h, c, u)
            d.keep_inactive(t, d.y[t][:, out_u], h[:, out_u])
            sync()
            h = d.y[t]

    def backward(self, d: Direction, dy, dh, dc, grads: dict) -> None:
        """Walk the steps backward. ``dy``: the output gradient (T, N, P), zero past the
        sequence ends; ``dh`` / ``dc``: the gradients of the final states, updated in place
        to those of the begin states; ``grads`` receives per step ``dpre`` (and ``dhw``,
        ``dproj``)."""
        parts = self._parts(d)
        wh = d.w["h2h_weight"]  # (G*H, P): the state gradient's columns, per part
        cols = [d.xp.ascontiguousarray(wh[:, u0:u1]) if len(parts) > 1 else wh
                for u0, u1 in parts]
        run_parts(d.xp, parts, lambda j, u0, u1, sync: self.loop_back(
            d, slice(u0, u1), cols[j], dy, dh, dc, grads, sync))

    def loop_back(self, d: Direction, u: slice, wh, dy, dh, dc, grads: dict, sync) -> None:
        xp = d.xp
        rec = grads.get("dhw", grads["dpre"])
        h_u = slice(None) if "h2r_weight" in d.w else u  # the state's columns this part owns
        for k in range(len(d.order) - 1, -1, -1):
            t = d.order[k]
            g_h = dh[:, h_u] + dy[t][:, h_u]
            unit_grads = {n: (s[t] if n == "dproj" else _units(s[t], self.gates, u))
                          for n, s in grads.items()}
            direct = self.step_back(d, k, t, g_h, None if dc is None else dc[:, u],
                                    unit_grads, u)
            if d.active is not None:
                for n, view in unit_grads.items():
                    xp.multiply(view, d.active[t] if n == "dproj" else d.active[t][..., None],
                                out=view)
            sync()  # every part has written its units of this step's gradients
            new_dh = rec[t] @ wh
            if direct is not None:
                new_dh += direct
            if d.active is not None:
                new_dh = xp.where(d.active[t], new_dh, dh[:, h_u])
            dh[:, h_u] = new_dh


class Plain(Cell):
    """rnn_relu / rnn_tanh: h' = act(W_i2h x + b_i2h + W_h2h h + b_h2h)."""

    def step(self, d, t, g, hw, h, c, u):
        g += hw
        if self.mode == "rnn_tanh":
            d.xp.tanh(g, out=g)
        else:
            d.xp.maximum(g, 0, out=g)
        d.xp.copyto(d.y[t][:, u], g[:, 0])
        return None

    def step_back(self, d, k, t, g_h, dc, grads, u):
        act, dpre = _units(d.res["gates"][t], 1, u)[:, 0], grads["dpre"][:, 0]
        if self.mode == "rnn_tanh":
            d.xp.multiply(g_h, 1 - act * act, out=dpre)
        else:
            d.xp.multiply(g_h, act > 0, out=dpre)
        return None


class Lstm(Cell):
    """Gates i, f, g, o; c' = f c + i g (clipped when asked); h' = o tanh(c'), projected by
    W_h2r for LSTMP (on one part: the projection reads every unit)."""

    gates = 4

    def step(self, d, t, g, hw, h, c, u):
        xp = d.xp
        g += hw
        _sigmoid(xp, g[:, :2])
        xp.tanh(g[:, 2], out=g[:, 2])
        _sigmoid(xp, g[:, 3])
        i, f, gg, o = g[:, 0], g[:, 1], g[:, 2], g[:, 3]
        cell, tcell = d.res["cell"][t][:, u], d.res["tanh_cell"][t][:, u]
        xp.multiply(f, c[:, u], out=cell)
        cell += i * gg
        self._clip(d, cell)
        d.keep_inactive(t, cell, c[:, u])
        xp.tanh(cell, out=tcell)
        proj = d.w.get("h2r_weight")
        hidden = (d.res["hidden"][t] if proj is not None else d.y[t])[:, u]
        xp.multiply(o, tcell, out=hidden)
        if proj is not None:
            xp.matmul(hidden, proj.T, out=d.y[t])
        return d.res["cell"][t]

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

    def step_back(self, d, k, t, g_h, dc, grads, u):
        xp = d.xp
        g = _units(d.res["gates"][t], 4, u)
        i, f, gg, o = g[:, 0], g[:, 1], g[:, 2], g[:, 3]
        tc = d.res["tanh_cell"][t][:, u]
        proj = d.w.get("h2r_weight")
        if proj is not None:
            xp.copyto(grads["dproj"], g_h)
            g_h = g_h @ proj
        dpre = grads["dpre"]
        di, df, dg, do = dpre[:, 0], dpre[:, 1], dpre[:, 2], dpre[:, 3]
        xp.multiply(g_h, tc, out=do)
        dcell = dc + g_h * o * (1 - tc * tc)
        if d.clip is not None:  # a clipped value passes no gradient
            c = d.res["cell"][t][:, u]
            dcell *= (c > d.clip[0]) & (c < d.clip[1])
        c_prev = d.c0 if k == 0 else d.res["cell"][d.order[k - 1]]
        xp.multiply(dcell, gg, out=di)
        xp.multiply(dcell, c_prev[:, u], out=df)
        xp.multiply(dcell, i, out=dg)
        new_dc = dcell * f
        di *= i * (1 - i)
        df *= f * (1 - f)
        dg *= 1 - gg * gg
        do *= o * (1 - o)
        if d.active is not None:  # past the end: the state (and its gradient) passes
            new_dc = xp.where(d.active[t], new_dc, dc)
        dc[...] = new_dc
        return None


class Gru(Cell):
    """Gates r, z, n: r = sig(W_r x + U_r h + b), z likewise,
    n = tanh(W_n x + b_in + r (U_n h + b_hn)), h' = (1 - z) n + z h. The recurrent
    product of each step stays apart from the gates: only its r and z parts are added."""

    gates = 3
    split_recurrent = True

    def bias(self, d: Direction):
        return d.w["i2h_bias"]

    def step(self, d, t, g, hw, h, c, u):
        xp = d.xp
        hw += _units(d.w["h2h_bias"][None], 3, u)
        g[:, :2] += hw[:, :2]
        _sigmoid(xp, g[:, :2])
        r, z, n = g[:, 0], g[:, 1], g[:, 2]
        hn = d.res["hn"][t][:, u]
        xp.copyto(hn, hw[:, 2])
        n += r * hn
        xp.tanh(n, out=n)
        y = d.y[t][:, u]
        xp.subtract(h[:, u], n, out=y)
        y *= z
        y += n
        return None

    def step_back(self, d, k, t, g_h, dc, grads, u):
        xp = d.xp
        g = _units(d.res["gates"][t], 3, u)
        r, z, n = g[:, 0], g[:, 1], g[:, 2]
        h_prev = d.res["h_prev"][t][:, u]
        dpre, dhw = grads["dpre"], grads["dhw"]
        dr, dz, dn = dpre[:, 0], dpre[:, 1], dpre[:, 2]
        xp.multiply(g_h, 1 - z, out=dn)
        dn *= 1 - n * n
        xp.multiply(g_h, h_prev - n, out=dz)
        dz *= z * (1 - z)
        xp.multiply(dn, d.res["hn"][t][:, u], out=dr)
        dr *= r * (1 - r)
        xp.copyto(dhw[:, :2], dpre[:, :2])
        xp.multiply(dn, r, out=dhw[:, 2])
        return g_h * z


CELLS = {"rnn_relu": Plain, "rnn_tanh": Plain, "lstm": Lstm, "gru": Gru}
