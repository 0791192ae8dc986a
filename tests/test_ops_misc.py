"""The misc, loss and contrib operators (core/ops/misc.py, loss_extra.py, contrib.py) and the
legacy comparison aliases against MXNet 1.9.1's own numbers (tests/data/rest/misc, recorded
by make_misc.py there): every case's symbol JSON is loaded as MXNet wrote it, run forward
and backward with MXNet's head gradients, and its outputs, gradients, output names and
inferred shapes compared; every error case MXNet rejects fails with a GraphexecError."""
from __future__ import annotations


import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol.symbol import create_op_symbol
from mxnet_records import floored_tolerance, load_records, op_name

META, ARRAYS = load_records("rest/misc", "misc")
#: cases MXNet runs and graphexec rejects on purpose: why
REJECTED = {
    "unravel": "unravel_index of 2-D data: MXNet returns the data's first elements "
               "unconverted; graphexec asks for a vector of flat indices",
}
CASES = sorted(set(META["cases"]) - set(REJECTED))
#: cases whose gradient MXNet leaves undefined: what graphexec writes instead
UNDEFINED_GRAD = {
    "ctc_impossible": "MXNet's kernel leaves the gradient of a sample whose labels cannot be "
                      "aligned unwritten (the memory's old contents); graphexec writes zeros",
}


def _inputs(name: str, case: dict) -> dict:
    return {i["name"]: ARRAYS[f"{name}/{i['name']}"] for i in case["inputs"]}


def _bind(case: dict, ins: dict):
    sym = gx.sym.load_json(case["symbol_json"])
    grads = case.get("grad_inputs") if case.get("gradient") else []
    # auxiliary states MXNet's simple_bind left at their initial zeros
    aux = {n: np.zeros(s, "float32") for n, s in
           zip(sym.list_auxiliary_states(), sym.infer_shape(**{
               k: v.shape for k, v in ins.items()})[2])}
    exe = sym.bind(gx.cpu(), ins, args_grad={n: np.zeros_like(ins[n]) for n in grads},
                   grad_req={n: "write" if n in grads else "null" for n in ins},
                   aux_states=aux or None)
    return sym, exe, grads


@pytest.mark.parametrize("name", CASES)
def test_case_matches_mxnet(name):
    case = META["cases"][name]
    ins = _inputs(name, case)
    sym, exe, grads = _bind(case, ins)
    assert sym.list_outputs() == case["list_outputs"]
    outs = exe.forward(is_train=bool(grads))
    for k, got in enumerate(outs):
        want = ARRAYS[f"{name}/out{k}"]
        assert got.shape == want.shape and got.dtype == want.dtype, (k, got.shape, got.dtype)
        np.testing.assert_allclose(got, want, **floored_tolerance(case),
                                   err_msg=f"{name} output {k}")
    if not grads:
        return
    heads = [ARRAYS[f"{name}/hg{k}"] for k in range(len(outs))] if case["head_grads"] else None
    exe.backward(heads)
    if name in UNDEFINED_GRAD:
        assert not exe.grad_dict["in0"][:, 0].any()
    for i in case["inputs"]:
        if i["name"] in grads and name not in UNDEFINED_GRAD:
            np.testing.assert_allclose(exe.grad_dict[i["name"]],
                                       ARRAYS[f"{name}/grad{i['name'][2:]}"],
                                       **floored_tolerance(case),
                                       err_msg=f"{name} gradient of {i['name']}")


@pytest.mark.parametrize("name", [n for n in CASES if "arg_shapes" in
                                  META["cases"][n].get("infer_shape", {})])
def test_inferred_shapes_match_mxnet(name):
    case = META["cases"][name]
    sym = gx.sym.load_json(case["symbol_json"])
    args, outs, aux = sym.infer_shape(**{i["name"]: tuple(i["shape"]) for i in case["inputs"]})
    want = case["infer_shape"]
    assert [list(s) for s in args] == want["arg_shapes"]
    assert [list(s) for s in outs] == want["out_shapes"]
    assert [list(s) for s in aux] == want["aux_shapes"]


