"""``gx.random``: the seedable generator used by random operators (Dropout)."""
from __future__ import annotations

import numpy as np

__all__ = ["seed", "generator"]

_generator = np.random.default_rng()


def seed(seed_state: int) -> None:
    """Seed the generator every executor draws from (as ``mx.random.seed``); reseeded in place
    so executors bound earlier see the new stream too."""
    _generator.bit_generator.state = np.random.default_rng(seed_state).bit_generator.state


def generator() -> np.random.Generator:
    """The current process-wide generator."""
    return _generator
