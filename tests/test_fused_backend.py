"""The ``fused`` subgraph backend: fused vs native outputs and gradients (float16/32/64, grad_req
write/add, every lowering), graphs whose naive fusion would be a cycle, nodes read inside and
outside a region, every refcase under MXNET_SUBGRAPH_BACKEND=fused (forward, and the full
replay with backward), selection and its reasons, the cost model, inspectable sources, the
kernel cache, and the float32 math the kernels use.

Generated kernels are cached on disk (pytest's cache folder, so a second run compiles
nothing) and shared across tests: identical regions share one kernel.
"""
from __future__ import annotations

import logging
import math
import re
import sys
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="the fused backend generates its kernels with "
                                            "numba (pip install 'graphexec[fused]')")

from opcases import all_cases  # noqa: E402
from refcase_replay import Replay, case_names, load_case, tolerance  # noqa: E402

import graphexec as gx  # noqa: E402
from graphexec.backends.fused import sources, subgraph  # noqa: E402
from graphexec.core.runtime import jit_cache as cache  # noqa: E402
from graphexec.backends.fused.codegen import FusedCodegenError, generate  # noqa: E402
from graphexec.backends.fused.ops import FORWARD  # noqa: E402
from graphexec.core.ir.errors import GraphexecError  # noqa: E402
from graphexec.core.symbol.symbol import create_op_symbol  # noqa: E402

S = gx.sym
pytestmark = pytest.mark.usefixtures("subgraph_clean", "fused_kernel_cache")
TOL = {"float16": (2e-2, 2e-2), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)}
CLAIM_ALL = {"fused": {"cost_model": False}}


def train(sym, args: dict, backend: str, req: str = "write", options=None):
    """forward(is_train=True) + backward with fixed head gradients; (outputs, grads, exe).
    Gradient buffers start at 0.5 so that grad_req='add' shows the accumulation."""
    rng = np.random.default_rng(7)
    grads = {k: np.full_like(v, 0.5) for k, v in args.items()}
    exe = sym.bind(gx.cpu(), {k: v.copy() for k, v in args.items()}, args_grad=grads,
                   grad_req=req, backend=backend, backend_options=options)
    outs = [o.copy() for o in exe.forward(is_train=True)]
    exe.backward([rng.uniform(-1, 1, o.shape).astype(o.dtype) for o in outs])
    return outs, {k: v.copy() for k, v in exe.grad_dict.items()}, exe


def assert_same(fused, native, dtype: str, names) -> None:
    rtol, atol = TOL[dtype]
    for got, want, name in zip(fused, native, names):
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


