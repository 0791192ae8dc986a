"""``gx.lr_scheduler``: MXNet 1.9.1's learning-rate schedules, called with the number of
updates so far and returning the learning rate; each may start with a warmup (``linear``
from ``warmup_begin_lr`` to ``base_lr``, or ``constant`` at ``warmup_begin_lr``) of
``warmup_steps`` updates.

>>> sched = gx.lr_scheduler.FactorScheduler(step=100, factor=0.5, base_lr=0.1)
>>> mod.fit(it, optimizer_params={'lr_scheduler': sched}, num_epoch=5)
"""
from __future__ import annotations

import logging
from math import cos, pi
from typing import Sequence

from graphexec.core.ir.errors import GraphexecError

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler", "SchedulerError"]

log = logging.getLogger("graphexec")


class SchedulerError(GraphexecError, ValueError):
    """A learning-rate schedule got parameters it cannot work with."""


class LRScheduler:
    """Base class: ``__call__(num_update)`` returns the learning rate."""

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        if not isinstance(warmup_steps, int):
            raise SchedulerError(f"warmup_steps must be an int, got {warmup_steps!r}")
        if warmup_begin_lr > base_lr:
            raise SchedulerError("Base lr has to be higher than warmup_begin_lr")
        if warmup_steps < 0:
            raise SchedulerError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise SchedulerError("Supports only linear and constant modes of warmup")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The learning rate at update ``num_update`` of the warmup."""
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        increase = ((self.warmup_final_lr - self.warmup_begin_lr) * float(num_update)
                    / float(self.warmup_steps))
        return self.warmup_begin_lr + increase

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """``base_lr`` times ``factor`` every ``step`` updates, never below ``stop_factor_lr``."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise SchedulerError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise SchedulerError("Factor must be no more than 1 to make lr reduce")
        self.step, self.factor, self.stop_factor_lr = step, factor, stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                log.info("Update[%d]: now learning rate arrived at %0.5e, will not change in "
                         "the future", num_update, self.base_lr)
            else:
                log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """``base_lr`` times ``factor`` after each update count listed in ``step``."""

    def __init__(self, step: Sequence[int], factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise SchedulerError(f"step must be a non-empty list of update counts, got {step!r}")
        for i, s in enumerate(step):
            if i and s <= step[i - 1]:
                raise SchedulerError("Schedule step must be an increasing integer list")
            if s < 1:
                raise SchedulerError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise SchedulerError("Factor must be no more than 1 to make lr reduce")
        self.step, self.factor = step, factor
        self.cur_step_ind = 0
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _Annealing(LRScheduler):
    """Schedules from ``base_lr`` to ``final_lr`` over ``max_update`` updates."""

    def __init__(self, max_update: int, base_lr: float, final_lr: float, warmup_steps: int,
                 warmup_begin_lr: float, warmup_mode: str):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise SchedulerError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise SchedulerError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = max_update - warmup_steps

    def _shape(self, progress: float) -> float:
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._shape(
                progress)
        return self.base_lr


class PolyScheduler(_Annealing):
    """final_lr + (base_lr - final_lr) * (1 - progress) ** pwr."""

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2,
                 final_lr: float = 0, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)
        self.power = pwr

    def _shape(self, progress: float) -> float:
        return pow(1 - progress, self.power)


class CosineScheduler(_Annealing):
    """final_lr + (base_lr - final_lr) * (1 + cos(pi * progress)) / 2."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _shape(self, progress: float) -> float:
        return (1 + cos(pi * progress)) / 2
