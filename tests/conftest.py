"""Shared fixtures."""
from __future__ import annotations

import pytest


@pytest.fixture
def subgraph_clean(monkeypatch):
    """No subgraph environment variables and no op-name sets before or after the test."""
    from graphexec.core.subgraph import api
    for var in ("MXNET_SUBGRAPH_BACKEND", "MXNET_SUBGRAPH_VERBOSE"):
        monkeypatch.delenv(var, raising=False)
    saved = dict(api._OP_NAMES)
    api._OP_NAMES.clear()
    yield
    api._OP_NAMES.clear()
    api._OP_NAMES.update(saved)