def check_training(sym, args: dict, dtype: str, req: str = "write", options=CLAIM_ALL):
    """Fused and native agree on outputs and gradients, and no region fell back."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a region falling back to native kernels warns
        outs, grads, exe = train(sym, args, "fused", req, options)
    want_outs, want_grads, _ = train(sym, args, "NONE", req)
    assert_same(outs, want_outs, dtype, sym.list_outputs())
    assert_same([grads[k] for k in want_grads], want_grads.values(), dtype, list(want_grads))
    assert exe.partition_plan.fallbacks == 0
    return exe


# -- fused == native ----------------------------------------------------------------------------
def small_graph(dtype: str):
    """Bias and row broadcasts (their gradients sum over the broadcast axes), activations,
    comparisons, where with a row condition, Cast through another float type."""
    x, b, w, c = (S.Variable(n) for n in ("x", "b", "w", "c"))
    h = S.broadcast_add(x, b)
    a = S.tanh(h * 0.7) * S.sigmoid(x) + S.exp(-(x * x)) * 0.5
    g = S.LeakyReLU(a, act_type="gelu") + S.Activation(x, act_type="softrelu")
    y1 = S.broadcast_mul(S.relu(g), w)
    other = "float32" if dtype == "float64" else "float64"
    cast = S.Cast(S.Cast(x, dtype=other) * 3, dtype=dtype)
    y2 = S.where(c, S.clip(x, a_min=-0.5, a_max=0.5), cast) * (x > 0.1) + S.abs(x)
    rng = np.random.default_rng(0)
    args = {"x": rng.uniform(-1, 1, (4, 5)), "b": rng.uniform(-1, 1, (5,)),
            "w": rng.uniform(-1, 1, (4, 1)), "c": (rng.uniform(size=(4,)) > 0.5) * 1.0}
    return S.Group([y1, y2]), {k: v.astype(dtype) for k, v in args.items()}


@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_training_matches_native(dtype, req):
    sym, args = small_graph(dtype)
    exe = check_training(sym, args, dtype, req)
    plan = exe.partition_plan
    assert len(plan.regions) == 2
    assert all(d.region is not None for d in plan.nodes.values()), plan.table()


def lowering_cases(dtype: str) -> list:
    """Every op case (tests/opcases) the fused backend claims in float32; float16 (computed
    as float32 between its loads and stores) takes Cast and every sixth case, float64 also
    every op calling the float64 math functions."""
    cases = [c for c in all_cases() if c.op in FORWARD and dtype in c.dtypes
             and FORWARD[c.op].supports(_params(c)) is None]
    if dtype == "float32":
        return cases
    return [c for k, c in enumerate(cases) if k % 6 == 0 or c.op == "Cast" or
            (dtype == "float64" and FORWARD[c.op].cost_of(_params(c)) == "poly")]


def _params(case):
    sym = create_op_symbol(case.op, [S.Variable(f"i{k}") for k in range(len(case.shapes))],
                           dict(case.attrs))
    return sym._indexed().nodes[-1].params


def lowering_graph(cases: list, dtype: str, group: int = 8):
    """Each case on its own inputs; cases of one output shape and dtype are summed in groups
    of ``group`` (one region each), every case's output is an output too."""
    rng = np.random.default_rng(3)
    by_kind: dict[tuple, list] = {}
    args = {}
    for i, case in enumerate(cases):
        names = [f"c{i}_{k}" for k in range(len(case.shapes))]
        args.update((n, a.astype(dtype)) for n, a in zip(names, case.make_inputs(rng, dtype)))
        y = create_op_symbol(case.op, [S.Variable(n) for n in names],
                             {**case.attrs, "name": f"c{i}_{case.name}"})
        _, (shape,), _ = y.infer_shape(**{n: args[n].shape for n in names})
        _, (out_type,), _ = y.infer_type(**{n: dtype for n in names})
        by_kind.setdefault((shape, out_type), []).append(y)
    heads = []
    for ys in by_kind.values():
        for k in range(0, len(ys), group):
            chunk = ys[k:k + group]
            heads += ([S.add_n(*chunk)] if len(chunk) > 1 else []) + chunk
    return S.Group(heads), args


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_every_lowering_matches_native_forward_and_backward(dtype):
    cases = lowering_cases(dtype)
    sym, args = lowering_graph(cases, dtype)
    exe = check_training(sym, args, dtype, options={"fused": {"cost_model": False, "min_size": 1}})
    plan = exe.partition_plan
    claimed = {d.node.split("_")[0] for d in plan.nodes.values() if d.region is not None}
    assert claimed >= {f"c{i}" for i in range(len(cases))}, plan.table()


def test_cross_coupled_outputs_stay_correct():
    """exp(x)*2 feeds softmax (not fusable), whose result meets tanh(x)+1 again: one region
    holding both ends would be a cycle through softmax."""
    x = S.Variable("x")
    u = S._mul_scalar(S.exp(x, name="e"), scalar=2, name="u")
    v = S._plus_scalar(S.tanh(x, name="t"), scalar=1, name="v")
    w = S.elemwise_mul(v, S.softmax(u, axis=-1), name="w")
    sym = S.Group([w, S.elemwise_mul(u, v, name="uv")])
    args = {"x": np.random.default_rng(1).uniform(-1, 1, (3, 6)).astype("f4")}
    plan = check_training(sym, args, "float32").partition_plan
    assert plan.nodes["e"].region is not None
    assert plan.nodes["e"].region == plan.nodes["uv"].region
    assert plan.nodes["w"].region != plan.nodes["e"].region


def test_node_read_inside_and_outside_a_region_keeps_both_consumers():
    x = S.Variable("x")
    t = S._mul_scalar(S.exp(x, name="e"), scalar=2, name="t")
    sym = S.Group([t + 1, S.softmax(t, axis=-1), S.sigmoid(t)])
    args = {"x": np.random.default_rng(2).uniform(-1, 1, (2, 7)).astype("f4")}
    exe = check_training(sym, args, "float32")
    region = exe.partition_plan.regions[0]
    assert "t" in region.members
    assert "t_output" in region.outputs


