"""The backward kernel of RNN (``_backward_RNN``, core/ops/rnn.py): layers from the last to
the first, each direction walked backward by its cell (:mod:`.rnn_cells`); then per
direction a few large GEMMs give the weight gradients and the gradient of the layer input,
which (through the dropout mask) is the output gradient of the layer below."""
from __future__ import annotations

from graphexec.core.ops.rnn import backward_inputs
from graphexec.core.runtime.blas_threads import matmul_rows

from .base import kernel
from .rnn import RnnLayout


def _flat(a):
    return a.reshape(-1, a.shape[-1])


class _Backward:
    """One backward run's context: the forward layout, the gradient outputs and the output
    gradients by name, and scratch arrays kept between runs."""

    def __init__(self, call):
        p, xp = call.params, call.xp
        self.p, self.xp = p, xp
        self.ins = dict(zip(backward_inputs(p), call.inputs))
        forward_inputs = [self.ins[n] for n in ("data", "parameters", "state", "state_cell",
                                                "sequence_length") if n in self.ins]
        self.lay = RnnLayout(xp, p, forward_inputs, self.ins["output"], self.ins["reserve"])
        outs = call.outputs
        self.ddata, self.dparams = outs[0], outs[1]
        self.dstates = outs[2:4] if p.mode == "lstm" else outs[2:3]
        self.zeros = outs[2 + len(self.dstates):]  # sequence_length's gradient
        self.want_data = call.req[0] != "null"
        self.arrays: dict = {}

    def buffer(self, name: str, shape: tuple):
        arr = self.arrays.get((name, shape))
        if arr is None:
            arr = self.arrays[(name, shape)] = self.xp.empty(shape, self.ddata.dtype)
        return arr

    def run(self) -> None:
        lay, p = self.lay, self.p
        lay.update_active()
        weights, grads = lay.weights(lay.params), lay.weights(self.dparams)
        dy = self.ins["ograd"]
        for layer in range(p.num_layers - 1, -1, -1):
            x_shape = lay.layer_input(layer, True).shape
            dx = self.ddata if layer == 0 else self.buffer(f"dx{layer % 2}", x_shape)
            for d in range(lay.num_dirs):
                direction = lay.direction(layer, d, weights, True)
                dpre = self.direction(direction, layer * lay.num_dirs + d, dy, d,
                                      grads[(layer, d)])
                if layer > 0 or self.want_data:
                    self.input_grad(direction, dpre, dx, accumulate=d > 0)
            if layer > 0:
                dy = self.through_dropout(layer - 1, dx)
        for z in self.zeros:
            z.fill(0)

    def direction(self, d, k: int, dy, k_dir: int, g: dict):
        """Walk one direction backward; write its weight and begin-state gradients and
        return the per-step gradient of its gate pre-activations."""
        lay, xp = self.lay, self.xp
        dy = dy[:, :, k_dir * lay.proj:(k_dir + 1) * lay.proj]
        if lay.active is not None:
            dy = dy * lay.active
        dh = self.state_grad("ograd_state", k, d.h0, "dh")
        dc = None if d.c0 is None else self.state_grad("ograd_statecell", k, d.c0, "dc")
        d.res["h_prev"] = d.shifted(d.y, d.h0)
        seqs = {"dpre": self.buffer("dpre", d.res["gates"].shape)}
        if lay.cell.split_recurrent:
            seqs["dhw"] = self.buffer("dhw", d.res["gates"].shape)
        if "h2r_weight" in d.w:
            seqs["dproj"] = self.buffer("dproj", d.y.shape)
        lay.cell.backward(d, dy, dh, dc, seqs)
        for out, value in zip(self.dstates, (dh, dc)):
            xp.copyto(out[k], value)
        self.weight_grads(d, seqs, g)
        return seqs["dpre"]

    def state_grad(self, name: str, k: int, like, key: str):
        """A writable copy of a final state's gradient (zeros without state outputs)."""
        out = self.buffer(key, like.shape)
        given = self.ins.get(name)
        if given is None:
            out.fill(0)
        else:
            self.xp.copyto(out, given[k])
        return out

    def weight_grads(self, d, seqs: dict, g: dict) -> None:
        xp = self.xp
        dpre = _flat(seqs["dpre"])
        rec = _flat(seqs.get("dhw", seqs["dpre"]))
        matmul_rows(xp, dpre.T, _flat(d.x), g["i2h_weight"])
        matmul_rows(xp, rec.T, _flat(d.res["h_prev"]), g["h2h_weight"])
        xp.sum(dpre, axis=0, out=g["i2h_bias"])
        xp.sum(rec, axis=0, out=g["h2h_bias"])
        if "dproj" in seqs:
            matmul_rows(xp, _flat(seqs["dproj"]).T, _flat(d.res["hidden"]), g["h2r_weight"])

    def input_grad(self, d, dpre, dx, accumulate: bool) -> None:
        """dx (+)= dpre @ W_i2h over all steps."""
        matmul_rows(self.xp, _flat(dpre), d.w["i2h_weight"], _flat(dx), accumulate)

    def through_dropout(self, layer: int, dx):
        """The output gradient of ``layer`` from the input gradient of the layer above."""
        if self.p.p <= 0:
            return dx
        dy = self.buffer("dy", dx.shape)
        self.xp.multiply(dx, self.lay.res[f"l{layer}_mask"], out=dy)
        return dy


@kernel("_backward_RNN")
def rnn_backward(call):
    return _Backward(call).run
