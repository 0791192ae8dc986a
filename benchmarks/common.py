"""Shared timing helpers for the benchmark scripts (medians of repeated runs)."""
from __future__ import annotations

import os
import statistics
import subprocess
import time
from typing import Callable

#: the environment the benchmark was started with, before any graphexec plugin adjusted its
#: own process's (the ``torch`` strategy sets GOMP_SPINCOUNT when it loads PyTorch): MXNet's
#: workers get this one, whichever model or strategy ran before them (MXNet's libgomp reads
#: GOMP_SPINCOUNT too)
USER_ENV = dict(os.environ)


def median_time(fn: Callable[[], object], repeat: int = 7, number: int = 1) -> float:
    """Median wall time of ``number`` calls of ``fn``, over ``repeat`` runs, per call."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def timed(fn: Callable[[], object], number: int = 1) -> Callable[[], float]:
    """A function returning the seconds per call of ``number`` calls of ``fn``."""
    def run() -> float:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number
    return run


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int = 15,
                        number: int = 1) -> dict[str, float]:
    """Median per-call time of each function, timing them in alternation so that drift in a
    shared machine's speed hits all of them alike (round-robin with the order rotating each
    round: ``graphexec.core.runtime.timing.interleave``, what ``graphexec compare`` uses)."""
    from graphexec.core.runtime.timing import interleave

    samples, interrupted = interleave({k: timed(f, number) for k, f in fns.items()},
                                      min_rounds=repeat,
                                      max_rounds=repeat, budget_s=float("inf"))
    if interrupted:
        raise KeyboardInterrupt
    return {k: statistics.median(v) for k, v in samples.items()}


def mxnet_ms(python: str, model: str, batch: int, repeat: int, threads: int) -> list[float]:
    """MXNet 1.9.1's medians in ms for ``model`` (see mxnet_oracle.py), run by ``python`` (a
    venv with mxnet==1.9.1) in another process with OMP_NUM_THREADS=``threads``."""
    script = os.path.join(os.path.dirname(__file__), "mxnet_oracle.py")
    out = subprocess.run([python, script, model, str(batch), str(repeat)], capture_output=True,
                         text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    return [float(v) for v in out.stdout.split()]


class MXNetWorker:
    """MXNet 1.9.1 in another process (``mxnet_oracle.py serve``), bound once, timing one
    call per request: :meth:`time` in turn with graphexec's own calls gives ratios measured
    in alternation (the two never run at the same time). ``spec``: a JSON file naming the
    symbol JSON, the input shapes, the trained arguments and the integer inputs (optionally a
    .params file and an .npz of inputs). ``subgraph_backend``: MXNET_SUBGRAPH_BACKEND for
    MXNet ("NONE"; "default" leaves it unset: MXNet's default CPU backend, oneDNN subgraph
    fusions on)."""

    def __init__(self, python: str, spec: str, threads: int, subgraph_backend: str = "NONE"):
        script = os.path.join(os.path.dirname(__file__), "mxnet_oracle.py")
        env = {**USER_ENV, "OMP_NUM_THREADS": str(threads)}
        env.pop("MXNET_SUBGRAPH_BACKEND", None)
        if subgraph_backend != "default":
            env["MXNET_SUBGRAPH_BACKEND"] = subgraph_backend
        self.proc = subprocess.Popen([python, script, "serve", spec], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        ready = self.proc.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"the MXNet worker did not start (said {ready!r})")

    def time(self, kind: str) -> float:
        """Seconds of one ``kind`` call ("forward" or "train") in MXNet."""
        self.proc.stdin.write(kind + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline()) / 1e3

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


#: seconds to wait before each timed call of :func:`alternating_samples`: threads that spin
#: after a call (MXNet's OpenMP threads for KMP_BLOCKTIME, 200 ms by default; OpenBLAS's;
#: ORT's) would otherwise take the cores from whichever side runs next
SETTLE = 0.3


def add_mxnet_backend(ap) -> None:
    """The ``--mxnet-backend`` option of the scripts that time MXNet (MXNetWorker's
    ``subgraph_backend``)."""
    ap.add_argument("--mxnet-backend", default="NONE",
                    help="MXNET_SUBGRAPH_BACKEND for MXNet: NONE (its oneDNN kernels, no graph "
                         "fusion) or 'default' (unset: MXNet's own choice, its oneDNN fusions)")


def alternating_samples(fns: dict[str, Callable[[], object]], worker: "MXNetWorker | None",
                        kinds: dict[str, str], repeat: int, calls: int = 1
                        ) -> dict[str, list[float]]:
    """Seconds of each graphexec function and, with a worker, of MXNet's call of the kind
    ``kinds`` names for it (key ``mxnet <kind>``), ``repeat`` rounds taken in turn, each
    turn after :data:`SETTLE` idle seconds: sample ``i`` of every key is from round ``i``.
    Each round starts with MXNet's turns, then graphexec's functions in an order that
    rotates from round to round: the turn right after the MXNet worker's ran about 3% slower
    whichever it was (a ResNet-18 train step), so that each function takes that place as
    often as the others (a fixed order had favoured the later ones by 3%; rotating MXNet's
    turn with them still by 1.6%).
    A turn makes ``calls`` calls back to back: the keys above time the first (right after
    the idle seconds); with ``calls`` > 1 the key ``<key> steady`` holds the mean of the
    others in each round (a loop's steady state: threads awake, caches holding its data)."""
    keys = list(fns) + ([f"mxnet {k}" for k in sorted(set(kinds.values()))] if worker else [])
    times: dict[str, list[float]] = {k: [] for k in keys}
    if calls > 1:
        times.update({f"{k} steady": [] for k in keys})

    def turn(key: str, call: Callable[[], float]) -> None:
        time.sleep(SETTLE)
        got = [call() for _ in range(calls)]
        times[key].append(got[0])
        if calls > 1:
            times[f"{key} steady"].append(statistics.mean(got[1:]))
    ours = [(name, timed(fn)) for name, fn in fns.items()]
    theirs = [(f"mxnet {kind}", lambda kind=kind: worker.time(kind))
              for kind in sorted(set(kinds.values()))] if worker is not None else []
    for r in range(repeat):
        shift = r % len(ours)
        for key, call in theirs + ours[shift:] + ours[:shift]:
            turn(key, call)
    return times


def alternating_medians(fns: dict[str, Callable[[], object]], worker: "MXNetWorker | None",
                        kinds: dict[str, str], repeat: int, calls: int = 1) -> dict[str, float]:
    """Median seconds of each key of :func:`alternating_samples`."""
    samples = alternating_samples(fns, worker, kinds, repeat, calls)
    return {k: statistics.median(v) for k, v in samples.items()}


def paired_ratio(ours: list[float], theirs: list[float]) -> str:
    """``ours / theirs`` from samples taken round by round: the Hodges-Lehmann estimate of
    the per-round ratios with its 95% interval (``graphexec compare``'s statistics), e.g.
    "1.040 (95% 0.98-1.10)"; the interval needs six rounds at least."""
    from graphexec.core.runtime.timing import speedup
    s = speedup(ours, theirs)
    ci = s["ci95"]
    inside = f" (95% {ci[0]:.2f}-{ci[1]:.2f})" if ci else ""
    return f"{s['estimate']:.3f}{inside}"
