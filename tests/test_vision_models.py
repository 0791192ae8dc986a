"""GluonCV models (detectors with their post-NMS boxes, scores and ids; segmenters, pose,
classifiers, video) exported from MXNet 1.9.1 with random weights, run by graphexec on NONE
and onnxrt (and fused/auto for the smaller ones) and compared with MXNet's own outputs.

The corpus is large (hundreds of MB) and lives outside git: make it with
``tests/data/vision/models/make_models.py`` (README "Computer-vision models") and point
``GRAPHEXEC_VISION_MODELS`` at its folder. Without it these tests skip, saying so; the small
model under tests/data/vision/models/small runs everywhere.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

pytestmark = pytest.mark.usefixtures("subgraph_clean")

SMALL_DIR = Path(__file__).parent / "data" / "vision" / "models" / "small"
CORPUS = os.environ.get("GRAPHEXEC_VISION_MODELS", "")
#: fused and auto run on the models below this size (files together)
SMALL_BYTES = 60_000_000
STRATEGIES = ("NONE", "onnxrt", "fused", "auto")


def _index(folder: Path) -> dict:
    path = folder / "models.json"
    if not path.is_file():
        return {}
    models = json.loads(path.read_text())["models"]
    return {name: m for name, m in models.items() if "error" not in m
            and (folder / f"{name}-symbol.json").is_file()}


CORPUS_MODELS = _index(Path(CORPUS)) if CORPUS else {}
SMALL_MODELS = _index(SMALL_DIR)


def _run(folder: Path, name: str, meta: dict, strategy: str) -> tuple[list, object]:
    sym, args, aux = gx.model.load_checkpoint(str(folder / name), 0)
    io = np.load(folder / f"{name}-io.npz")
    exe = sym.simple_bind(gx.cpu(), data=tuple(meta["input_shape"]), grad_req="null",
                          backend=strategy)
    exe.copy_params_from(args, aux)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a region falling back is a failure
        outs = [np.array(o) for o in exe.forward(data=io["data"])]
    return outs, exe


def _compare(name: str, outs: list, io, meta: dict) -> None:
    assert [list(o.shape) for o in outs] == meta["output_shapes"], name
    if _is_detection(meta["output_shapes"]):
        _compare_detections(name, outs, [io[f"out{k}"] for k in range(3)])
        return
    for k, got in enumerate(outs):
        want = io[f"out{k}"]
        scale = float(np.abs(want[np.isfinite(want)]).max(initial=1.0))
        # float32 rounding grows through 50 random layers: ~3e-4 of the largest value in the
        # dilated segmenters, for MXNet vs graphexec and MXNet vs ONNX Runtime alike
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * scale,
                                   err_msg=f"{name} output {k}")


def _is_detection(shapes: list) -> bool:
    """(ids, scores, boxes) after NMS: ids and scores shaped alike, boxes with 4 more."""
    return len(shapes) == 3 and shapes[0] == shapes[1] and shapes[2] == shapes[0][:2] + [4]


def _rows(outs: list) -> np.ndarray:
    ids, scores, boxes = (np.asarray(o, np.float64) for o in outs)
    return np.concatenate([ids.reshape(-1, 1), scores.reshape(-1, 1), boxes.reshape(-1, 4)], 1)


def _compare_detections(name: str, outs: list, want: list) -> None:
    """Post-NMS detections (id, score, box) as sets: every valid detection of MXNet's must
    have one of graphexec's with the same id, score and box, and the other way round. Two
    allowances for float32 rounding through a deep random network (about 1e-4 of the
    values): rows with tied scores may come in either order, and an NMS decision on an
    overlap within rounding of the threshold may flip (a few rows in a hundred: Faster
    R-CNN's proposals), so up to ``max(2, 1%)`` rows may go unmatched on each side."""
    got, ref = _rows(outs), _rows(want)
    got, ref = got[got[:, 1] >= 0], ref[ref[:, 1] >= 0]   # -1 rows: suppressed or padding
    scale = max(float(np.abs(ref[:, 2:]).max(initial=1.0)), 1.0)
    same = ((got[:, None, 0] == ref[None, :, 0])
            & (np.abs(got[:, None, 1] - ref[None, :, 1]) <= 1e-4 + 1e-3 * ref[None, :, 1])
            & (np.abs(got[:, None, 2:] - ref[None, :, 2:]) <= 1e-3 * scale).all(-1))
    unmatched_ref, unmatched_got = _unmatched(same)
    allowed = max(2, len(ref) // 100)
    assert unmatched_ref <= allowed and unmatched_got <= allowed, (
        f"{name}: {len(got)} detections vs MXNet's {len(ref)}; {unmatched_ref} of MXNet's "
        f"and {unmatched_got} of graphexec's have no counterpart (allowed {allowed})")


def _unmatched(same: np.ndarray) -> tuple[int, int]:
    """Rows of each side left over by a greedy one-to-one matching of ``same[got, ref]``."""
    taken = np.zeros(same.shape[0], bool)
    left = 0
    for r in range(same.shape[1]):
        hits = np.flatnonzero(same[:, r] & ~taken)
        if hits.size:
            taken[hits[0]] = True
        else:
            left += 1
    return left, int((~taken).sum())


def _check(folder: Path, name: str, meta: dict, strategy: str) -> None:
    if strategy in ("fused", "auto") and meta["bytes"] > SMALL_BYTES:
        pytest.skip(f"{strategy} runs on the models under {SMALL_BYTES // 10**6} MB")
    if strategy in ("onnxrt", "auto"):
        pytest.importorskip("onnxruntime")
    outs, exe = _run(folder, name, meta, strategy)
    _compare(name, outs, np.load(folder / f"{name}-io.npz"), meta)
    plan = exe.partition_plan
    if plan is not None:
        assert plan.fallbacks == 0, plan.table()


@pytest.mark.skipif(not CORPUS_MODELS, reason="no GluonCV corpus: set GRAPHEXEC_VISION_MODELS "
                    "to the folder tests/data/vision/models/make_models.py writes")
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", sorted(CORPUS_MODELS) or ["-"])
def test_corpus_model_matches_mxnet(name, strategy):
    _check(Path(CORPUS), name, CORPUS_MODELS[name], strategy)


@pytest.mark.skipif(not SMALL_MODELS, reason="no small model in tests/data/vision/models/small")
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", sorted(SMALL_MODELS) or ["-"])
def test_small_model_matches_mxnet(name, strategy):
    _check(SMALL_DIR, name, SMALL_MODELS[name], strategy)
