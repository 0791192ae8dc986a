"""The example trainings (examples/train_mnist_like.py, examples/mnist_tutorial.py) reach
MXNet 1.9.1's test accuracy on the same data within two points (tests/data/harness/example_accuracy.json, recorded by
make_example_reference.py): MLP, LeNet, two contexts with kvstore='local', and dist_sync
under ``mpiexec -n 2``; ``graphexec run`` runs the script unchanged with 'import mxnet'."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples" / "train_mnist_like.py"
CASES = json.loads((ROOT / "tests" / "data" / "harness" / "example_accuracy.json").read_text())
TOLERANCE = 0.02


def _accuracy(output: str) -> float:
    match = re.search(r"RESULT accuracy=([0-9.]+) reloaded=([0-9.]+)", output)
    assert match, output[-3000:]
    assert match.group(1) == match.group(2)  # Module.load + predict give the same accuracy
    return float(match.group(1))


def _run(command: list[str], cwd: Path) -> str:
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["mlp", "lenet", "mlp_two_contexts"])
def test_example_reaches_mxnets_accuracy(name):
    case = CASES[name]
    got = _accuracy(_run([sys.executable, str(SCRIPT), *case["args"]], SCRIPT.parent))
    assert abs(got - case["mxnet_accuracy"]) <= TOLERANCE, (got, case["mxnet_accuracy"])


def test_tutorial_script_runs_and_reaches_mxnets_accuracy():
    out = _run([sys.executable, str(SCRIPT.parent / "mnist_tutorial.py")], SCRIPT.parent)
    match = re.search(r"RESULT accuracy=([0-9.]+) single=(\d+)/50", out)
    assert match, out[-2000:]
    assert abs(float(match[1]) - CASES["tutorial"]["mxnet_accuracy"]) <= TOLERANCE
    assert int(match[2]) >= 40  # one image at a time through Module.load's checkpoint


def test_dist_sync_example_under_mpiexec_reaches_mxnets_accuracy():
    pytest.importorskip("mpi4py", reason="dist_sync needs mpi4py (graphexec[dist])")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec (pip install mpich, part of graphexec[dev])")
    case = CASES["mlp_dist_sync"]
    out = _run([mpiexec, "-n", "2", sys.executable, str(SCRIPT), *case["args"]], SCRIPT.parent)
    results = re.findall(r"RESULT accuracy=([0-9.]+)", out)
    assert len(results) == 2 and results[0] == results[1]  # both workers hold the same model
    assert abs(float(results[0]) - case["mxnet_accuracy"]) <= TOLERANCE


def test_graphexec_run_resolves_import_mxnet(tmp_path):
    shutil.copy(SCRIPT.parent / "mnist_like.py", tmp_path)
    text = SCRIPT.read_text().replace("import graphexec as mx\n", "import mxnet as mx\n")
    (tmp_path / "train.py").write_text(text)
    graphexec = [sys.executable, "-m", "graphexec"]
    out = _run([*graphexec, "run", "train.py", "--num-epoch", "1", "--num-train", "1000"],
               tmp_path)
    assert out.count("'import mxnet' resolves to graphexec") == 1
    _accuracy(out)
    (tmp_path / "gluon.py").write_text("import mxnet.gluon\n")
    proc = subprocess.run([*graphexec, "run", "gluon.py"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "not mxnet.gluon" in proc.stderr
