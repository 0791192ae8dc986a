"""The detection operators against MXNet 1.9.1's own numbers (tests/data/vision/detection,
recorded by make_detection.py there): every recorded case's symbol JSON is loaded as MXNet
wrote it, run forward (training mode where a gradient is recorded) and backward with MXNet's
head gradients, and its outputs and gradients compared; every bad input MXNet rejects fails
here with a GraphexecError naming the node and what is wrong, or is listed below with what
graphexec does instead."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol.symbol import create_op_symbol

DATA = Path(__file__).parent / "data" / "vision" / "detection"
META = json.loads((DATA / "detection.json").read_text())
ARRAYS = np.load(DATA / "detection.npz")

#: bad input MXNet accepts: what graphexec does with it
ACCEPTED = {
    "prior_negative_size": "raises: sizes must be positive (MXNet makes inverted boxes)",
}
#: input MXNet rejects that graphexec runs, and why
RUNS = {
    "prior_float64": "MXNet's legacy operators take float32 only; graphexec computes the "
                     "prior boxes in float32 and returns them in the data's dtype",
}
RAISES = {"prior_negative_size"}
CASES = sorted(META["cases"])


def _tol(case: dict) -> dict:
    tol = case.get("tolerance") or {}
    return {"rtol": tol.get("rtol", 1e-5), "atol": tol.get("atol", 1e-6)}


def _inputs(name: str, case: dict) -> dict:
    return {i["name"]: ARRAYS[f"{name}/in{k}"] for k, i in enumerate(case["inputs"])}


@pytest.mark.parametrize("name", CASES)
def test_case_matches_mxnet(name):
    case = META["cases"][name]
    ins = _inputs(name, case)
    sym = gx.sym.load_json(case["symbol_json"])
    grads = case["grad_inputs"]
    exe = sym.bind(gx.cpu(), ins, args_grad={n: np.zeros_like(ins[n]) for n in grads},
                   grad_req={n: "write" if n in grads else "null" for n in ins})
    outs = exe.forward(is_train=bool(grads))
    for k, got in enumerate(outs):
        want = ARRAYS[f"{name}/out{k}"]
        assert got.shape == want.shape and got.dtype == want.dtype, (k, got.shape, got.dtype)
        np.testing.assert_allclose(got, want, **_tol(case), err_msg=f"{name} output {k}")
    if not grads:
        return
    exe.backward([ARRAYS[f"{name}/hg{k}"] for k in range(len(outs))])
    for k, i in enumerate(case["inputs"]):
        if i["name"] in grads:
            np.testing.assert_allclose(exe.grad_dict[i["name"]], ARRAYS[f"{name}/grad{k}"],
                                       **_tol(case), err_msg=f"{name} gradient of input {k}")


def _run_error_case(name: str, err: dict):
    names = [i["name"] for i in err["inputs"]]
    sym = create_op_symbol(err["op"], [gx.sym.Variable(n) for n in names],
                           dict(err["attrs"], name=name))
    rng = np.random.RandomState(0)
    args = {}
    for i in err["inputs"]:
        values = i["values"]
        arr = np.array(values) if values is not None else rng.uniform(0.1, 1.0, i["shape"])
        args[i["name"]] = arr.reshape(i["shape"]).astype(i["dtype"])
    return sym.bind(gx.cpu(), args).forward()


@pytest.mark.parametrize("name", sorted(META["errors"]))
def test_bad_input_is_rejected_or_documented(name):
    err = META["errors"][name]
    if name in RUNS:
        assert err["outcome"] == "exception", f"{name}: MXNet runs it now"
        _run_error_case(name, err)
        return
    if err["outcome"] == "exception" or name in RAISES:
        with pytest.raises(GraphexecError) as info:
            _run_error_case(name, err)
        text = str(info.value)
        for word in [name] + err["mentions"]:
            assert word in text, f"{name}: {word!r} not in the error: {text}"
        return
    assert name in ACCEPTED, f"{name}: MXNet accepts it ({err['note']}); say what " \
                             f"graphexec does in ACCEPTED"
    _run_error_case(name, err)
