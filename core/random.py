"""``gx.random``: the seedable generator used by random operators (Dropout)."""
from __future__ import annotations

import numpy as np

__all__ = ["seed", "generator"]

_generator = np.random.default_rng()


def seed(seed_state: int) -> None:
    """Seed the generator every executor draws from (as ``mx.random.seed``)."""
    global _generator
    _generator = np.random.default_rng(seed_state)


def generator() -> np.random.Generator:
    """The current process-wide generator."""
    return _generator
