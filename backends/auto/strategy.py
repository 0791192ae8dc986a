"""The cost-aware strategy ``auto`` (registered by this package's plugin as a backend): every
registered backend proposes its regions, each candidate region is timed (bound and run on its
own, so the boundary costs are in the figure) against native execution of the same nodes, and
a region goes to its backend only when that is significantly faster.

``backend="auto"`` (or ``MXNET_SUBGRAPH_BACKEND=auto``) partitions at bind:

1. for each candidate backend (option ``candidates``; default every registered backend but
   ``auto`` and the op-name-set test backends, which claim nothing unless told), a dry-run
   partitioning gives its regions;
2. each region's inner graph is bound natively and with that backend, on random inputs of
   the inferred shapes, and the two are timed in turn (forward, or forward+backward in a
   training bind; :func:`graphexec.core.runtime.timing.interleave`), each sample after one
   untimed call (a sample otherwise starts cold, after the other side ran), for at least 6 and at
   most ``repeat`` rounds, until the speed-up's 95% interval decides; the largest regions
   are timed first, and the timing (binding the candidates included) stops after ``budget``
   seconds: a candidate whose fewest rounds would not fit in what is left, and those not
   reached, stay native and say so in their ``note``;
3. regions are taken greedily by time saved, largest first, when the backend is
   significantly faster (the interval excludes 1 and the speed-up is at least ``1 +
   min_gain``: see :func:`~graphexec.core.runtime.timing.verdict`) and they do not overlap a
   region already taken;
4. the graph is partitioned by those backends in turn, each restricted to the nodes it won.

The decisions (per region: median ms of each side, ``speedup``, ``ci95``, ``verdict``,
``chosen``) are in ``exe.partition_plan.decisions``. With ``profile=PATH`` they are saved to
that JSON file, and reused from it when it describes the same candidate regions (same nodes,
shapes and dtypes), so the timing happens once and the choice is the same every time.
"""
from __future__ import annotations

import json
import logging
import math
import os
import statistics
import time
from typing import Any

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.runtime.timing import interleave, speedup
from graphexec.core.subgraph.api import (PartitionRequest, SubgraphBackend, SubgraphProperty,
                                         SubgraphSelector, list_backends)
from graphexec.core.subgraph.plan import PartitionPlan
from graphexec.core.subgraph.region import REGION_OP
from graphexec.core.subgraph.select import node_shapes

__all__ = ["AUTO", "AutoProperty", "AutoBackend", "make_auto_backend", "apply_auto"]

log = logging.getLogger("graphexec")

AUTO = "auto"
#: backends that only claim the op names a test sets (MXNet's test backend and its kind)
_OP_NAME_SET_BACKENDS = ("default",)


class AutoProperty(SubgraphProperty):
    """Holds the options of ``auto`` (its partitioning is done by :func:`apply_auto`)."""

    name = AUTO
    default_attrs = {"candidates": None, "repeat": 30, "min_gain": 0.05, "budget": 5.0,
                     "profile": None}

    def set_options(self, **options: Any) -> None:
        super().set_options(**options)
        a = self.attrs
        if isinstance(a["candidates"], str):
            a["candidates"] = [a["candidates"]]
        if not isinstance(a["repeat"], int) or isinstance(a["repeat"], bool) or a["repeat"] < 1:
            raise GraphexecError(f"auto option repeat={a['repeat']!r}: expected an integer >= 1")
        if not isinstance(a["min_gain"], (int, float)) or not 0 <= a["min_gain"] < 1:
            raise GraphexecError(f"auto option min_gain={a['min_gain']!r}: expected a fraction "
                                 f"in [0, 1)")
        if not isinstance(a["budget"], (int, float)) or isinstance(a["budget"], bool) \
                or not a["budget"] > 0:
            raise GraphexecError(f"auto option budget={a['budget']!r}: expected seconds > 0")

    def create_selector(self) -> SubgraphSelector:
        raise GraphexecError("the auto strategy partitions through apply_auto, not a selector")


class AutoBackend(SubgraphBackend):
    """The ``auto`` strategy as a whole-graph backend: its one property only holds the
    options; :meth:`partition_graph` times the other backends' regions."""

    whole_graph = True

    def __init__(self):
        super().__init__(AUTO, [AutoProperty()],
                         options=("candidates", "repeat", "min_gain", "budget", "profile"))

    def partition_graph(self, request: PartitionRequest) -> tuple[Any, PartitionPlan]:
        return apply_auto(request.symbol, request.ctx, request.need_grad, request.options,
                          request.input_shapes, request.input_dtypes, request.apply)


def make_auto_backend() -> AutoBackend:
    """A fresh ``auto`` backend (the subgraph backend factory)."""
    return AutoBackend()


