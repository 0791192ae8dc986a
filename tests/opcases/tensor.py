"""Cases for the tensor family."""
from __future__ import annotations

from . import OpCase  # noqa: F401

CASES: list = []
