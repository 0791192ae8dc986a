"""Sequence-model figures (issue 16), MXNet 1.9.1 timed in alternation in the same run (a
worker process of the oracle venv, bound once; see common.MXNetWorker):

- ``lstm``: the PTB-medium LSTM LM (embedding 650, 2 LSTM layers of 650 as one RNN op,
  decoder tied to the embedding, vocabulary 10000, SoftmaxOutput), batch 32, 35 steps:
  inference forward and train step (forward + backward of every parameter) against MXNet's
  fused CPU RNN kernel, natively and with the other strategies;
- ``bert``: BERT-base with its pooler, NSP and MLM heads (GluonNLP bert_12_768_12 exported
  by tests/data/seq/models/make_seq.py, the symbol gzipped next to this script; 20 masked
  positions), sequence 128, batch 8, inference, per strategy against MXNet's default CPU
  backend.

The same symbol JSON runs on both sides (written by graphexec for the LM); parameters are
uniform in +-0.05 on both.

Run: OMP_NUM_THREADS=2 python benchmarks/bench_seq.py [lstm|bert] --mxnet /path/to/mxvenv/bin/python
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import MXNetWorker, add_mxnet_backend, alternating_medians  # noqa: E402

import graphexec as gx  # noqa: E402

HERE = Path(__file__).resolve().parent
VOCAB, EMBED, HIDDEN, LAYERS, STEPS, BATCH = 10000, 650, 650, 2, 35, 32
BERT_SEQ, BERT_BATCH, BERT_MASKED = 128, 8, 20


def lstm_lm() -> tuple[gx.sym.Symbol, dict, dict]:
    """(symbol, input shapes, integer inputs and their [low, high) range)."""
    S = gx.sym
    embed_weight = S.Variable("embed_weight")
    x = S.Embedding(S.Variable("data"), weight=embed_weight, input_dim=VOCAB,
                    output_dim=EMBED, name="embed")
    rnn = S.RNN(x, S.Variable("lstm_parameters"), S.Variable("lstm_begin_h"),
                S.Variable("lstm_begin_c"), state_size=HIDDEN, num_layers=LAYERS, mode="lstm",
                state_outputs=True, name="lstm")
    out = S.Reshape(rnn[0], shape=(-1, HIDDEN))
    logits = S.FullyConnected(out, weight=embed_weight, num_hidden=VOCAB, name="decoder")
    label = S.Reshape(S.Variable("softmax_label"), shape=(-1,))
    sym = S.SoftmaxOutput(logits, label, name="softmax")
    state = (LAYERS, BATCH, HIDDEN)
    shapes = {"data": (STEPS, BATCH), "softmax_label": (STEPS, BATCH), "lstm_begin_h": state,
              "lstm_begin_c": state}
    return sym, shapes, {"data": (0, VOCAB), "softmax_label": (0, VOCAB)}


def bert_base() -> tuple[gx.sym.Symbol, dict, dict]:
    sym = gx.sym.load_json(gzip.decompress((HERE / "bert_12_768_12-symbol.json.gz")
                                           .read_bytes()).decode())
    shapes = {"data0": (BERT_BATCH, BERT_SEQ), "data1": (BERT_BATCH, BERT_SEQ),
              "data2": (BERT_BATCH,), "data3": (BERT_BATCH, BERT_MASKED)}
    return sym, shapes, {"data0": (0, 1000), "data1": (0, 2), "data2": (1, BERT_SEQ + 1),
                         "data3": (0, BERT_SEQ)}


def fill(exe, ints: dict, rng) -> None:
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        if name in ints:
            arr[...] = rng.integers(*ints[name], arr.shape)
        else:
            arr[...] = rng.uniform(-0.05, 0.05, arr.shape)


def bind(sym, shapes: dict, ints: dict, backend: str, trained=None):
    grads = {n: "write" if trained and n in trained else "null" for n in sym.list_arguments()}
    exe = sym.simple_bind(gx.cpu(), grad_req=grads, backend=backend, **shapes)
    fill(exe, ints, np.random.default_rng(0))
    return exe


def worker(opts, sym, shapes: dict, ints: dict, trained: list, tmp: str):
    if not opts.mxnet:
        return None
    path = os.path.join(tmp, "model-symbol.json")
    sym.save(path)
    spec = os.path.join(tmp, "spec.json")
    Path(spec).write_text(json.dumps({"symbol": path, "shapes": shapes, "trained": trained,
                                      "int_inputs": ints}))
    return MXNetWorker(opts.mxnet, spec, opts.threads, opts.mxnet_backend)


def report(title: str, times: dict, kinds: dict) -> None:
    print(title)
    for name, t in times.items():
        if name.startswith("mxnet "):
            continue
        mx = times.get(f"mxnet {kinds[name]}")
        ratio = f"   / MXNet {t / mx:.3f}" if mx else ""
        print(f"  {name:28s} {t * 1e3:9.1f} ms{ratio}")
    for name, t in times.items():
        if name.startswith("mxnet "):
            print(f"  {name:28s} {t * 1e3:9.1f} ms   (MXNet 1.9.1, timed in alternation)")


def run_lstm(opts, tmp: str) -> None:
    sym, shapes, ints = lstm_lm()
    trained = [n for n in sym.list_arguments() if n not in shapes]
    mx = worker(opts, sym, shapes, ints, trained, tmp)
    fns, kinds = {}, {}
    for backend in opts.strategies.split(";"):
        exe = bind(sym, shapes, ints, backend)
        fns[f"forward {backend}"] = lambda e=exe: e.forward(is_train=False)
        kinds[f"forward {backend}"] = "forward"
    for backend in opts.train_strategies.split(";"):
        exe = bind(sym, shapes, ints, backend, trained)

        def step(e=exe):
            e.forward(is_train=True)
            e.backward()
        fns[f"train step {backend}"], kinds[f"train step {backend}"] = step, "train"
    for fn in fns.values():
        fn()
    times = alternating_medians(fns, mx, kinds, opts.repeat)
    report(f"LSTM LM {LAYERS}x{HIDDEN}, vocab {VOCAB}, batch {BATCH}, {STEPS} steps, threads "
           f"{opts.threads}:", times, kinds)
    if mx:
        mx.close()


def run_bert(opts, tmp: str) -> None:
    sym, shapes, ints = bert_base()
    mx = worker(opts, sym, shapes, ints, [], tmp)
    fns, kinds = {}, {}
    for backend in opts.strategies.split(";"):
        exe = bind(sym, shapes, ints, backend)
        fns[f"forward {backend}"] = lambda e=exe: e.forward(is_train=False)
        kinds[f"forward {backend}"] = "forward"
    for fn in fns.values():
        fn()
    times = alternating_medians(fns, mx, kinds, opts.repeat)
    report(f"BERT-base, sequence {BERT_SEQ}, batch {BERT_BATCH}, threads {opts.threads}:",
           times, kinds)
    if mx:
        mx.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=("lstm", "bert"))
    ap.add_argument("--mxnet", help="python of a venv with mxnet==1.9.1, to time MXNet too")
    ap.add_argument("--strategies", default="NONE;onnxrt;fused;auto",
                    help="inference strategies, separated by ';'")
    ap.add_argument("--train-strategies", default="NONE;fused")
    ap.add_argument("--repeat", type=int, default=7)
    add_mxnet_backend(ap)
    opts = ap.parse_args()
    opts.threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    with tempfile.TemporaryDirectory() as tmp:
        (run_lstm if opts.model == "lstm" else run_bert)(opts, tmp)


if __name__ == "__main__":
    main()
