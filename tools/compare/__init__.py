"""A/B comparison of partitioning strategies (``gx.compare``, ``graphexec compare``).

:func:`compare` binds every strategy first, then times them round-robin (one sample of each
per round, the order rotating: see :mod:`graphexec.core.runtime.timing`) until every
speed-up's 95% interval is narrow enough or the time budget is spent, and returns plain data:

``{"model": {name, source, inputs, num_ops, num_params, symbol_json}, "train", "repeat",
"baseline" (the label the speed-ups are relative to), "reference": "NONE" (the strategy the
values are checked against), "isolate", "rounds", "calls_per_sample", "warmup_s",
"warmup_calls" (untimed calls before each sample, per kind), "budget_s", "precision",
"min_effect", "noisy" (None, or why some intervals stayed wide),
"interrupted", "strategies": [row, ...]}`` with one row per strategy:

``strategy`` (its label: a strategy listed twice gets ``NAME #2``), ``spec`` (the strategy
text), ``error`` (None, or why the strategy failed, at bind or while timed: the other
fields may then be missing),
``regions``, ``claimed`` (ops by backend, without the regions that fell back to native at
run time: those are under ``fell_back``), ``total_ops``, ``skipped`` (backends not applied,
why), ``boundaries`` and ``boundary_bytes`` (entries entering or leaving regions per run),
``bind_s``, ``first_run_s`` (compilation, session creation), ``forward_ms`` and ``train_ms``
(median, q1, q3, min, max, samples: per call), ``speedups`` (per kind, "forward" and with
``train`` "train": ``estimate``, ``ci95``, ``pairs``, ``verdict``), and for the headline kind
(train with ``train``, else forward) ``speedup``, ``ci95`` ([low, high] or None) and
``verdict`` (``faster`` / ``slower`` / ``same``; ``baseline`` for the baseline), ``noisy``
(its interval is wider than ``precision``), ``planned_bytes``, ``peak_rss_bytes`` and
``rss_growth_bytes`` (in one process: the process's peak after this strategy's bind and first
run, and how much those added; with ``isolate`` the strategy's own process),
``max_abs_diff`` / ``max_rel_diff`` (against the reference, outputs and with ``train``
gradients too; the relative one divides by the largest magnitude of each reference array),
``fallbacks`` and ``plan`` (``PartitionPlan.to_dict()``, with the ``auto`` strategy's
measurements under ``decisions``).
"""
from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.runtime.timing import MIN_EFFECT, half_width, interleave, speedup
from graphexec.core.subgraph.plan import REASONS

from .measure import latency_stats, prepare
from .models import Model, load_model, make_inputs
from .worker import IsolatedSession, StrategyFailed, save_model

__all__ = ["compare", "diff_plan", "parse_strategies", "strategy_labels", "row_notes",
           "sample_text", "default_strategies", "REFERENCE", "WARMUP_S"]

#: the strategy every other one is checked against, and the default baseline
REFERENCE = "NONE"
#: the time one timed sample aims at: fast models are called several times per sample
SAMPLE_S = 0.01
#: how long each strategy runs untimed before each of its samples (at most: a call longer
#: than this gets no warm-up call). Timed in turn, a strategy starts every sample after the
#: others ran, its threads asleep and its data out of cache: LeNet under ``torch`` then took
#: 12 ms a call against 5-6 ms run alone, and compare gave it 0.49x NONE's speed; after 50 ms
#: or more of untimed calls per sample, 1.25-1.41x, as when each runs alone (README).
WARMUP_S = 0.1