def test_regions_keep_one_loop_shape():
    """exp of a (5,) bias is not in the (4, 5) region that the bias broadcasts into."""
    x, b = S.Variable("x"), S.Variable("b")
    eb = S.exp(b, name="eb") * 2
    y = S.broadcast_mul(x, eb, name="bm") + 1
    args = {"x": np.ones((4, 5), "f4"), "b": np.linspace(0, 1, 5, dtype="f4")}
    plan = check_training(y, args, "float32").partition_plan
    assert plan.nodes["eb"].region is not None
    assert plan.nodes["eb"].region != plan.nodes["bm"].region


def test_large_arrays_run_the_parallel_kernel(monkeypatch):
    if numba.get_num_threads() < 2:
        pytest.skip("numba has a single thread here")
    from graphexec.backends.fused import runner
    monkeypatch.setattr(runner, "machine_busy", lambda: False)   # a busy machine runs serial
    x = S.Variable("x")
    y = S.clip(((x * 0.7 + 0.1) * x - 0.2) * x, a_min=-1, a_max=1) * 0.5 + S.abs(x)
    data = np.random.default_rng(4).standard_normal(1 << 18).astype("f4")
    exe = y.bind(gx.cpu(), {"x": data}, grad_req="null", backend="fused")
    got = exe.forward()[0]
    want = y.bind(gx.cpu(), {"x": data}, grad_req="null", backend="NONE").forward()[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    state = next(s for s in exe._plan._states.values() if "kernel" in s)
    assert state["parallel"]


def test_non_contiguous_input_is_read_through_a_staging_copy():
    x = S.Variable("x")
    y = S.exp(x) * 2 + x
    base = np.random.default_rng(5).uniform(-1, 1, (6, 8)).astype("f4")
    exe = y.bind(gx.cpu(), {"x": base[:, ::2]}, grad_req="null", backend="fused")
    got = exe.forward()[0].copy()
    np.testing.assert_allclose(got, np.exp(base[:, ::2]) * 2 + base[:, ::2], rtol=1e-6)


# -- acceptance: refcases -----------------------------------------------------------------------
#: refcases with pointwise chains of two or more ops (the others have single activations
#: between layers, below min_size)
FUSING_CASES = {"arith", "arith_broadcast", "dtypes", "multi_head"}


def _replay(name: str, backward: bool, monkeypatch, spec: str = "fused") -> Replay:
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no region may fall back to the native kernels
        return Replay(name, backward=backward, reshape=True)


def _compare(name: str, rep: Replay, expected: dict, meta: dict) -> list[str]:
    checked = []
    for key, want in expected.items():
        if key in rep.results:
            got = rep.results[key]
            rtol, atol = tolerance(meta, key)
            assert got.dtype == want.dtype, f"{name} {key}"
            np.testing.assert_allclose(got, want, rtol=rtol, atol=max(atol, 1e-5),
                                       err_msg=f"{name} {key}")
            checked.append(key)
    return checked


@pytest.mark.parametrize("name", case_names())
def test_refcase_inference_steps_match_under_fused(name, monkeypatch):
    meta, expected = load_case(name)
    rep = _replay(name, False, monkeypatch)
    assert _compare(name, rep, expected, meta)


@pytest.mark.parametrize("name", case_names())
def test_refcase_full_replay_matches_under_fused(name, monkeypatch):
    """Forward, backward, gradients, aux states, grad_req add accumulation; every supported
    region claimed (no cost model)."""
    meta, expected = load_case(name)
    rep = _replay(name, True, monkeypatch, "fused:cost_model=false")
    regions = [r for e in rep.execs.values() for r in e.partition_plan.regions]
    assert bool(regions) == (name in FUSING_CASES), f"{name}: {len(regions)} region(s)"
    checked = _compare(name, rep, expected, meta)
    assert sorted(checked) == sorted(expected), f"{name}: keys not produced: " \
        f"{sorted(set(expected) - set(checked))}"


# -- selection ----------------------------------------------------------------------------------
def bind(sym, backend="fused", options=None, dtype="float32", **shapes):
    return sym.simple_bind(gx.cpu(), grad_req="null", backend=backend,
                           backend_options={"fused": options} if options else None,
                           type_dict={n: dtype for n in shapes}, **shapes)


def test_plan_names_why_a_node_is_not_claimed():
    x, g = S.Variable("x"), S.Variable("g")
    y = S.gammaln(S.exp(x, name="e") + 1, name="gl")
    p = S.LeakyReLU(y * 2, g, act_type="prelu", name="pr")
    plan = bind(S.Group([p, S.relu(x, name="lone")]), options={"cost_model": False}, x=(2, 3),
                g=(3,)).partition_plan
    assert plan.nodes["gl"].reason == "no fused lowering for gammaln"
    assert "learned or random slope" in plan.nodes["pr"].reason
    assert plan.nodes["lone"].reason == "min_size"
    assert plan.nodes["e"].region is not None


def test_integer_data_is_not_claimed():
    x = S.Variable("x")
    plan = bind(S.abs(x, name="a") * 2, dtype="int32", x=(4,)).partition_plan
    assert plan.nodes["a"].reason == "dtype int32 (fused kernels compute float16/32/64 only)"


def test_exclude_ops_takes_aliases():
    x = S.Variable("x")
    y = S.exp(x) * 2 + x  # elemwise_add, written _plus in MXNet JSON
    plan = bind(y, options={"exclude_ops": ["_plus"], "cost_model": False}, x=(8,)).partition_plan
    adds = [d for d in plan.nodes.values() if d.op == "elemwise_add"]
    assert adds and all(d.reason == "excluded by the exclude_ops option" for d in adds)
    assert len(plan.regions) == 1


def test_cost_model_turns_down_regions_slower_fused():
    """float64 tanh calls scalar libm in the kernel while numpy runs it vectorised; two ops
    on ten floats gain less than a region call costs."""
    x = S.Variable("x")
    y = S.tanh(x * 0.5 + 1) * 2
    assert not bind(y, dtype="float64", x=(2000,)).partition_plan.regions
    assert bind(y, dtype="float32", x=(2000,)).partition_plan.regions
    assert bind(y, options={"cost_model": False}, dtype="float64", x=(2000,)).partition_plan.regions
    tiny = bind(S.exp(x, name="e") * 2, x=(10,)).partition_plan
    assert tiny.nodes["e"].reason.startswith("cost model: ")
    assert "cost model: " in tiny.table()


@pytest.mark.parametrize("options, words", [
    ({"min_size": 0}, "min_size=0: expected an integer >= 1"),
    ({"cost_model": "yes"}, "cost_model='yes': expected True or False"),
    ({"threads": 2}, "unknown option(s) ['threads']"),
])
def test_bad_options_are_named(options, words):
    with pytest.raises(GraphexecError, match=re.escape(words)):
        bind(S.exp(S.Variable("x")) * 2, options=options, x=(4,))


def test_without_numba_nothing_is_claimed_and_one_warning_says_why(monkeypatch):
    monkeypatch.setattr(subgraph, "_NUMBA", [])
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
    x = S.Variable("x")
    y = S.exp(x, name="e") * 2
    with pytest.warns(RuntimeWarning, match="fused subgraph backend claims nothing"):
        exe = bind(y, x=(3,))
    assert not exe.partition_plan.regions
    assert "pip install 'graphexec[fused]'" in exe.partition_plan.nodes["e"].reason
    np.testing.assert_allclose(exe.forward(x=np.ones(3, "f4"))[0], np.full(3, 2 * math.e),
                               rtol=1e-6)


# -- inspecting, caching --------------------------------------------------------------------------
def test_sources_are_retrievable_and_logged_at_verbose_2(monkeypatch, caplog):
    monkeypatch.setenv("MXNET_SUBGRAPH_VERBOSE", "2")
    x = S.Variable("x")
    y = S.sigmoid(x * 3) + x
    exe = y.simple_bind(gx.cpu(), backend="fused", x=(5,))
    assert sources(exe) == {}  # kernels are built by the first run
    with caplog.at_level(logging.INFO, logger="graphexec.fused"):
        exe.forward(is_train=True)
        exe.backward(np.ones(5, "f4"))
    src = sources(exe)
    assert sorted(src) == ["fused_subgraph0", "fused_subgraph0_backward"]
    assert "def kernel(" in src["fused_subgraph0"] and "sigmoid_f4(" in src["fused_subgraph0"]
    assert "_backward_sigmoid" in src["fused_subgraph0_backward"]
    assert src["fused_subgraph0"] in caplog.text


def test_kernel_modules_are_written_once_and_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHEXEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "MODULES", {})
    x = S.Variable("x")
    y = S.exp(x) * 0.25 - x
    exe = y.simple_bind(gx.cpu(), grad_req="null", backend="fused", x=(6,))
    exe.forward()
    (key, module), = cache.MODULES.items()
    path = tmp_path / "jit" / f"fk_{key}.py"
    assert path.read_text() == sources(exe)["fused_subgraph0"]
    z = S.Variable("z")
    renamed = S.exp(z, name="other") * 0.25 - z
    again = renamed.simple_bind(gx.cpu(), grad_req="null", backend="fused", z=(9,))
    again.forward()
    assert list(cache.MODULES) == [key]  # same structure, other names and sizes: one kernel
    path.write_text("broken = (")
    cache.MODULES.clear()
    with pytest.warns(RuntimeWarning, match="does not hold the kernel its name promises"):
        assert cache.load_module(sources(exe)["fused_subgraph0"]).__file__ == str(path)
    assert path.read_text() == sources(exe)["fused_subgraph0"]


