"""API misuse (issue #15, items 10 and 14): wrong types and values are GraphexecErrors naming
the argument; typos in backend options are errors; writes into arrays another executor's
onnxrt region froze name that region, freeze_params and the fix."""
from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import graphexec as gx


def _fc():
    return gx.sym.FullyConnected(gx.sym.Variable("x"), num_hidden=3, name="fc")


@pytest.fixture
def exe():
    e = _fc().simple_bind(gx.cpu(), x=(2, 4))
    e.arg_dict["fc_weight"][:] = 1
    return e


def _still_works(e):
    out = e.forward(x=np.ones((2, 4), "f4"))[0]
    np.testing.assert_allclose(out, np.full((2, 3), 4 + e.arg_dict["fc_bias"][0]))


@pytest.mark.parametrize("call, error, match", [
    (lambda e: e.copy_params_from([np.ones((3, 4), "f4")]), gx.ArgumentTypeError,
     "arg_params must be a dict"),
    (lambda e: e.copy_params_from({}, [1]), gx.ArgumentTypeError, "aux_params must be a dict"),
    (lambda e: e.copy_params_from({"fc_weight": [[1] * 4] * 3}), gx.ArgumentTypeError,
     "argument 'fc_weight' must be an array"),
    (lambda e: e.copy_params_from({"fc_weight": np.array([["a"] * 4] * 3)}),
     gx.ArgumentTypeError, "dtype <U1, which graphexec does not compute with"),
    (lambda e: e.reshape(x="abc"), gx.ArgumentTypeError, "'x': a shape is a tuple"),
    (lambda e: e.reshape(x=((2,), 4)), gx.ArgumentTypeError, "holds tuple"),
    (lambda e: e.reshape(x=(2.5, 4)), gx.ArgumentTypeError, "holds float 2.5"),
    (lambda e: e.reshape(x=(-1, 4)), gx.ArgumentShapeError, "has dimension -1"),
    (lambda e: e.forward(x=np.ones((2, 4), "c8")), gx.ArgumentTypeError, "complex64"),
    (lambda e: e.forward(x=np.array([["a"] * 4] * 2)), gx.ArgumentTypeError, "<U1"),
    (lambda e: e.backward("abc"), gx.ArgumentTypeError, r"out_grads\[0\] must be an array"),
    (lambda e: e.set_monitor_callback(5), gx.ArgumentTypeError, "expected a function"),
])
def test_wrong_arguments_leave_the_executor_usable(exe, call, error, match):
    exe.forward(is_train=True)
    with pytest.raises(error, match=match):
        call(exe)
    _still_works(exe)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"type_dict": {"x": "nope"}}, gx.ArgumentTypeError, r"type_dict\['x'\]: 'nope' is not a"),
    ({"type_dict": {"x": object}}, gx.ArgumentTypeError, "dtype object is not one"),
    ({"type_dict": {"x": 5}}, gx.ArgumentTypeError, "5 is not a dtype"),
    ({"type_dict": [1]}, gx.ArgumentTypeError, "type_dict must be a dict"),
    ({"x": "abc"}, gx.ArgumentTypeError, "shape of 'x'"),
    ({"x": None}, gx.ArgumentTypeError, "shape of 'x'"),
    ({"x": 5}, gx.ArgumentTypeError, "shape of 'x'"),
    ({"x": (True, 4)}, gx.ArgumentTypeError, "holds bool"),
    ({"x": (10 ** 30, 4)}, gx.ArgumentShapeError, "from 0 to 2\\*\\*63-1"),
    ({"x": (2 ** 40, 4)}, gx.AllocationError, "cannot allocate"),
    ({"shared_exec": 5}, gx.ArgumentTypeError, "shared_exec must be an Executor"),
    ({"shared_arg_names": 5, "shared_buffer": {}}, gx.ArgumentTypeError,
     "shared_arg_names must be a list"),
    ({"backend": 5}, gx.ArgumentTypeError, "backend must be a name"),
    ({"backend": "default", "backend_options": [1]}, gx.ArgumentTypeError,
     "backend_options must be a dict"),
    ({"backend": "default", "backend_options": {"default": 5}}, gx.ArgumentTypeError,
     r"backend_options\['default'\] must be a dict"),
])
def test_simple_bind_arguments(kwargs, error, match, subgraph_clean):
    kwargs = {"x": (2, 4), **kwargs}
    with pytest.raises(error, match=match):
        _fc().simple_bind(gx.cpu(), **kwargs)