def parse_strategies(text: str | Sequence[str]) -> list[str]:
    """Strategies from a list, or from a text: ``;`` separates strategies when present;
    otherwise commas do, and an item ``key=value`` continues the options of the strategy
    before it: ``"NONE,onnxrt:min_size=4,threads=2,fused"`` is three strategies. A chain is
    written with ``+`` (``onnxrt+fused``)."""
    if not isinstance(text, str):
        out = [s.strip() for s in text if s and s.strip()]
    elif ";" in text:
        out = [s.strip() for s in text.split(";") if s.strip()]
    else:
        out = []
        for item in (s.strip() for s in text.split(",")):
            if not item:
                continue
            if "=" in item and ":" not in item:
                if not out:
                    raise GraphexecError(f"strategies {text!r}: option {item!r} comes before "
                                         f"any backend name")
                out[-1] += "," + item
            else:
                out.append(item)
    if not out:
        raise GraphexecError("no strategy given: expected e.g. 'NONE,onnxrt,fused'")
    return out


def default_strategies() -> list[str]:
    """The strategies compared when none are named: NONE, onnxrt and fused, and ``default``
    (MXNet's test backend) only when op names are set for it (otherwise it claims nothing)."""
    from graphexec.core.subgraph.api import get_op_names
    return [REFERENCE, "onnxrt", "fused"] + (["default"] if get_op_names("default") else [])


def strategy_labels(names: Sequence[str]) -> list[str]:
    """One distinct label per strategy: a repeated one gets ``NAME #2``, ``NAME #3``..."""
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return labels


def _baseline(names: list[str], labels: list[str], baseline: str | None) -> tuple[str, bool]:
    """The baseline's label, and whether NONE has to be added to the strategies for it."""
    if baseline is None:
        return (REFERENCE, False) if REFERENCE in names else (REFERENCE, True)
    if baseline in labels:
        return baseline, False
    if baseline in names:
        return labels[names.index(baseline)], False
    raise GraphexecError(f"baseline {baseline!r} is not one of the strategies "
                         f"{', '.join(labels)}: name one of them")


def compare(model: Any, strategies: str | Sequence[str], inputs: dict | None = None, *,
            shapes: dict | None = None, train: bool = False, repeat: int = 10, seed: int = 0,
            budget_s: float = 20.0, baseline: str | None = None, isolate: bool = False,
            precision: float = 0.02, min_effect: float = MIN_EFFECT, max_rounds: int = 400,
            warmup_s: float = WARMUP_S,
            progress: Callable[[str, str], None] | None = None) -> dict:
    """Run ``model`` under each strategy and return the comparison as plain data (see the
    module docstring).

    ``model``: a zoo name, a checkpoint prefix, a symbol JSON or ONNX path, a Symbol (with
    ``shapes``) or a loaded :class:`~.models.Model`. ``inputs``: arrays by input name
    (random ones from ``seed`` by default). ``train``: time forward+backward too and compare
    gradients. ``baseline``: the strategy (label or text) speed-ups are relative to; NONE by
    default (added when not listed). Timing: at least ``repeat`` rounds, then until every
    95% interval is within ``precision`` (0.02: about +-2%), ``budget_s`` seconds of timing
    or ``max_rounds``; a speed-up is a difference only when its interval excludes 1 and it
    is at least ``min_effect``. Before each sample the strategy runs untimed for up to
    ``warmup_s`` seconds (whole calls; 0: none), so that a sample measures it running, not
    waking after the others ran. ``isolate``: each strategy in its own process.
    ``progress(strategy, phase)`` is called as each phase starts. A failing strategy is
    recorded in its row; Ctrl-C stops and returns what was measured (``interrupted``)."""
    if not warmup_s >= 0:
        raise GraphexecError(f"warmup_s: expected seconds >= 0 (0: no warm-up), got "
                             f"{warmup_s!r}")
    if not isinstance(model, Model):
        model = load_model(model, shapes=shapes, seed=seed)
    names = parse_strategies(strategies)
    labels = strategy_labels(names)
    base, added = _baseline(names, labels, baseline)
    if added:
        names, labels = [REFERENCE] + names, [REFERENCE] + labels
    inputs = make_inputs(model, seed=seed) if inputs is None else inputs
    result: dict[str, Any] = {
        "model": {"name": model.name, "source": model.source,
                  "inputs": {k: list(v) for k, v in model.input_shapes.items()},
                  "num_ops": sum(1 for n in model.symbol._indexed().nodes if n.op is not None),
                  "num_params": model.num_params, "symbol_json": model.symbol.tojson()},
        "train": bool(train), "repeat": int(repeat), "baseline": base, "reference": REFERENCE,
        "isolate": bool(isolate), "budget_s": budget_s, "precision": precision,
        "min_effect": min_effect, "max_rounds": max_rounds, "rounds": 0,
        "calls_per_sample": None, "warmup_s": warmup_s, "warmup_calls": None, "noisy": None,
        "interrupted": False, "strategies": []}
    rows: dict[str, dict] = {}
    sessions: dict[str, Any] = {}
    say = progress or (lambda strategy, phase: None)
    with tempfile.TemporaryDirectory(prefix="gx-compare-") as folder:
        if isolate:
            save_model(model, inputs, Path(folder))
        try:
            for i, (label, name) in enumerate(zip(labels, names)):
                rows[label], session = _open(model, name, label, i, inputs, train, seed,
                                             isolate, folder, say)
                if session is not None:
                    sessions[label] = session
            reference = _reference_values(model, inputs, train, seed, names, labels, rows,
                                          sessions)
            for label, session in sessions.items():
                rows[label].update(_differences(session.values, reference))
            if base in sessions:
                _time(result, rows, sessions, base, say)
        except KeyboardInterrupt:
            result["interrupted"] = True
        finally:
            for label, session in sessions.items():
                _finish(rows[label], session)
    if added and REFERENCE in rows:
        rows[REFERENCE]["added"] = "added as the baseline"
    result["strategies"] = [rows[label] for label in labels if label in rows]
    return result


