"""The ``graphexec`` command line (also ``python -m graphexec``).

Subcommands are registered in :data:`SUBCOMMANDS`: each entry adds its parser to the
``argparse`` sub-parsers and sets ``run``, a function ``(args) -> exit status``.

    graphexec demo        run the bundled LeNet checkpoint and compare with MXNet's output
    graphexec compare     run a model under several partitioning strategies (tools/compare)
    graphexec diff-plan   the nodes two strategies partition differently
    graphexec info        ops, parameters, shapes and memory of a model
    graphexec plot        draw a model's graph (SVG)
    graphexec backends    the registered subgraph backends and their options
    graphexec run         run an MXNet 1.x script with 'import mxnet' resolved to graphexec
    graphexec ops [NAME]  every registered operator with its documentation
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

import graphexec
from graphexec import __version__
from graphexec.core.ir.context import cpu
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol import model
from graphexec.core.ops.registry import all_ops
from graphexec.harness import launcher, opdoc

from .compare import commands as compare_commands

__all__ = ["main", "build_parser", "SUBCOMMANDS", "EXAMPLES_DIR"]

#: Bundled example files (shipped as package data).
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
DEMO_PREFIX, DEMO_EPOCH = "lenet_small", 3
#: Tolerance of the demo's comparison with the output MXNet 1.9.1 recorded.
DEMO_RTOL, DEMO_ATOL = 1e-5, 1e-6


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphexec`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except GraphexecError as exc:
        print(f"graphexec {args.command}: error: {exc}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="graphexec", description="MXNet's symbolic graph executor with pluggable "
                                      "subgraph backends.")
    parser.add_argument("--version", action="version", version=f"graphexec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return parser


# -- graphexec demo ------------------------------------------------------------------------
def add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the bundled LeNet checkpoint and compare with MXNet",
                       description="Load the bundled MXNet LeNet checkpoint "
                                   f"({DEMO_PREFIX}, epoch {DEMO_EPOCH}), classify the sample "
                                   "images and compare with the output MXNet 1.9.1 recorded.")
    p.add_argument("--repeat", type=int, default=10, metavar="N",
                   help="forward passes to time (the median is shown; default 10)")
    p.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    prefix = str(EXAMPLES_DIR / DEMO_PREFIX)
    sym, arg_params, aux_params = model.load_checkpoint(prefix, DEMO_EPOCH)
    sample = np.load(f"{prefix}-input.npz")
    data, reference = sample["data"], sample["mxnet_output"]
    inputs = dict(arg_params, data=data, softmax_label=np.zeros(len(data), data.dtype))
    bind_s = []
    for _ in range(2):  # the first bind also loads the kernels
        start = time.perf_counter()
        exe = sym.bind(cpu(), inputs, aux_states=aux_params, grad_req="null")
        bind_s.append(time.perf_counter() - start)
    out = exe.forward(is_train=False)[0].copy()
    forward_s = _median_time(lambda: exe.forward(is_train=False), max(1, args.repeat))
    print(f"graphexec demo: MXNet checkpoint {prefix} (epoch {DEMO_EPOCH}), "
          f"{len(data)} samples of shape {tuple(data.shape[1:])}")
    for i, row in enumerate(out):
        print(f"  sample {i}: class {int(row.argmax())} (probability {row.max():.3f})")
    diff = float(np.abs(out - reference).max())
    ok = bool(np.allclose(out, reference, rtol=DEMO_RTOL, atol=DEMO_ATOL))
    print(f"max |graphexec - MXNet 1.9.1| = {diff:.3g} "
          f"({'within' if ok else 'OUTSIDE'} rtol {DEMO_RTOL:g}, atol {DEMO_ATOL:g})")
    print(f"bind {bind_s[1] * 1e3:.2f} ms (first bind {bind_s[0] * 1e3:.2f} ms), "
          f"forward {forward_s * 1e3:.3f} ms (median of {max(1, args.repeat)})")
    return 0 if ok else 1


def _median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# -- graphexec run -------------------------------------------------------------------------
def add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run an MXNet 1.x script on graphexec",
                       description="Run SCRIPT as __main__ with 'import mxnet' resolved to "
                                   "graphexec; the arguments after it are the script's.")
    p.add_argument("script", help="the Python script (e.g. train.py)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    p.set_defaults(run=run_run)


def run_run(args: argparse.Namespace) -> int:
    try:
        launcher.run_script(args.script, args.args, graphexec)
    except FileNotFoundError as exc:
        print(f"graphexec run: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # the script's own exit status
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except GraphexecError:  # the script's error: its traceback, not one line
        traceback.print_exc()
        return 1
    return 0


# -- graphexec ops -------------------------------------------------------------------------
def add_ops(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ops", help="list every registered operator, or document one",
                       description="Without NAME: every registered operator (plugins' too) "
                                   "with its aliases and the first line of its documentation. "
                                   "With NAME: its documentation and arguments.")
    p.add_argument("name", nargs="?", help="an operator name or alias")
    p.set_defaults(run=run_ops)


def run_ops(args: argparse.Namespace) -> int:
    if args.name:
        print(opdoc.describe(args.name))
        return 0
    ops = all_ops()
    for name in sorted(ops, key=str.lower):
        aliases = f" (aliases: {', '.join(ops[name].aliases)})" if ops[name].aliases else ""
        print(f"{name}{aliases}: {opdoc.summary(name)}")
    print(f"{len(ops)} operators, {len(opdoc.get_all_registered_operators())} names with "
          f"aliases")
    return 0


#: Functions that add one subcommand each to the ``graphexec`` parser.
SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_demo, compare_commands.add_compare, compare_commands.add_diff_plan,
    compare_commands.add_info, compare_commands.add_plot, compare_commands.add_backends, add_run,
    add_ops]