def test_a_region_without_lowering_is_refused_in_words():
    x = S.Variable("x")
    with pytest.raises(FusedCodegenError, match="gammaln 'gl' has no fused lowering"):
        generate(S.gammaln(S.exp(x), name="gl"), ["x"], [(3,)], [np.float32])


# -- the float32 math ---------------------------------------------------------------------------
def _vmath_kernel(names: list[str]):
    """One loop writing every function of ``names`` on its own output row (compiled without
    the cache, so that its LLVM IR can be inspected)."""
    from graphexec.backends.fused import vmath
    body = "\n".join(f"        out[{k}, i] = vmath.{n}(x[i])" for k, n in enumerate(names))
    ns = {"vmath": vmath}
    exec(f"def loop(x, out):\n    for i in range(x.size):\n{body}\n", ns)
    return numba.njit(error_model="numpy", fastmath={"contract"})(ns["loop"])


F4 = {"exp_f4": np.exp, "expm1_f4": np.expm1, "log_f4": np.log, "log1p_f4": np.log1p,
      "log2_f4": np.log2, "log10_f4": np.log10, "tanh_f4": np.tanh,
      "sigmoid_f4": lambda v: 1 / (1 + np.exp(-v)), "erf_f4": np.vectorize(math.erf),
      "softrelu_f4": lambda v: np.logaddexp(v, 0)}


