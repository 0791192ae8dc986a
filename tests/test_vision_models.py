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


def _by_box(rows: np.ndarray) -> np.ndarray:
    """Rows ordered by id, then box corners (not by score: tied scores differ in rounding)."""
    return rows[np.lexsort(np.round(rows[:, [5, 4, 3, 2, 0]], 2).T)]


def _compare_detections(name: str, outs: list, want: list) -> None:
    """Post-NMS detections row by row (id, score, box). Detections whose scores tie within
    rounding (float32 through a deep random network: about 1e-4) may come in either order
    (both sort by score): rows are compared as a set within each run of tied scores."""
    got, ref = _rows(outs), _rows(want)
    scale = max(float(np.abs(ref[:, 2:]).max(initial=1.0)), 1.0)
    np.testing.assert_allclose(got[:, 1], ref[:, 1], rtol=1e-3, atol=1e-4,
                               err_msg=f"{name}: scores")
    start = 0
    for k in range(1, len(ref) + 1):
        if k < len(ref) and abs(ref[k, 1] - ref[k - 1, 1]) <= 1e-4 + 1e-3 * abs(ref[k, 1]):
            continue
        np.testing.assert_allclose(_by_box(got[start:k]), _by_box(ref[start:k]), rtol=1e-3,
                                   atol=1e-4 * scale,
                                   err_msg=f"{name}: detections {start}..{k - 1}")
        start = k


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