def apply_auto(sym, ctx, need_grad: bool, options: dict, input_shapes: dict,
               input_dtypes: dict, partition) -> tuple[Any, PartitionPlan]:
    """Partition ``sym`` the ``auto`` way. ``options``: per backend (``auto``'s own under
    "auto"; the others are used by the candidates). ``partition(sym, names, restrict=...)``
    applies backends (``apply_backends`` of ``core/subgraph/select.py`` with the shapes and
    options bound)."""
    opts = AutoProperty(**options.get(AUTO, {})).attrs
    candidates = opts["candidates"] or [b for b in list_backends()
                                        if b != AUTO and b not in _OP_NAME_SET_BACKENDS]
    regions = []
    for name in candidates:
        if name == AUTO:
            raise GraphexecError("auto option candidates: 'auto' cannot be its own candidate")
        regions += _candidate_regions(sym, name, ctx, need_grad, input_shapes, input_dtypes,
                                      partition)
    decisions = _load_profile(opts["profile"], regions)
    measured = decisions is None
    if measured:
        decisions = _time_candidates(regions, ctx, need_grad, opts)
    chosen = _choose(regions, decisions)
    won: dict[str, set[str]] = {}
    for r, d in zip(regions, decisions):
        d["chosen"] = r["backend"] if id(r) in chosen else "native"
        if id(r) in chosen:
            won.setdefault(r["backend"], set()).update(r["members"])
    if measured:
        _save_profile(opts["profile"], regions, decisions)
    part, plan = partition(sym, list(won), restrict=won,
                           reason="auto: native or another backend measured faster")
    plan.backends = [AUTO] + plan.backends
    plan.decisions = decisions
    return part, plan


def _candidate_regions(sym, name, ctx, need_grad, shapes, dtypes, partition) -> list[dict]:
    """The regions backend ``name`` would claim alone, each with its inner symbol and the
    shapes/dtypes of its inputs."""
    part, plan = partition(sym, [name], restrict=None)
    if not plan.regions:
        return []
    inferred = node_shapes(part, shapes, dtypes)
    nodes = {n.name: n for n in part._indexed().nodes if n.op is REGION_OP}
    out = []
    for region in plan.regions:
        node = nodes.get(region.node)
        if node is None or inferred is None:
            continue
        in_shapes, in_dtypes = inferred.inputs(node), inferred.dtypes(node)
        if any(s is None for s in in_shapes):
            continue
        out.append({"backend": name, "node": region.node, "members": list(region.members),
                    "symbol": node.params.subgraph, "input_names": list(node.params.input_names),
                    "shapes": [tuple(s) for s in in_shapes],
                    "dtypes": [np.dtype(d).name for d in in_dtypes[:len(in_shapes)]]})
    return out


#: rounds a candidate is timed at least (fewer give no 95% interval), the time one sample
#: aims at (a small region is called several times per sample)
_MIN_ROUNDS, _SAMPLE_S = 6, 0.002


def _time_candidates(regions: list[dict], ctx, need_grad: bool, opts: dict) -> list[dict]:
    """The decision of every candidate: the largest regions are timed first, each within
    its share of what is left of the ``budget``; those not reached stay untimed."""
    decisions: list[dict | None] = [None] * len(regions)
    order = sorted(range(len(regions)), key=lambda i: -len(regions[i]["members"]))
    start = time.perf_counter()
    for k, i in enumerate(order):
        left = opts["budget"] - (time.perf_counter() - start)
        if left <= 0:
            decisions[i] = _untimed(regions[i], f"not timed: the budget of {opts['budget']} s "
                                                f"was spent")
            continue
        decisions[i] = _time_candidate(regions[i], ctx, need_grad, opts["repeat"],
                                       start + opts["budget"], left / (len(order) - k),
                                       opts["min_gain"])
    return decisions


def _untimed(region: dict, why: str) -> dict:
    return {"region": region["node"], "backend": region["backend"],
            "members": region["members"], "timings_ms": {}, "speedup": None, "ci95": None,
            "verdict": "same", "note": why}


def _time_candidate(region: dict, ctx, need_grad: bool, repeat: int, deadline: float,
                    share_s: float, min_gain: float) -> dict:
    """The region run natively and by its backend (each bound on its own), timed in turn
    until the 95% interval of the backend's speed-up decides (or ``repeat`` rounds, or its
    ``share_s`` of the budget): median ms of each, ``speedup``, ``ci95``, ``verdict``. Not
    timed when the fewest rounds would end after the budget's ``deadline`` (a
    ``time.perf_counter()`` value; bound and run once, the two calls tell)."""
    runs: dict[str, Any] = {}
    for label, backend in (("native", "NONE"), (region["backend"], region["backend"])):
        try:
            runs[label] = _bound_run(region, backend, ctx, need_grad)
        except Exception as exc:  # noqa: BLE001 - a backend that fails loses the region
            log.warning("auto: timing region %s with %s failed: %s: %s", region["node"],
                        backend, type(exc).__name__, exc)
            return _untimed(region, f"{backend} failed: {type(exc).__name__}: {exc}")
    own = region["backend"]
    single = {k: _seconds(run, 1) for k, run in runs.items()}
    left_s = deadline - time.perf_counter()
    if _MIN_ROUNDS * sum(single.values()) > left_s:
        return _untimed(region, f"not timed: {_MIN_ROUNDS} rounds would take "
                                f"{_MIN_ROUNDS * sum(single.values()):.3g} s, more than the "
                                f"{max(left_s, 0):.3g} s left of the budget")
    number = max(1, min(1000, math.ceil(_SAMPLE_S / max(single["native"], 1e-7))))

    def decided(samples: dict) -> bool:
        ci = speedup(samples["native"], samples[own], min_gain)["ci95"]
        return ci is not None and (ci[1] < 1 + min_gain or ci[0] > 1)
    timers = {k: (lambda run=run: _seconds(run, number, warm=1)) for k, run in runs.items()}
    samples, _ = interleave(timers, min_rounds=min(_MIN_ROUNDS, repeat), max_rounds=repeat,
                            budget_s=share_s, done=decided, check_every=2)
    s = speedup(samples["native"], samples[own], min_gain)
    return {"region": region["node"], "backend": own, "members": region["members"],
            "timings_ms": {k: statistics.median(v) * 1e3 for k, v in samples.items()},
            "speedup": s["estimate"], "ci95": s["ci95"], "verdict": s["verdict"],
            "rounds": s["pairs"]}


