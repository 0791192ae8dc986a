"""gx.kv: the local store's semantics, and the MPI stores under ``mpiexec -n 2``
(tests/harness_dist_worker.py): rank 0's init wins, sums over devices and workers, the
optimizer on every worker, async order, mismatched ranks, dist_sync training equal to one
process on the joined batches."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

WORKER = Path(__file__).parent / "harness_dist_worker.py"


def test_local_store_sums_devices_and_runs_the_optimizer(tmp_path):
    kv = gx.kv.create("local")
    assert (kv.type, kv.rank, kv.num_workers) == ("local", 0, 1)
    kv.init(3, gx.nd.ones((2, 3)))
    kv.push(3, [gx.nd.ones((2, 3)), gx.nd.full((2, 3), 2.0)])
    out = [gx.nd.zeros((2, 3)), gx.nd.zeros((2, 3))]
    kv.pull(3, out=out)
    assert all((o.asnumpy() == 3).all() for o in out)  # no updater: the sum replaces the value
    kv.init([4, 5], [gx.nd.zeros(2), gx.nd.zeros(2)])
    kv.set_optimizer(gx.optimizer.SGD(learning_rate=0.1))
    grads = [gx.nd.ones(2), gx.nd.ones(2)]
    kv.pushpull([4, 5], grads)
    assert np.allclose(grads[0].asnumpy(), -0.1) and np.allclose(grads[1].asnumpy(), -0.1)
    kv.save_optimizer_states(str(tmp_path / "s"))
    kv.load_optimizer_states(str(tmp_path / "s"))
    out = gx.nd.zeros(2)
    kv.broadcast(6, gx.nd.full(2, 7.0), out=out)
    assert (out.asnumpy() == 7).all()


def test_local_store_errors():
    kv = gx.kv.create("device")
    with pytest.raises(gx.kv.KVStoreError, match="key 9 has not been initialized"):
        kv.push(9, gx.nd.ones(2))
    kv.init("a", gx.nd.ones(2))
    with pytest.raises(gx.kv.KVStoreError, match="already initialized"):
        kv.init("a", gx.nd.ones(2))
    with pytest.raises(gx.kv.KVStoreError, match="cannot be mixed"):
        kv.init(1, gx.nd.ones(2))
    with pytest.raises(gx.kv.KVStoreError, match="stores shape \\(2,\\), a pushed value"):
        kv.push("a", gx.nd.ones(3))
    with pytest.raises(gx.kv.KVStoreError, match="unknown kvstore type 'dist_snc'"):
        gx.kv.create("dist_snc")
    with pytest.raises(gx.kv.KVStoreError, match="Cannot save states"):
        kv.save_optimizer_states("x")


def _mpiexec() -> str:
    pytest.importorskip("mpi4py", reason="the dist kvstores need mpi4py (graphexec[dist])")
    found = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec (pip install mpich, part of graphexec[dev])")
    return found


def _run(case: str, kind: str = "dist_sync") -> list[str]:
    with tempfile.TemporaryDirectory() as outdir:
        proc = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(WORKER), case, kind,
                               outdir], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lines = [line for r in (0, 1)
                 for line in (Path(outdir) / f"rank{r}.txt").read_text().splitlines()]
    return sorted(line for line in lines if line.startswith("OK"))


def test_dist_sync_store_semantics_and_training():
    assert _run("basic") == [f"OK basic rank={r} workers=2 type=dist_sync" for r in (0, 1)]
    lines = _run("module")
    assert len(lines) == 2 and lines[0].split()[-1] == lines[1].split()[-1]  # same weights


def test_dist_async_applies_each_workers_push():
    assert _run("async", "dist_async") == ["OK async rank=0", "OK async rank=1"]


def test_mismatched_ranks_fail_on_every_rank_with_both_calls_named():
    lines = _run("mismatch")
    details = [line for line in lines if "mismatch-detail" in line]
    assert len(details) == 4  # both ranks name both calls
    assert any("rank 1: push: key 1 has not been initialized" in line for line in details)
    assert any(line.startswith("OK mismatch rank=1 dist_sync: the workers disagree at push")
               for line in lines)
