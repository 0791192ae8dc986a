"""ONNX's own backend node tests (``onnx.backend.test.case.node``) run through graphexec's
ONNX backend (backends/onnxrt/backend.py): every case whose ONNX op types all have an
importer is imported, bound and run, and its outputs compared with ONNX's expected ones at
the case's tolerances.

Cases that cannot pass are listed in ``EXCLUDED`` with the reason and the error they raise;
they are strict expected failures, so one that starts passing fails the suite until it is
taken off the list.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import numpy_helper  # noqa: E402
from onnx.backend.test.case.node import collect_testcases  # noqa: E402

from graphexec.backends.onnxrt.backend import GraphexecBackend  # noqa: E402
from graphexec.backends.onnxrt.errors import OnnxImportError  # noqa: E402
from graphexec.backends.onnxrt.importer import IMPORTERS  # noqa: E402
from graphexec.core.ir.errors import KernelError, TypeInferenceError  # noqa: E402


def _excluded(reason: str, error: type, *names: str) -> dict:
    return {name: (reason, error) for name in names}


EXCLUDED = {
    **_excluded("pooling dilations: graphexec's Pooling (as MXNet's) has none", OnnxImportError,
                "test_averagepool_2d_dilations", "test_averagepool_3d_dilations_small",
                *(f"test_averagepool_3d_dilations_large_count_include_pad_is_{p}_ceil_mode_is_"
                  f"{c}" for p in (0, 1) for c in ("False", "True")),
                "test_lppool_2d_dilations", "test_maxpool_2d_dilations",
                "test_maxpool_3d_dilations", "test_maxpool_3d_dilations_use_ref_impl",
                "test_maxpool_3d_dilations_use_ref_impl_large"),
    **_excluded("training mode: batch statistics and random dropout masks are not imported",
                OnnxImportError, "test_batchnorm_epsilon_training_mode",
                "test_batchnorm_example_training_mode", "test_training_dropout",
                "test_training_dropout_default", "test_training_dropout_default_mask",
                "test_training_dropout_mask"),
    **_excluded("the MaxPool Indices output has no graphexec equivalent", OnnxImportError,
                "test_maxpool_with_argmax_2d_precomputed_pads",
                "test_maxpool_with_argmax_2d_precomputed_strides"),
    **_excluded("string tensors are not supported", OnnxImportError, "test_equal_string",
                "test_equal_string_broadcast"),
    **_excluded("Cast to FLOAT8E8M0 rounds by round_mode; graphexec's Cast rounds to nearest",
                OnnxImportError, "test_cast_e8m0_FLOAT16_to_FLOAT8E8M0",
                "test_cast_e8m0_FLOAT_to_FLOAT8E8M0"),
    **_excluded("Reshape allowzero=1 with a 0 (an empty dimension): graphexec's Reshape reads "
                "0 as 'copy'", OnnxImportError, "test_reshape_allowzero_reordered"),
    **_excluded("Pad mode 'wrap': graphexec's Pad has constant, edge and reflect",
                OnnxImportError, "test_wrap_pad"),
    **_excluded("GatherND batch_dims: graphexec's gather_nd has none", OnnxImportError,
                "test_gathernd_example_int32_batch_dim1"),
    **_excluded("Resize mode cubic: only nearest and linear resizing are imported",
                OnnxImportError, *(f"test_resize_{kind}_cubic{v}" for kind in (
                    "downsample_scales", "upsample_scales") for v in (
                    "", "_A_n0p5_exclude_outside", "_align_corners")),
                "test_resize_downsample_scales_cubic_antialias",
                "test_resize_downsample_sizes_cubic",
                "test_resize_downsample_sizes_cubic_antialias",
                "test_resize_upsample_scales_cubic_asymmetric", "test_resize_upsample_sizes_cubic"),
    **_excluded("Resize antialias and tf_crop_and_resize (roi) are not imported",
                OnnxImportError, "test_resize_downsample_scales_linear_antialias",
                "test_resize_downsample_sizes_linear_antialias", "test_resize_tf_crop_and_resize",
                "test_resize_tf_crop_and_resize_axes_2_3",
                "test_resize_tf_crop_and_resize_axes_3_2",
                "test_resize_tf_crop_and_resize_extrapolation_value"),
    **_excluded("dtype bfloat16: graphexec's softmax takes float16/32/64 only",
                TypeInferenceError, "test_attention_3d_causal_bf16_expanded",
                "test_attention_4d_attn_mask_causal_bf16_expanded",
                "test_attention_4d_causal_bf16_expanded",
                "test_attention_4d_causal_padded_kv_bf16_expanded",
                "test_attention_4d_padded_kv_bf16_expanded"),
    **_excluded("float16 rounding: results one float16 ulp off, more than rtol 1e-3",
                AssertionError, "test_attention_4d_causal_fp16_expanded"),
    **_excluded("max / min over an empty set: graphexec's reduction fails where ONNX gives "
                "-inf / inf", KernelError, "test_reduce_max_empty_set",
                "test_reduce_max_empty_set_bool", "test_reduce_min_empty_set"),
}


def _covered(case) -> bool:
    nodes = case.model.graph.node
    return bool(nodes) and all(n.domain in ("", "ai.onnx") and n.op_type in IMPORTERS
                               for n in nodes)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the case generators overflow casts on purpose
    ALL_CASES = {c.name: c for c in collect_testcases(None)}
#: the cases whose nodes all have an importer, by name
CASES = {name: c for name, c in ALL_CASES.items() if _covered(c)}


def _array(value) -> np.ndarray:
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else \
        np.asarray(value)


def _assert_similar(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, what: str):
    """ONNX's backend-test comparison: shape and dtype equal, values close (types numpy
    cannot compute in, as float32; bfloat16 at two of its ulps)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "V":
        rtol = max(rtol, 2 ** -6) if want.dtype.name == "bfloat16" else rtol
        got, want = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def _run(case) -> None:
    rep = GraphexecBackend.prepare(case.model, device="CPU")
    for inputs, outputs in case.data_sets:
        with np.errstate(all="ignore"):  # cases divide by zero or take log(0) on purpose
            got = rep.run([_array(a) for a in inputs])
        assert len(got) == len(outputs)
        for i, (g, w) in enumerate(zip(got, outputs)):
            _assert_similar(g, _array(w), case.rtol, case.atol, f"{case.name} output {i}")


