"""``gx.callback``: MXNet 1.9.1's training callbacks. Batch-end callbacks receive a
:class:`BatchEndParam` (``epoch``, ``nbatch``, ``eval_metric``, ``locals``), epoch-end
callbacks ``(epoch, symbol, arg_params, aux_params)``. Messages go to the root logger with
MXNet's wording (``logging.basicConfig(level=logging.INFO)`` shows them);
:class:`ProgressBar` draws a live bar (rich) when standard error is a terminal.
"""
from __future__ import annotations

import logging
import math
import sys
import time
from collections import namedtuple
from typing import Any, Callable

from rich.progress import Progress

from graphexec.core.symbol.model import save_checkpoint

__all__ = ["BatchEndParam", "Speedometer", "ProgressBar", "LogValidationMetricsCallback",
           "do_checkpoint", "module_checkpoint", "log_train_metric"]

#: what a batch-end callback receives
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def module_checkpoint(mod: Any, prefix: str, period: int = 1,
                      save_optimizer_states: bool = False) -> Callable:
    """An epoch-end callback saving ``mod``'s checkpoint every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback writing ``prefix-symbol.json`` and ``prefix-%04d.params``
    every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any, arg: dict, aux: dict) -> None:
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable:
    """A batch-end callback logging the training metric every ``period`` batches."""
    def _callback(param: BatchEndParam) -> None:
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name,
                             value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Logs the training speed (samples/sec) and the metric every ``frequent`` batches
    (resetting the metric's local statistics with ``auto_reset``)."""

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0.0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param: BatchEndParam) -> None:
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        else:
            name_value = param.eval_metric.get_name_value()
            pairs = sum(name_value, ())
            if self.auto_reset:
                param.eval_metric.reset_local()
                logging.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec"
                             + "\t%s=%f" * len(name_value), param.epoch, count - self.frequent,
                             count, speed, *pairs)
            else:
                logging.info("Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec"
                             + "\t%s=%f" * len(name_value), param.epoch, count, speed, *pairs)
        self.tic = time.time()


class ProgressBar:
    """Progress through ``total`` batches: a live rich bar when standard error is a
    terminal, else MXNet's logged ``[====----] 50%`` line."""

    def __init__(self, total: int, length: int = 80):
        self.bar_len = length
        self.total = total
        self._live: Any = None
        self._task: Any = None

    def __call__(self, param: BatchEndParam) -> None:
        count = param.nbatch
        if sys.stderr.isatty():
            self._draw(count, param.epoch)
            return
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        logging.info("[%s] %s%s\r", "=" * filled + "-" * (self.bar_len - filled), percents,
                     "%")

    def _draw(self, count: int, epoch: int) -> None:
        if self._live is None or count == 0:
            self.close()
            self._live = Progress(transient=False)
            self._live.start()
            self._task = self._live.add_task(f"epoch {epoch}", total=self.total)
        self._live.update(self._task, completed=min(count + 1, self.total))
        if count + 1 >= self.total:
            self.close()

    def close(self) -> None:
        """Stop the live bar (done when the last batch is reached)."""
        if self._live is not None:
            self._live.stop()
            self._live = None


class LogValidationMetricsCallback:
    """Logs the validation metrics at the end of an evaluation."""

    def __call__(self, param: BatchEndParam) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
