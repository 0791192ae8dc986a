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


@pytest.fixture(scope="module")
def fused_kernel_cache(request, tmp_path_factory):
    """The fused backend's kernels compiled once per checkout: pytest's cache folder when
    available (GRAPHEXEC_CACHE_DIR points there for the module)."""
    store = getattr(request.config, "cache", None)
    folder = store.mkdir("graphexec_fused") if store else tmp_path_factory.mktemp("fused")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPHEXEC_CACHE_DIR", str(folder))
        yield folder