def _params() -> list:
    params = []
    for name in sorted(CASES):
        if name in EXCLUDED:
            reason, error = EXCLUDED[name]
            params.append(pytest.param(name, marks=pytest.mark.xfail(
                reason=reason, raises=error, strict=True)))
        else:
            params.append(name)
    return params


@pytest.mark.parametrize("name", _params())
def test_onnx_node_case(name):
    _run(CASES[name])


def test_exclusions_name_covered_cases():
    """Every excluded name is a collected case whose ops all have importers."""
    assert sorted(set(EXCLUDED) - set(CASES)) == []


def test_backend_reuses_the_bound_executor_for_equal_shapes():
    case = CASES["test_reshape_reordered_all_dims"]
    rep = GraphexecBackend.prepare(case.model)
    inputs, outputs = case.data_sets[0]
    first = rep.run(inputs)[0]
    exe = rep._exe
    second = rep.run({rep.input_names[0]: inputs[0] * 2, rep.input_names[1]: inputs[1]})[0]
    assert rep._exe is exe
    np.testing.assert_array_equal(first, outputs[0])
    np.testing.assert_array_equal(second, outputs[0] * 2)


def test_backend_rebinds_for_new_shapes_and_attribute_inputs():
    case = CASES["test_reshape_reordered_all_dims"]
    rep = GraphexecBackend.prepare(case.model)
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(rep.run([data, np.array([4, 6])])[0], data.reshape(4, 6))
    np.testing.assert_array_equal(rep.run([data, np.array([8, 3])])[0], data.reshape(8, 3))
    small = data[:1]
    np.testing.assert_array_equal(rep.run([small, np.array([3, 4])])[0], small.reshape(3, 4))


def test_backend_rejects_unknown_inputs_and_reports_devices():
    rep = GraphexecBackend.prepare(CASES["test_relu"].model)
    with pytest.raises(OnnxImportError, match="not graph inputs"):
        rep.run({"nope": np.zeros(3, np.float32)})
    assert GraphexecBackend.supports_device("CPU")


def test_prepare_lists_unsupported_nodes():
    with pytest.raises(OnnxImportError, match=r"\(TopK\)"):
        GraphexecBackend.prepare(ALL_CASES["test_top_k"].model)
