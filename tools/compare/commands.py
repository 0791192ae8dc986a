"""The comparison tool's command-line subcommands: ``compare``, ``diff-plan``, ``info``,
``plot`` and ``backends`` (registered in :data:`graphexec.tools.cli.SUBCOMMANDS`).

Tables and the progress display use rich (a well-kept library: column layout, live progress
and Ctrl-C behaviour we would otherwise write by hand)."""
from __future__ import annotations

import argparse
import json
import math
from typing import Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from graphexec.core.subgraph import get_backend, list_backends

from . import (WARMUP_S, compare, default_strategies, diff_plan, parse_strategies, row_notes,
               sample_text)
from .models import load_model, parse_shapes
from .plot import plot_model
from .report import write_report

__all__ = ["add_compare", "add_diff_plan", "add_info", "add_plot", "add_backends",
           "compare_table", "compare_notes"]


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="a zoo name, an MXNet checkpoint prefix (PREFIX-symbol.json + "
                        "PREFIX-NNNN.params), a symbol JSON or an ONNX file")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="an input shape (repeatable; required for a bare symbol JSON)")
    p.add_argument("--epoch", type=int, help="checkpoint epoch (default: the latest)")


def _load(args: argparse.Namespace):
    return load_model(args.model, shapes=parse_shapes(args.shape) or None, epoch=args.epoch)


def _console(width: int = 100):
    """A rich console: the terminal's width in a terminal; ``width`` columns otherwise (a
    file, a pipe, CI logs), so tables keep one line per row."""
    import sys

    return Console() if sys.stdout.isatty() else Console(width=width)


# -- graphexec compare ---------------------------------------------------------------------
def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="run a model under several partitioning strategies",
                       description="Bind MODEL under each strategy, time them in turn (round-"
                                   "robin) and print per strategy what it claimed, its "
                                   "latency, its speed-up over the baseline with a 95%% "
                                   "confidence interval and a verdict (faster / slower / "
                                   "same), and its difference from NONE.")
    _model_args(p)
    p.add_argument("--strategies",
                   help="strategies separated by commas (options attach to the strategy "
                        "before them: onnxrt:min_size=4,threads=2); chain backends with + "
                        "(onnxrt+fused), or separate strategies with ; ; a strategy may be "
                        "listed twice (default: NONE,onnxrt,fused, and default when op names "
                        "are set for it)")
    p.add_argument("--baseline", metavar="NAME",
                   help="the strategy speed-ups are relative to (default NONE, added when "
                        "not listed)")
    p.add_argument("--train", action="store_true", help="time forward+backward too")
    p.add_argument("--repeat", type=int, default=10, metavar="N",
                   help="rounds of timing at least (default %(default)s)")
    p.add_argument("--budget", type=float, default=20.0, metavar="SECONDS",
                   help="timing stops when every interval is narrow enough or after this "
                        "long (default %(default)s)")
    p.add_argument("--precision", type=float, default=0.02, metavar="FRACTION",
                   help="an interval is narrow enough within +-FRACTION (default "
                        "%(default)s)")
    p.add_argument("--warmup", type=float, default=WARMUP_S, metavar="SECONDS",
                   help="run each strategy untimed for up to this long before each of its "
                        "samples, so that it is timed running, not waking after the others "
                        "(default %(default)s; 0: no warm-up)")
    p.add_argument("--isolate", action="store_true",
                   help="bind each strategy in its own process (its own peak memory, no "
                        "library of one strategy in another's process); still timed in turn")
    p.add_argument("--wide", action="store_true",
                   help="every column (regions, crossings, bind and first-run time, "
                        "quartiles, memory, fallbacks)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs/parameters")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON")
    p.add_argument("--report", metavar="PATH", help="write a self-contained HTML report")
    p.set_defaults(run=run_compare)


