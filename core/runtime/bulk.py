"""Bulk execution: one generated Python function per straight-line segment of kernels, so a
forward is a few function calls instead of a loop over kernel objects.

A kernel that is a ``functools.partial`` (most native kernels are) is called inline with its
bound arguments (no partial object on the hot path); any other kernel is called as is. An
exception inside a segment is traced back to its kernel through the generated line number,
so errors still name the node, at no cost on the normal path.

Environment (MXNet's names): MXNET_EXEC_BULK_EXEC_INFERENCE (default 1),
MXNET_EXEC_BULK_EXEC_TRAIN (default 1), MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN (default 15:
nodes per training segment), read when an executor is bound. Monitor callbacks disable
bulking.
"""
from __future__ import annotations

import os
from functools import partial
from typing import Callable

import numpy as np

__all__ = ["BulkSegment", "bulk_enabled", "segment_size", "compile_segments"]


def bulk_enabled(is_train: bool) -> bool:
    var = "MXNET_EXEC_BULK_EXEC_TRAIN" if is_train else "MXNET_EXEC_BULK_EXEC_INFERENCE"
    return os.environ.get(var, "1") not in ("0", "")


def segment_size(is_train: bool, total: int) -> int:
    if not is_train:
        return max(total, 1)
    return max(int(os.environ.get("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN", "15")), 1)


class BulkSegment:
    """A generated function running kernels ``start .. start+len(kernels)-1`` of a plan."""

    __slots__ = ("run", "start", "code")

    def __init__(self, kernels: list[Callable[[], None]], start: int):
        self.start = start
        namespace: dict[str, object] = {}
        lines = ["def run():"]
        for i, fn in enumerate(kernels):
            lines.append("    " + _call_source(fn, i, namespace))
        if not kernels:
            lines.append("    pass")
        source = "\n".join(lines)
        exec(compile(source, f"<graphexec bulk segment {start}>", "exec"), namespace)  # noqa: S102
        self.run = namespace["run"]
        self.code = self.run.__code__

    def failed_index(self, exc: BaseException) -> int | None:
        """Index (in the plan) of the kernel that raised ``exc`` inside this segment."""
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is self.code:
                return self.start + tb.tb_lineno - 2
            tb = tb.tb_next
        return None


#: numpy ufuncs whose positional ``out`` is deprecated (numpy 2 warns, and measured 2.5x slower)
_KEYWORD_OUT = frozenset(("maximum", "minimum"))


def _positional_out(fn: partial) -> bool:
    """Whether ``fn`` is ufunc(inputs..., out=array) that may take ``out`` positionally: 35 ns
    of the ~0.5 us a ufunc call on a tiny array costs (numpy 2.4)."""
    return (isinstance(fn.func, np.ufunc) and fn.func.__name__ not in _KEYWORD_OUT
            and len(fn.args) == fn.func.nin and fn.func.nout == 1
            and set(fn.keywords or ()) == {"out"} and isinstance(fn.keywords["out"], np.ndarray))


def _call_source(fn: Callable[[], None], i: int, ns: dict) -> str:
    if type(fn) is partial:
        ns[f"f{i}"] = fn.func
        args = []
        for k, a in enumerate(fn.args):
            ns[f"a{i}_{k}"] = a
            args.append(f"a{i}_{k}")
        if _positional_out(fn):
            ns[f"k{i}_out"] = fn.keywords["out"]
            return f"f{i}({', '.join(args)}, k{i}_out)"
        for key, v in (fn.keywords or {}).items():
            ns[f"k{i}_{key}"] = v
            args.append(f"{key}=k{i}_{key}")
        return f"f{i}({', '.join(args)})"
    ns[f"f{i}"] = fn
    return f"f{i}()"


def compile_segments(kernels: list[Callable[[], None]], size: int) -> list[BulkSegment]:
    """Split ``kernels`` into segments of at most ``size`` and compile each."""
    return [BulkSegment(kernels[s:s + size], s) for s in range(0, len(kernels), size)] or \
        [BulkSegment([], 0)]
