"""OpenBLAS's worker threads kept off the calling thread's core for a run after an idle pause
(core/runtime/blas_affinity.py): the real library where the machine allows it (Linux, numpy's
OpenBLAS on two threads or more, two CPUs), a stand-in library for the rules and the
failures, and the executor's runs."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.runtime import blas_affinity as ba


class FakeLibrary:
    """The calls blas_affinity makes, recorded: ``workers`` worker threads allowed on
    ``cpus``, the calling thread on ``here``."""

    def __init__(self, workers=1, cpus=(0, 1), here=0, refuse=(), running=True):
        self.aff = {i: set(cpus) for i in range(workers)}
        self.workers, self.here, self.refuse = workers, here, set(refuse)
        self.calls: list = []
        self.up = running

    def running(self):
        return self.up

    def threads(self):
        return self.workers + 1

    def cpu(self):
        return self.here

    def affinity(self, idx):
        return set(self.aff[idx])

    def place(self, idx, cpus):
        self.calls.append((idx, set(cpus)))
        if idx in self.refuse:
            return False
        self.aff[idx] = set(cpus)
        return True


@pytest.fixture
def fake(monkeypatch):
    """A stand-in library and a fresh placement, idle since long ago."""
    def use(**kw):
        lib = FakeLibrary(**kw)
        monkeypatch.setattr(ba, "_library", lambda: lib)
        monkeypatch.setattr(ba, "_PLACEMENT", ba._Placement())
        monkeypatch.delenv(ba.ENV, raising=False)
        return lib
    return use


def test_after_an_idle_pause_workers_leave_the_callers_cpu_and_come_back(fake):
    lib = fake(workers=3, cpus=(0, 1, 2, 3), here=2)
    with ba.workers_apart():
        assert all(lib.aff[i] == {0, 1, 3} for i in range(3))
    assert all(lib.aff[i] == {0, 1, 2, 3} for i in range(3))
    assert ba._PLACEMENT.saved == []


def test_runs_back_to_back_touch_nothing(fake):
    lib = fake()
    with ba.workers_apart():
        pass
    calls = len(lib.calls)
    with ba.workers_apart():  # right after the first: the workers are awake where they are
        assert lib.aff[0] == {0, 1}
    assert len(lib.calls) == calls


def test_nested_runs_share_one_placement(fake):
    lib = fake(here=1)
    with ba.workers_apart():
        with ba.workers_apart():
            assert lib.aff[0] == {0}
        assert lib.aff[0] == {0}  # the inner run's end leaves the outer one's placement
    assert lib.aff[0] == {0, 1}
    assert lib.calls == [(0, {0}), (0, {0, 1})]


def test_the_affinity_comes_back_when_the_run_raises(fake):
    lib = fake()
    with pytest.raises(ZeroDivisionError):
        with ba.workers_apart():
            1 / 0
    assert lib.aff[0] == {0, 1}
    assert ba._PLACEMENT.depth == 0


def test_switched_off_by_the_environment(fake, monkeypatch):
    lib = fake()
    monkeypatch.setenv(ba.ENV, "0")
    with ba.workers_apart():
        pass
    assert lib.calls == []


@pytest.mark.parametrize("kw", [
    {"running": False},                # no workers running (after a fork, until used)
    {"workers": 0},                    # one BLAS thread: no workers
    {"cpus": (3,), "here": 3},         # a worker allowed only on the caller's CPU
    {"cpus": (1, 2), "here": 0},       # the caller's CPU is not the worker's already
])
def test_nothing_to_move(fake, kw):
    lib = fake(**kw)
    with ba.workers_apart():
        pass
    assert lib.calls == []


def test_a_refusing_library_warns_once_restores_what_moved_and_stays_off(fake):
    lib = fake(workers=2, refuse={1})
    with pytest.warns(RuntimeWarning, match="could not be kept off .*openblas_setaffinity"):
        with ba.workers_apart():
            assert lib.aff[0] == {0, 1}  # worker 0 moved, then put back when 1 failed
    assert ba._PLACEMENT.broken
    ba._PLACEMENT.last_end = float("-inf")
    calls = len(lib.calls)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ba.workers_apart():
            pass
    assert len(lib.calls) == calls


def test_the_executors_runs_go_through_it(fake):
    lib = fake(here=0)
    seen = []
    a = gx.sym.Variable("a")
    y = gx.sym.FullyConnected(a, num_hidden=3, no_bias=True, name="fc")
    exe = y.simple_bind(gx.cpu(), a=(2, 4))
    exe.arg_dict["a"][...] = np.arange(8, dtype=np.float32).reshape(2, 4)
    exe.arg_dict["fc_weight"][...] = 1.0
    real_run = exe._plan.run

    def run(is_train, segment):
        seen.append((segment, set(lib.aff[0])))
        real_run(is_train, segment)
    exe._plan.run = run
    out = exe.forward(is_train=True)[0]
    np.testing.assert_array_equal(out, [[6, 6, 6], [22, 22, 22]])
    ba._PLACEMENT.last_end = float("-inf")  # an idle pause
    exe.backward(np.ones((2, 3), np.float32))
    assert seen == [("forward", {1}), ("backward", {1})]
    assert lib.aff[0] == {0, 1}
    np.testing.assert_array_equal(exe.grad_dict["fc_weight"], [[4, 6, 8, 10]] * 3)


def test_not_linux_means_no_library(monkeypatch):
    monkeypatch.setattr(ba.sys, "platform", "darwin")
    assert ba._library.__wrapped__() is None


def test_masks_round_trip():
    for cpus in [set(), {0}, {1, 5}, {0, 63, 64, 127, 1023}]:
        assert ba._from_mask(ba._to_mask(cpus)) == cpus


def _real():
    lib = ba._library()
    if lib is None or lib.threads() < 2 or len(os.sched_getaffinity(0)) < 2:
        return None
    return lib


def _task_affinities() -> dict[int, str]:
    found = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/status") as f:
            line = next(x for x in f if x.startswith("Cpus_allowed_list"))
        found[int(tid)] = line.split()[-1]
    return found


needs_openblas = pytest.mark.skipif(
    _real() is None or not hasattr(os, "fork"),
    reason="needs Linux, numpy's OpenBLAS (pthreads) on two threads or more, two CPUs, os.fork")


@needs_openblas
def test_numpys_openblas_workers_move_and_come_back(monkeypatch):
    lib = _real()
    monkeypatch.delenv(ba.ENV, raising=False)
    monkeypatch.setattr(ba, "_PLACEMENT", ba._Placement())
    allowed = os.sched_getaffinity(0)
    here = min(allowed)
    np.dot(np.ones((300, 300)), np.ones((300, 300)))  # workers running (a fork stops them)
    before = _task_affinities()
    os.sched_setaffinity(0, {here})  # the calling thread stays on one CPU for the check
    try:
        with ba.workers_apart():
            for idx in range(lib.threads() - 1):
                assert here not in lib.affinity(idx)
            inside = _task_affinities()
            np.dot(np.ones((300, 300)), np.ones((300, 300)))  # the workers run where told
    finally:
        os.sched_setaffinity(0, allowed)
    moved = [tid for tid in before if tid != os.getpid() and tid in inside
             and inside[tid] != before[tid]]
    assert len(moved) == lib.threads() - 1  # OpenBLAS's workers, nothing else
    after = _task_affinities()
    assert all(after[tid] == before[tid] for tid in before if tid in after)


def test_imperative_ndarray_calls_go_through_it(fake):
    lib = fake(here=1)
    real_place = lib.place
    during = []

    def place(idx, cpus):
        during.append(set(cpus))
        return real_place(idx, cpus)
    lib.place = place
    a = gx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    ba._PLACEMENT.last_end = float("-inf")
    out = gx.nd.dot(a, a.T)
    np.testing.assert_array_equal(out.asnumpy(), [[5, 14], [14, 50]])
    assert during == [{0}, {0, 1}]  # placed for the call, then given back


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_while_another_thread_holds_the_lock_leaves_the_child_a_free_one():
    import threading
    held, release = threading.Event(), threading.Event()

    def hold():
        with ba._PLACEMENT.lock:
            held.set()
            release.wait(10)
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the lock must be free, and a run must go through
            ok = ba._PLACEMENT.lock.acquire(timeout=5)
            if ok:
                ba._PLACEMENT.lock.release()
                with ba.workers_apart():
                    pass
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        holder.join()
    assert os.waitstatus_to_exitcode(status) == 0


@needs_openblas
def test_after_a_fork_nothing_is_placed_until_openblas_starts_its_workers(monkeypatch):
    lib = _real()
    monkeypatch.delenv(ba.ENV, raising=False)
    monkeypatch.setattr(ba, "_PLACEMENT", ba._Placement())
    pid = os.fork()  # OpenBLAS stops its workers in this process too
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert not lib.running()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # their old handles are not touched: no failure
        with ba.workers_apart():
            assert ba._PLACEMENT.saved == []
    np.dot(np.ones((300, 300)), np.ones((300, 300)))  # new workers
    assert lib.running()
    ba._PLACEMENT.last_end = float("-inf")
    with ba.workers_apart():
        assert len(ba._PLACEMENT.saved) == lib.threads() - 1
    assert not ba._PLACEMENT.broken
