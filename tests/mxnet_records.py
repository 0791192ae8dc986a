"""Helpers shared by the tests that replay values recorded from MXNet 1.9.1 (a generator in
``tests/data/<area>/`` writes ``<stem>.json`` with the cases and ``<stem>.npz`` with the
arrays; see ``tests/data/seq/ops/make_seq.py``)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"


def load_records(folder: str, stem: str) -> tuple[dict, np.lib.npyio.NpzFile]:
    """(the cases' metadata, the recorded arrays) of ``tests/data/<folder>/<stem>.*``."""
    path = DATA / folder
    return json.loads((path / f"{stem}.json").read_text()), np.load(path / f"{stem}.npz")


def floored_tolerance(case: dict) -> dict:
    """The case's recorded tolerance, never tighter than rtol 1e-4 / atol 1e-5 (float32
    kernels summing in another order than MXNet's)."""
    tol = case.get("tolerance") or {}
    return {"rtol": max(tol.get("rtol", 1e-4), 1e-4), "atol": max(tol.get("atol", 1e-5), 1e-5)}


def op_name(call: str) -> str:
    """The registered operator of a recorded MXNet call (``contrib.box_nms`` ->
    ``_contrib_box_nms``, ``sym.linalg.gemm`` -> ``gemm``)."""
    if call.startswith("contrib."):
        return "_contrib_" + call[len("contrib."):]
    return call.split(".")[-1]
