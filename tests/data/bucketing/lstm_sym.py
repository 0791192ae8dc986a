"""An unrolled LSTM written against MXNet's symbol API, so the same code builds the symbol in
graphexec (tests) and in MXNet 1.9.1 (make_lstm_case.py, the oracle)."""

HIDDEN, INPUT, VOCAB, BATCH = 8, 6, 5, 4
PARAMS = ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias", "cls_weight", "cls_bias")


def lstm_symbol(sym, seq_len: int):
    """``sym`` is ``mx.sym`` or ``gx.sym``."""
    data = sym.Variable("data")                     # (batch, seq_len, INPUT)
    label = sym.Variable("softmax_label")           # (batch, seq_len)
    p = {n: sym.Variable(n) for n in PARAMS}
    h, c = sym.Variable("init_h"), sym.Variable("init_c")   # (batch, HIDDEN)
    xs = sym.SliceChannel(data, num_outputs=seq_len, axis=1, squeeze_axis=True, name="split")
    outs = []
    for t in range(seq_len):
        x = xs[t] if seq_len > 1 else xs
        gates = (sym.FullyConnected(x, p["i2h_weight"], p["i2h_bias"], num_hidden=4 * HIDDEN,
                                    name=f"t{t}_i2h")
                 + sym.FullyConnected(h, p["h2h_weight"], p["h2h_bias"], num_hidden=4 * HIDDEN,
                                      name=f"t{t}_h2h"))
        g = sym.SliceChannel(gates, num_outputs=4, name=f"t{t}_slice")
        in_gate = sym.Activation(g[0], act_type="sigmoid", name=f"t{t}_in")
        forget = sym.Activation(g[1], act_type="sigmoid", name=f"t{t}_forget")
        cell_in = sym.Activation(g[2], act_type="tanh", name=f"t{t}_cell")
        out_gate = sym.Activation(g[3], act_type="sigmoid", name=f"t{t}_out")
        c = forget * c + in_gate * cell_in
        h = out_gate * sym.Activation(c, act_type="tanh", name=f"t{t}_ctanh")
        outs.append(h)
    hidden = sym.Concat(*outs, dim=0, name="concat")            # (seq_len*batch, HIDDEN)
    pred = sym.FullyConnected(hidden, p["cls_weight"], p["cls_bias"], num_hidden=VOCAB,
                              name="cls")
    flat_label = sym.Reshape(sym.transpose(label), shape=(-1,), name="label_flat")
    return sym.SoftmaxOutput(pred, flat_label, name="softmax")
