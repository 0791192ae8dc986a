"""Executor API: bind / simple_bind, forward, dicts, copy_params_from, monitor, debug_str,
and the error paths (clear messages, executor still usable afterwards)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from refcase_replay import DATA

import graphexec as gx


def _arith():
    with gx.name.NameManager():
        a, b = gx.sym.Variable("a"), gx.sym.Variable("b")
        return 2 * a + b


def _bind_arith():
    return _arith().bind(gx.cpu(), {"a": np.array([1, 2], "f4"), "b": np.array([2, 3], "f4")})


def test_docstring_example_and_dicts():
    exe = _bind_arith()
    out = exe.forward()
    np.testing.assert_array_equal(out[0], [4, 7])
    assert out is exe.outputs and list(exe.output_dict) == ["_plus0_output"]
    assert set(exe.arg_dict) == {"a", "b"} and exe.aux_dict == {}
    assert exe.grad_dict == {"a": None, "b": None}
    exe.forward(a=np.array([3, 4], "f4"))
    np.testing.assert_array_equal(exe.outputs[0], [8, 11])


def test_forward_kwargs_errors_leave_executor_usable():
    exe = _bind_arith()
    with pytest.raises(TypeError, match="Unknown argument c"):
        exe.forward(c=np.ones(2, "f4"))
    with pytest.raises(ValueError, match=r"Shape not match! Argument a, need: \(2,\), received: \(3,\)"):
        exe.forward(a=np.ones(3, "f4"), b=np.ones(2, "f4"))
    with pytest.raises(ValueError, match="only accept keyword argument of arrays"):
        exe.forward(a=[1, 2])
    np.testing.assert_array_equal(exe.arg_dict["b"], [2, 3])  # nothing half-copied
    np.testing.assert_array_equal(exe.forward()[0], [4, 7])


def test_bind_errors():
    sym = _arith()
    with pytest.raises(ValueError, match="key `b` is missing in `args`"):
        sym.bind(gx.cpu(), {"a": np.ones(2, "f4")})
    with pytest.raises(ValueError, match="Length of args does not match"):
        sym.bind(gx.cpu(), [np.ones(2, "f4")])
    with pytest.raises(gx.BindError, match=r"args\['a'\] must be a numpy.ndarray"):
        sym.bind(gx.cpu(), {"a": [1, 2], "b": np.ones(2, "f4")})
    with pytest.raises(gx.BindError, match="grad_req for 'a' is 'sometimes'"):
        sym.bind(gx.cpu(), {"a": np.ones(2, "f4"), "b": np.ones(2, "f4")},
                 args_grad={"a": np.zeros(2, "f4")}, grad_req="sometimes")
    with pytest.raises(gx.ShapeInferenceError, match="Error in operator _plus0"):
        sym.bind(gx.cpu(), {"a": np.ones(2, "f4"), "b": np.ones(3, "f4")})
    with pytest.raises(gx.TypeInferenceError, match="_plus0"):
        sym.bind(gx.cpu(), {"a": np.ones(2, "f4"), "b": np.ones(2, "f8")})


def test_bind_ignores_extra_keys_and_grad_arrays_follow_args_grad():
    exe = _arith().bind(gx.cpu(), {"a": np.ones(2, "f4"), "b": np.ones(2, "f4"), "zz": np.ones(1)},
                        args_grad={"a": np.zeros(2, "f4")})
    assert exe.grad_arrays[1] is None and exe.grad_arrays[0].shape == (2,)
    assert exe._grad_req == {"a": "write", "b": "null"}


def test_simple_bind_zero_initialised_with_type_dict():
    sym = _arith()
    exe = sym.simple_bind(gx.cpu(), a=(2, 3), type_dict={"a": "float64", "b": "float64"})
    assert exe.arg_dict["a"].dtype == np.float64 and not exe.arg_dict["b"].any()
    assert exe.grad_dict["a"].shape == (2, 3)
    exe2 = sym.simple_bind(gx.cpu(), grad_req="null", a=(4,))
    assert exe2.arg_dict["b"].dtype == np.float32 and exe2.grad_arrays == [None, None]
    with pytest.raises(gx.BindError, match="'q' is not an input"):
        sym.simple_bind(gx.cpu(), q=(1,))
    with pytest.raises(RuntimeError, match="cannot decide shapes"):
        sym.simple_bind(gx.cpu())


def test_duplicate_argument_names_rejected():
    x1, x2 = gx.sym.Variable("x"), gx.sym.Variable("x")
    with pytest.raises(ValueError, match="Duplicate names detected"):
        (x1 + x2).simple_bind(gx.cpu(), x=(2,))


def test_copy_params_from():
    exe = _bind_arith()
    exe.copy_params_from({"a": np.array([5, 6], "f4")})
    np.testing.assert_array_equal(exe.arg_dict["a"], [5, 6])
    with pytest.raises(TypeError, match='Find name "w"'):
        exe.copy_params_from({"w": np.ones(1)})
    exe.copy_params_from({"w": np.ones(1)}, allow_extra_params=True)
    with pytest.raises(ValueError, match="has shape"):
        exe.copy_params_from({"a": np.ones(3, "f4")})


def test_monitor_callback_matches_mxnet_forward_trace():
    trace = json.loads((DATA / "arith" / "monitor.json").read_text())
    for key, monitor_all in (("monitor_all=False", False), ("monitor_all=True", True)):
        expected = []
        for item in trace[key]:
            if item["name"].startswith("--- end of forward"):
                break
            expected.append(item)
        exe = _bind_arith()
        seen = []
        exe.set_monitor_callback(lambda n, arr: seen.append((n, arr.tolist())), monitor_all)
        exe.forward(is_train=True)
        assert [n for n, _ in seen] == [e["name"] for e in expected]
        assert [v for _, v in seen] == [e["values"] for e in expected]


def test_debug_str_matches_mxnet_docstring_example():
    with gx.name.NameManager():
        a = gx.sym.Variable("a")
        c = 2 * a + gx.sym.sin(a)
    exe = c.bind(gx.cpu(), {"a": np.array([1, 2], "f4"), "b": np.array([2, 3], "f4")})
    want = (DATA / "arith" / "debug_str_docstring_example.txt").read_text()
    assert exe.debug_str() == want


@pytest.mark.parametrize("bulk", ["0", "1"])
def test_kernel_failure_names_node_and_executor_recovers(bulk, monkeypatch):
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_INFERENCE", bulk)
    x = gx.sym.Variable("x")
    y = gx.sym.sin(gx.sym.exp(x, name="boom"), name="after")
    exe = y.bind(gx.cpu(), {"x": np.ones(3, "f4")})
    real = exe._plan.kernels(False)[0]

    def failing():
        raise FloatingPointError("overflow")
    exe._plan._kernels[(False, "forward")][0] = failing
    with pytest.raises(gx.KernelError, match="While executing node 'boom' \\(exp\\)"):
        exe.forward()
    exe._plan._kernels[(False, "forward")][0] = real
    exe._plan._bulk.clear()
    np.testing.assert_allclose(exe.forward()[0], np.sin(np.e), rtol=1e-6)


def test_context_mismatch_is_explained():
    class FakeCupy:
        shape, dtype = (2,), np.dtype("f4")
    FakeCupy.__module__ = "cupy._core"
    with pytest.raises(gx.ContextError, match=r"lives on gpu while binding with ctx=cpu\(0\): all arrays must be in the global context"):
        _arith().bind(gx.cpu(), {"a": FakeCupy(), "b": np.ones(2, "f4")})


def test_host_array_bound_to_a_gpu_executor_names_the_argument():
    with pytest.raises(gx.ContextError, match=r"args\['a'\] lives on cpu while binding with "
                                              r"ctx=gpu\(0\)"):
        _arith().bind(gx.gpu(0), {"a": np.ones(2, "f4"), "b": np.ones(2, "f4")})


def test_gpu_context_without_cupy_says_so():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy present: this checks the message on machines without it")
    except ImportError:
        pass
    with pytest.raises(gx.ContextError, match="needs CuPy"):
        _arith().simple_bind(gx.gpu(0), a=(2,))


def test_bulk_segments_match_the_node_loop_without_warnings(monkeypatch):
    # bulk code passes ``out`` positionally to ufuncs, except maximum/minimum (deprecated)
    import warnings
    x = gx.sym.Variable("x")
    y = x
    for i in range(12):
        y = [gx.sym.sin, lambda s: s * 0.9, gx.sym.relu, lambda s: gx.sym._minimum_scalar(s, scalar=0.3),
             lambda s: s - x, gx.sym.abs][i % 6](y)
    data = np.random.default_rng(1).uniform(-2, 2, (3, 5)).astype("f4")
    results = {}
    for bulk in ("0", "1"):
        monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_INFERENCE", bulk)
        exe = y.bind(gx.cpu(), {"x": data.copy()})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            results[bulk] = exe.forward()[0].copy()
        monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_INFERENCE", "0" if bulk == "1" else "1")
        results[bulk + " later"] = exe.forward()[0].copy()  # decided at bind, not per call
        assert bool(exe._plan._bulk) == (bulk == "1")
    for got in results.values():
        np.testing.assert_array_equal(got, results["0"])
