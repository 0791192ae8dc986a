"""The statistics behind ``gx.compare`` and ``auto`` (core/runtime/timing.py), on synthetic
timings: no test here times anything."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.runtime.timing import (_rank_bound, half_width, interleave, speedup,
                                           verdict)
from graphexec.tools.compare import _baseline, default_strategies, strategy_labels


def _paired(rng, n: int, ratio: float, noise: float, load: float = 0.0):
    """Paired samples: a per-round load factor shared by both (bursts of a busy machine)
    and independent noise; ``other`` takes ``1 / ratio`` of the baseline's time."""
    shared = np.exp(rng.normal(0, load, n)) * (1 + 3 * (rng.random(n) < 0.1))  # 10% bursts
    base = 0.01 * shared * np.exp(rng.normal(0, noise, n))
    other = 0.01 / ratio * shared * np.exp(rng.normal(0, noise, n))
    return list(base), list(other)


def test_signed_rank_bounds_match_the_published_table():
    # two-sided 5% critical values of Wilcoxon's T (n: T), the interval's rank is T + 1
    for n, t in {6: 0, 8: 3, 10: 8, 15: 25, 20: 52, 25: 89, 30: 137}.items():
        assert _rank_bound(n, 0.05) == t + 1, n
    assert _rank_bound(5, 0.05) == 0   # five pairs cannot give a 95% interval
    assert abs(_rank_bound(400, 0.05) - _rank_bound(399, 0.05)) < 250  # normal beyond


def test_intervals_cover_the_true_speed_up_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    for ratio in (1.0, 1.25, 0.8):
        hits = 0
        for _ in range(400):
            s = speedup(*_paired(rng, 30, ratio, noise=0.1, load=0.3))
            hits += s["ci95"][0] <= ratio <= s["ci95"][1]
        assert 0.92 <= hits / 400 <= 0.99, (ratio, hits)


def _sampled_until_precise(rng, ratio: float, precision: float = 0.02) -> dict:
    """What compare does: rounds until the interval is within +-precision (checked every 5
    rounds from 10), at most 400."""
    base, other = _paired(rng, 400, ratio, noise=0.06, load=0.5)
    for n in range(10, 401, 5):
        s = speedup(base[:n], other[:n])
        if half_width(s["ci95"]) <= precision:
            break
    return s


def test_equal_strategies_on_a_bursty_machine_are_the_same():
    # the Done-when of issue 19: NONE against NONE is 'same' in at least 19 of 20 runs; an
    # interval narrowed to +-2% and a 5% minimum effect make a false verdict rare
    rng = np.random.default_rng(2)
    verdicts = [_sampled_until_precise(rng, 1.0)["verdict"] for _ in range(300)]
    assert verdicts.count("same") >= 0.99 * len(verdicts)
    assert [_sampled_until_precise(rng, 1.1)["verdict"] for _ in range(20)] == ["faster"] * 20


def test_real_differences_are_found_both_ways():
    rng = np.random.default_rng(3)
    fast = speedup(*_paired(rng, 40, 1.3, noise=0.05, load=0.5))
    slow = speedup(*_paired(rng, 40, 0.7, noise=0.05, load=0.5))
    assert fast["verdict"] == "faster" and fast["ci95"][0] < 1.3 < fast["ci95"][1]
    assert slow["verdict"] == "slower" and slow["ci95"][0] < 0.7 < slow["ci95"][1]
    assert fast["pairs"] == 40 and 1.2 < fast["estimate"] < 1.4


def test_a_small_difference_measured_precisely_is_the_same():
    rng = np.random.default_rng(4)
    s = speedup(*_paired(rng, 200, 1.01, noise=0.01))
    assert s["ci95"][0] > 1 and s["verdict"] == "same"
    assert speedup(*_paired(rng, 200, 1.01, noise=0.01), min_effect=0.0)["verdict"] == "faster"


def test_too_few_pairs_give_no_interval_and_no_verdict():
    s = speedup([1.0] * 5, [0.5] * 5)
    assert s["ci95"] is None and s["verdict"] == "same" and s["estimate"] == pytest.approx(2)
    assert speedup([], [])["estimate"] is None
    with pytest.raises(ValueError, match="one pair per round"):
        speedup([1.0, 2.0], [1.0])


def test_verdict_rules():
    assert verdict(1.2, [1.1, 1.3]) == "faster"
    assert verdict(1.02, [1.01, 1.03]) == "same"      # significant, but below min_effect
    assert verdict(1.2, [0.9, 1.5]) == "same"         # the interval holds 1
    assert verdict(0.8, [0.7, 0.9]) == "slower"
    assert verdict(0.98, [0.97, 0.99]) == "same"
    assert verdict(1.5, None) == "same"
    assert half_width([1 / 1.05, 1.05]) == pytest.approx(0.05)
    assert half_width(None) == float("inf")


def test_interleave_rotates_the_order_and_keeps_complete_rounds():
    calls = []

    def fn(key):
        def timed():
            calls.append(key)
            if len(calls) == 3 * 7 + 2:   # Ctrl-C in the middle of the 8th round
                raise KeyboardInterrupt
            return 1.0
        return timed
    samples, interrupted = interleave({k: fn(k) for k in "abc"}, min_rounds=100,
                                      max_rounds=100, budget_s=1e9)
    assert interrupted and all(len(v) == 7 for v in samples.values())
    assert calls[:9] == list("abc" "bca" "cab")