def run_compare(args: argparse.Namespace) -> int:

    console = _console(260 if args.wide else 100)
    model = _load(args)
    strategies = parse_strategies(args.strategies or default_strategies())
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("starting", total=None)

        def progress(strategy: str, phase: str) -> None:
            bar.update(task, description=f"{strategy}: {phase}")
        result = compare(model, strategies, train=args.train, repeat=args.repeat,
                         seed=args.seed, budget_s=args.budget, baseline=args.baseline,
                         isolate=args.isolate, precision=args.precision,
                         warmup_s=args.warmup, progress=progress)
    console.print(compare_table(result, wide=args.wide))
    for line in compare_notes(result):
        console.print(line, highlight=False)
    if result["interrupted"]:
        console.print("[yellow]interrupted: the rows above are what was measured[/yellow]")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=_json_default)
        console.print(f"results written to {args.json}")
    if args.report:
        write_report(result, args.report)
        console.print(f"report written to {args.report}")
    return 130 if result["interrupted"] else 0


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _ms(stats: dict | None, quartiles: bool = False) -> str:
    if not stats:
        return "-"
    if not quartiles:
        return _num(stats["median"])
    return f"{_num(stats['median'])} ({_num(stats['q1'])}-{_num(stats['q3'])})"


def _num(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def _diff(v: float | None, digits: int) -> str:
    """A difference from the reference; '-' when not computed (Ctrl-C while binding)."""
    return "-" if v is None else f"{v:.{digits}g}"


def _mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.1f}"


_VERDICT_STYLE = {"faster": "bold green", "slower": "bold red"}


def compare_table(result: dict, wide: bool = False):
    """A rich Table of a :func:`~graphexec.tools.compare.compare` result: what each strategy
    claimed, its latency, its speed-up over the baseline with the 95% interval and the
    verdict (only a significant one highlighted), its difference from NONE; ``wide`` adds
    regions, crossings, bind and first-run time, quartiles, memory and fallbacks."""
    m = result["model"]
    title = (f"{m['name']}: {m['num_ops']} ops, {m['num_params']:,} parameters"
             + (", training" if result["train"] else ""))
    table = Table(title=title)
    headline = "train" if result["train"] else "fwd"
    columns = ["strategy", "claimed/ops"]
    if wide:
        columns += ["regions", "crossings (MB)", "bind s", "1st run s"]
    columns.append("fwd ms" + (" (q1-q3)" if wide else ""))
    if result["train"]:
        columns.append("train ms" + (" (q1-q3)" if wide else ""))
    columns += [f"{headline} speed-up (95% CI)", "verdict", "rel diff"]
    if wide:
        columns += ["max |diff|", "planned MB", "peak RSS MB (+growth)", "fallbacks"]
    for c in columns:
        # fold: a long strategy text wraps onto a second line rather than being cut
        table.add_column(c, justify="left" if c in ("strategy", "verdict") else "right",
                         overflow="fold")
    for row in result["strategies"]:
        if row.get("error"):
            table.add_row(row["strategy"], "[red]failed (see below)[/red]",
                          *[""] * (len(columns) - 2))
            continue
        table.add_row(*_cells(row, result, wide))
    return table


def _cells(row: dict, result: dict, wide: bool) -> list[str]:
    claimed = ", ".join(f"{b} {n}" for b, n in row["claimed"].items()) or "nothing"
    cells = [row["strategy"], f"{claimed}/{row['total_ops']}"]
    if wide:
        cells += [str(row["regions"]),
                  f"{row['boundaries']} ({row['boundary_bytes'] / 2**20:.2f})",
                  f"{row['bind_s']:.3f}", f"{row['first_run_s']:.3f}"]
    cells.append(_ms(row.get("forward_ms"), wide))
    if result["train"]:
        cells.append(_ms(row.get("train_ms"), wide))
    cells += [_speedup_text(row), _verdict_text(row), _diff(row.get("max_rel_diff"), 2)]
    if wide:
        cells += [_diff(row.get("max_abs_diff"), 3), _mb(row["planned_bytes"]),
                  f"{_mb(row['peak_rss_bytes'])} (+{_mb(row['rss_growth_bytes'])})",
                  str(row["fallbacks"])]
    return cells


def _speedup_text(row: dict) -> str:
    if row.get("verdict") == "baseline":
        return "1 (baseline)"
    if row.get("speedup") is None:
        return "-"
    ci = row.get("ci95")
    interval = f" ({ci[0]:.2f}-{ci[1]:.2f})" if ci else " (too few rounds)"
    return f"{row['speedup']:.2f}x{interval}"


def _verdict_text(row: dict) -> str:
    v = row.get("verdict")
    if v is None or v == "baseline":
        return "" if v is None else "baseline"
    text = v + (", noisy" if row.get("noisy") else "")
    style = _VERDICT_STYLE.get(v)
    return f"[{style}]{text}[/{style}]" if style else text


