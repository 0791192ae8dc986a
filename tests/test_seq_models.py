"""Real MXNet 1.9.1 exports of sequence models (tests/data/seq/models, made by make_seq.py
there: gluon.rnn layers of every mode, mx.rnn FusedRNNCell and unrolled LSTMCell bucketing
LMs, the standard and AWD LSTM LMs, a small BERT with its MLM and NSP heads, a Transformer
encoder-decoder) loaded with load_checkpoint and run on every strategy: outputs must match
MXNet's, and training gradients too (natively and with the fused backend).

MXNet's CPU kernel ignores RNN's sequence_length (see core/ops/rnn.py): for the models that
use it, MXNet's numbers are those of full-length sequences, so these runs give every
sequence the full length."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

pytest.importorskip("onnxruntime")

DATA = Path(__file__).parent / "data" / "seq" / "models"
MODELS = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").exists())
TRAINED = [m for m in MODELS if (DATA / m / "expected_train.npz").exists()]
STRATEGIES = ["NONE", "onnxrt", "fused", "auto", "onnxrt,fused", "torch"]
RTOL, ATOL = 1e-3, 1e-4


def _strategy_available(strategy: str) -> None:
    if strategy == "torch":
        pytest.importorskip("torch", reason="the torch strategy needs PyTorch (graphexec[torch])")


def load(name: str, inputs_file: str = "inputs.npz"):
    folder = DATA / name
    meta = json.loads((folder / "meta.json").read_text())
    sym, args, aux = gx.model.load_checkpoint(str(folder / name), 0)
    inputs = dict(np.load(folder / inputs_file))
    if "RNN" in meta["ops"]:
        steps = inputs[next(iter(meta["inputs"]))].shape[0]  # data (T, N, C) comes first
        for key, note in (meta.get("input_notes") or {}).items():
            if "sequence_length" in key + note:
                inputs[key] = np.full_like(inputs[key], steps)
    return sym, {**args, **inputs}, aux, meta


def _no_fallback():
    """A region that falls back to native kernels at run time fails the test."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.filterwarnings("error", message=".*runs with the native kernels instead.*")
    return ctx


def _compare(got: list, want: dict, what: str) -> None:
    assert len(got) == len([k for k in want if k.startswith("out")])
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, want[f"out{k}"], rtol=RTOL, atol=ATOL,
                                   err_msg=f"{what}: output {k}")


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", MODELS)
def test_inference_matches_mxnet(name, strategy, fused_kernel_cache):
    _strategy_available(strategy)
    sym, args, aux, _ = load(name)
    ctx = _no_fallback()
    try:
        exe = sym.bind(gx.cpu(), args, aux_states=aux, grad_req="null", backend=strategy)
        outs = [o.copy() for o in exe.forward(is_train=False)]
    finally:
        ctx.__exit__(None, None, None)
    _compare(outs, dict(np.load(DATA / name / "expected.npz")), f"{name} on {strategy}")


@pytest.mark.parametrize("strategy", ["NONE", "fused", "torch"])
@pytest.mark.parametrize("name", TRAINED)
def test_training_matches_mxnet(name, strategy, fused_kernel_cache):
    _strategy_available(strategy)
    sym, args, aux, _ = load(name)
    want = dict(np.load(DATA / name / "expected_train.npz"))
    heads = dict(np.load(DATA / name / "head_grads.npz"))
    grads = {n: np.zeros_like(a) for n, a in args.items() if f"grad:{n}" in want}
    exe = sym.bind(gx.cpu(), args, args_grad=grads, aux_states=aux, backend=strategy,
                   grad_req={n: "write" if n in grads else "null" for n in args})
    outs = exe.forward(is_train=True)
    _compare([o.copy() for o in outs], want, f"{name} training forward on {strategy}")
    exe.backward([heads[f"hg{k}"] for k in range(len(outs))])
    for n in grads:
        np.testing.assert_allclose(exe.grad_dict[n], want[f"grad:{n}"], rtol=RTOL, atol=ATOL,
                                   err_msg=f"{name} on {strategy}: gradient of {n}")


@pytest.mark.parametrize("strategy", ["NONE", "onnxrt", "fused"])
def test_bucketing_symbols_share_parameters(strategy, fused_kernel_cache):
    """The unrolled mx.rnn LM's buckets (5, 10, 20 steps) bound sharing one parameter set,
    as MXNet's BucketingModule binds them (shared_exec), each matching MXNet."""
    sym, args, aux, _ = load("lstm_bucketing_lm")
    exe = sym.bind(gx.cpu(), args, grad_req="null", backend=strategy)
    buffer: dict = {}
    for steps in (5, 20):
        folder = DATA / "lstm_bucketing_lm"
        bucket = gx.sym.load(str(folder / f"lstm_bucketing_lm_T{steps}-symbol.json"))
        inputs = dict(np.load(folder / f"inputs_T{steps}.npz"))
        shapes = {k: v.shape for k, v in inputs.items()}
        params = [n for n in bucket.list_arguments() if n not in inputs]
        other = bucket.simple_bind(gx.cpu(), grad_req="null", shared_exec=exe,
                                   shared_arg_names=params, shared_buffer=buffer,
                                   backend=strategy, **shapes)
        for n in params:
            assert np.shares_memory(other.arg_dict[n], exe.arg_dict[n]), n
        _compare([o.copy() for o in other.forward(is_train=False, **inputs)],
                 dict(np.load(folder / f"expected_T{steps}.npz")), f"bucket T={steps}")
