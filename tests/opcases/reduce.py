"""Cases for the reduce family."""
from __future__ import annotations

from . import OpCase  # noqa: F401

CASES: list = []
