"""The ``graphexec`` command line: ``graphexec demo`` runs the bundled LeNet checkpoint."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from graphexec.tools import cli


def test_demo_classifies_and_matches_mxnet(capsys):
    assert cli.main(["demo", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    reference = np.load(cli.EXAMPLES_DIR / "lenet_small-input.npz")["mxnet_output"]
    for i, row in enumerate(reference):
        assert f"sample {i}: class {row.argmax()} (probability {row.max():.3f})" in out
    diff = re.search(r"max \|graphexec - MXNet 1\.9\.1\| = (\S+) \(within rtol", out)
    assert diff and float(diff.group(1)) <= 1e-5
    assert re.search(r"bind [\d.]+ ms \(first bind [\d.]+ ms\), forward [\d.]+ ms "
                     r"\(median of 2\)", out)


def test_example_files_are_bundled():
    names = {p.name for p in cli.EXAMPLES_DIR.iterdir()}
    assert {"lenet_small-symbol.json", "lenet_small-0003.params",
            "lenet_small-input.npz"} <= names


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 2
    assert "demo" in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["nonsense"])
    assert info.value.code == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


def test_errors_are_reported_without_traceback(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "EXAMPLES_DIR", tmp_path)
    assert cli.main(["demo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("graphexec demo: error: ") and "lenet_small-symbol.json" in err
    assert "Traceback" not in err


def test_python_dash_m():
    done = subprocess.run([sys.executable, "-m", "graphexec", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("graphexec ")