def _open(model, name, label, index, inputs, train, seed, isolate, folder, say):
    """Bind one strategy: (row, session), or (row with the error, None)."""
    say(label, "bind")
    try:
        if isolate:
            session = IsolatedSession(Path(folder), name, index, train=train, seed=seed)
        else:
            session = prepare(model, name, inputs, train=train, seed=seed,
                              step=lambda phase: say(label, phase))
    except (KeyboardInterrupt, SystemExit):
        raise
    except StrategyFailed as exc:
        return {"strategy": label, "spec": name, "error": str(exc)}, None
    except Exception as exc:  # noqa: BLE001 - a failing strategy is a row, not a crash
        return {"strategy": label, "spec": name, "error": f"{type(exc).__name__}: {exc}"}, None
    return {"strategy": label, "spec": name, **session.row}, session


def _reference_values(model, inputs, train, seed, names, labels, rows, sessions) -> dict:
    """The values of the first NONE strategy (bound here when none is listed)."""
    if REFERENCE in names:
        label = labels[names.index(REFERENCE)]
        if label not in sessions:
            raise GraphexecError(f"the reference run ({REFERENCE}) failed: "
                                 f"{rows[label]['error']}")
        return sessions[label].values
    return prepare(model, REFERENCE, inputs, train=train, seed=seed).values


def _finish(row: dict, session) -> None:
    try:
        row.update(session.finish())
    except Exception as exc:  # noqa: BLE001 - the figures already measured stay
        row["finish_error"] = f"{type(exc).__name__}: {exc}"


def _calls_per_sample(timer: Callable[[], float], warmup_s: float) -> tuple[int, int]:
    """(timed calls per sample, untimed calls before it): about SAMPLE_S timed and at most
    ``warmup_s`` untimed (the fastest of three single calls decides)."""
    fastest = max(min(timer() for _ in range(3)), 1e-7)
    number = max(1, min(1000, math.ceil(SAMPLE_S / fastest)))
    return number, min(10000, math.floor(warmup_s / fastest))


