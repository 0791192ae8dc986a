"""Run by tests/test_fused_cuda.py in a child process with NUMBA_ENABLE_CUDASIM=1 (numba reads
it when it is imported): every fused kernel of the cases below, built by the code generator,
runs once as the CPU kernel and once as the CUDA kernel under numba's simulator on the same
NumPy inputs; prints one JSON line per kernel with the largest difference per output,
relative to the output's scale."""
from __future__ import annotations

import json
import os
import sys

import numpy as np

import graphexec as gx
from graphexec.backends.fused.codegen import generate, generate_inferred
from graphexec.backends.fused.cuda import cuda_runner
from graphexec.backends.fused.fusedop import _slots
from graphexec.backends.fused.runner import kernel_runner
from graphexec.core.subgraph import RegionCall

S = gx.sym


def _chain():
    """Ten and more pointwise ops with a broadcast bias: forward only."""
    x, b = S.Variable("x"), S.Variable("b")
    y = S.broadcast_add(x * 2.0, b)
    y = S.tanh(S.sigmoid(y) - S.exp(x / 4.0)) + S.relu(x) * S.sqrt(S.abs(x) + 1.0)
    y = S.log1p(S.square(y)) - S.erf(x) + S.clip(x, -0.5, 0.5) * S.softsign(x)
    return y, {"x": (4, 6, 5), "b": (1, 6, 1)}


def _training():
    """A block whose forward and backward chains MXNET_USE_FUSION fuses (broadcast gradients
    summed down through a scratch buffer)."""
    x, w, b = S.Variable("x"), S.Variable("w"), S.Variable("b")
    y = S.broadcast_mul(x, w) + b
    y = S.Activation(y, act_type="sigmoid") * S.tanh(y) + S.LeakyReLU(y, act_type="elu")
    return S.sum(S.square(y)), {"x": (3, 4), "w": (1, 4), "b": (3, 4)}


def _compare(kernel, inputs: list, out_shapes: list, dtypes: list, name: str) -> dict:
    outs = []
    for make in (kernel_runner, cuda_runner):
        arrays = [np.full(s, np.nan, d) for s, d in zip(out_shapes, dtypes)]
        region = RegionCall(None, [], inputs, arrays, gx.cpu(), True, name)
        make(kernel, region)()
        outs.append(arrays)
    diffs = [float(np.abs(a.astype("f8") - b.astype("f8")).max() /
                   max(float(np.abs(a.astype("f8")).max()), 1.0))
             for a, b in zip(*outs)]
    return {"kernel": name, "ops": kernel.ops, "dtype": str(dtypes[0]), "diffs": diffs,
            "finite": bool(all(np.isfinite(a).all() for a in outs[1]))}


def forward_cases() -> list[dict]:
    sym, shapes = _chain()
    names = sym.list_arguments()
    results = []
    for dt in ("float32", "float64", "float16"):
        rng = np.random.default_rng(0)
        inputs = [rng.uniform(-2, 2, shapes[n]).astype(dt) for n in names]
        kernel = generate(sym, names, [a.shape for a in inputs], [a.dtype for a in inputs])
        results.append(_compare(kernel, inputs, [kernel.domain], [np.dtype(dt)], "chain"))
    return results


def training_cases() -> list[dict]:
    os.environ["MXNET_USE_FUSION"] = "1"
    sym, shapes = _training()
    results = []
    for dt in ("float32", "float64"):
        exe = sym.simple_bind(gx.cpu(), type_dict={n: dt for n in shapes},
                              backend_options={"fused": {"cost_model": False}}, **shapes)
        rng = np.random.default_rng(1)
        for node in exe._plan.graph.indexed.nodes:
            if node.op is None or node.op.name != "_FusedOp":
                continue
            p = node.params
            ins, outs = _slots(p)
            kernel = generate_inferred(p.inner, p.input_names, p.entry_shapes, p.entry_dtypes)
            inputs = [rng.uniform(-2, 2, p.entry_shapes[e]).astype(p.entry_dtypes[e])
                      for e in ins]
            results.append(_compare(kernel, inputs, [p.entry_shapes[e] for e in outs],
                                    [np.dtype(p.entry_dtypes[e]) for e in outs], node.name))
    return results


if __name__ == "__main__":
    from numba import config
    if not config.ENABLE_CUDASIM:
        sys.exit("run with NUMBA_ENABLE_CUDASIM=1")
    for result in forward_cases() + training_cases():
        print(json.dumps(result), flush=True)
