"""Timing alternatives against each other on a busy machine (used by ``gx.compare`` and the
``auto`` strategy).

:func:`interleave` times callables round-robin, one sample of each per round with the order
rotating from round to round, so that a burst of load lands on all alike; the samples of one
round are taken back to back and form a pair with the baseline's.

:func:`speedup` turns paired samples into the speed-up over the baseline: the Hodges-Lehmann
estimate of the per-round log ratio (the median of its pairwise means) with the Wilcoxon
signed-rank confidence interval (distribution-free: it assumes only that the per-round ratios
are independent and symmetric about the true one). :func:`verdict` calls a difference
``faster`` or ``slower`` only when the interval excludes 1 and the estimate is at least
``min_effect`` away from it (a 1% difference measured precisely is still no reason to pick a
strategy); otherwise ``same``.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Hashable

import numpy as np

__all__ = ["interleave", "speedup", "verdict", "half_width", "MIN_EFFECT"]

#: the smallest speed-up (or slow-down) called a difference: 5%, as ``auto``'s ``min_gain``
#: (two identical executors in one process measured 1.038x apart, 1.017-1.058, in one of 20
#: runs on a busy machine: buffer placement and drift make small differences that are real in
#: a run but no reason to choose a strategy)
MIN_EFFECT = 0.05
_Z95 = 1.959963984540054
#: up to this many pairs the signed-rank distribution is computed exactly
_EXACT_N = 200


def interleave(fns: dict[Hashable, Callable[[], float]], *, min_rounds: int, max_rounds: int,
               budget_s: float, done: Callable[[dict], bool] | None = None,
               check_every: int = 5) -> tuple[dict[Hashable, list[float]], bool]:
    """Samples of every function, taken round-robin: each call of ``fns[key]`` takes one
    sample and returns its seconds. At least ``min_rounds`` rounds (unless interrupted), then
    rounds until ``done(samples)`` says so (asked every ``check_every`` rounds), ``budget_s``
    seconds have passed or ``max_rounds`` rounds are done. Returns (samples by key,
    interrupted): Ctrl-C stops it, and the samples of the complete rounds are returned (a
    partial round would break the pairing)."""
    keys = list(fns)
    samples: dict[Hashable, list[float]] = {k: [] for k in keys}
    start = time.perf_counter()
    try:
        for r in range(max_rounds):
            shift = r % len(keys)
            taken = {k: fns[k]() for k in keys[shift:] + keys[:shift]}
            for k in keys:
                samples[k].append(taken[k])
            n = r + 1
            if n < min_rounds:
                continue
            if time.perf_counter() - start > budget_s:
                break
            if done is not None and n % check_every == 0 and done(samples):
                break
    except KeyboardInterrupt:
        return samples, True
    return samples, False


def speedup(baseline: list[float], other: list[float], min_effect: float = MIN_EFFECT,
            confidence: float = 0.95) -> dict:
    """The speed-up of ``other`` over ``baseline`` from paired samples (seconds, one pair per
    round): ``estimate`` (baseline time / time), ``ci95`` ([low, high]; None with fewer than
    6 pairs, where no 95% interval exists), ``pairs`` and ``verdict`` (see the module
    docstring)."""
    if len(baseline) != len(other):
        raise ValueError(f"speedup: {len(baseline)} baseline samples but {len(other)} others: "
                         f"expected one pair per round")
    d = np.log(np.asarray(baseline, float)) - np.log(np.asarray(other, float))
    n = len(d)
    if n == 0:
        return {"estimate": None, "ci95": None, "pairs": 0, "verdict": "same"}
    walsh = _walsh_averages(d)
    estimate = float(np.exp(np.median(walsh)))
    k = _rank_bound(n, 1 - confidence)
    ci = None if k < 1 else [float(np.exp(walsh[k - 1])), float(np.exp(walsh[len(walsh) - k]))]
    return {"estimate": estimate, "ci95": ci, "pairs": n,
            "verdict": verdict(estimate, ci, min_effect)}


def verdict(estimate: float | None, ci95: list[float] | None,
            min_effect: float = MIN_EFFECT) -> str:
    """``faster`` when the interval lies above 1 and the estimate is at least ``1 +
    min_effect``; ``slower`` when it lies below 1 and the estimate is at most ``1 / (1 +
    min_effect)``; ``same`` otherwise (no interval included)."""
    if estimate is None or ci95 is None:
        return "same"
    lo, hi = ci95
    if lo > 1 and estimate >= 1 + min_effect:
        return "faster"
    if hi < 1 and estimate <= 1 / (1 + min_effect):
        return "slower"
    return "same"


def half_width(ci95: list[float] | None) -> float:
    """The interval's half width as a relative factor (0.05: about +-5%); inf without one."""
    if ci95 is None:
        return math.inf
    return math.exp((math.log(ci95[1]) - math.log(ci95[0])) / 2) - 1


def _walsh_averages(d: np.ndarray) -> np.ndarray:
    """The sorted means of every pair (i <= j) of ``d``."""
    i, j = np.triu_indices(len(d))
    return np.sort((d[i] + d[j]) / 2)


def _rank_bound(n: int, alpha: float) -> int:
    """The largest k with P(T <= k - 1) <= alpha / 2 for the signed-rank statistic T of ``n``
    pairs (exact up to _EXACT_N pairs, normal beyond); 0 when no such k exists."""
    if n > _EXACT_N:
        mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return max(0, math.floor(mean - _Z95 * sd))
    # probabilities of every value of T, adding ranks one at a time
    dist = np.zeros(n * (n + 1) // 2 + 1)
    dist[0] = 1.0
    for r in range(1, n + 1):
        shifted = np.zeros_like(dist)
        shifted[r:] = dist[:-r]
        dist = (dist + shifted) / 2
    cdf = np.cumsum(dist)
    return int(np.searchsorted(cdf, alpha / 2 * (1 + 1e-12), side="right"))