def _time(result: dict, rows: dict, sessions: dict, base: str, say) -> None:
    """Time every bound strategy round-robin and add the latency, the speed-ups and the
    verdicts to the rows."""
    kinds = ["forward"] + (["train"] if result["train"] else [])
    say("timing", "calibrating")
    counts = {k: _calls_per_sample(sessions[base].timer(k, 1), result["warmup_s"])
              for k in kinds}
    result["calls_per_sample"] = {k: n for k, (n, _) in counts.items()}
    result["warmup_calls"] = {k: w for k, (_, w) in counts.items()}
    timed = dict(sessions)
    while True:   # a strategy that fails while timed leaves; the others are timed again
        try:
            _rounds(result, rows, timed, base, kinds, counts, say)
            return
        except _TimingFailed as failed:
            rows[failed.label]["error"] = f"failed while timed: {failed.cause}"
            timed.pop(failed.label)
            if failed.label == base:
                return


class _TimingFailed(Exception):
    def __init__(self, label: str, cause: str):
        super().__init__(cause)
        self.label, self.cause = label, cause


def _guarded(label: str, timer: Callable[[], float]) -> Callable[[], float]:
    def run() -> float:
        try:
            return timer()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - the strategy's row records it
            raise _TimingFailed(label, f"{type(exc).__name__}: {exc}") from exc
    return run


def _rounds(result: dict, rows: dict, sessions: dict, base: str, kinds: list[str],
            counts: dict, say) -> None:
    """Time ``sessions`` round-robin (``counts``: per kind, timed and untimed calls per
    sample) and add the figures to their rows."""
    fns = {(label, k): _guarded(label, s.timer(k, *counts[k]))
           for label, s in sessions.items() for k in kinds}
    others = [(label, k) for label in sessions if label != base for k in kinds]

    def done(samples: dict) -> bool:
        say("timing", f"{len(samples[(base, kinds[0])])} rounds")
        return all(half_width(speedup(samples[(base, key[1])], samples[key])["ci95"])
                   <= result["precision"] for key in others)
    samples, interrupted = interleave(fns, min_rounds=result["repeat"],
                                      max_rounds=max(result["repeat"], result["max_rounds"]),
                                      budget_s=result["budget_s"], done=done)
    result["interrupted"] |= interrupted
    result["rounds"] = len(samples[(base, kinds[0])])
    if not result["rounds"]:
        return
    headline = kinds[-1]
    wide = []
    for label in sessions:
        row = rows[label]
        for k in kinds:
            row[f"{k}_ms"] = latency_stats(samples[(label, k)])
        row.setdefault("train_ms", None)
        if label == base:
            row.update(speedups=None, speedup=1.0, ci95=None, verdict="baseline", noisy=False)
            continue
        row["speedups"] = {k: speedup(samples[(base, k)], samples[(label, k)],
                                      result["min_effect"]) for k in kinds}
        main = row["speedups"][headline]
        row.update(speedup=main["estimate"], ci95=main["ci95"], verdict=main["verdict"],
                   noisy=half_width(main["ci95"]) > result["precision"])
        if row["noisy"]:
            wide.append(label)
    if wide:
        result["noisy"] = (f"the intervals of {', '.join(wide)} are wider than "
                           f"+-{result['precision']:.0%} after {result['rounds']} rounds: the "
                           f"machine is too noisy to decide smaller differences (raise --budget "
                           f"or run on a quieter machine)")


def sample_text(result: dict) -> str:
    """What one sample was, e.g. "per sample: 2 forward call(s) timed after 14 untimed"."""
    number = result.get("calls_per_sample") or {}
    warm = result.get("warmup_calls") or {}
    parts = [f"{n} {k} call(s) timed" + (f" after {warm[k]} untimed" if warm.get(k) else "")
             for k, n in number.items()]
    return "per sample: " + ", ".join(parts)


