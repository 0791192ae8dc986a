"""Winograd F(2x2, 3x3) convolutions under the ``torch`` strategy (issue 21): the native
``winograd`` variant (numba transforms, PyTorch's batched products) against PyTorch's
oneDNN convolution, timed in alternation in one process.

- ``layers``: one 3x3 stride-1 convolution, forward(is_train=True) + backward, per shape
  (ResNet-18's at batch 16 and 112x112, and the shapes that set the selection's thresholds),
  against oneDNN's on channel-first data (a lone layer's storage; inside a network, maps of
  28x28 and more without the variant are stored channels-last, where oneDNN is faster);
- ``step``: a whole train step of ResNet-18 v1 (benchmarks/bench_train_cnn.py's) with the
  variant against without it, both binding orders (binding order alone moved one-process
  A/Bs by up to 4% on this machine);
- ``least``: the same step with the variant from 64, 128 or 256 channels, against the
  strategy's threshold (``select.WINOGRAD_MIN_CHANNELS``).

Ratios are Winograd / oneDNN: the Hodges-Lehmann estimate over the rounds' ratios with its
95% interval (common.paired_ratio).

Run: OMP_NUM_THREADS=2 python benchmarks/bench_winograd.py [layers,step,least] [--repeat 15]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from contextlib import contextmanager

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_train_cnn import MODELS, fill  # noqa: E402
from common import alternating_samples, paired_ratio  # noqa: E402

import graphexec as gx  # noqa: E402
from graphexec.backends.torchcpu import select  # noqa: E402

#: (batch, channels in, size, channels out)
LAYERS = [(16, 64, 28, 64), (16, 128, 14, 128), (16, 256, 7, 256), (16, 512, 4, 512),
          (16, 64, 56, 64), (1, 64, 56, 64), (16, 32, 28, 32), (1, 512, 7, 512)]


#: the thresholds (fewest channels in and out) ``least`` times the step with
LEAST_CHANNELS = (64, 128, 256)


@contextmanager
def winograd(mode: str):
    """Binds inside choose the Winograd variant where the strategy's thresholds say so
    (``default``), wherever it applies (``always``) or ``never``; the first two whatever
    vector extension PyTorch's kernels use (the strategy itself takes the variant only
    where it is one of ``select.WINOGRAD_CAPABILITIES``)."""
    saved = (select.WINOGRAD_MIN_CHANNELS, select.WINOGRAD_MIN_TILES,
             select.WINOGRAD_CAPABILITIES)
    if mode != "default":
        least = 1 if mode == "always" else 1 << 30
        select.WINOGRAD_MIN_CHANNELS = select.WINOGRAD_MIN_TILES = least
    if mode != "never":
        import torch
        select.WINOGRAD_CAPABILITIES = frozenset({torch.backends.cpu.get_cpu_capability()})
    try:
        yield
    finally:
        (select.WINOGRAD_MIN_CHANNELS, select.WINOGRAD_MIN_TILES,
         select.WINOGRAD_CAPABILITIES) = saved


def _step(exe):
    def run():
        exe.forward(is_train=True)
        exe.backward()
    return run


def _layer(shape, enabled: bool):
    n, c, size, k = shape
    y = gx.sym.Convolution(gx.sym.Variable("x"), kernel=(3, 3), pad=(1, 1), num_filter=k,
                           no_bias=True, name="conv")
    y = gx.sym.MakeLoss(gx.sym.sum(y * gx.sym.Variable("g")))
    with winograd("always" if enabled else "never"):
        exe = y.simple_bind(gx.cpu(), backend="torch", grad_req={"x": "write", "g": "null",
                                                                  "conv_weight": "write"},
                            x=(n, c, size, size), g=(n, k, size, size))
    marked = {nd.attrs.get("__kernel__") for nd in exe._plan.graph.indexed.nodes
              if nd.op is not None and nd.op.name == "Convolution"}
    assert marked == {"winograd" if enabled else "torch"}, marked
    rng = np.random.default_rng(0)
    for arr in exe.arg_dict.values():
        arr[...] = rng.uniform(-0.05, 0.05, arr.shape)
    return _step(exe)


def _compare(fns: dict, repeat: int) -> tuple[float, float, str]:
    """The two functions of ``fns`` warmed up and timed in alternation: the first's and the
    second's median ms, and the ratio first / second."""
    for fn in fns.values():
        fn()
    t = alternating_samples(fns, None, {}, repeat)
    first, second = (t[k] for k in fns)
    return (statistics.median(first) * 1e3, statistics.median(second) * 1e3,
            paired_ratio(first, second))