@pytest.mark.parametrize("call, error, match", [
    (lambda s: s.infer_shape(x="abc"), gx.ArgumentTypeError, "infer_shape: 'x'"),
    (lambda s: s.infer_shape("abc"), gx.ArgumentTypeError, "infer_shape: 'x'"),
    (lambda s: s.infer_type(x="nope"), gx.ArgumentTypeError, "infer_type: 'x'"),
    (lambda s: s[1.5], gx.ArgumentTypeError, "indexed by an output position"),
    (lambda s: s[10], gx.OutputIndexError, "out of range"),
    (lambda s: s["nope"], gx.ArgumentValueError, "no output named 'nope'"),
    (lambda s: s(x=5), gx.ArgumentTypeError, "single-output Symbol"),
    (lambda s: gx.sym.Group([1]), gx.ArgumentTypeError, "list of Symbols"),
    (lambda s: gx.sym.Group(5), gx.ArgumentTypeError, "list of Symbols"),
    (lambda s: gx.sym.Variable("v", dtype="nope"), gx.ArgumentTypeError, "'v': dtype"),
    (lambda s: gx.sym.Variable("v", shape="abc"), gx.ArgumentTypeError, "'v': shape"),
    (lambda s: gx.sym.Variable(5), gx.ArgumentTypeError, "name must be a string"),
    (lambda s: gx.sym.FullyConnected(5, num_hidden=3), gx.ArgumentTypeError, "must be a Symbol"),
    (lambda s: s.save(None), gx.ArgumentTypeError, "expected a file name"),
])
def test_symbol_misuse(call, error, match):
    with pytest.raises(error, match=match):
        call(_fc())


def test_errors_keep_the_builtin_classes_mxnet_code_catches():
    assert issubclass(gx.ArgumentTypeError, TypeError)
    assert issubclass(gx.ArgumentValueError, ValueError)
    assert issubclass(gx.OutputIndexError, IndexError)
    assert issubclass(gx.AllocationError, MemoryError)
    assert issubclass(gx.ConcurrentUseError, RuntimeError)


def test_forward_into_a_read_only_bound_array():
    x = np.zeros((2, 4), "f4")
    x.flags.writeable = False
    exe = _fc().bind(gx.cpu(), {"x": x, "fc_weight": np.ones((3, 4), "f4"),
                                "fc_bias": np.zeros(3, "f4")})
    with pytest.raises(gx.BindError, match="forward argument 'x' is bound to a read-only "
                                           "array.*np.array"):
        exe.forward(x=np.ones((2, 4), "f4"))
    np.testing.assert_array_equal(exe.forward()[0], np.zeros((2, 3)))


# -- backend options (item 14) ---------------------------------------------------------------------
@pytest.mark.parametrize("backend, options, error, match", [
    ("onnxrt", {"onnxrt": {"exclude_ops": "FullyConected"}}, gx.UnknownOpError,
     "exclude_ops names 'FullyConected', which is not a registered operator; did you mean "
     "FullyConnected"),
    ("fused", {"fused": {"exclude_ops": ["exp", "tanhh"]}}, gx.UnknownOpError, "'tanhh'"),
    ("onnxrt", {"onnxrt": {"min_size": -1}}, gx.GraphexecError, "min_size=-1: expected an "
                                                                "integer >= 1"),
    ("default", {"default": {"min_size": True}}, gx.GraphexecError, "min_size=True"),
    ("onnxrt", {"onxrt": {"threads": 1}}, gx.UnknownBackendError,
     "backend_options: subgraph backend 'onxrt' is not registered"),
])
def test_typos_in_backend_options_are_errors(backend, options, error, match, subgraph_clean):
    with pytest.raises(error, match=match):
        _fc().simple_bind(gx.cpu(), x=(2, 4), grad_req="null", backend=backend,
                          backend_options=options)


def test_environment_options_are_checked_too(monkeypatch, subgraph_clean):
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "onnxrt:exclude_ops=FullyConected")
    with pytest.raises(gx.UnknownOpError, match="'FullyConected'"):
        _fc().simple_bind(gx.cpu(), x=(2, 4), grad_req="null")


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no compiled loop tries frozen arrays
def test_training_beside_an_onnxrt_executor_names_the_frozen_region(subgraph_clean):
    data = gx.sym.Variable("data")
    net = gx.sym.BatchNorm(gx.sym.FullyConnected(data, num_hidden=4, name="fc"), name="bn",
                           fix_gamma=False)
    net = gx.sym.SoftmaxOutput(net, name="sm")
    train = net.simple_bind(gx.cpu(), data=(3, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        infer = net.bind(gx.cpu(), dict(train.arg_dict), grad_req="null",
                         aux_states=train.aux_dict, backend="onnxrt")
        infer.forward()
    train.forward(is_train=True)
    with pytest.raises(gx.KernelError) as err:
        train.backward()
    msg = str(err.value)
    assert "'bn_moving_mean'" in msg and "onnxrt region 'onnxrt_subgraph0'" in msg
    assert "freeze_params" in msg and "'freeze_params': False" in msg
    del infer, err  # once collected, the region lets the arrays go: training works again
    gc.collect()
    train.forward(is_train=True)
    train.backward()
