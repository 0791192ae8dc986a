"""Fused kernels for CUDA (issue 22, the part that runs without a GPU): the code generator's
kernels as numba CUDA kernels (backends/fused/cuda.py) run under numba's CUDA simulator in a
child process (tests/fused_cuda_sim.py) and match the CPU kernels: a forward chain of 21 ops
in float32/64/16 with broadcasting, and the forward and backward kernels MXNET_USE_FUSION
builds for a training graph (broadcast gradients summed down). MXNET_USE_FUSION's defaults as
MXNet's: unset, only GPU contexts fuse. Needs numba (skips saying so)."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="fused kernels are generated with numba")

import graphexec as gx  # noqa: E402
from graphexec.backends.fused import cuda, fuse_pointwise  # noqa: E402
from graphexec.backends.fused.codegen import generate  # noqa: E402

S = gx.sym
HERE = Path(__file__).parent
TOL = {"float32": 1e-6, "float64": 1e-14, "float16": 1e-3}


def test_kernels_match_the_cpu_kernels_under_the_cuda_simulator(tmp_path):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "GRAPHEXEC_CACHE_DIR": str(tmp_path)}
    env.pop("MXNET_USE_FUSION", None)
    done = subprocess.run([sys.executable, str(HERE / "fused_cuda_sim.py")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines()]
    for r in results:
        assert r["finite"], r
        assert max(r["diffs"]) <= TOL[r["dtype"]], r
    chains = [r for r in results if r["kernel"] == "chain"]
    assert {r["dtype"] for r in chains} == {"float32", "float64", "float16"}
    assert all(len(r["ops"]) >= 10 for r in chains)
    backward = [r for r in results if any(op.startswith("_backward_") for op in r["ops"])]
    assert len(backward) == 2  # float32 and float64
    assert all("_backward_broadcast_mul" in r["ops"] for r in backward)  # summed down


def test_cuda_source():
    x, b = S.Variable("x"), S.Variable("b")
    y = S.exp(S.broadcast_add(x, b)) * 2.0
    kernel = generate(y, ["x", "b"], [(4, 3, 5), (1, 3, 1)], [np.dtype("f4")] * 2)
    source = cuda.cuda_source(kernel)
    ast.parse(source)
    assert "@cuda.jit" in source and "cuda.gridsize(1)" in source
    assert f"def kernel({', '.join(f'n{g}' for g in range(len(kernel.groups)))}, " \
           f"{', '.join(kernel.names)}):" in source
    # three merged dims: the flat index splits into i2 (fastest), i1, i0
    assert "i2 = flat % n2" in source and "i0 = r1" in source
    assert kernel.body[-1] in source


@pytest.mark.parametrize("total,simulator,want", [(1, False, (1, 256)), (1000, False, (4, 256)),
                                                  (10**9, False, (8192, 256)),
                                                  (100, True, (7, 16))])
def test_launch_shape(total, simulator, want):
    assert cuda.launch_shape(total, simulator) == want


def _graph(contexts: str):
    """The executed graph of a small training block bound on the CPU, its nodes' contexts
    then set to ``contexts`` (no arrays are made for them: the pass alone runs)."""
    x = S.Variable("x")
    y = S.sum(S.square(S.tanh(x) * 2.0 + 1.0))
    before = os.environ.get("MXNET_USE_FUSION")
    os.environ["MXNET_USE_FUSION"] = "0"
    try:
        exe = y.simple_bind(gx.cpu(), x=(3, 4))
    finally:
        os.environ.pop("MXNET_USE_FUSION")
        if before is not None:
            os.environ["MXNET_USE_FUSION"] = before
    graph = exe._plan.graph
    ctx = gx.gpu(0) if contexts == "gpu" else gx.cpu()
    return graph.with_attrs(context=[ctx] * len(graph.indexed.nodes), partition_plan=None,
                            backend_options={"fused": {"cost_model": False}})


def _fused(graph) -> list[str]:
    return [n.name for n in graph.indexed.nodes if n.op is not None and n.op.name == "_FusedOp"]


def test_use_fusion_unset_fuses_gpu_contexts_only(monkeypatch):
    monkeypatch.delenv("MXNET_USE_FUSION", raising=False)
    cpu = _graph("cpu")
    assert fuse_pointwise.fuse_pointwise_pass(cpu) is cpu
    monkeypatch.setattr(fuse_pointwise, "cuda_available", lambda: True)
    fused = fuse_pointwise.fuse_pointwise_pass(_graph("gpu"))
    assert len(_fused(fused)) == 2  # the forward chain and the backward chain


def test_use_fusion_on_gpu_without_cuda_target_says_why(monkeypatch):
    monkeypatch.delenv("MXNET_USE_FUSION", raising=False)
    monkeypatch.setattr(fuse_pointwise, "cuda_available", lambda: False)
    graph = fuse_pointwise.fuse_pointwise_pass(_graph("gpu"))
    assert not _fused(graph)
    reasons = {d.reason for d in graph.attrs["partition_plan"].nodes.values()}
    assert any("numba's CUDA target" in r for r in reasons), reasons


def test_use_fusion_zero_fuses_nothing(monkeypatch):
    monkeypatch.setenv("MXNET_USE_FUSION", "0")
    monkeypatch.setattr(fuse_pointwise, "cuda_available", lambda: True)
    gpu = _graph("gpu")
    assert fuse_pointwise.fuse_pointwise_pass(gpu) is gpu


def test_use_fusion_one_fuses_cpu_contexts(monkeypatch):
    monkeypatch.setenv("MXNET_USE_FUSION", "1")
    assert len(_fused(fuse_pointwise.fuse_pointwise_pass(_graph("cpu")))) == 2