def layers(repeat: int) -> None:
    print("3x3 stride-1 convolution, forward + backward (data and weight gradients), "
          "winograd / oneDNN:")
    for shape in LAYERS:
        wino, onednn, ratio = _compare({"winograd": _layer(shape, True),
                                        "onednn": _layer(shape, False)}, repeat)
        print(f"  N={shape[0]:<3d} C={shape[1]:<4d} {shape[2]}x{shape[2]}  K={shape[3]:<4d}"
              f" onednn {onednn:7.2f} ms  winograd {wino:7.2f} ms  ratio {ratio}", flush=True)


def step(repeat: int) -> None:
    sym, shapes, ints = MODELS["resnet18"]()
    trained = [n for n in sym.list_arguments() if n not in shapes]
    grads = {n: "write" if n in trained else "null" for n in sym.list_arguments()}
    print("ResNet-18 v1 train step (batch 16, 112x112), torch strategy, with the Winograd "
          "variant / without:")
    for order in ((True, False), (False, True)):
        fns = {}
        for enabled in order:
            with winograd("default" if enabled else "never"):
                exe = sym.simple_bind(gx.cpu(), grad_req=grads, backend="torch", **shapes)
            fill(exe, ints, np.random.default_rng(0))
            fns["with" if enabled else "without"] = _step(exe)
        with_, without, ratio = _compare({k: fns[k] for k in ("with", "without")}, repeat)
        print(f"  bound {'with first' if order[0] else 'without first'}: with {with_:.1f} "
              f"ms, without {without:.1f} ms, ratio {ratio}", flush=True)


def least(repeat: int) -> None:
    """The ResNet-18 step with the variant from each of LEAST_CHANNELS channels, in
    alternation, against the strategy's own threshold."""
    sym, shapes, ints = MODELS["resnet18"]()
    trained = [n for n in sym.list_arguments() if n not in shapes]
    grads = {n: "write" if n in trained else "null" for n in sym.list_arguments()}
    default = select.WINOGRAD_MIN_CHANNELS
    print(f"ResNet-18 v1 train step (batch 16, 112x112), torch strategy, the Winograd variant "
          f"from C channels / from {default} (the strategy's WINOGRAD_MIN_CHANNELS):")
    fns = {}
    for channels in sorted({default, *LEAST_CHANNELS}):
        with winograd("default"):
            select.WINOGRAD_MIN_CHANNELS = channels
            exe = sym.simple_bind(gx.cpu(), grad_req=grads, backend="torch", **shapes)
        fill(exe, ints, np.random.default_rng(0))
        fns[channels] = _step(exe)
    for fn in fns.values():
        fn()
    t = alternating_samples(fns, None, {}, repeat)
    for channels, samples in t.items():
        print(f"  C={channels:<4d} {statistics.median(samples) * 1e3:7.1f} ms  ratio "
              f"{paired_ratio(samples, t[default])}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("parts", nargs="?", default="layers,step")
    ap.add_argument("--repeat", type=int, default=15)
    opts = ap.parse_args()
    for part in opts.parts.split(","):
        {"layers": layers, "step": step, "least": least}[part](opts.repeat)


if __name__ == "__main__":
    main()
