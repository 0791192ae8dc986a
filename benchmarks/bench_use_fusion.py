"""MXNET_USE_FUSION figures (issue 7): one training step (forward(is_train=True) + backward)
of an elementwise-heavy MLP block, bound with MXNET_USE_FUSION=0 and =1 in this process and
timed in alternation (medians).

The block: a LayerNorm written out in elementwise ops (mean, broadcast_sub, square, rsqrt,
broadcast_mul/add with gamma and beta), FullyConnected to ``--ffn``, GELU in its tanh form
(0.5 h (1 + tanh(0.79788 (h + 0.044715 h^3))): ten elementwise ops), FullyConnected back and a
residual add; ``--blocks`` of them, then LinearRegressionOutput. Fusion after the gradient pass
fuses the forward chains left between the matrix products and, where the gain is largest,
the backward chains (the gradient of the GELU alone is 8 elementwise nodes, 10 arrays).

Goal (issue 7): the fused step faster than the unfused one. Kernels compile on the first
fused bind (seconds) and come from the disk cache afterwards.

Run: python benchmarks/bench_use_fusion.py [--batch 64] [--hidden 256] [--ffn 1024]
     [--blocks 2] [--repeat 15] [--number 5] [--threads N]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import interleaved_medians  # noqa: E402

import graphexec as gx  # noqa: E402

S = gx.sym


def gelu_tanh(h):
    return 0.5 * h * (1 + S.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))


def layer_norm(x, gamma, beta):
    xc = S.broadcast_sub(x, S.mean(x, axis=1, keepdims=True))
    inv = S.rsqrt(S.mean(S.square(xc), axis=1, keepdims=True) + 1e-5)
    return S.broadcast_add(S.broadcast_mul(S.broadcast_mul(xc, inv), gamma), beta)


def model(blocks: int, hidden: int, ffn: int):
    x = S.Variable("data")
    for i in range(blocks):
        g = S.Variable(f"ln{i}_gamma", shape=(1, hidden))
        b = S.Variable(f"ln{i}_beta", shape=(1, hidden))
        h = S.FullyConnected(layer_norm(x, g, b), num_hidden=ffn, name=f"fc{i}a")
        x = S.FullyConnected(gelu_tanh(h), num_hidden=hidden, name=f"fc{i}b") + x
    return S.LinearRegressionOutput(x, name="out")


def bind(net, fusion: str, batch: int, hidden: int):
    """A bound executor with MXNET_USE_FUSION=``fusion`` (read at bind), its step, and the
    seconds the bind and first step took."""
    os.environ["MXNET_USE_FUSION"] = fusion
    t0 = time.perf_counter()
    exe = net.simple_bind(gx.cpu(), data=(batch, hidden))
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[...] = rng.uniform(-0.5, 0.5, arr.shape)

    def step():
        exe.forward(is_train=True)
        exe.backward()
    step()
    return exe, step, time.perf_counter() - t0


def max_difference(a, b) -> float:
    pairs = list(zip(a.outputs, b.outputs)) + [
        (a.grad_dict[k], b.grad_dict[k]) for k in a.grad_dict if a.grad_dict[k] is not None]
    return max(float(np.max(np.abs(x - y))) for x, y in pairs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="numba threads (0: numba's default)")
    opts = ap.parse_args()
    import numba
    if opts.threads:
        numba.set_num_threads(opts.threads)
    net = model(opts.blocks, opts.hidden, opts.ffn)
    plain, plain_step, _ = bind(net, "0", opts.batch, opts.hidden)
    fused, fused_step, first_s = bind(net, "1", opts.batch, opts.hidden)
    plan = fused.partition_plan
    nodes = sum(len(r.members) for r in plan.regions)
    backward = sum(1 for r in plan.regions
                   if any(plan.nodes[m].op.startswith("_backward_") for m in r.members))
    assert plan.fallbacks == 0, plan.table()
    t = interleaved_medians({"unfused": plain_step, "fused": fused_step}, repeat=opts.repeat,
                            number=opts.number)
    print(f"{opts.blocks} MLP block(s) {opts.hidden}-{opts.ffn}-{opts.hidden}, batch "
          f"{opts.batch}, float32, numba threads {numba.get_num_threads()}; train step "
          f"(forward + backward):")
    print(f"  MXNET_USE_FUSION=0  {t['unfused'] * 1e3:7.3f} ms")
    ratio = t["fused"] / t["unfused"]
    print(f"  MXNET_USE_FUSION=1  {t['fused'] * 1e3:7.3f} ms   ratio {ratio:.3f} (goal < 1)   "
          f"{len(plan.regions)} fused regions ({backward} backward), {nodes} nodes")
    print(f"  first fused bind + step {first_s:.2f} s; max |fused - unfused| over outputs and "
          f"gradients {max_difference(fused, plain):.1e}")


if __name__ == "__main__":
    main()
