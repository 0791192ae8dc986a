"""The ``onnxrt`` subgraph backend: refcases under MXNET_SUBGRAPH_BACKEND=onnxrt, regions split
by unsupported nodes, inference_only, the session cache (reshape, bucketing), frozen parameters,
options, runtime fallback, and honest placement on gpu contexts."""
from __future__ import annotations

import gc
import logging
import warnings

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from refcase_replay import Replay, case_names, load_case, tolerance  # noqa: E402

import graphexec as gx  # noqa: E402
from graphexec.backends.onnxrt import session as ortsession  # noqa: E402
from graphexec.core.ir.errors import GraphexecError, PlacementError  # noqa: E402
from graphexec.core.subgraph import RegionCall  # noqa: E402

S = gx.sym
pytestmark = pytest.mark.usefixtures("subgraph_clean")


def convnet(unsupported: bool = False):
    """A small CNN; ``unsupported`` puts an op without an ONNX equivalent (gammaln) in the
    middle."""
    x = S.Variable("data")
    net = S.Convolution(x, kernel=(3, 3), num_filter=8, pad=(1, 1), name="c1")
    net = S.BatchNorm(net, fix_gamma=False, name="bn1")
    net = S.Activation(net, act_type="relu", name="r1")
    if unsupported:
        net = S.gammaln(net + 1.0, name="p1")
    else:
        net = S.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p1")
    net = S.Convolution(net, kernel=(3, 3), num_filter=4, name="c2")
    net = S.FullyConnected(net, num_hidden=10, name="fc")
    return S.SoftmaxOutput(net, name="softmax")


SHAPES = {"data": (2, 3, 8, 8)}


