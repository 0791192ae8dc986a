"""The threading contract of executors: an executor, and every executor sharing its memory
pool (``reshape``, ``shared_exec``, bucketing), runs in one thread at a time. Two threads
calling ``forward`` on one executor would overwrite each other's intermediate buffers and
outputs (silently wrong results), so a call that finds the executor busy raises
:class:`~graphexec.core.ir.errors.ConcurrentUseError` instead of waiting: its outputs would be
overwritten by the next forward anyway. Separate executors (separate binds) share no
buffers and run in parallel threads without any lock between them.

The check is one non-blocking lock acquisition per call (well under a microsecond)."""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ..ir.errors import ConcurrentUseError

__all__ = ["new_guard", "exclusive"]


def new_guard() -> threading.Lock:
    """The lock of a new memory pool (executors sharing the pool share it)."""
    return threading.Lock()


def exclusive(method: Callable) -> Callable:
    """Decorate an Executor method that reads or writes the executor's arrays: it raises
    :class:`ConcurrentUseError` when another call holds the executor's guard (``_busy``)."""
    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        busy = self._busy
        if not busy.acquire(False):
            raise ConcurrentUseError(
                f"{method.__name__}() called while this executor (or one sharing its memory "
                f"through reshape, shared_exec or bucketing) is running in another thread or "
                f"in a callback of its own run: their arrays would be overwritten under the "
                f"running computation. Use one executor per thread (bind again, or "
                f"simple_bind per thread), or serialise the calls with a lock of your own")
        try:
            return method(self, *args, **kwargs)
        finally:
            busy.release()
    return guarded
