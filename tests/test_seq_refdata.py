"""The sequence-model operators against MXNet 1.9.1's own numbers (tests/data/seq/ops,
recorded by make_seq.py there): every recorded case's symbol JSON is loaded as MXNet wrote
it, run forward (inference, and training where it differs) and backward with MXNet's head
gradients, and its outputs, gradients and inferred shapes compared; every error case either
fails with a GraphexecError or is one MXNet silently accepts (listed below with what
graphexec does instead)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol.symbol import create_op_symbol

DATA = Path(__file__).parent / "data" / "seq" / "ops"
META = json.loads((DATA / "seq.json").read_text())
ARRAYS = np.load(DATA / "seq.npz")

#: cases where graphexec computes something else on purpose (core/ops docstrings say why)
DIFFERENT = {
    "lstm_state_clip": "MXNet's CPU kernel ignores lstm_state_clip_min/max",
    "lstm_state_clip_nan_false": "MXNet's CPU kernel ignores lstm_state_clip_min/max",
    "lstm_seqlen": "MXNet's CPU kernel ignores sequence_length",
    "gru_seqlen_bidir": "MXNet's CPU kernel ignores sequence_length",
    "rnn_tanh_seqlen": "MXNet's CPU kernel ignores sequence_length",
    "sort_nan": "NaN placement in a sort is unspecified",
    "batch_take_3d": "MXNet's kernel reads out of bounds on 3-D data (nothing recorded)",
    "cumsum_axis_neg": "MXNet fails in forward on a negative axis",
}
#: error cases MXNet silently accepts: what graphexec does
ACCEPTED = {
    "rnn_float_seqlen": "runs (integer-valued float lengths)",
    "rnn_seqlen_too_long": "raises: lengths must lie in [1, T]",
    "seqlast_len0": "raises: lengths must lie in [1, T]",
    "selfatt_qk_bad_heads": "raises: heads must divide the projection",
    "topk_mask_int_dtype": "runs (the mask keeps the data's dtype, as MXNet's)",
    "batch_take_oob": "runs (indices clipped, as MXNet's kernel)",
    "index_array_bad_axis": "raises: axes must name dimensions of the data",
}
RAISES = {"rnn_seqlen_too_long", "seqlast_len0", "selfatt_qk_bad_heads", "index_array_bad_axis"}

CASES = sorted(n for n, c in META["cases"].items() if not c.get("random"))


def _inputs(name: str, case: dict) -> dict:
    return {i["name"]: ARRAYS[f"{name}/in{k}"] for k, i in enumerate(case["inputs"])}


def _tol(case: dict) -> dict:
    tol = case.get("tolerance") or {}
    return {"rtol": max(tol.get("rtol", 1e-4), 1e-4), "atol": max(tol.get("atol", 1e-5), 1e-5)}


@pytest.mark.parametrize("name", CASES)
def test_case_matches_mxnet(name):
    case = META["cases"][name]
    if name in DIFFERENT:
        pytest.skip(DIFFERENT[name])
    sym = gx.sym.load_json(case["symbol_json"])
    ins = _inputs(name, case)
    grads = case.get("grad_inputs") if case.get("gradient") else []
    exe = sym.bind(gx.cpu(), ins, args_grad={n: np.zeros_like(ins[n]) for n in grads},
                   grad_req={n: "write" if n in grads else "null" for n in ins})
    train = bool(grads) or case.get("train_differs", False)
    outs = exe.forward(is_train=train)
    for k, got in enumerate(outs):
        key = f"{name}/tout{k}" if train and f"{name}/tout{k}" in ARRAYS else f"{name}/out{k}"
        want = ARRAYS[key]
        assert got.shape == want.shape and got.dtype == want.dtype, (k, got.shape, got.dtype)
        np.testing.assert_allclose(got, want, **_tol(case), err_msg=f"{name} output {k}")
    if not grads:
        return
    exe.backward([ARRAYS[f"{name}/hg{k}"] for k in range(len(outs))])
    for k, i in enumerate(case["inputs"]):
        if i["name"] in grads:
            np.testing.assert_allclose(exe.grad_dict[i["name"]], ARRAYS[f"{name}/grad{k}"],
                                       **_tol(case), err_msg=f"{name} gradient of input {k}")


@pytest.mark.parametrize("name", [n for n in CASES if "infer_shape" in META["cases"][n]
                                  and "arg_shapes" in META["cases"][n]["infer_shape"]])
def test_inferred_shapes_match_mxnet(name):
    case = META["cases"][name]
    sym = gx.sym.load_json(case["symbol_json"])
    shapes = {i["name"]: tuple(i["shape"]) for i in case["inputs"]}
    args, outs, aux = sym.infer_shape(**shapes)
    want = case["infer_shape"]
    assert [list(s) for s in args] == want["arg_shapes"]
    assert [list(s) for s in outs] == want["out_shapes"]


def _op_name(call: str) -> str:
    if call.startswith("contrib."):
        return "_contrib_" + call[len("contrib."):]
    return call.split(".")[-1]


def _run_error_case(err: dict):
    names = [i["name"] for i in err["inputs"]]
    sym = create_op_symbol(_op_name(err["op_call"]), [gx.sym.Variable(n) for n in names],
                           dict(err["attrs_given"]))
    rng = np.random.default_rng(0)
    args = {}
    for i in err["inputs"]:
        values = i["values"]
        arr = (np.array(values) if values is not None else rng.uniform(0.1, 1.0, i["shape"]))
        args[i["name"]] = arr.reshape(i["shape"]).astype(i["dtype"])
    exe = sym.bind(gx.cpu(), args)
    return exe.forward()


@pytest.mark.parametrize("name", sorted(META["errors"]))
def test_bad_input_is_rejected_or_documented(name):
    err = META["errors"][name]
    if err["outcome"] == "exception" or name in RAISES:
        with pytest.raises(GraphexecError) as info:
            _run_error_case(err)
        assert len(str(info.value)) > 20
        return
    assert name in ACCEPTED, f"{name}: MXNet accepts it ({err.get('notes')}); say what " \
                             f"graphexec does in ACCEPTED"
    _run_error_case(err)
