"""gx.rnn: unrolled cells compute what MXNet 1.9.1's do (outputs and gradients recorded by
tests/data/harness/make_reference.py), the sentence helpers, and a bucketed LSTM language
model trained with BucketingModule (examples/lstm_bucketing.py)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

ROOT = Path(__file__).resolve().parent.parent
RNN = np.load(ROOT / "tests" / "data" / "harness" / "rnn.npz")
sys.path.insert(0, str(ROOT / "tests" / "data" / "harness"))
from rnn_net import rnn_symbol  # noqa: E402 - the network make_reference.py records


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_unrolled_cells_match_mxnet(kind):
    net = rnn_symbol(gx.rnn, gx.sym, kind)
    inputs = ("data", "softmax_label")
    args = {n: RNN[f"{kind}/arg/{n}"] for n in net.list_arguments()}
    grads = {n: np.zeros_like(v, dtype="f4") for n, v in args.items() if n not in inputs}
    exe = net.bind(gx.cpu(), {n: v.astype("f4") for n, v in args.items()}, args_grad=grads)
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(exe.outputs[0], RNN[f"{kind}/out"], rtol=1e-5, atol=1e-7)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, RNN[f"{kind}/grad/{name}"], rtol=1e-4, atol=1e-6,
                                   err_msg=name)


def test_parameter_names_and_lstm_forget_bias():
    stack = gx.rnn.SequentialRNNCell()
    stack.add(gx.rnn.LSTMCell(4, prefix="l0_", forget_bias=2.0))
    outputs, states = stack.unroll(3, inputs=gx.sym.Variable("x"), merge_outputs=True)
    assert outputs.list_arguments() == ["x", "l0_i2h_weight", "l0_i2h_bias", "l0_h2h_weight",
                                        "l0_h2h_bias"]
    assert len(states) == 2 and outputs.infer_shape(x=(2, 3, 5))[1] == [(2, 3, 4)]
    bias = gx.nd.zeros(16)
    gx.init.Xavier()(gx.init.InitDesc("l0_i2h_bias", outputs.attr_dict()["l0_i2h_bias"]), bias)
    assert bias.asnumpy().tolist() == [0] * 4 + [2] * 4 + [0] * 8


def test_encode_sentences_and_bucket_iterator():
    coded, vocab = gx.rnn.encode_sentences([["a", "b"], ["b", "c", "a"]], start_label=1,
                                           invalid_label=0)
    assert coded == [[1, 2], [2, 3, 1]] and vocab["\n"] == 0
    with pytest.raises(gx.io.DataError, match="Unknown token z"):
        gx.rnn.encode_sentences([["z"]], vocab=vocab)
    sentences = [[1, 2]] * 4 + [[1, 2, 3, 4]] * 4 + [[1] * 9]
    it = gx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[3, 5], invalid_label=0)
    assert it.default_bucket_key == 5 and it.provide_data[0].shape == (2, 5)
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [3, 3, 5, 5]
    short = next(b for b in batches if b.bucket_key == 3)
    assert short.data[0].asnumpy().tolist() == [[1, 2, 0]] * 2
    assert short.label[0].asnumpy().tolist() == [[2, 0, 0]] * 2


def test_bucketing_module_trains_an_lstm_language_model():
    script = ROOT / "examples" / "lstm_bucketing.py"
    proc = subprocess.run([sys.executable, str(script), "--num-epoch", "2", "--num-sentences",
                           "600", "--num-layers", "1"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(r"RESULT perplexity=([0-9.]+) first=([0-9.]+) buckets=(\d)", proc.stdout)
    assert match, proc.stdout[-2000:]
    final, first, buckets = float(match[1]), float(match[2]), int(match[3])
    assert buckets >= 2 and final < first and final < 8.0  # uniform guessing: ~18