def _seconds(run, number: int, warm: int = 0) -> float:
    """Seconds per call of ``number`` calls of ``run``, after ``warm`` untimed ones (as
    ``graphexec compare`` warms a strategy up before each sample: PyTorch's threads, for
    one, take twice as long right after another strategy ran)."""
    for _ in range(warm):
        run()
    t0 = time.perf_counter()
    for _ in range(number):
        run()
    return (time.perf_counter() - t0) / number


def _bound_run(region: dict, backend: str, ctx, need_grad: bool):
    """The region's inner graph bound with ``backend`` on random inputs, run once (kernels
    compiled, sessions created); returns its run function."""
    sym = region["symbol"]
    shapes = dict(zip(region["input_names"], region["shapes"]))
    dtypes = dict(zip(region["input_names"], region["dtypes"]))
    exe = sym.simple_bind(ctx, grad_req="write" if need_grad else "null", type_dict=dtypes,
                          backend=backend, **shapes)
    rng = np.random.default_rng(0)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[...] = _random_like(rng, arr, name)
    heads = [np.ones(o.shape, o.dtype) for o in exe.outputs] if need_grad else None

    def run():
        exe.forward(is_train=need_grad)
        if need_grad:
            exe.backward(heads)
    run()
    return run


def _random_like(rng, arr, name: str):
    """Plausible values so deep regions stay finite: Glorot-uniform weights, variances and
    scales near 1, small biases, data uniform in [-1, 1)."""
    if name.endswith(("_var", "_gamma")):  # variances (moving_var, Gluon's running_var), scales
        return rng.uniform(0.5, 1.5, arr.shape).astype(arr.dtype)
    if arr.dtype.kind in "iu":
        return rng.integers(0, 2, arr.shape).astype(arr.dtype)
    if name.endswith("weight") and arr.ndim >= 2:
        fan_out, fan_in = arr.shape[0], int(np.prod(arr.shape[1:]))
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-bound, bound, arr.shape).astype(arr.dtype)
    if name.endswith(("bias", "_beta", "_mean")):
        return rng.uniform(-0.1, 0.1, arr.shape).astype(arr.dtype)
    return rng.uniform(-1, 1, arr.shape).astype(arr.dtype)


def _choose(regions: list[dict], decisions: list[dict]) -> set[int]:
    """ids of the regions taken: significantly faster by their backend (verdict ``faster``,
    see :func:`~graphexec.core.runtime.timing.verdict`), largest time saved first, no
    overlap."""
    order = sorted(range(len(regions)), key=lambda i: _saved(decisions[i]), reverse=True)
    taken_nodes: set[str] = set()
    chosen: set[int] = set()
    for i in order:
        if decisions[i].get("verdict") != "faster":
            continue
        members = set(regions[i]["members"])
        if members & taken_nodes:
            continue
        taken_nodes |= members
        chosen.add(id(regions[i]))
    return chosen


def _saved(decision: dict) -> float:
    t = decision["timings_ms"]
    if "native" not in t or decision["backend"] not in t:
        return float("-inf")
    saved = t["native"] - t[decision["backend"]]
    return saved if np.isfinite(saved) else float("-inf")


#: the version of the profile's decisions (2: with the speed-up's interval and verdict)
_PROFILE_VERSION = 2


def _signature(regions: list[dict]) -> list:
    return [_PROFILE_VERSION] + [
        [r["backend"], sorted(r["members"]), [list(s) for s in r["shapes"]], r["dtypes"]]
        for r in regions]


def _load_profile(path: str | None, regions: list[dict]) -> list[dict] | None:
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            saved = json.load(f)
    except (OSError, ValueError) as exc:
        raise GraphexecError(f"auto option profile={path!r}: cannot read it: {exc}") from None
    if saved.get("signature") != _signature(regions):
        log.info("auto: profile %s describes other regions; timing anew", path)
        return None
    return saved["decisions"]


def _save_profile(path: str | None, regions: list[dict], decisions: list[dict]) -> None:
    if not path:
        return
    with open(path, "w") as f:
        json.dump({"signature": _signature(regions), "decisions": decisions}, f, indent=1,
                  default=lambda v: str(v))
