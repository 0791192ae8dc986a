"""Every op case of tests/opcases that an ONNX converter claims, exported alone (every input a
graph input) and run by ONNX Runtime's CPU provider against graphexec's own
forward(is_train=False), in every dtype the case lists. Cases no converter claims must be
explained below, so a new op or attribute value is looked at."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from opcases import all_cases  # noqa: E402

import graphexec as gx  # noqa: E402
from graphexec.backends.onnxrt.api import export_model  # noqa: E402
from graphexec.backends.onnxrt.converters import CONVERTERS, NOT_EXPRESSED  # noqa: E402
from graphexec.core.ir.errors import GraphexecError  # noqa: E402
from graphexec.core.ops import all_ops, get_op  # noqa: E402
from graphexec.core.symbol.symbol import create_op_symbol  # noqa: E402

#: registered ops without a converter, and why (with those the converters declare)
UNCONVERTED = NOT_EXPRESSED | {
    "erfinv": "ONNX has no inverse error function; an approximation would not give "
              "graphexec's results",
    "gamma": "ONNX has no gamma function",
    "gammaln": "ONNX has no log-gamma function",
    "_contrib_boolean_mask": "its output shape depends on the data: regions run static "
                             "shapes, so the partitioner keeps it native",
    "_contrib_DeformableConvolution": "ONNX's DeformConv needs opset 19; the export targets 17",
    "_contrib_ModulatedDeformableConvolution": "ONNX's DeformConv needs opset 19; the export "
                                               "targets 17",
    "_contrib_DeformablePSROIPooling": "ONNX has no position-sensitive ROI pooling with "
                                       "deformable bins",
    "Correlation": "ONNX has no correlation (cost volume) operator; composing one Slice and Mul "
                   "per displacement and kernel offset is not worth a region",
    **{f"_linalg_{op}": "ONNX has no matrix factorization" for op in ("potrf", "gelqf",
                                                                        "syevd")},
    **{f"_linalg_{op}": "ONNX has no matrix inverse or linear solver"
       for op in ("potri", "trsm", "inverse")},
    "_linalg_slogdet": "ONNX's Det gives no sign/log pair: log|det| of a product of pivots "
                       "would not be MXNet's LU-based result for tiny or huge determinants",
    "_linalg_sumlogdiag": "left to the native kernels: a region boundary (no fused win)",
    **{f"_linalg_{op}": "the diagonal/triangle gathers need index tensors per shape; left "
                        "to the native kernels" for op in ("extractdiag", "makediag",
                                                           "extracttrian", "maketrian")},
    **{name: "draws from graphexec's seeded generator (gx.random.seed): ONNX's Random* and "
             "Multinomial ops draw from their own streams, so the region stays native"
       for name in all_ops() if name.startswith(("_random_", "_sample_", "_shuffle"))
       and not name.startswith("_random_pdf_")},
    **{f"_random_pdf_{d}": "ONNX has no log-gamma or digamma function"
       for d in ("gamma", "poisson", "negative_binomial", "generalized_negative_binomial",
                 "dirichlet")},
    # misc / loss / contrib ops (core/ops/misc.py, loss_extra.py, contrib.py)
    "CTCLoss": "a per-sample dynamic-programming recursion over data-dependent lengths",
    **{name: "no converter written yet: graphexec runs it natively (a region boundary "
             "for onnxrt)"
       for name in ("_histogram", "_contrib_hawkesll", "all_finite", "multi_all_finite",
                    "_contrib_allclose", "_contrib_index_copy", "_contrib_count_sketch",
                    "scatter_nd", "fill_element_0index", "_ravel_multi_index",
                    "_unravel_index", "khatri_rao", "diag", "_slice_assign",
                    "_slice_assign_scalar", "softmax_cross_entropy")},
    **{name: "a loop or branch over nested graphs: a region boundary for onnxrt"
       for name in ("_foreach", "_while_loop", "_cond")},
    "_contrib_fft": "ONNX's DFT runs only in float32/float64 contrib kernels: not converted",
    "_contrib_ifft": "ONNX's DFT runs only in float32/float64 contrib kernels: not converted",
    "Custom": "a Python operator: it runs natively and is a region boundary, as in MXNet",
}
#: backward and region ops never reach an inference export
INTERNAL_TRAITS = {"backward", "subgraph"}

#: cases whose converter declines them: case name -> a fragment of supports()'s reason
DECLINED = {
    "Pooling-avg_full": "run past the padded input",
    "RNN-lstmp-l2-bidir": "LSTMP",
    "RNN-clip": "state clipping",
    "_contrib_ROIAlign-aligned-ps": "position-sensitive",
}
#: ops whose ONNX Runtime CPU kernels run float32 only (the onnxrt backend claims float32)
FLOAT32_ONLY = {"RNN"}

#: the number of cases converters claim (raise it when a converter claims more)
CLAIMED_CASES = 589


def _symbol(case):
    names = [f"in{i}" for i in range(len(case.shapes))]
    return create_op_symbol(case.op, [gx.sym.Variable(n) for n in names], dict(case.attrs))


def _claim(case) -> "bool | str":
    """supports() of the case's node, or a sentence when the op has no converter."""
    op = get_op(case.op).name
    if op not in CONVERTERS:
        return f"{op} has no ONNX converter"
    node = _symbol(case)._indexed().nodes[-1]
    return CONVERTERS[op].supports(node, [tuple(s) for s in case.shapes])


