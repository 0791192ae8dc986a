"""A/B comparison of partitioning strategies (``gx.compare``, ``graphexec compare``).

:func:`compare` runs one model under several strategies and returns plain data:

``{"model": {name, source, inputs, num_ops, num_params, symbol_json}, "train", "repeat",
"reference": "NONE", "interrupted", "strategies": [row, ...]}`` with one row per strategy:
``strategy``, ``error`` (None, or why the strategy failed: the other fields may then be
missing), ``regions``, ``claimed`` (ops by backend), ``total_ops``, ``boundaries`` and
``boundary_bytes`` (entries entering or leaving regions per run), ``bind_s``,
``first_run_s`` (compilation, session creation), ``forward_ms`` and ``train_ms`` (median,
q1, q3, min, max, samples), ``planned_bytes``, ``peak_rss_bytes`` (the process's peak while
the strategy ran) and ``rss_growth_bytes`` (that peak above the process's size when the
strategy started), ``max_abs_diff`` / ``max_rel_diff`` (against the reference, outputs and
with ``train`` gradients too; the relative one divides by the largest magnitude of each
reference array), ``fallbacks`` and ``plan`` (``PartitionPlan.to_dict()``, with the
``auto`` strategy's measurements under ``decisions``).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.subgraph.plan import REASONS

from .measure import run_strategy
from .models import Model, load_model, make_inputs

__all__ = ["compare", "diff_plan", "parse_strategies", "REFERENCE"]

#: the strategy every other one is checked against
REFERENCE = "NONE"


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
        raise GraphexecError("no strategy given: expected e.g. 'NONE,default,onnxrt,fused'")
    return out


def compare(model: Any, strategies: str | Sequence[str], inputs: dict | None = None, *,
            shapes: dict | None = None, train: bool = False, repeat: int = 20, seed: int = 0,
            budget_s: float = 30.0,
            progress: Callable[[str, str], None] | None = None) -> dict:
    """Run ``model`` under each strategy and return the comparison as plain data (see the
    module docstring).

    ``model``: a zoo name, a checkpoint prefix, a symbol JSON or ONNX path, a Symbol (with
    ``shapes``) or a loaded :class:`~.models.Model`. ``inputs``: arrays by input name
    (random ones from ``seed`` by default). ``train``: time forward+backward too and compare
    gradients. ``repeat``: timed runs per measurement (fewer when one measurement would
    exceed ``budget_s``). ``progress(strategy, phase)`` is called as each phase starts.
    A failing strategy is recorded in its row; Ctrl-C stops and returns what was measured
    (``interrupted`` True)."""
    if not isinstance(model, Model):
        model = load_model(model, shapes=shapes, seed=seed)
    names = parse_strategies(strategies)
    inputs = make_inputs(model, seed=seed) if inputs is None else inputs
    result: dict[str, Any] = {
        "model": {"name": model.name, "source": model.source,
                  "inputs": {k: list(v) for k, v in model.input_shapes.items()},
                  "num_ops": sum(1 for n in model.symbol._indexed().nodes if n.op is not None),
                  "num_params": model.num_params, "symbol_json": model.symbol.tojson()},
        "train": bool(train), "repeat": int(repeat), "reference": REFERENCE,
        "interrupted": False, "strategies": []}
    order = ([REFERENCE] if REFERENCE not in names else []) + names
    reference_values: dict | None = None
    rows: dict[str, dict] = {}
    try:
        for name in order:
            def step(phase: str, name: str = name) -> None:
                if progress is not None:
                    progress(name, phase)
            try:
                row, values = run_strategy(model, name, inputs, train=train, repeat=repeat,
                                           budget_s=budget_s, seed=seed, step=step)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # noqa: BLE001 - a failing strategy is a row, not a crash
                row, values = {"strategy": name, "error": f"{type(exc).__name__}: {exc}"}, None
            if name == REFERENCE and reference_values is None:
                if values is None:
                    raise GraphexecError(f"the reference run ({REFERENCE}) failed: "
                                         f"{row['error']}")
                reference_values = values
            if values is not None:
                row.update(_differences(values, reference_values))
            rows[name] = row
    except KeyboardInterrupt:
        result["interrupted"] = True
    result["strategies"] = [rows[n] for n in names if n in rows]
    return result


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
