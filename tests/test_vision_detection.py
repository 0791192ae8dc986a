"""The detection operators against MXNet 1.9.1's own numbers (tests/data/vision/detection,
recorded by make_detection.py there): every recorded case's symbol JSON is loaded as MXNet
wrote it, run forward (training mode where a gradient is recorded) and backward with MXNet's
head gradients, and its outputs and gradients compared; every bad input MXNet rejects fails
here with a GraphexecError naming the node and what is wrong, or is listed below with what
graphexec does instead."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol.symbol import create_op_symbol

DATA = Path(__file__).parent / "data" / "vision" / "detection"
META = json.loads((DATA / "detection.json").read_text())
ARRAYS = np.load(DATA / "detection.npz")

#: bad input MXNet accepts: what graphexec does with it
ACCEPTED = {
    "prior_negative_size": "raises: sizes must be positive (MXNet makes inverted boxes)",
}
#: input MXNet rejects that graphexec runs, and why
RUNS = {
    "prior_float64": "MXNet's legacy operators take float32 only; graphexec computes the "
                     "prior boxes in float32 and returns them in the data's dtype",
}
RAISES = {"prior_negative_size"}
CASES = sorted(META["cases"])


def _tol(case: dict) -> dict:
    tol = case.get("tolerance") or {}
    return {"rtol": tol.get("rtol", 1e-5), "atol": tol.get("atol", 1e-6)}


def _inputs(name: str, case: dict) -> dict:
    return {i["name"]: ARRAYS[f"{name}/in{k}"] for k, i in enumerate(case["inputs"])}


@pytest.mark.parametrize("name", CASES)
def test_case_matches_mxnet(name):
    case = META["cases"][name]
    ins = _inputs(name, case)
    sym = gx.sym.load_json(case["symbol_json"])
    grads = case["grad_inputs"]
    exe = sym.bind(gx.cpu(), ins, args_grad={n: np.zeros_like(ins[n]) for n in grads},
                   grad_req={n: "write" if n in grads else "null" for n in ins})
    outs = exe.forward(is_train=bool(grads))
    for k, got in enumerate(outs):
        want = ARRAYS[f"{name}/out{k}"]
        assert got.shape == want.shape and got.dtype == want.dtype, (k, got.shape, got.dtype)
        np.testing.assert_allclose(got, want, **_tol(case), err_msg=f"{name} output {k}")
    if not grads:
        return
    exe.backward([ARRAYS[f"{name}/hg{k}"] for k in range(len(outs))])
    for k, i in enumerate(case["inputs"]):
        if i["name"] in grads:
            np.testing.assert_allclose(exe.grad_dict[i["name"]], ARRAYS[f"{name}/grad{k}"],
                                       **_tol(case), err_msg=f"{name} gradient of input {k}")


def _run_error_case(name: str, err: dict):
    names = [i["name"] for i in err["inputs"]]
    sym = create_op_symbol(err["op"], [gx.sym.Variable(n) for n in names],
                           dict(err["attrs"], name=name))
    rng = np.random.RandomState(0)
    args = {}
    for i in err["inputs"]:
        values = i["values"]
        arr = np.array(values) if values is not None else rng.uniform(0.1, 1.0, i["shape"])
        args[i["name"]] = arr.reshape(i["shape"]).astype(i["dtype"])
    return sym.bind(gx.cpu(), args).forward()


@pytest.mark.parametrize("name", sorted(META["errors"]))
def test_bad_input_is_rejected_or_documented(name):
    err = META["errors"][name]
    if name in RUNS:
        assert err["outcome"] == "exception", f"{name}: MXNet runs it now"
        _run_error_case(name, err)
        return
    if err["outcome"] == "exception" or name in RAISES:
        with pytest.raises(GraphexecError) as info:
            _run_error_case(name, err)
        text = str(info.value)
        for word in [name] + err["mentions"]:
            assert word in text, f"{name}: {word!r} not in the error: {text}"
        return
    assert name in ACCEPTED, f"{name}: MXNet accepts it ({err['note']}); say what " \
                             f"graphexec does in ACCEPTED"
    _run_error_case(name, err)


def _run(op: str, inputs: list, **attrs):
    names = [f"in{k}" for k in range(len(inputs))]
    sym = create_op_symbol(op, [gx.sym.Variable(n) for n in names], dict(attrs, name="node"))
    return sym.bind(gx.cpu(), dict(zip(names, inputs))).forward()


def test_aligned_roi_of_no_size_is_an_error():
    """MXNet aborts the process (a failed check inside an OpenMP loop)."""
    with pytest.raises(GraphexecError, match=r"'node'.*aligned=True.*positive size"):
        _run("_contrib_ROIAlign", [np.ones((1, 1, 4, 4), "f4"),
                                   np.array([[0, 2, 2, 2, 3]], "f4")],
             pooled_size=(2, 2), spatial_scale=1.0, aligned=True)


def test_image_larger_than_the_feature_map_is_an_error():
    """MXNet aborts the process (a failed check inside an OpenMP loop)."""
    with pytest.raises(GraphexecError, match=r"'node'.*im_info.*feature map"):
        _run("_contrib_MultiProposal", [np.full((1, 2, 3, 3), 0.5, "f4"),
                                        np.zeros((1, 4, 3, 3), "f4"),
                                        np.array([[160, 48, 1]], "f4")],
             scales=(2,), ratios=(1,))


@pytest.mark.parametrize("op", ["_contrib_ROIAlign", "ROIPooling"])
def test_roi_with_negative_batch_index_gives_zeros(op):
    """MXNet's ROIAlign writes one zero and leaves the rest of such an ROI's output as the
    buffer held (its documentation says the output is 0); graphexec writes zeros."""
    data = np.random.default_rng(0).normal(size=(1, 2, 6, 6)).astype("f4")
    rois = np.array([[0, 0, 0, 5, 5], [-1, 0, 0, 5, 5]], "f4")
    out = _run(op, [data, rois], pooled_size=(2, 2), spatial_scale=1.0)[0]
    assert np.abs(out[0]).sum() > 0 and not out[1].any()


ONNX_CASES = sorted(n for n, c in META["cases"].items()
                    if c["op"] in ("_contrib_ROIAlign", "ROIPooling", "_contrib_box_iou",
                                   "_contrib_box_decode")
                    and "position_sensitive" not in c["attrs"])


@pytest.mark.parametrize("name", ONNX_CASES)
def test_case_matches_mxnet_in_an_onnxrt_region(name):
    pytest.importorskip("onnxruntime")
    case = META["cases"][name]
    sym = gx.sym.load_json(case["symbol_json"])
    exe = sym.bind(gx.cpu(), _inputs(name, case), grad_req="null", backend="onnxrt",
                   backend_options={"onnxrt": {"min_size": 1}})
    assert "onnxrt region" in str(exe.partition_plan)
    got = exe.forward(is_train=False)[0]
    np.testing.assert_allclose(got, ARRAYS[f"{name}/out0"], **_tol(case))


def test_partition_plan_gives_why_nms_stays_native():
    data = gx.sym.Variable("d")
    sym = gx.sym._contrib_box_nms(gx.sym.relu(data) * 2, overlap_thresh=0.4)
    exe = sym.bind(gx.cpu(), {"d": np.random.rand(1, 10, 6).astype("f4")}, grad_req="null",
                   backend="onnxrt", backend_options={"onnxrt": {"min_size": 1}})
    plan = str(exe.partition_plan)
    assert "onnxrt region" in plan and "NonMaxSuppression returns the selected indices" in plan


def _greedy_by_box(boxes, thresh, inclusive=False, plus_one=False):
    """Box-by-box greedy NMS in the boxes' dtype, as MXNet's loops."""
    one = boxes.dtype.type(1 if plus_one else 0)
    area = np.where((boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1]), 0,
                    (boxes[:, 2] - boxes[:, 0] + one) * (boxes[:, 3] - boxes[:, 1] + one))
    keep = []
    for j in range(len(boxes)):
        ok = True
        for i in keep:
            w = max(min(boxes[i, 2], boxes[j, 2]) - max(boxes[i, 0], boxes[j, 0]) + one, 0)
            h = max(min(boxes[i, 3], boxes[j, 3]) - max(boxes[i, 1], boxes[j, 1]) + one, 0)
            union = (area[i] + area[j]) - w * h
            with np.errstate(all="ignore"):
                iou = (0 if union <= 0 else w * h / union) if inclusive else w * h / union
            if (iou >= thresh) if inclusive else (iou > thresh):
                ok = False
                break
        if ok:
            keep.append(j)
    return keep


@pytest.mark.parametrize("seed", range(4))
def test_blocked_suppression_matches_box_by_box(seed, monkeypatch):
    """The block-by-block kernel (with its left-edge pruning) keeps exactly the boxes a
    box-by-box greedy keeps: large coordinates with small boxes, tight clusters, near-equal
    boxes and thresholds from 0 to 1."""
    from graphexec.backends.default.kernels import detection as kern
    monkeypatch.setattr(kern, "BLOCK", 32)  # several blocks on a small case
    rng = np.random.default_rng(seed)
    n = 260
    offset = [0.0, 1e5, 3.0][seed % 3]
    xy = rng.uniform(0, 40, (n, 2)) + offset
    wh = rng.uniform(0.5, 12, (n, 2)) if seed % 2 else rng.exponential(4, (n, 2))
    boxes = np.concatenate([xy, xy + wh], 1).astype("float32")
    dup = boxes[1::7]
    boxes[0:7 * len(dup):7] = dup + 1e-3  # near duplicates
    for thresh, inclusive, plus_one in ((0.5, False, False), (0.7, False, True),
                                        (0.3, True, False), (0.02, False, False),
                                        (0.95, False, False), (0.0, False, False)):
        t = np.float32(thresh)
        area = (boxes[:, 2] - boxes[:, 0] + (1 if plus_one else 0)) * \
            (boxes[:, 3] - boxes[:, 1] + (1 if plus_one else 0))
        got = kern.greedy_keep(np, boxes, area.astype("float32"), None, t,
                               inclusive=inclusive, plus_one=plus_one)
        want = _greedy_by_box(boxes, t, inclusive, plus_one)
        assert list(np.flatnonzero(got)) == want, (thresh, inclusive, plus_one)
