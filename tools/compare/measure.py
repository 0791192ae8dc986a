"""Binding one partitioning strategy on one model for a comparison: bind, first run, what was
claimed (and what fell back to native at run time), how much data crosses region boundaries,
the values to check against the reference, and a timer the comparison calls in turn with the
other strategies' (see :func:`graphexec.core.runtime.timing.interleave`).

A strategy is a backend text as ``bind(backend=...)`` takes it (``NONE``, ``onnxrt``,
``onnxrt:min_size=4,threads=2``, a chain ``onnxrt,fused``); ``+`` also joins a chain
(``onnxrt+fused``), so that lists of strategies can be written with commas.
"""
from __future__ import annotations

import gc
import statistics
import time
from typing import Any, Callable

import numpy as np

from graphexec.core.ir.random import seed as seed_random
from graphexec.core.subgraph.region import REGION_OP

__all__ = ["Session", "prepare", "latency_stats", "peak_rss"]


def latency_stats(samples_s: list[float]) -> dict:
    """Median, quartiles, extremes and the samples, in milliseconds."""
    ms = sorted(s * 1e3 for s in samples_s)
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return {"median": statistics.median(ms), "min": ms[0], "max": ms[-1], "q1": q[0],
            "q3": q[2], "samples": [s * 1e3 for s in samples_s]}


def peak_rss(reset: bool = False) -> int | None:
    """The process's peak resident set size in bytes since the last reset (Linux: VmHWM,
    reset through /proc/self/clear_refs); None where the system does not tell."""
    try:
        if reset:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class Session:
    """One strategy bound in this process: ``row`` (its figures), ``values`` (outputs, and
    gradients with ``train``), and :meth:`timer`."""

    def __init__(self, exe, train: bool, row: dict, figures: Callable[[], dict]):
        self.exe, self.train, self.row, self.values = exe, train, row, {}
        self.figures = figures
        heads = [np.ones(o.shape, o.dtype) for o in exe.outputs]

        def train_step() -> None:
            exe.forward(is_train=True)
            exe.backward(heads)
        self.calls = {"forward": lambda: exe.forward(is_train=False), "train": train_step}

    def timer(self, kind: str, number: int, warm: int = 0) -> Callable[[], float]:
        """A function timing ``number`` calls of ``kind`` ("forward" or "train") after
        ``warm`` untimed ones, returning seconds per timed call."""
        call = self.calls[kind]

        def timed() -> float:
            for _ in range(warm):
                call()
            t0 = time.perf_counter()
            for _ in range(number):
                call()
            return (time.perf_counter() - t0) / number
        return timed

    def finish(self) -> dict:
        """The figures that timing can change (a region falling back at run time), read
        again; releases the executor."""
        figures = self.figures()
        self.exe = self.calls = self.figures = None
        return figures


def prepare(model, strategy: str, inputs: dict[str, np.ndarray], *, train: bool,
            seed: int = 0, step: Callable[[str], None] | None = None) -> Session:
    """Bind ``strategy`` on ``model`` (a :class:`~.models.Model`) with ``inputs``, run it
    once and record its figures (see :func:`graphexec.tools.compare.compare`). ``step(phase)``
    is called as each phase starts. Exceptions propagate: the caller records them."""
    step = step or (lambda phase: None)
    row: dict[str, Any] = {"error": None}
    step("bind")
    gc.collect()  # the previous strategy's garbage goes before the peak is reset
    rss_base = peak_rss(reset=True)
    t0 = time.perf_counter()
    exe = model.bind(strategy, train=train)
    row["bind_s"] = time.perf_counter() - t0
    for name, value in inputs.items():
        exe.arg_dict[name][...] = value
    kept = set(model.arg_params) | set(model.aux_params)
    session = Session(exe, train, row, lambda: partition_figures(exe, model.symbol, kept))
    step("first run")
    t0 = time.perf_counter()
    session.calls["train" if train else "forward"]()
    row["first_run_s"] = time.perf_counter() - t0
    heads = [np.ones(o.shape, o.dtype) for o in exe.outputs]
    session.values = _values(exe, model, train, seed, heads)
    row["planned_bytes"] = exe.memory_plan["planned_bytes"]
    row["peak_rss_bytes"] = peak = peak_rss()
    # what binding and the first run added on top of the process (libraries, sessions, kernels)
    row["rss_growth_bytes"] = None if peak is None or rss_base is None else peak - rss_base
    row.update(session.figures())
    if row["plan"] and row["plan"]["decisions"]:
        row["auto"] = {"decisions": row["plan"]["decisions"]}
    return session


def _values(exe, model, train: bool, seed: int, heads: list) -> dict[str, np.ndarray]:
    """The outputs (inference forward) and, with ``train``, the outputs of a training forward
    and every parameter gradient, drawn from the same random seed (Dropout)."""
    seed_random(seed)
    values = {f"output {n}": np.array(a, copy=True)
              for n, a in zip(model.symbol.list_outputs(), exe.forward(is_train=False))}
    if train:
        seed_random(seed)
        outs = exe.forward(is_train=True)
        exe.backward(heads)
        values.update((f"train output {n}", np.array(a, copy=True))
                      for n, a in zip(model.symbol.list_outputs(), outs))
        values.update((f"gradient {n}", np.array(g, copy=True))
                      for n, g in exe.grad_dict.items() if g is not None)
    return values


def partition_figures(exe, sym, kept: set[str]) -> dict:
    """Regions, ops claimed by backend (regions that fell back to native at run time not
    counted: they are under ``fell_back``), boundary crossings and their bytes, fallbacks,
    the backends skipped and why."""
    plan = exe.partition_plan
    total = sum(1 for n in sym._indexed().nodes if n.op is not None)
    crossings, crossing_bytes = _boundaries(exe, kept)
    if plan is None:
        return {"regions": 0, "claimed": {}, "fell_back": {}, "total_ops": total,
                "boundaries": crossings, "boundary_bytes": crossing_bytes, "fallbacks": 0,
                "skipped": [], "plan": None}
    return {"regions": sum(1 for r in plan.regions if r.status != "fallback"),
            "claimed": plan.claimed_by_backend(), "fell_back": plan.fallen_back_by_backend(),
            "total_ops": total, "boundaries": crossings, "boundary_bytes": crossing_bytes,
            "fallbacks": plan.fallbacks, "skipped": list(plan.skipped), "plan": plan.to_dict()}


def _boundaries(exe, kept: set[str]) -> tuple[int, int]:
    """Entries entering or leaving a region node in the executed graph, and their bytes;
    the variables in ``kept`` (parameters and auxiliary states, which a region keeps) are not
    counted: they do not move per run. An entry passed from one region straight to another
    crosses twice."""
    plan = exe._plan
    ig = plan.graph.indexed
    crossings = nbytes = 0
    for nid, node in enumerate(ig.nodes):
        if node.op is not REGION_OP:
            continue
        for e, eid in zip(node.inputs, ig.node_inputs[nid]):
            if e.node.op is None and e.node.name in kept:
                continue
            crossings += 1
            nbytes += plan.arrays[eid].nbytes
        for eid in range(ig.row_ptr[nid], ig.row_ptr[nid + 1]):
            arr = plan.arrays[eid]
            if arr is not None:
                crossings += 1
                nbytes += arr.nbytes
    return crossings, nbytes
