"""The recurrent network make_reference.py records and tests/test_harness_rnn.py checks,
built from either MXNet's or graphexec's ``rnn`` and ``sym`` modules."""


def rnn_symbol(rnn, sym, kind, seq_len=5, vocab=11, hidden=8, embed=6):
    """Embedding -> two stacked cells unrolled -> FullyConnected -> SoftmaxOutput."""
    stack = rnn.SequentialRNNCell()
    for i in range(2):
        cell = {"lstm": lambda p: rnn.LSTMCell(hidden, prefix=p),
                "gru": lambda p: rnn.GRUCell(hidden, prefix=p),
                "rnn": lambda p: rnn.RNNCell(hidden, activation="relu", prefix=p)}[kind]
        stack.add(cell(f"{kind}_l{i}_"))
    data = sym.Embedding(sym.Variable("data"), input_dim=vocab, output_dim=embed, name="embed")
    outputs, _ = stack.unroll(seq_len, inputs=data, merge_outputs=True)
    pred = sym.FullyConnected(sym.Reshape(outputs, shape=(-1, hidden)), num_hidden=vocab,
                              name="pred")
    label = sym.Reshape(sym.Variable("softmax_label"), shape=(-1,))
    return sym.SoftmaxOutput(pred, label, name="softmax")
