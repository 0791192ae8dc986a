"""The resampling/geometry and normalisation/legacy vision operators against MXNet 1.9.1's own
numbers (tests/data/vision/geometry, recorded by make_geometry.py there): every recorded
case's symbol JSON is loaded as MXNet wrote it, run forward (inference, and training where it
differs) and backward with MXNet's head gradients, and its outputs, gradients and inferred
shapes compared; every error case either fails with a GraphexecError or is one MXNet silently
accepts or fails on for another reason (listed below with what graphexec does instead)."""
from __future__ import annotations


import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol.symbol import create_op_symbol
from mxnet_records import floored_tolerance, load_records, op_name

META, ARRAYS = load_records("vision/geometry", "geometry")

#: outputs MXNet leaves unwritten: (case, output index) -> why they are not compared
UNWRITTEN = {
    ("syncbatchnorm_mv", 1): "MXNet's SyncBatchNorm does not write mean in inference",
    ("syncbatchnorm_mv", 2): "MXNet's SyncBatchNorm does not write var in inference",
}
#: error cases MXNet accepts or fails on differently: what graphexec does
ACCEPTED = {
    "resize_scale_to_zero": "raises: the output height would be 0",
    "adaptive_three_sizes": "raises: output_size takes at most (height, width)",
    "pool_same_1d": "runs: MXNet 1.9.1 rejects every 'same' pooling (its pad check reads "
                    "pad[1] of a 1-D pad); graphexec pools 1-D windows centred as "
                    "TensorFlow's 'SAME'",
    "corr_shapes": "raises: data1 and data2 must have one shape (MXNet reads data2 with "
                   "data1's shape)",
}
RAISES = {"resize_scale_to_zero", "adaptive_three_sizes", "corr_shapes"}

CASES = sorted(n for n, c in META["cases"].items() if "outputs" in c)


def _inputs(name: str, case: dict) -> dict:
    return {i["name"]: ARRAYS[f"{name}/{i['name']}"] for i in case["inputs"]}


def _bind(case: dict, ins: dict, grads: list):
    sym = gx.sym.load_json(case["symbol_json"])
    aux_names = set(case["list_auxiliary_states"])
    args = {n: a.copy() for n, a in ins.items() if n not in aux_names}
    aux = {n: a.copy() for n, a in ins.items() if n in aux_names}
    return sym.bind(gx.cpu(), args, args_grad={n: np.zeros_like(args[n]) for n in grads},
                    grad_req={n: "write" if n in grads else "null" for n in args},
                    aux_states=aux or None)


@pytest.mark.parametrize("name", CASES)
def test_case_matches_mxnet(name):
    case = META["cases"][name]
    ins = _inputs(name, case)
    grads = case.get("grad_inputs") if case.get("gradient") else []
    for train in sorted({False, bool(grads) or case.get("train_differs", False)}):
        exe = _bind(case, ins, grads if train else [])
        outs = exe.forward(is_train=train)
        for k, got in enumerate(outs):
            if (name, k) in UNWRITTEN and not train:
                continue
            key = f"{name}/tout{k}" if train and f"{name}/tout{k}" in ARRAYS else f"{name}/out{k}"
            want = ARRAYS[key]
            assert got.shape == want.shape and got.dtype == want.dtype, (k, got.shape, got.dtype)
            np.testing.assert_allclose(got, want, **floored_tolerance(case),
                                       err_msg=f"{name} output {k} (train={train})")
    if not grads:
        return
    exe.backward([ARRAYS[f"{name}/hg{k}"] for k in range(len(outs))])
    for k, i in enumerate(case["inputs"]):
        if i["name"] in grads:
            np.testing.assert_allclose(exe.grad_dict[i["name"]], ARRAYS[f"{name}/grad{k}"],
                                       **floored_tolerance(case),
                                       err_msg=f"{name} gradient of input {k}")


@pytest.mark.parametrize("name", [n for n in CASES
                                  if "arg_shapes" in META["cases"][n]["infer_shape"]])
def test_inferred_shapes_match_mxnet(name):
    case = META["cases"][name]
    sym = gx.sym.load_json(case["symbol_json"])
    shapes = {i["name"]: tuple(i["shape"]) for i in case["inputs"] if i["role"] == "arg"}
    args, outs, aux = sym.infer_shape(**shapes)
    want = case["infer_shape"]
    assert [list(s) for s in args] == want["arg_shapes"]
    assert [list(s) for s in outs] == want["out_shapes"]
    assert [list(s) for s in aux] == want["aux_shapes"]


def _run_error_case(err: dict):
    names = [i["name"] for i in err["inputs"]]
    sym = create_op_symbol(op_name(err["op_call"]), [gx.sym.Variable(n) for n in names],
                           dict(err["attrs_given"]))
    rng = np.random.default_rng(0)
    args = {i["name"]: rng.uniform(0.1, 1.0, i["shape"]).astype(i["dtype"])
            for i in err["inputs"]}
    return sym.bind(gx.cpu(), args).forward()


