"""Runtime fault isolation (issue #15): region runners cannot corrupt what they must not
write and the fallback computes from intact inputs (item 5); an executor used by two threads
at once raises instead of computing wrong values, separate executors run in parallel
threads (item 6); the executor stays usable after every error."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.subgraph import SubgraphBackend, SubgraphProperty, register_backend
from graphexec.core.subgraph.api import _BACKENDS


# -- region runners ---------------------------------------------------------------------
class _Vandal(SubgraphProperty):
    """Claims exp and sin; its runner writes zeros into its inputs, then (``fail``) raises."""

    name = "vandal"
    default_attrs = {"op_names": frozenset({"exp", "sin"})}
    fail = False

    def create_runner(self, region):
        def run():
            for x in region.inputs:
                x[...] = 0
            for y in region.outputs:
                y[...] = 42
            if self.fail:
                raise RuntimeError("gave up")
        return run


@pytest.fixture(params=[False, True], ids=["writes", "writes-then-raises"])
def vandal(request, subgraph_clean):
    prop = _Vandal()
    prop.fail = request.param
    register_backend("vandal", lambda: SubgraphBackend("vandal", [prop]))
    yield
    _BACKENDS.pop("vandal", None)


def test_a_runner_cannot_write_its_inputs_and_the_fallback_sees_them_intact(vandal):
    x = gx.sym.Variable("x")
    y = gx.sym.sin(gx.sym.exp(x * 2)) + x
    data = np.linspace(-1, 1, 6, dtype="f4").reshape(2, 3)
    exe = y.bind(gx.cpu(), {"x": data.copy()}, grad_req="null", backend="vandal")
    with pytest.warns(RuntimeWarning, match="region 'vandal_subgraph0' of backend 'vandal' runs "
                                            "with the native kernels instead: running it "
                                            "failed: ValueError: .*read-only"):
        out = exe.forward()[0]
    np.testing.assert_array_equal(exe.arg_dict["x"], data)  # the caller's array is intact
    np.testing.assert_allclose(out, np.sin(np.exp(data * 2)) + data, rtol=1e-6)
    assert exe.partition_plan.fallbacks == 1
    np.testing.assert_allclose(exe.forward()[0], out)  # later runs take the fallback


def test_runners_may_write_auxiliary_states_and_fix_gamma(subgraph_clean):
    """A region's native kernels still update BatchNorm's moving statistics and reset a
    trained gamma under fix_gamma, as MXNet does."""
    gx.subgraph.set_op_names("default", {"BatchNorm", "relu"})
    data = gx.sym.Variable("data")
    net = gx.sym.relu(gx.sym.BatchNorm(data, fix_gamma=True, momentum=0.5, name="bn"))
    exe = net.simple_bind(gx.cpu(), data=(4, 3), backend="default")
    exe.arg_dict["bn_gamma"][:] = 3
    exe.arg_dict["data"][:] = np.arange(12, dtype="f4").reshape(4, 3)
    exe.forward(is_train=True)
    exe.backward(np.ones((4, 3), "f4"))
    assert (exe.arg_dict["bn_gamma"] == 1).all()
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"], [2.25, 2.75, 3.25])


# -- threads ----------------------------------------------------------------------------------
def _chain(depth=3):
    x = gx.sym.Variable("x")
    y = x
    for _ in range(depth):
        y = gx.sym.tanh(y * 1.5 + 0.1)
    return y


def _reference(x, depth=3):
    for _ in range(depth):
        x = np.tanh(x * 1.5 + 0.1)
    return x


def test_forward_on_a_busy_executor_raises_and_the_executor_stays_usable():
    exe = _chain().simple_bind(gx.cpu(), x=(4,), grad_req="null")
    inside, released = threading.Event(), threading.Event()
    caught = []

    def callback(name, array):
        if not inside.is_set():
            inside.set()
            released.wait(30)

    def other_thread():
        inside.wait(30)
        try:
            exe.forward(x=np.zeros(4, "f4"))
        except gx.ConcurrentUseError as exc:
            caught.append(str(exc))
        finally:
            released.set()
    exe.set_monitor_callback(callback)
    t = threading.Thread(target=other_thread)
    t.start()
    exe.forward(x=np.ones(4, "f4"))
    t.join(30)
    assert len(caught) == 1 and "running in another thread" in caught[0]
    assert "one executor per thread" in caught[0]
    exe.set_monitor_callback(None)
    np.testing.assert_allclose(exe.forward(x=np.ones(4, "f4"))[0], _reference(np.ones(4)),
                               rtol=1e-6)


def test_reentering_from_a_callback_and_executors_sharing_memory_are_detected():
    exe = _chain().simple_bind(gx.cpu(), x=(4,))
    small = exe.reshape(x=(2,))  # shares exe's memory pool
    seen = []

    def callback(name, array):
        for call in (lambda: exe.forward(), lambda: small.forward(),
                     lambda: exe.copy_params_from({"x": np.zeros(4, "f4")})):
            with pytest.raises(gx.ConcurrentUseError):
                call()
            seen.append(name)
    exe.set_monitor_callback(callback)
    exe.forward(is_train=True)
    assert seen
    exe.set_monitor_callback(None)
    exe.backward(np.ones(4, "f4"))  # usable afterwards
    small.forward()


@pytest.mark.parametrize("backend", ["NONE", "default", "onnxrt"])
def test_separate_executors_run_in_parallel_threads(backend, subgraph_clean):
    gx.subgraph.set_op_names("default", {"tanh", "_mul_scalar", "_plus_scalar"})
    threads, errors = 4, []
    barrier = threading.Barrier(threads)
    sym = _chain(6)

    def work(k):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exe = sym.simple_bind(gx.cpu(), x=(64,), grad_req="null", backend=backend)
            barrier.wait(30)
            for i in range(200):
                x = np.full(64, (k * 200 + i) / 1000, "f4")
                out = exe.forward(x=x)[0]
                np.testing.assert_allclose(out, _reference(x.astype("f8"), 6), rtol=1e-5,
                                           atol=1e-6)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(120)
    assert errors == []


# -- zero-size batches ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [{}, {"multi_output": True}, {"preserve_shape": True}])
@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
def test_an_empty_batch_trains_through_fully_connected_and_softmax_output(mode, normalization):
    data = gx.sym.Variable("data")
    net = gx.sym.SoftmaxOutput(gx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                               normalization=normalization, name="sm", **mode)
    args = {"data": np.zeros((0, 4), "f4"), "fc_weight": np.ones((3, 4), "f4"),
            "fc_bias": np.zeros(3, "f4"), "sm_label": np.zeros((0,), "f4")}
    grads = {k: np.full_like(v, 7) for k, v in args.items()}
    exe = net.bind(gx.cpu(), args, args_grad=grads)
    assert exe.forward(is_train=True)[0].shape == (0, 3)
    exe.backward()
    assert (exe.grad_dict["fc_weight"] == 0).all() and (exe.grad_dict["fc_bias"] == 0).all()
    assert exe.grad_dict["data"].shape == (0, 4)


# -- region nodes from a file: what they store about their backend --------------------------------
def _partitioned_doc() -> dict:
    import json
    x = gx.sym.Variable("data")
    net = gx.sym.cos(gx.sym.sin(x, name="s"), name="c")
    return json.loads(gx.partition(net, "default", op_names={"sin", "cos"}).symbol.tojson())


@pytest.mark.parametrize("key, value, match", [
    ("__property__", "7", "__property__='7' is not the index"),
    ("__property__", "-1", "__property__='-1' is not the index"),
    ("__options__", "[1, 2]", "__options__ must be a JSON object"),
    ("__options__", "{not json", "__options__ must be a JSON object"),
    ("__options__", '{"min_size": -3}', "rejects the options stored in the node"),
])
def test_a_region_node_with_unusable_backend_fields_is_a_bind_error(key, value, match):
    import json
    doc = _partitioned_doc()
    region = next(n for n in doc["nodes"] if n["op"] == "_subgraph_op")
    region["attrs"][key] = value
    sym = gx.sym.load_json(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no silent fallback to native
        with pytest.raises(gx.BindError, match=match) as info:
            sym.simple_bind(gx.cpu(), data=(2, 3)).forward()
    assert repr(region["name"]) in str(info.value)