def row_notes(row: dict) -> list[str]:
    """What a row's table cells have no room for: its error, that it claimed nothing and
    why (backends skipped, the reasons nodes stayed native), the regions that fell back to
    native at run time and why."""
    if row.get("error"):
        return [f"failed: {row['error']}"]
    notes = [row["added"]] if row.get("added") else []
    plan = row.get("plan")
    if not row.get("claimed") and not row.get("fell_back") and plan is not None:
        counts: dict[str, int] = {}
        for d in plan["nodes"]:
            why = REASONS.get(d["reason"], d["reason"]) if d["reason"] else "unclaimed"
            counts[why] = counts.get(why, 0) + 1
        whys = [f"skipped {s}" for s in row.get("skipped", [])]
        whys += [f"{n} op(s): {why}" for why, n in sorted(counts.items(), key=lambda kv: -kv[1])]
        notes.append("claimed nothing, runs every op natively (" + "; ".join(whys[:3]) + ")")
    for region in (plan or {}).get("regions", []):
        if region.get("status") == "fallback":
            notes.append(f"region {region['node']} ({region['backend']}, "
                         f"{len(region['members'])} ops) fell back to native at run time: "
                         f"{region['cause']}")
    if row.get("finish_error"):
        notes.append(f"could not read its last figures: {row['finish_error']}")
    return notes


def _differences(values: dict, reference: dict) -> dict:
    """Largest absolute difference, and largest difference relative to each reference
    array's largest finite magnitude, over the arrays both runs produced (equal values,
    infinities and NaNs included, differ by 0; a NaN against a number by inf)."""
    abs_diff = rel_diff = 0.0
    for key, ref in reference.items():
        got = values.get(key)
        if got is None or got.shape != ref.shape or ref.size == 0:
            continue
        ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
        same = (got64 == ref64) | (np.isnan(got64) & np.isnan(ref64))
        with np.errstate(invalid="ignore"):
            diff = np.where(same, 0.0, np.abs(got64 - ref64))
        worst = float(np.nan_to_num(diff, nan=np.inf).max())
        finite = np.abs(ref64[np.isfinite(ref64)])
        scale = float(finite.max()) if finite.size else 0.0
        abs_diff = max(abs_diff, worst)
        rel_diff = max(rel_diff, worst / scale if scale > 0 else (0.0 if worst == 0 else np.inf))
    return {"max_abs_diff": abs_diff, "max_rel_diff": rel_diff}


def diff_plan(model: Any, strategy_a: str, strategy_b: str, *, shapes: dict | None = None,
              train: bool = False) -> list[dict]:
    """The operator nodes that moved between two strategies' partitionings: one dict per
    node whose backend, or whose region's membership, differs (``node``, ``op``, ``a``,
    ``b``: 'backend (region of N ops)' or 'native: reason')."""
    if not isinstance(model, Model):
        model = load_model(model, shapes=shapes)
    plans = [model.bind(s, train=train, params=False).partition_plan
             for s in (strategy_a, strategy_b)]
    placed = [_placements(p) for p in plans]
    moved = []
    for node in model.symbol._indexed().nodes:
        if node.op is None:
            continue
        a, b = (pl.get(node.name, (None, None, "not partitioned")) for pl in placed)
        if a[:2] != b[:2]:
            moved.append({"node": node.name, "op": node.op.name, "a": _describe(a),
                          "b": _describe(b)})
    return moved


def _placements(plan) -> dict[str, tuple]:
    """node -> (backend, region members, reason) of a plan (None for no plan)."""
    if plan is None:
        return {}
    members = {r.id: frozenset(r.members) for r in plan.regions}
    return {d.node: (d.backend, members.get(d.region), d.reason) for d in plan.nodes.values()}


def _describe(place: tuple) -> str:
    backend, members, reason = place
    if backend is None:
        return f"native: {REASONS.get(reason, reason) if reason else 'no backend claimed it'}"
    return f"{backend} (region of {len(members)} ops)"