CASES = all_cases()
CLAIMS = {case.name: _claim(case) for case in CASES}
CLAIMED = [case for case in CASES if CLAIMS[case.name] is True]


def _graphexec(sym, names, inputs):
    args = dict(zip(names, inputs))
    aux_names = sym.list_auxiliary_states()
    exe = sym.bind(gx.cpu(), {n: args[n] for n in sym.list_arguments()},
                   aux_states={n: args[n] for n in aux_names} or None)
    return [np.asarray(o) for o in exe.forward(is_train=False)]


def _session(sym, names, inputs):
    model = export_model(sym, {}, {}, {n: a.shape for n, a in zip(names, inputs)},
                         input_dtypes={n: a.dtype for n, a in zip(names, inputs)})
    options = ort.SessionOptions()
    options.log_severity_level = 4  # the failures tested below are expected
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _onnxruntime(sym, names, inputs, dtype):
    try:
        sess = _session(sym, names, inputs)
    except Exception as err:  # noqa: BLE001  (ORT raises its own NotImplemented type)
        if dtype != "float32" and "NOT_IMPLEMENTED" in str(err):
            pytest.skip(f"ONNX Runtime's CPU provider has no {dtype} kernel: "
                        f"{str(err).splitlines()[0][:160]}")
        raise
    return sess.run(sym.list_outputs(), dict(zip(names, inputs)))


def _params():
    for case in CLAIMED:
        for dtype in case.dtypes:
            if get_op(case.op).name in FLOAT32_ONLY and dtype != "float32":
                continue
            yield pytest.param(case, dtype, id=f"{case.name}-{dtype}")


@pytest.mark.parametrize("case,dtype", list(_params()))
def test_claimed_case_matches_graphexec(case, dtype):
    inputs = case.make_inputs(np.random.default_rng(0), dtype)
    sym = _symbol(case)
    names = [f"in{i}" for i in range(len(inputs))]
    want = _graphexec(sym, names, inputs)
    got = _onnxruntime(sym, names, inputs, dtype)
    rtol, atol = case.tolerance(dtype)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=case.name)


BAD_INDICES = {
    "take-above": ("take", {"mode": "raise"}, (5, 4), [[0, 4.5]]),
    "take-below": ("take", {"mode": "raise"}, (5, 4), [[0, -0.5]]),
    "gather_nd-below": ("gather_nd", {}, (3, 4), [[0, -3.5]]),
    "gather_nd-above": ("gather_nd", {}, (3, 4), [[0, 2.5]]),
}


@pytest.mark.parametrize("which", sorted(BAD_INDICES))
def test_out_of_range_indices_fail_in_both(which):
    """Where graphexec raises IndexError, the exported graph fails in ONNX Runtime too (the
    converters map such indices to ones ONNX Runtime rejects)."""
    op, attrs, shape, idx = BAD_INDICES[which]
    sym = create_op_symbol(op, [gx.sym.Variable("in0"), gx.sym.Variable("in1")], attrs)
    inputs = [np.ones(shape, np.float32), np.asarray(idx, np.float32)]
    with pytest.raises(GraphexecError, match="out of bounds"):
        _graphexec(sym, ["in0", "in1"], inputs)
    sess = _session(sym, ["in0", "in1"], inputs)
    with pytest.raises(Exception, match="INVALID_ARGUMENT"):
        sess.run(None, {"in0": inputs[0], "in1": inputs[1]})


def test_unclaimed_cases_are_explained():
    unexplained = {}
    for case in CASES:
        reason = CLAIMS[case.name]
        op = get_op(case.op).name
        if reason is True or op in UNCONVERTED:
            continue
        if DECLINED.get(case.name, "\0") not in reason:
            unexplained[case.name] = reason
    assert not unexplained, f"cases no converter claims, not in DECLINED: {unexplained}"
    assert not set(DECLINED) & {c.name for c in CLAIMED}, "DECLINED lists claimed cases"


def test_supports_takes_unknown_shapes():
    """The subgraph selector may not know every input shape: supports() then answers (a
    reason where it needs the shape) rather than failing."""
    for case in CLAIMED:
        node = _symbol(case)._indexed().nodes[-1]
        answer = CONVERTERS[node.op.name].supports(node, [None] * len(case.shapes))
        assert answer is True or isinstance(answer, str), case.name


def test_claimed_case_count():
    assert len(CLAIMED) == CLAIMED_CASES, (
        f"{len(CLAIMED)} of {len(CASES)} op cases are claimed; update CLAIMED_CASES")


def test_every_op_without_converter_is_listed():
    ops = {name for name, op in all_ops().items() if not op.traits & INTERNAL_TRAITS}
    missing = sorted(ops - set(CONVERTERS) - set(UNCONVERTED))
    assert not missing, f"ops with neither an ONNX converter nor a reason in UNCONVERTED: " \
                        f"{missing}"
    assert not set(UNCONVERTED) & set(CONVERTERS), "UNCONVERTED lists converted ops"