@pytest.mark.parametrize("name", sorted(META["errors"]))
def test_bad_input_is_rejected_with_a_sentence(name):
    err = META["errors"][name]
    assert err["outcome"] == "exception", err
    sym = create_op_symbol(op_name(err["op_call"]),
                           [gx.sym.Variable(i["name"]) for i in err["inputs"]],
                           dict(err["attrs_given"]))
    args = {i["name"]: np.ones(i["shape"], i["dtype"]) for i in err["inputs"]}
    with pytest.raises(GraphexecError) as info:
        sym.bind(gx.cpu(), args).forward()
    assert sym.name in str(info.value) or "in0" in str(info.value), str(info.value)


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_input_mxnet_mishandles_is_rejected(name):
    case = META["cases"][name]
    with pytest.raises(GraphexecError, match="vector"):
        _bind(case, _inputs(name, case))


def test_ctc_needs_3d_data_and_names_the_node():
    x, y = gx.sym.Variable("x"), gx.sym.Variable("y")
    loss = gx.sym.ctc_loss(x, y, name="ctc")
    with pytest.raises(GraphexecError, match="ctc.*3 dimensions"):
        loss.infer_shape(x=(4, 3), y=(3, 2))
    with pytest.raises(GraphexecError, match="cannot exceed"):
        loss.infer_shape(x=(2, 3, 5), y=(3, 4))


def test_softmin_takes_no_length_input():
    with pytest.raises(GraphexecError, match="softmin.*use_length"):
        gx.sym.softmin(gx.sym.Variable("x"), use_length=True, name="sm").infer_shape(x=(2, 3))


def test_kl_sparse_reg_moves_its_average_in_backward():
    """MXNet updates the running average in backward: a second backward moves it again."""
    case = META["cases"]["kl_sparse_reg"]
    ins = _inputs("kl_sparse_reg", case)
    _, exe, _ = _bind(case, ins)
    exe.forward(is_train=True)
    exe.backward(ARRAYS["kl_sparse_reg/hg0"])
    avg = next(iter(exe.aux_dict.values()))
    np.testing.assert_allclose(avg, 0.5 * ins["in0"].mean(axis=0), rtol=1e-6)
    exe.backward(ARRAYS["kl_sparse_reg/hg0"])
    np.testing.assert_allclose(avg, 0.75 * ins["in0"].mean(axis=0), rtol=1e-6)


def test_legacy_aliases_resolve_to_one_declaration():
    from graphexec.core.ops import get_op
    for alias, name in (("_Equal", "_equal"), ("_Logical_Xor", "_logical_xor"),
                        ("_LogicalOrScalar", "_logical_or_scalar"),
                        ("_crop_assign", "_slice_assign"), ("_contrib_CTCLoss", "CTCLoss"),
                        ("unravel_index", "_unravel_index")):
        assert get_op(alias) is get_op(name)


def test_histogram_and_split_v2_wrappers_rewrite_their_arguments():
    """gx.sym.histogram / split_v2 as mx.sym's: a bin count with a range or an edges input;
    split points (0 prepended) or a number of sections."""
    x = np.random.default_rng(0).uniform(-3, 3, (4, 5))
    by_count = gx.sym.histogram(a=gx.sym.Variable("data"), bins=5, range=(-2.5, 2.5))
    np.testing.assert_array_equal(by_count.bind(gx.cpu(), {"data": x}).forward()[0],
                                  np.histogram(x, 5, range=(-2.5, 2.5))[0])
    edges = np.array([-1.0, 0.5, 2.0, 4.5, 50.0])
    by_edges = gx.sym.histogram(a=gx.sym.Variable("data"), bins=gx.sym.Variable("bins"))
    np.testing.assert_array_equal(
        by_edges.bind(gx.cpu(), {"data": x, "bins": edges}).forward()[0],
        np.histogram(x, edges)[0])
    d = np.arange(24.0).reshape(2, 3, 4)
    parts = gx.sym.split_v2(gx.sym.Variable("d"), (1, 3), axis=-1)
    for got, want in zip(parts.bind(gx.cpu(), {"d": d}).forward(), np.split(d, (1, 3), -1)):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(GraphexecError, match="range"):
        gx.sym.histogram(a=gx.sym.Variable("data"), bins=4)
    with pytest.raises(GraphexecError, match="indices_or_sections"):
        gx.sym.split_v2(gx.sym.Variable("d"), [1, 2])
