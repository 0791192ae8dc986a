"""Contiguous stand-ins for the arrays a kernel cannot take as they are (a strided array the
user bound): inputs copied in before the kernel runs, outputs copied out after it. Compiled
kernels of any backend (the fused kernels, the native Winograd loops) use it."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["Staging"]


class Staging:
    """Collects the copies around one kernel; ``xp`` is the arrays' module (numpy on the
    host, CuPy on a GPU)."""

    def __init__(self, xp: Any = np):
        self.xp = xp
        self.before: list[Callable[[], None]] = []
        self.after: list[Callable[[], None]] = []

    def read(self, arr):
        """``arr`` itself when C-contiguous, else a copy refreshed before each run."""
        if arr.flags.c_contiguous:
            return arr
        stage = self.xp.empty(arr.shape, arr.dtype)
        self.before.append(lambda: self.xp.copyto(stage, arr))
        return stage

    def write(self, arr):
        """``arr`` itself when C-contiguous, else an array copied into it after each run."""
        if arr.flags.c_contiguous:
            return arr
        stage = self.xp.empty(arr.shape, arr.dtype)
        self.after.append(lambda: self.xp.copyto(arr, stage))
        return stage

    def around(self, run: Callable[[], None]) -> Callable[[], None]:
        """``run`` between the copies (``run`` itself when there are none)."""
        if not (self.before or self.after):
            return run
        before, after = tuple(self.before), tuple(self.after)

        def staged() -> None:
            for step in before:
                step()
            run()
            for step in after:
                step()
        return staged
