"""How many threads a fused kernel uses: by its size, one on a busy machine (no timing)."""
from __future__ import annotations

import numba
import numpy as np
import pytest

import graphexec as gx
from graphexec.backends.fused import cost, runner
from graphexec.core.runtime.blas_threads import on_numba_threads
from graphexec.core.symbol import sym as S


def test_threads_grow_with_the_work_and_stop_at_the_pool():
    per = cost.PARALLEL_NS
    assert cost.threads_for(10, 1.0, 8) == 1                       # 10 ns of work
    assert cost.threads_for(int(1.5 * per), 1.0, 8) == 1            # under two threads' worth
    assert cost.threads_for(int(3 * per), 1.0, 8) == 3
    assert cost.threads_for(int(100 * per), 1.0, 8) == 8
    assert cost.threads_for(int(100 * per), 1.0, 1) == 1
    assert cost.threads_for(int(100 * per), 1.0, 8, busy=True) == 1


def test_busy_means_a_load_average_of_one_and_a_half_per_core(monkeypatch):
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(cost.os, "getloadavg", lambda: (2.9, 0, 0))
    assert not cost.machine_busy()
    monkeypatch.setattr(cost.os, "getloadavg", lambda: (3.0, 0, 0))
    assert cost.machine_busy()

    def unknown():
        raise OSError("no load average here")
    monkeypatch.setattr(cost.os, "getloadavg", unknown)
    assert not cost.machine_busy()


def _big_region(data):
    x = S.Variable("x")
    y = S.clip(((x * 0.7 + 0.1) * x - 0.2) * x, a_min=-1, a_max=1) * 0.5 + S.abs(x)
    exe = y.bind(gx.cpu(), {"x": data}, grad_req="null", backend="fused")
    out = exe.forward()[0].copy()
    state = next(s for s in exe._plan._states.values() if "kernel" in s)
    return out, state


@pytest.mark.parametrize("busy", [False, True])
def test_the_runner_records_its_threads_and_a_busy_machine_runs_serial(monkeypatch, busy):
    if numba.get_num_threads() < 2:
        pytest.skip("numba has a single thread here")
    monkeypatch.setattr(runner, "machine_busy", lambda: busy)
    data = np.random.default_rng(4).standard_normal(1 << 18).astype("f4")
    out, state = _big_region(data)
    want = np.clip(((data * 0.7 + 0.1) * data - 0.2) * data, -1, 1) * 0.5 + np.abs(data)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    assert state["threads"] == (1 if busy else numba.get_num_threads())
    assert state["parallel"] is (not busy)


def test_a_kernel_on_fewer_threads_puts_the_setting_back(monkeypatch):
    if numba.get_num_threads() < 2:
        pytest.skip("numba has a single thread here")
    seen = []
    wrapped = on_numba_threads(lambda: seen.append(numba.get_num_threads()), 1)
    before = numba.get_num_threads()
    wrapped()
    assert seen == [1] and numba.get_num_threads() == before


def test_a_kernel_on_the_whole_pool_keeps_the_callers_setting():
    """Asking for the pool's size or more leaves the calling thread's setting alone (no
    per-call cost): a thread that asked numba for fewer threads keeps them."""
    fn = lambda: numba.get_num_threads()  # noqa: E731
    assert on_numba_threads(fn, numba.config.NUMBA_NUM_THREADS) is fn
    assert on_numba_threads(fn, numba.config.NUMBA_NUM_THREADS + 3) is fn
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert on_numba_threads(fn, 64)() == 1
    finally:
        numba.set_num_threads(before)