def params(sym, shapes=SHAPES, seed=0):
    rng = np.random.default_rng(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {n: rng.standard_normal(s).astype("f4")
            for n, s in zip(sym.list_arguments(), arg_shapes)}
    aux = {n: (np.abs(rng.standard_normal(s)) + 0.5).astype("f4")
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def bind(sym, args, aux, **kw):
    return sym.bind(gx.cpu(), {k: v.copy() for k, v in args.items()}, grad_req="null",
                    aux_states={k: v.copy() for k, v in aux.items()}, **kw)


def native(sym, args, aux, is_train=False):
    return [o.copy() for o in bind(sym, args, aux, backend="NONE").forward(is_train=is_train)]


# -- acceptance: refcases -----------------------------------------------------------------------
@pytest.mark.parametrize("name", case_names())
def test_refcase_inference_steps_match_under_onnxrt(name, monkeypatch):
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "onnxrt")
    meta, expected = load_case(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no region may fall back to the native kernels
        rep = Replay(name, backward=False, reshape=True)
    regions = [r for e in rep.execs.values() for r in e.partition_plan.regions]
    assert regions, f"{name}: onnxrt claimed nothing"
    checked = 0
    for key, want in expected.items():
        if key in rep.results:
            rtol, atol = tolerance(meta, key)
            np.testing.assert_allclose(rep.results[key], want, rtol=rtol, atol=max(atol, 1e-5),
                                       err_msg=f"{name} {key}")
            checked += 1
    assert checked


# -- selection ----------------------------------------------------------------------------------
def test_unsupported_node_splits_regions_and_results_stay_right():
    sym = convnet(unsupported=True)
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt")
    plan = exe.partition_plan
    assert len(plan.regions) == 2
    assert plan.nodes["p1"].region is None
    assert plan.nodes["p1"].reason == "no ONNX converter for gammaln"
    assert "no ONNX converter for gammaln" in plan.table()
    for got, want in zip(exe.forward(), native(sym, args, aux)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_exclude_ops_and_min_size_options():
    sym = convnet()
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt",
               backend_options={"onnxrt": {"exclude_ops": ["Activation"], "min_size": 2}})
    plan = exe.partition_plan
    assert plan.nodes["r1"].reason == "excluded by the exclude_ops option"
    assert [len(r.members) for r in plan.regions] == [2, 4]
    np.testing.assert_allclose(exe.forward()[0], native(sym, args, aux)[0], rtol=1e-4, atol=1e-6)
    big = bind(sym, args, aux, backend="onnxrt",
               backend_options={"onnxrt": {"exclude_ops": ["Activation"], "min_size": 3}})
    assert [len(r.members) for r in big.partition_plan.regions] == [4]
    assert big.partition_plan.nodes["c1"].reason == "min_size"


def test_other_dtypes_stay_native_with_the_reason():
    x = S.Variable("x")
    sym = S.exp(x) * 2.0 + 1.0
    exe = sym.bind(gx.cpu(), {"x": np.ones((2, 3), "f8")}, grad_req="null", backend="onnxrt")
    assert not exe.partition_plan.regions
    assert "float64" in exe.partition_plan.table()
    np.testing.assert_allclose(exe.forward()[0], np.exp(1.0) * 2 + 1)


def test_optimize_for_uses_the_shapes_of_args():
    sym = convnet()
    args, aux = params(sym)
    part = sym.optimize_for("onnxrt", args=args, aux=aux)
    assert part.list_arguments() == sym.list_arguments()
    exe = bind(part, args, aux, backend="NONE")
    np.testing.assert_allclose(exe.forward()[0], native(sym, args, aux)[0], rtol=1e-4, atol=1e-6)
    plan = gx.partition(sym, "onnxrt", input_shapes=SHAPES)
    assert plan.num_claimed == 7


def test_training_binds_skip_the_property(caplog, monkeypatch):
    monkeypatch.setenv("MXNET_SUBGRAPH_VERBOSE", "2")
    sym = convnet()
    with caplog.at_level(logging.INFO, logger="graphexec.subgraph"):
        exe = sym.simple_bind(gx.cpu(), backend="onnxrt", **SHAPES)
    assert not exe.partition_plan.regions
    assert "onnxrt/onnxrt: inference_only, gradients requested" in exe.partition_plan.skipped
    assert "requires `grad_req=null`" in caplog.text


def test_training_forward_of_an_inference_bind_keeps_training_semantics():
    """BatchNorm in forward(is_train=True) uses batch statistics: the region runs natively."""
    sym = convnet()
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt")
    got = exe.forward(is_train=True)[0].copy()
    np.testing.assert_allclose(got, native(sym, args, aux, is_train=True)[0], rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(exe.forward()[0], native(sym, args, aux)[0], rtol=1e-4, atol=1e-6)


# -- sessions -----------------------------------------------------------------------------------
def test_sessions_are_cached_by_model_and_reused_by_reshape():
    ortsession.clear_sessions()
    sym = convnet()
    exe = sym.simple_bind(gx.cpu(), grad_req="null", backend="onnxrt", **SHAPES)
    before = dict(ortsession.SESSION_STATS)
    exe.forward()
    created = ortsession.SESSION_STATS["created"] - before["created"]
    assert created == len(exe.partition_plan.regions) == 1
    same = exe.reshape(data=SHAPES["data"])
    same.forward()
    assert ortsession.SESSION_STATS["created"] - before["created"] == created
    assert ortsession.SESSION_STATS["reused"] - before["reused"] == 1
    bigger = exe.reshape(allow_up_sizing=True, data=(4, 3, 8, 8), softmax_label=(4,))
    out = bigger.forward()[0]
    assert out.shape == (4, 10)
    assert ortsession.SESSION_STATS["created"] - before["created"] == created + 1


def test_bucketing_executors_reuse_sessions():
    ortsession.clear_sessions()

    def sym_gen(key):
        net = S.FullyConnected(S.Variable("data"), num_hidden=6, flatten=False, name="fc")
        return S.Activation(net, act_type="tanh", name="act")
    mod = gx.BucketingExecutor(sym_gen, default_bucket_key=8, grad_req="null",
                               backend="onnxrt")
    mod.bind(data=(2, 8, 4))
    mod.arg_params["fc_weight"][...] = 0.1  # before the first forward freezes it
    before = dict(ortsession.SESSION_STATS)
    x8, x4 = np.ones((2, 8, 4), "f4"), np.ones((2, 4, 4), "f4")
    a = mod.forward(8, data=x8)[0].copy()
    b = mod.forward(4, data=x4)[0].copy()
    mod.forward(8, data=x8)
    assert ortsession.SESSION_STATS["created"] - before["created"] == 2
    np.testing.assert_allclose(a[:, :4], b, rtol=1e-6)
    want = np.tanh(0.4 + mod.arg_params["fc_bias"])
    np.testing.assert_allclose(a, np.broadcast_to(want, a.shape), rtol=1e-6)


# -- frozen parameters ----------------------------------------------------------------------------
def test_parameters_are_frozen_and_updates_go_through_copy_params_from():
    sym = convnet()
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt")
    exe.forward()
    assert not exe.arg_dict["c1_weight"].flags.writeable
    assert not exe.aux_dict["bn1_moving_mean"].flags.writeable
    assert exe.arg_dict["data"].flags.writeable  # data is fed at every run
    assert exe.arg_dict["softmax_label"].flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        exe.arg_dict["c1_weight"][...] = 0  # never silently ignored by the baked copy
    new = {"c1_weight": args["c1_weight"] * 0.5, "fc_bias": args["fc_bias"] + 1}
    exe.copy_params_from(new, {"bn1_moving_var": aux["bn1_moving_var"] * 2})
    args2 = {**args, **new}
    aux2 = {**aux, "bn1_moving_var": aux["bn1_moving_var"] * 2}
    np.testing.assert_allclose(exe.forward()[0], native(sym, args2, aux2)[0], rtol=1e-4,
                               atol=1e-6)
    exe.forward(fc_weight=args["fc_weight"] * 3)  # keyword inputs may be parameters too
    np.testing.assert_allclose(exe.outputs[0], native(
        sym, {**args2, "fc_weight": args["fc_weight"] * 3}, aux2)[0], rtol=1e-4, atol=1e-6)


def test_data_written_in_place_is_seen_at_every_forward():
    sym = convnet()
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt")
    exe.forward()
    exe.arg_dict["data"][...] = args["data"] * 2
    want = native(sym, {**args, "data": args["data"] * 2}, aux)[0]
    np.testing.assert_allclose(exe.forward()[0], want, rtol=1e-4, atol=1e-6)


def test_freeze_params_false_feeds_every_input():
    sym = convnet()
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt",
               backend_options={"onnxrt": {"freeze_params": False}})
    exe.forward()
    assert exe.arg_dict["c1_weight"].flags.writeable
    exe.arg_dict["c1_weight"][...] *= 0.5  # in-place updates are seen
    want = native(sym, {**args, "c1_weight": args["c1_weight"] * 0.5}, aux)[0]
    np.testing.assert_allclose(exe.forward()[0], want, rtol=1e-4, atol=1e-6)


def test_freeze_params_by_name_and_thawed_when_the_executor_goes():
    sym = convnet()
    args, aux = params(sym)
    weight = args["fc_weight"].copy()
    exe = sym.bind(gx.cpu(), {**args, "fc_weight": weight}, grad_req="null", aux_states=aux,
                   backend="onnxrt", backend_options={"onnxrt": {"freeze_params": ["fc_weight"]}})
    exe.forward()
    assert not weight.flags.writeable
    assert exe.arg_dict["c1_weight"].flags.writeable
    del exe
    gc.collect()
    assert weight.flags.writeable  # the user's array is theirs again


# -- options, errors, fallback ------------------------------------------------------------------
@pytest.mark.parametrize("options, match", [
    ({"opt_level": "max"}, "opt_level='max': expected one of"),
    ({"threads": -1}, "threads=-1: expected an integer >= 0"),
    ({"freeze_params": "yes"}, "freeze_params='yes'"),
    ({"spinning": 1}, "spinning=1: expected True or False"),
    ({"providers": ["NoSuchExecutionProvider"]}, "not available in this onnxruntime build"),
    ({"providers": "CPUExecutionProvider"}, "expected a list"),
    ({"colour": "red"}, "unknown option"),
])
def test_bad_options_are_named(options, match):
    sym = convnet()
    with pytest.raises(GraphexecError, match=match):
        sym.simple_bind(gx.cpu(), grad_req="null", backend="onnxrt",
                        backend_options={"onnxrt": options}, **SHAPES)


def test_save_models_writes_each_region_model(tmp_path):
    import onnx
    sym = convnet(unsupported=True)
    exe = sym.simple_bind(gx.cpu(), grad_req="null", backend="onnxrt",
                          backend_options={"onnxrt": {"save_models": str(tmp_path / "m"),
                                                      "threads": 1, "opt_level": "basic"}},
                          **SHAPES)
    exe.forward()
    files = sorted((tmp_path / "m").iterdir())
    assert len(files) == 2
    model = onnx.load(str(files[0]))
    assert {i.name for i in model.graph.initializer} >= {"c1_weight", "bn1_moving_mean"}
    assert [i.name for i in model.graph.input] == ["data"]


def test_a_region_onnx_runtime_rejects_runs_natively_with_a_warning(monkeypatch):
    from graphexec.backends.onnxrt import converters

    def broken(c):
        c.b.one("Relu", [c.x], c.out, no_such_attribute=1)
    monkeypatch.setitem(converters.CONVERTERS, "Activation",
                        converters.Converter(broken, converters.CONVERTERS["Activation"].supports))
    sym = convnet()
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt")
    with pytest.warns(RuntimeWarning, match=r"runs with the native kernels instead.*"
                                            r"no_such_attribute"):
        out = exe.forward()[0].copy()
    np.testing.assert_allclose(out, native(sym, args, aux)[0], rtol=1e-4, atol=1e-6)
    assert exe.partition_plan.fallbacks == 1
    assert exe.region_states["onnxrt_subgraph0"]["fallbacks"] == 1
    exe.forward()  # the fallback stays, without a second warning


def _gpu_region():
    x = S.Variable("x")
    return RegionCall(S.relu(x), ["x"], [np.ones(3, "f4")], [np.ones(3, "f4")], gx.gpu(0),
                      False, "onnxrt_subgraph0")


def test_gpu_region_without_cuda_provider_says_so_once_or_refuses(monkeypatch):
    import onnxruntime as ort
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime build has CUDA")
    monkeypatch.setattr(ortsession, "_WARNED", set())
    opts = {**ortsession_options(), "strict_device": True}
    with pytest.raises(PlacementError, match="no CUDAExecutionProvider.*strict_device=True"):
        ortsession.region_runner(_gpu_region(), opts)
    opts["strict_device"] = False
    with pytest.warns(RuntimeWarning, match="run on the CPU with explicit copies"):
        ortsession.region_runner(_gpu_region(), opts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ortsession.region_runner(_gpu_region(), opts)  # said once


def ortsession_options() -> dict:
    from graphexec.backends.onnxrt.subgraph import OPTIONS
    return dict(OPTIONS)


class FakeDeviceArray:
    """Stands for a CuPy array (``get(out=)`` / ``set``) so the host-copy path runs here."""

    def __init__(self, array):
        self.array = array
        self.shape, self.dtype = array.shape, array.dtype

    def get(self, out):
        np.copyto(out, self.array)

    def set(self, host):
        np.copyto(self.array, host)


def test_gpu_region_without_cuda_provider_runs_on_the_host_with_counted_copies(monkeypatch):
    import onnxruntime as ort
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime build has CUDA")
    monkeypatch.setattr(ortsession, "_WARNED", {gx.gpu(0)})
    x = S.Variable("x")
    inp = FakeDeviceArray(np.array([-1.0, 2.0, -3.0], "f4"))
    out = FakeDeviceArray(np.zeros(3, "f4"))
    region = RegionCall(S.relu(x) * 2.0, ["x"], [inp], [out], gx.gpu(0), False,
                        "onnxrt_subgraph0")
    run = ortsession.region_runner(region, ortsession_options())
    run()
    run()
    np.testing.assert_array_equal(out.array, [0.0, 4.0, 0.0])
    assert region.state["host_copies"] == 4  # one input and one output, twice


def test_gpu_region_with_cuda_provider_binds_device_pointers(monkeypatch):
    """The CUDAExecutionProvider path, with the provider list and the session mocked (no
    onnxruntime-gpu here, issue 22): the session asks for CUDA first, every input and output
    is bound in place as a CUDA buffer (device id, dtype, shape, the array's pointer), and no
    host copy is made or counted."""
    import onnxruntime as ort
    monkeypatch.setattr(ort, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    calls: dict = {"bound": [], "runs": 0}

    class Binding:
        def bind_input(self, name, *buf):
            calls["bound"].append(("in", name, *buf))

        def bind_output(self, name, *buf):
            calls["bound"].append(("out", name, *buf))

    class Session:
        def io_binding(self):
            return Binding()

        def run_with_iobinding(self, binding):
            calls["runs"] += 1

    def session(data, opts, providers, region):
        calls["providers"] = providers
        return "key", Session()
    monkeypatch.setattr(ortsession, "_session", session)

    class Pointer:
        def __init__(self, ptr):
            self.ptr = ptr

    class FakeCudaArray:
        """Stands for a CuPy array: shape, dtype and ``data.ptr`` (nothing else is read)."""

        def __init__(self, shape, ptr):
            self.shape, self.dtype, self.data = shape, np.dtype("f4"), Pointer(ptr)

    x = S.Variable("x")
    region = RegionCall(S.relu(x) * 2.0, ["x"], [FakeCudaArray((2, 3), 4096)],
                        [FakeCudaArray((2, 3), 8192)], gx.gpu(1), False, "onnxrt_subgraph0")
    run = ortsession.region_runner(region, ortsession_options())
    run()
    assert calls["providers"] == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert [b[0] for b in calls["bound"]] == ["in", "out"]
    assert calls["bound"][0][2:] == ("cuda", 1, np.float32, [2, 3], 4096)
    assert calls["bound"][1][2:] == ("cuda", 1, np.float32, [2, 3], 8192)
    assert calls["runs"] == 1 and region.state.get("host_copies", 0) == 0


def test_a_region_failing_at_run_time_falls_back_and_thaws_its_parameters(monkeypatch):
    class Binding:
        def bind_input(self, *a):
            pass

        def bind_output(self, *a):
            pass

    class FailingSession:
        def io_binding(self):
            return Binding()

        def run_with_iobinding(self, binding):
            raise RuntimeError("device lost")
    monkeypatch.setattr(ortsession, "_session", lambda *a: ("key", FailingSession()))
    sym = convnet()
    args, aux = params(sym)
    exe = bind(sym, args, aux, backend="onnxrt")
    with pytest.warns(RuntimeWarning, match="running it failed: RuntimeError: device lost"):
        out = exe.forward()[0].copy()
    np.testing.assert_allclose(out, native(sym, args, aux)[0], rtol=1e-4, atol=1e-6)
    assert exe.arg_dict["c1_weight"].flags.writeable


def test_non_contiguous_arrays_go_through_staging_copies():
    base = np.arange(24, dtype="f4").reshape(4, 6) - 12
    view = base[:, ::2]  # not contiguous: bound through a staging buffer
    x = S.Variable("x")
    exe = (S.relu(x) * 2.0).bind(gx.cpu(), {"x": view}, grad_req="null", backend="onnxrt")
    assert exe.partition_plan.regions
    np.testing.assert_array_equal(exe.forward()[0], np.maximum(view, 0) * 2)
    base[...] = -base  # the staging copy is refreshed at every run
    np.testing.assert_array_equal(exe.forward()[0], np.maximum(view, 0) * 2)
