"""ResNet-18 v1 (MXNet model-zoo topology, random weights) through every ONNX path: whole-model
export run by ONNX Runtime, import back into graphexec, and the onnxrt subgraph backend, each
against graphexec's native forward."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

import graphexec as gx  # noqa: E402

ZOO = Path(__file__).parent / "data" / "json" / "zoo_resnet18_v1-symbol.json.gz"
SHAPES = {"data": (2, 3, 64, 64)}


@pytest.fixture(scope="module")
def resnet():
    sym = gx.sym.load_json(gzip.decompress(ZOO.read_bytes()).decode())
    rng = np.random.default_rng(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(**SHAPES)
    args = {n: (rng.standard_normal(s) * 0.1).astype("f4")
            for n, s in zip(sym.list_arguments(), arg_shapes) if n != "data"}
    aux = {n: (rng.uniform(0.5, 1.5, s)).astype("f4")
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    data = rng.standard_normal(SHAPES["data"]).astype("f4")
    exe = sym.bind(gx.cpu(), {**args, "data": data}, grad_req="null", aux_states=aux,
                   backend="NONE")
    return sym, args, aux, data, exe.forward()[0].copy()


def test_export_runs_in_onnx_runtime(resnet, tmp_path):
    sym, args, aux, data, want = resnet
    path = tmp_path / "resnet18.onnx"
    gx.onnx.export_model(sym, args, aux, SHAPES, path)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"data": data})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_import_runs_in_graphexec(resnet):
    sym, args, aux, data, want = resnet
    model = gx.onnx.export_model(sym, args, aux, SHAPES)
    sym2, args2, aux2 = gx.onnx.import_model(model)
    exe = sym2.bind(gx.cpu(), {**args2, "data": data}, grad_req="null", aux_states=aux2)
    np.testing.assert_allclose(exe.forward()[0], want, rtol=1e-4, atol=1e-4)


def test_onnxrt_backend_claims_the_whole_network(resnet):
    sym, args, aux, data, want = resnet
    exe = sym.bind(gx.cpu(), {**args, "data": data}, grad_req="null", aux_states=aux,
                   backend="onnxrt")
    plan = exe.partition_plan
    assert len(plan.regions) == 1 and plan.num_claimed == len(plan.nodes)
    np.testing.assert_allclose(exe.forward()[0], want, rtol=1e-4, atol=1e-4)