def test_float32_functions_are_accurate_and_match_numpy_on_special_values():
    grid = np.concatenate([np.linspace(-110, 100, 200_001), np.geomspace(1e-30, 50, 20_001),
                           -np.geomspace(1e-30, 50, 20_001)]).astype("f4")
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 1, -1, 88.7, -87.5], "f4")
    x = np.concatenate([grid, special])
    out = np.empty((len(F4), x.size), "f4")
    _vmath_kernel(list(F4))(x, out)
    with np.errstate(all="ignore"):
        for row, (name, ref) in zip(out, F4.items()):
            want = ref(x.astype("f8"))
            normal = np.isfinite(want) & (np.abs(want) > 1.2e-38) & (np.abs(want) < 3.4e38)
            ulp = np.spacing(np.abs(want[normal]).astype("f4")).astype("f8")
            assert np.max(np.abs(row[normal] - want[normal]) / ulp) <= 4, name
            tail = row[-len(special):]
            expect = ref(special.astype("f8")).astype("f4")
            np.testing.assert_allclose(tail, expect, rtol=1e-6, atol=1e-37, err_msg=name)


def test_float32_functions_vectorise():
    loop = _vmath_kernel(list(F4))
    loop(np.zeros(4, "f4"), np.zeros((len(F4), 4), "f4"))
    llvm = next(iter(loop.inspect_llvm().values()))
    assert "vector.body" in llvm and ("<8 x float>" in llvm or "<16 x float>" in llvm)


def test_float16_rounding_matches_numpy():
    from graphexec.backends.fused.vmath import round_f16

    @numba.njit
    def rounded(x, out):
        for i in range(x.size):
            out[i] = round_f16(x[i])
    rng = np.random.default_rng(6)
    wide = rng.standard_normal(100_000) * 10.0 ** rng.integers(-9, 6, 100_000)
    halves = rng.standard_normal(20_000).astype("f2").astype("f8")
    ties = halves + np.spacing(halves.astype("f2")).astype("f8") / 2 * (1 + 1e-12)
    for x in (wide, ties, wide.astype("f4")):
        out = np.empty(x.size, "f4")
        rounded(x, out)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(out, x.astype("f2").astype("f4"))