@pytest.mark.parametrize("name", sorted(META["errors"]))
def test_bad_input_is_rejected_or_documented(name):
    err = META["errors"][name]
    if err["outcome"] == "exception" and name not in ACCEPTED or name in RAISES:
        with pytest.raises(GraphexecError) as info:
            _run_error_case(err)
        # the message names the operator and says what was expected
        assert op_name(err["op_call"]) in str(info.value), str(info.value)
        assert len(str(info.value)) > 40
        return
    assert name in ACCEPTED, f"{name}: MXNet accepts it ({err.get('notes')}); say what " \
                             f"graphexec does in ACCEPTED"
    _run_error_case(err)


def test_onnxrt_regions_stop_at_ops_without_a_converter():
    """A vision head on the onnxrt backend: the resizers, GroupNorm and the adaptive pooling
    run in ONNX Runtime regions, Correlation stays native with the reason in the partition
    plan, and the outputs equal the native run's."""
    pytest.importorskip("onnxruntime")
    S = gx.sym
    conv = S.Convolution(S.Variable("data"), num_filter=3, kernel=(3, 3), pad=(1, 1), name="c1")
    a = S._contrib_BilinearResize2D(conv, height=12, width=10, name="rs")
    b = S._contrib_BilinearResize2D(S.Variable("data2"), height=12, width=10, name="rs2")
    corr = S.Correlation(a, b, max_displacement=1, pad_size=1, name="corr")
    head = S._contrib_AdaptiveAvgPooling2D(S.GroupNorm(corr, num_groups=3, name="gn"),
                                           output_size=(2, 2), name="ap")
    outs, plans = {}, {}
    for backend in (None, "onnxrt"):
        exe = head.simple_bind(gx.cpu(), grad_req="null", backend=backend, data=(2, 3, 6, 5),
                               data2=(2, 3, 6, 5))
        rng = np.random.default_rng(0)
        for name in sorted(exe.arg_dict):
            exe.arg_dict[name][...] = rng.uniform(-1, 1, exe.arg_dict[name].shape)
        outs[backend] = np.asarray(exe.forward()[0]).copy()
        plans[backend] = str(exe.partition_plan)
    lines = {line.split()[0]: line for line in plans["onnxrt"].splitlines()[1:]}
    assert "no ONNX converter for Correlation" in lines["corr"]
    for node in ("c1", "rs", "rs2", "gn", "ap"):
        assert "onnxrt region" in lines[node], plans["onnxrt"]
    np.testing.assert_allclose(outs["onnxrt"], outs[None], rtol=1e-5, atol=1e-6)


def _partial_cases():
    for name in CASES:
        for k, entry in enumerate(META["cases"][name].get("partial_infer_shape") or []):
            if "arg_shapes" in entry:
                yield pytest.param(name, entry, id=f"{name}-{k}")


def _known(shape) -> bool:
    return shape is not None and len(shape) > 0 and all(d > 0 for d in shape)


@pytest.mark.parametrize("name,entry", list(_partial_cases()))
def test_partial_inference_knows_what_mxnet_knows(name, entry):
    """infer_shape_partial from the outputs alone (tied to variables of their shapes through
    elemwise_add, as the generator did): every shape MXNet decides, graphexec decides alike
    (it may decide more)."""
    case = META["cases"][name]
    sym = gx.sym.load_json(case["symbol_json"])
    given = {k: tuple(v) for k, v in entry["given"].items()}
    if entry.get("mode") == "outputs_only":
        sym = gx.sym.Group([gx.sym.elemwise_add(o, gx.sym.Variable(f"__out{i}_shape"))
                            for i, o in enumerate(sym)])
    args, outs, _ = sym.infer_shape_partial(**given)
    got = dict(zip(sym.list_arguments(), args))
    for arg, want in entry["arg_shapes"].items():
        if _known(want):
            assert tuple(got[arg]) == tuple(want), (arg, got[arg], want)
    for k, want in enumerate(entry.get("out_shapes") or []):
        if _known(want):
            assert tuple(outs[k]) == tuple(want), (k, outs[k], want)


@pytest.mark.parametrize("op", ["depth_to_space", "space_to_depth"])
def test_block_rearrangements_reject_empty_data_as_mxnet(op):
    """MXNet 1.9.1's shape functions refuse a zero-size dimension in both ops."""
    data = gx.nd.array(np.zeros((1, 4, 0, 4), "f4"))
    with pytest.raises(gx.ShapeInferenceError, match="dimension 2 of the data is 0"):
        getattr(gx.nd, op)(data, 2)


def test_col2im_takes_output_size_first_as_mxnet():
    cols = np.arange(1 * 12 * 9, dtype="f4").reshape(1, 12, 9)
    positional = gx.nd.col2im(gx.nd.array(cols), (4, 4), (2, 2))
    named = gx.nd.col2im(gx.nd.array(cols), output_size=(4, 4), kernel=(2, 2))
    assert positional.shape == (1, 3, 4, 4)
    np.testing.assert_array_equal(positional.asnumpy(), named.asnumpy())
