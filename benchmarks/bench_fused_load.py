"""The fused backend against native on the zoo's CNNs, with and without a competing load.

For each model, NONE and each fused strategy are bound once, then timed in turn (round-robin,
:func:`graphexec.core.runtime.timing.interleave`, as ``graphexec compare`` does); the figure is
fused time / native time with its 95% interval (1.0: as fast; the goal is <= 1.2 under load).
The load is ``--load`` processes spinning in pure Python (one per core by default) started
before the loaded phase and stopped after it. ``fused (threads by size)`` is the fused backend
bound as if the machine were idle (threads by size only: what runs when the load average is
below 1.5 per core), to compare with the one-thread rule of a busy machine.

    python benchmarks/bench_fused_load.py                       # idle, then loaded
    python benchmarks/bench_fused_load.py --phases loaded --models resnet18_v1
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from graphexec.backends.fused import runner
from graphexec.core.runtime.timing import interleave, speedup
from graphexec.tools.compare.models import load_model, make_inputs

SPIN = "while True:\n    pass\n"


IDLE_VARIANT = "fused (threads by size)"


def bind(model, strategy: str, inputs: dict):
    if strategy == IDLE_VARIANT:
        busy, runner.machine_busy = runner.machine_busy, lambda: False
        try:
            return bind(model, "fused", inputs)
        finally:
            runner.machine_busy = busy
    exe = model.bind(strategy)
    for k, v in inputs.items():
        exe.arg_dict[k][...] = v
    exe.forward(is_train=False)
    return exe


def timer(exe, number: int):
    def timed() -> float:
        t0 = time.perf_counter()
        for _ in range(number):
            exe.forward(is_train=False)
        return (time.perf_counter() - t0) / number
    return timed


def measure(name: str, strategies: list[str], rounds: int, budget: float) -> list[str]:
    model = load_model(name)
    inputs = make_inputs(model)
    exes = {s: bind(model, s, inputs) for s in ["NONE", *strategies]}
    single = min(timer(exes["NONE"], 1)() for _ in range(3))
    number = max(1, int(0.01 / single))
    samples, _ = interleave({s: timer(e, number) for s, e in exes.items()}, min_rounds=rounds,
                            max_rounds=10 * rounds, budget_s=budget)
    lines = []
    native = float(np.median(samples["NONE"])) * 1e3
    for s in strategies:
        # fused time / native time = 1 / (native's speed-up over fused's)
        sp = speedup(samples[s], samples["NONE"])
        lo, hi = sp["ci95"] or (float("nan"), float("nan"))
        lines.append(f"{name:12s} {s:22s} native {native:8.2f} ms  fused "
                     f"{float(np.median(samples[s])) * 1e3:8.2f} ms  fused/native "
                     f"{sp['estimate']:.2f} (95% {lo:.2f}-{hi:.2f}, {sp['pairs']} rounds)")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="lenet,resnet18_v1,resnet50_v1")
    p.add_argument("--strategies", default=f"fused;{IDLE_VARIANT}",
                   help="fused strategies, ';'-separated (default: %(default)s)")
    p.add_argument("--phases", default="idle,loaded")
    p.add_argument("--load", type=int, default=os.cpu_count() or 2,
                   help="spinning processes in the loaded phase (default: one per core)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--budget", type=float, default=20.0, help="seconds of timing per model")
    args = p.parse_args()
    strategies = [s for s in args.strategies.split(";") if s]
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"busy: {runner.machine_busy()}")
    for phase in args.phases.split(","):
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN])
                    for _ in range(args.load if phase == "loaded" else 0)]
        try:
            print(f"-- {phase}" + (f" ({len(spinners)} spinning processes)" if spinners else ""))
            for name in args.models.split(","):
                for line in measure(name, strategies, args.rounds, args.budget):
                    print(line, flush=True)
        finally:
            for proc in spinners:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