def compare_notes(result: dict) -> list[str]:
    """The lines printed under the table: how to read it, then per strategy what the table
    has no room for (why it claimed nothing, what fell back, its error)."""
    rounds = result.get("rounds")
    lines = [f"speed-up = {result['baseline']} time / strategy time (>1: faster), from "
             f"{rounds} rounds timed in turn ({sample_text(result)}); the interval holds "
             f"the true speed-up with 95% confidence; 'faster'/'slower' only when it excludes "
             f"1 and the speed-up is at least {result['min_effect']:.0%}; rel diff: largest "
             f"difference from {result['reference']} relative to its largest value."]
    if result.get("noisy"):
        lines.append(f"[yellow]{result['noisy']}[/yellow]")
    for row in result["strategies"]:
        lines += [f"{row['strategy']}: {note}" for note in row_notes(row)]
    return lines
# -- graphexec diff-plan -------------------------------------------------------------------
def add_diff_plan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff-plan", help="list the nodes two strategies partition differently",
                       description="Partition MODEL with strategies A and B and list every "
                                   "operator node whose backend or region differs.")
    p.add_argument("a", metavar="A", help="first strategy (e.g. onnxrt:min_size=4)")
    p.add_argument("b", metavar="B", help="second strategy (e.g. fused)")
    _model_args(p)
    p.add_argument("--train", action="store_true", help="partition a training bind")
    p.set_defaults(run=run_diff_plan)


def run_diff_plan(args: argparse.Namespace) -> int:

    moved = diff_plan(_load(args), args.a, args.b, train=args.train)
    console = _console()
    if not moved:
        console.print(f"{args.a} and {args.b} partition {args.model} the same way")
        return 0
    table = Table(title=f"{len(moved)} node(s) moved between {args.a} and {args.b}")
    for c in ("node", "op", args.a, args.b):
        table.add_column(c)
    for m in moved:
        table.add_row(m["node"], m["op"], m["a"], m["b"])
    console.print(table)
    return 0


# -- graphexec info ------------------------------------------------------------------------
def add_info(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="ops, parameters, shapes and memory of a model")
    _model_args(p)
    p.set_defaults(run=run_info)


def run_info(args: argparse.Namespace) -> int:
    model = _load(args)
    console = _console()
    console.print(model.summary())
    plan = model.bind("NONE", params=False).memory_plan
    console.print(f"memory (inference bind): planned {plan['planned_bytes'] / 2**20:.1f} MB, "
                  f"without reuse {plan['unplanned_bytes'] / 2**20:.1f} MB")
    return 0


# -- graphexec plot ------------------------------------------------------------------------
def add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="draw a model's graph as SVG (like mx.viz.plot_network)")
    _model_args(p)
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="the SVG file")
    p.add_argument("--backend", metavar="STRATEGY",
                   help="colour the nodes by the backend claiming them under STRATEGY")
    p.add_argument("--weights", action="store_true", help="draw parameter variables too")
    p.set_defaults(run=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    model = _load(args)
    plan = None
    if args.backend:
        parted = model.bind(args.backend, params=False).partition_plan
        plan = parted.to_dict() if parted is not None else None
    plot_model(model.symbol, args.output, plan=plan, title=model.name,
               hide_weights=not args.weights)
    _console().print(f"graph written to {args.output}")
    return 0


# -- graphexec backends --------------------------------------------------------------------
def add_backends(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("backends", help="the registered subgraph backends and their options")
    p.set_defaults(run=run_backends)


def run_backends(args: argparse.Namespace) -> int:

    table = Table(title="subgraph backends (select with MXNET_SUBGRAPH_BACKEND, bind(backend=), "
                        "or a compare strategy)")
    for c in ("backend", "properties", "options (defaults)"):
        table.add_column(c)
    for name in list_backends():
        backend = get_backend(name)
        props = ", ".join(p.name + (" (inference only)" if p.inference_only else "")
                          for p in backend.properties)
        defaults: dict[str, Any] = {}
        for prop in backend.properties:
            defaults.update((k, v) for k, v in prop.attrs.items()
                            if k in backend.options or not backend.options)
        opts = ", ".join(f"{k}={_option_text(v)}" for k, v in sorted(defaults.items()))
        table.add_row(name, props, opts)
    _console().print(table)
    return 0


def _option_text(value: Any) -> str:
    if isinstance(value, (set, frozenset, list, tuple)):
        return "|".join(sorted(map(str, value))) or "(none)"
    return str(value)
