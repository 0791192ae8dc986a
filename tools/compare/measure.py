"""Measuring one partitioning strategy on one model: bind, first run, latency, memory, what was
claimed and how much data crosses region boundaries, and how far the results are from the
reference (the model run with no backend).

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

__all__ = ["run_strategy", "latency_stats", "peak_rss"]


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


def _timed(fn: Callable[[], Any], repeat: int, budget_s: float) -> list[float]:
    """Up to ``repeat`` timings of ``fn`` (fewer when they would exceed ``budget_s``; at
    least 3)."""
    samples: list[float] = []
    start = time.perf_counter()
    for i in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
        if i >= 2 and time.perf_counter() - start > budget_s:
            break
    return samples


def run_strategy(model, strategy: str, inputs: dict[str, np.ndarray], *, train: bool,
                 repeat: int, budget_s: float = 30.0, seed: int = 0,
                 step: Callable[[str], None] | None = None) -> tuple[dict, dict]:
    """Measure ``strategy`` on ``model`` (a :class:`~.models.Model`) with ``inputs``.

    Returns (row, values): ``row`` is the plain-data result of the strategy (see
    :func:`graphexec.tools.compare.compare`), ``values`` the outputs (and with ``train`` the
    parameter gradients) by name, to compare with the reference. ``step(phase)`` is called
    as each phase starts (progress display). Exceptions propagate: the caller records them."""
    step = step or (lambda phase: None)
    row: dict[str, Any] = {"strategy": strategy, "error": None}

    step("bind")
    gc.collect()  # the previous strategy's executor goes before the peak is reset
    rss_base = peak_rss(reset=True)
    t0 = time.perf_counter()
    exe = model.bind(strategy, train=train)
    row["bind_s"] = time.perf_counter() - t0
    for name, value in inputs.items():
        exe.arg_dict[name][...] = value

    def forward():
        exe.forward(is_train=False)

    # head gradients of ones for outputs that are not loss heads (loss heads ignore them)
    heads = [np.ones(o.shape, o.dtype) for o in exe.outputs]

    def train_step():
        exe.forward(is_train=True)
        exe.backward(heads)

    step("first run")
    t0 = time.perf_counter()
    (train_step if train else forward)()
    row["first_run_s"] = time.perf_counter() - t0
    values = _values(exe, model, train, seed, heads)

    step("forward")
    row["forward_ms"] = latency_stats(_timed(forward, repeat, budget_s))
    row["train_ms"] = None
    if train:
        step("train step")
        row["train_ms"] = latency_stats(_timed(train_step, repeat, budget_s))
    row["planned_bytes"] = exe.memory_plan["planned_bytes"]
    row["peak_rss_bytes"] = peak = peak_rss()
    # what this strategy added on top of the process (libraries loaded, sessions, kernels)
    row["rss_growth_bytes"] = None if peak is None or rss_base is None else peak - rss_base
    kept = set(model.arg_params) | set(model.aux_params)
    row.update(_partition_figures(exe, model.symbol, kept))
    if row["plan"] and row["plan"]["decisions"]:
        row["auto"] = {"decisions": row["plan"]["decisions"]}
    return row, values


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


def _partition_figures(exe, sym, kept: set[str]) -> dict:
    """Regions, ops claimed by backend, boundary crossings and their bytes, fallbacks."""
    plan = exe.partition_plan
    total = sum(1 for n in sym._indexed().nodes if n.op is not None)
    claimed: dict[str, int] = {}
    if plan is not None:
        for d in plan.nodes.values():
            if d.backend is not None:
                claimed[d.backend] = claimed.get(d.backend, 0) + 1
    crossings, crossing_bytes = _boundaries(exe, kept)
    return {"regions": len(plan.regions) if plan is not None else 0, "claimed": claimed,
            "total_ops": total, "boundaries": crossings, "boundary_bytes": crossing_bytes,
            "fallbacks": plan.fallbacks if plan is not None else 0,
            "plan": plan.to_dict() if plan is not None else None}


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
