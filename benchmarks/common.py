"""Shared timing helpers for the benchmark scripts (medians of repeated runs)."""
from __future__ import annotations

import os
import statistics
import subprocess
import time
from typing import Callable


def median_time(fn: Callable[[], object], repeat: int = 7, number: int = 1) -> float:
    """Median wall time of ``number`` calls of ``fn``, over ``repeat`` runs, per call."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int = 15,
                        number: int = 1) -> dict[str, float]:
    """Median per-call time of each function, timing them in alternation so that drift in a
    shared machine's speed hits all of them alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - t0) / number)
    return {k: statistics.median(v) for k, v in times.items()}


def mxnet_ms(python: str, model: str, batch: int, repeat: int, threads: int) -> list[float]:
    """MXNet 1.9.1's medians in ms for ``model`` (see mxnet_oracle.py), run by ``python`` (a
    venv with mxnet==1.9.1) in another process with OMP_NUM_THREADS=``threads``."""
    script = os.path.join(os.path.dirname(__file__), "mxnet_oracle.py")
    out = subprocess.run([python, script, model, str(batch), str(repeat)], capture_output=True,
                         text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    return [float(v) for v in out.stdout.split()]
