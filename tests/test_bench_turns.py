"""The benchmarks' alternation (benchmarks/common.py): the order of the turns, not their
times. Each graphexec function must follow the MXNet worker's turn as often as the others
(the turn right after it ran ~3% slower whichever it was), and sample i of every key comes
from round i."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

COMMON = Path(__file__).resolve().parent.parent / "benchmarks" / "common.py"


@pytest.fixture
def common(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_common", COMMON)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "SETTLE", 0)
    return module


class FakeWorker:
    def __init__(self, log):
        self.log = log

    def time(self, kind):
        self.log.append(f"mxnet {kind}")
        return 1.0


@pytest.mark.parametrize("names", [["a"], ["a", "b"], ["a", "b", "c"]])
def test_each_function_follows_mxnet_equally_often(common, names):
    log: list[str] = []
    fns = {n: (lambda n=n: log.append(n)) for n in names}
    rounds = 2 * 3 * len(names)
    samples = common.alternating_samples(fns, FakeWorker(log), {n: "forward" for n in names},
                                         rounds, calls=2)
    assert len(log) == rounds * (len(names) + 1) * 2  # two calls a turn
    turns = log[::2]
    after_mxnet = [t for prev, t in zip(turns, turns[1:]) if prev == "mxnet forward"]
    assert {n: after_mxnet.count(n) for n in names} == {n: rounds // len(names) for n in names}
    for key in [*names, "mxnet forward"]:
        assert len(samples[key]) == len(samples[key + " steady"]) == rounds


def test_without_mxnet_the_functions_rotate(common):
    log: list[str] = []
    fns = {n: (lambda n=n: log.append(n)) for n in "ab"}
    common.alternating_samples(fns, None, {}, 4)
    assert log == ["a", "b", "b", "a", "a", "b", "b", "a"]
