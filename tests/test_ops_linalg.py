"""The linalg operators against MXNet 1.9.1's own numbers (tests/data/rest/linalg, recorded by
make_linalg.py there): each case's symbol JSON as MXNet wrote it is run forward and backward
with MXNet's head gradients, and outputs and gradients are compared; where MXNet raised,
graphexec raises a GraphexecError naming the node. Also: shape errors, aliases and the
``gx.sym.linalg`` namespace."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError

DATA = Path(__file__).parent / "data" / "rest" / "linalg"
META = json.loads((DATA / "linalg.json").read_text())["cases"]
ARRAYS = np.load(DATA / "linalg.npz")


def _bind(name: str, case: dict):
    ins = {n: ARRAYS[f"{name}/in/{n}"] for n in case["inputs"]}
    sym = gx.sym.load_json(case["symbol_json"])
    grads = {n: np.zeros_like(a) for n, a in ins.items()} if case["grads"] else None
    return sym.bind(gx.cpu(), ins, args_grad=grads,
                    grad_req="write" if case["grads"] else "null")


@pytest.mark.parametrize("name", sorted(n for n, c in META.items() if "error" not in c))
def test_case_matches_mxnet(name):
    case = META[name]
    exe = _bind(name, case)
    outs = exe.forward(is_train=case["grads"])
    assert len(outs) == case["n_out"]
    for k, got in enumerate(outs):
        np.testing.assert_allclose(got, ARRAYS[f"{name}/out/{k}"], rtol=1e-9, atol=1e-10,
                                   err_msg=f"{name}: output {k}")
    if not case["grads"]:
        return
    exe.backward([ARRAYS[f"{name}/head/{k}"] for k in range(len(outs))])
    for n in case["inputs"]:
        np.testing.assert_allclose(exe.grad_dict[n], ARRAYS[f"{name}/grad/{n}"], rtol=1e-8,
                                   atol=1e-10, err_msg=f"{name}: gradient of {n}")


@pytest.mark.parametrize("name", sorted(n for n, c in META.items() if "error" in c))
def test_mxnet_error_is_an_error(name):
    exe = _bind(name, META[name])
    with pytest.raises(GraphexecError, match=rf"node '{name}'.*positive definite"):
        exe.forward()


A, B, C = (gx.sym.Variable(n) for n in "ABC")


@pytest.mark.parametrize("make,shapes,match", [
    (lambda: gx.sym.linalg.gemm2(A, B), {"A": (2, 3), "B": (4, 5)},
     r"incompatible matrix dimensions.*3 != 4"),
    (lambda: gx.sym.linalg.gemm2(A, B), {"A": (2, 2, 3), "B": (3, 3, 5)},
     r"same shape except on the matrix axes; axis 0"),
    (lambda: gx.sym.linalg.gemm(A, B, C, axis=2), {"A": (2, 3, 4), "B": (2, 4, 5),
                                                   "C": (2, 3, 5)}, r"axis 2 is not a valid"),
    (lambda: gx.sym.linalg.potrf(A), {"A": (2, 3, 4)}, r"square matrices.*3 and 4 differ"),
    (lambda: gx.sym.linalg.trsm(A, B), {"A": (3, 3), "B": (4, 2)},
     r"incompatible matrix dimensions"),
    (lambda: gx.sym.linalg.gelqf(A), {"A": (4, 3)}, r"at least as many columns as rows"),
    (lambda: gx.sym.linalg.maketrian(A), {"A": (2, 5)}, r"holds 5 entries, not a triangle"),
    (lambda: gx.sym.linalg.extractdiag(A, offset=3), {"A": (3, 3)}, r"offset 3 leaves no"),
])
def test_bad_shapes_name_the_node(make, shapes, match):
    sym = make()
    with pytest.raises(GraphexecError, match=match) as err:
        sym.infer_shape(**shapes)
    assert sym.name in str(err.value)


def test_float16_is_rejected():
    sym = gx.sym.linalg.inverse(A)
    with pytest.raises(GraphexecError, match="float32 or float64"):
        sym.infer_type(A=np.float16)


def test_singular_inverse_names_the_matrix():
    exe = gx.sym.linalg.inverse(A, name="inv").bind(
        gx.cpu(), {"A": np.stack([np.eye(2), np.zeros((2, 2))])})
    with pytest.raises(GraphexecError, match=r"node 'inv'.*matrix 1 of the batch.*singular"):
        exe.forward()


def test_namespace_and_aliases_build_the_same_node():
    mx_style = gx.sym.linalg.gemm2(A, B, transpose_b=True, alpha=2.0, name="g")
    legacy = gx.sym.linalg_gemm2(A, B, transpose_b=True, alpha=2.0, name="g")
    canonical = gx.sym._linalg_gemm2(A, B, transpose_b=True, alpha=2.0, name="g")
    assert mx_style.tojson() == legacy.tojson() == canonical.tojson()
    assert '"_linalg_gemm2"' in mx_style.tojson()
    assert gx.sym.linalg.det(A).list_outputs() == ["det0_output0"]
    assert gx.sym.linalg.slogdet(A).list_outputs() == ["slogdet0_output0", "slogdet0_output1"]


def test_det_of_singular_matrix_has_zero_gradient():
    exe = gx.sym.linalg.det(A).bind(gx.cpu(), {"A": np.array([[1.0, 2.0], [2.0, 4.0]])},
                                     args_grad={"A": np.ones((2, 2))})
    assert exe.forward(is_train=True)[0][0] == 0
    exe.backward([np.ones(1)])
    assert not exe.grad_dict["A"].any()


def test_nd_linalg_runs_the_operators_imperatively():
    a = np.array([[4.0, 2.0], [2.0, 3.0]])
    low = gx.nd.linalg.potrf(gx.nd.array(a, dtype="float64"))
    np.testing.assert_allclose(np.asarray(low) @ np.asarray(low).T, a)
    q, lq = gx.nd.linalg.gelqf(gx.nd.array(np.eye(2, 3), dtype="float64"))
    np.testing.assert_allclose(np.asarray(lq) @ np.asarray(q), np.eye(2, 3), atol=1e-12)


def test_onnxrt_claims_products_and_leaves_factorizations_native():
    pytest.importorskip("onnxruntime")
    s = gx.sym.linalg.gemm2(gx.sym.linalg.potrf(gx.sym.linalg.syrk(A) + B), A, alpha=2.0)
    s = gx.sym.linalg.det(s, name="d") * 1.0
    rng = np.random.default_rng(0)
    args = {"A": rng.uniform(0, 1, (2, 3, 3)).astype("f4"),
            "B": np.repeat(3 * np.eye(3, dtype="f4")[None], 2, 0)}
    want = s.bind(gx.cpu(), args).forward()[0].copy()
    exe = s.bind(gx.cpu(), args, backend="onnxrt")
    np.testing.assert_allclose(exe.forward()[0], want, rtol=1e-5)
    plan = str(exe.partition_plan)
    assert "no ONNX converter for _linalg_potrf" in plan
    assert plan.count("onnxrt region") == 5