def test_interleave_stops_when_done_or_at_the_limits():
    fns = {"a": lambda: 1.0, "b": lambda: 2.0}
    asked = []

    def done(samples):
        asked.append(len(samples["a"]))
        return len(samples["a"]) >= 15
    samples, interrupted = interleave(fns, min_rounds=10, max_rounds=50, budget_s=1e9,
                                      done=done)
    assert not interrupted and asked == [10, 15] and samples["b"] == [2.0] * 15
    samples, _ = interleave(fns, min_rounds=3, max_rounds=8, budget_s=1e9)
    assert len(samples["a"]) == 8
    samples, _ = interleave(fns, min_rounds=4, max_rounds=50, budget_s=0.0)
    assert len(samples["a"]) == 4   # the budget is spent at once: the minimum still runs


def test_labels_and_baselines():
    assert strategy_labels(["NONE", "fused", "NONE", "NONE"]) == [
        "NONE", "fused", "NONE #2", "NONE #3"]
    names = ["fused", "NONE", "onnxrt"]
    assert _baseline(names, names, None) == ("NONE", False)
    assert _baseline(["fused", "onnxrt"], ["fused", "onnxrt"], None) == ("NONE", True)
    assert _baseline(names, names, "onnxrt") == ("onnxrt", False)
    names = ["fused", "fused"]
    assert _baseline(names, strategy_labels(names), "fused #2") == ("fused #2", False)
    with pytest.raises(gx.GraphexecError, match="baseline 'nope' is not one of"):
        _baseline(names, strategy_labels(names), "nope")


@pytest.mark.parametrize("order", list(itertools.permutations(["fused", "NONE", "onnxrt"]))[:3])
def test_any_order_and_repeats_work(order):
    strategies = list(order) + [order[0]]
    result = gx.compare("mlp", strategies, repeat=6, budget_s=0.5)
    rows = {r["strategy"]: r for r in result["strategies"]}
    assert list(rows) == strategy_labels(strategies)
    assert result["baseline"] == "NONE" and rows["NONE"]["verdict"] == "baseline"
    for label, row in rows.items():
        assert row["error"] is None and len(row["forward_ms"]["samples"]) == result["rounds"]
        if label != "NONE":
            assert row["verdict"] in ("faster", "slower", "same")
            assert row["ci95"][0] <= row["speedup"] <= row["ci95"][1]
    repeat = rows[f"{order[0]} #2"]   # measured on its own, not a copy of the first
    assert repeat["forward_ms"]["samples"] != rows[order[0]]["forward_ms"]["samples"]


def test_a_baseline_not_listed_is_added_or_named():
    result = gx.compare("mlp", "onnxrt", repeat=6, budget_s=0.2)
    assert [r["strategy"] for r in result["strategies"]] == ["NONE", "onnxrt"]
    assert result["strategies"][0]["added"] == "added as the baseline"
    result = gx.compare("mlp", "onnxrt;fused", baseline="fused", repeat=6, budget_s=0.2)
    rows = {r["strategy"]: r for r in result["strategies"]}
    assert list(rows) == ["onnxrt", "fused"] and rows["fused"]["verdict"] == "baseline"
    assert rows["onnxrt"]["max_rel_diff"] < 1e-5   # still checked against NONE


def test_isolated_strategies_run_in_their_own_processes():
    result = gx.compare("mlp", "NONE,onnxrt,nope", isolate=True, repeat=6, budget_s=0.5)
    rows = {r["strategy"]: r for r in result["strategies"]}
    assert result["isolate"] and rows["onnxrt"]["claimed"] == {"onnxrt": 6}
    assert rows["onnxrt"]["max_rel_diff"] < 1e-5 and rows["onnxrt"]["verdict"] is not None
    assert rows["nope"]["error"].startswith("UnknownBackendError")
    # a worker's peak RSS is its own: below the parent's, which holds more
    assert 0 < rows["NONE"]["peak_rss_bytes"] < rows["onnxrt"]["peak_rss_bytes"]


def test_the_default_list_has_default_only_with_op_names():
    assert default_strategies() == ["NONE", "onnxrt", "fused"]
    gx.subgraph.set_op_names("default", {"exp"})
    try:
        assert default_strategies() == ["NONE", "onnxrt", "fused", "default"]
    finally:
        gx.subgraph.set_op_names("default", None)


def _strategy_names(text: str) -> list[str]:
    """The first column of a printed table's body, folded lines joined to their row."""
    names: list[str] = []
    for line in text.splitlines():
        cells = line.split("\u2502")
        if len(cells) < 3:
            continue
        if cells[1].strip() and not any(c.strip() for c in cells[2:]) and names:
            names[-1] += cells[1].strip()
        else:
            names.append(cells[1].strip())
    return names


def test_the_table_fits_100_columns_and_says_what_it_means():
    import io

    from rich.console import Console

    from graphexec.tools.compare.commands import compare_notes, compare_table
    result = gx.compare("mlp", "NONE;onnxrt:exclude_ops=Activation;fused;NONE", repeat=6,
                        budget_s=0.3)
    for row in result["strategies"][1:]:  # the widest verdicts ("same, noisy"), whatever
        row["noisy"] = True               # the timings were
    out = io.StringIO()
    console = Console(file=out, width=100)
    console.print(compare_table(result))
    for line in compare_notes(result):
        console.print(line)
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "\u2026" not in text   # nothing cut short
    for label in ("NONE #2", "fwd speed-up (95% CI)", "1 (baseline)", "nothing/6"):
        assert label in text, label
    # a strategy's name too long for its column folds onto the next line, whole
    assert "onnxrt:exclude_ops=Activation" in _strategy_names(text)
    assert "fused: claimed nothing, runs every op natively" in " ".join(text.split())
