"""gx.nd: NDArray idioms, operators run imperatively through the kernels, creation,
arithmetic, random, save/load."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import graphexec as gx
from graphexec.harness.ndarray import imperative


def test_ndarray_idioms():
    x = gx.nd.array([[1, 2], [3, 4]])
    assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.context == gx.cpu()
    assert type(x.asnumpy()) is np.ndarray and x.asnumpy().sum() == 10
    assert x[1, 1].asscalar() == 4 and x.sum().asscalar() == 10
    x[:] = 5
    assert (x.asnumpy() == 5).all()
    y = x.copyto(gx.cpu(1))
    assert y.context == gx.cpu(1) and y is not x and x.as_in_context(gx.cpu()) is x
    z = gx.nd.zeros((2, 2))
    assert x.copyto(z) is z and (z.asnumpy() == 5).all()
    assert x.reshape((0, -1)).shape == (2, 2) and x.reshape((-3,)).shape == (4,)
    assert x.reshape(shape=(4, 1), reverse=False).shape == (4, 1)
    assert x.transpose(axes=(1, 0)).shape == (2, 2)
    assert "<NDArray 2x2 @cpu(0)>" in repr(x)
    back = pickle.loads(pickle.dumps(y))
    assert back.context == gx.cpu(1) and (back.asnumpy() == 5).all()
    with pytest.raises(ValueError, match="not a scalar"):
        x.asscalar()


def test_executor_arrays_are_ndarrays():
    exe = gx.sym.FullyConnected(gx.sym.Variable("data"), num_hidden=3, name="fc").simple_bind(
        gx.cpu(), data=(2, 4))
    out = exe.forward()[0]
    assert isinstance(out, gx.nd.NDArray) and out.asnumpy().shape == (2, 3)
    assert isinstance(exe.arg_dict["fc_weight"], gx.nd.NDArray)
    plain = np.ones((2, 4), "f4")
    exe2 = gx.sym.relu(gx.sym.Variable("a")).bind(gx.cpu(), {"a": plain})
    assert exe2.arg_dict["a"] is plain  # arrays a user binds are kept as they are


def test_operators_run_imperatively_with_mxnet_calling_conventions():
    x = gx.nd.array([[1.0, -2.0], [3.0, 0.5]])
    w, b = gx.nd.ones((3, 2)), gx.nd.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(gx.nd.FullyConnected(x, w, b, num_hidden=3).asnumpy(),
                               x.asnumpy() @ np.ones((2, 3)) + [0, 1, 2])
    np.testing.assert_allclose(gx.nd.FullyConnected(data=x, weight=w, no_bias=True,
                                                    num_hidden=3).asnumpy(),
                               x.asnumpy() @ np.ones((2, 3)))
    np.testing.assert_allclose(x.relu().asnumpy(), np.maximum(x.asnumpy(), 0))
    np.testing.assert_allclose(gx.nd.softmax(x, axis=0).asnumpy().sum(axis=0), [1, 1], rtol=1e-6)
    assert gx.nd.sum(x).shape == (1,)  # MXNet's reductions keep one dimension
    parts = x.split(2, axis=1)
    assert len(parts) == 2 and parts[0].shape == (2, 1)
    assert gx.nd.argmax(x, axis=1).dtype == np.float32
    np.testing.assert_array_equal(gx.nd.round(gx.nd.array([0.5, 1.5, -0.5])).asnumpy(),
                                  [1, 2, -1])
    out = gx.nd.zeros((2, 2))
    assert gx.nd.exp(x, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), np.exp(x.asnumpy()), rtol=1e-6)
    gx.nd.relu(x, out=x)  # in place
    assert (x.asnumpy() >= 0).all()
    np.testing.assert_allclose(gx.nd.concat(x, x, dim=0).asnumpy(), np.vstack([x, x]))


def test_imperative_plans_are_cached_per_signature():
    x = gx.nd.ones((3, 5))
    gx.nd.tanh(x)
    before = imperative.cached_plans()
    for _ in range(3):
        gx.nd.tanh(gx.nd.ones((3, 5)))
    assert imperative.cached_plans() == before
    gx.nd.tanh(gx.nd.ones((4, 5)))
    assert imperative.cached_plans() == before + 1


def test_creation_arithmetic_and_random():
    assert gx.nd.arange(0, 6, 2, repeat=2).asnumpy().tolist() == [0, 0, 2, 2, 4, 4]
    assert gx.nd.full((2,), 3, dtype="int32").dtype == np.int32
    assert gx.nd.eye(3, k=1).asnumpy()[0, 1] == 1
    assert gx.nd.moveaxis(gx.nd.zeros((2, 3, 4)), 0, 2).shape == (3, 4, 2)
    a, b = gx.nd.array([1, 2, 3]), gx.nd.array([[1], [2]])
    assert gx.nd.add(a, b).shape == (2, 3) and gx.nd.subtract(10, a).asnumpy().tolist() == [9, 8, 7]
    assert gx.nd.greater(a, 2).asnumpy().tolist() == [0, 0, 1]
    assert gx.nd.maximum(2.0, 3.0) == 3.0
    gx.random.seed(7)
    u = gx.nd.random.uniform(-1, 1, shape=(1000,))
    gx.random.seed(7)
    assert (gx.nd.random.uniform(-1, 1, shape=(1000,)).asnumpy() == u.asnumpy()).all()
    assert -1 <= u.asnumpy().min() and u.asnumpy().max() < 1 and u.dtype == np.float32
    assert gx.nd.random.randint(0, 5, shape=(4,)).dtype == np.int32
    assert gx.nd.random.normal(gx.nd.array([0, 10]), 1, shape=3).shape == (2, 3)
    assert gx.nd.random.uniform().shape == (1,)
    probs = gx.nd.array([[0, 1, 0], [1, 0, 0]])
    assert gx.nd.random.multinomial(probs).asnumpy().tolist() == [1, 0]


def test_save_and_load(tmp_path):
    data = {"a": gx.nd.ones((2, 3)), "b": gx.nd.arange(4)}
    gx.nd.save(str(tmp_path / "x.nd"), data)
    back = gx.nd.load(str(tmp_path / "x.nd"))
    assert isinstance(back["a"], gx.nd.NDArray) and back["b"].asnumpy().tolist() == [0, 1, 2, 3]
    gx.nd.save(str(tmp_path / "y.nd"), [gx.nd.zeros(2)])
    assert isinstance(gx.nd.load(str(tmp_path / "y.nd")), list)


def test_bad_calls_are_clear_errors():
    with pytest.raises(AttributeError, match="no attribute .nosuchop. \\(no function or registered operator"):
        gx.nd.nosuchop
    with pytest.raises(TypeError, match="FullyConnected: input 'weight' is missing"):
        gx.nd.FullyConnected(gx.nd.ones((2, 2)), num_hidden=3)
    with pytest.raises(TypeError, match="takes 1 inputs and 0 attributes"):
        gx.nd.relu(gx.nd.ones(2), 3)
    # attributes positionally after the inputs, as MXNet's generated functions take them
    assert gx.nd.tile(gx.nd.ones((2, 2)), (1, 2)).shape == (2, 4)
    assert gx.nd.clip(gx.nd.array([0, 5]), 1, 3).tolist() == [1, 3]
    with pytest.raises(gx.GraphexecError, match="FullyConnected"):
        gx.nd.FullyConnected(gx.nd.ones((2, 2)), gx.nd.ones((3, 5)), gx.nd.ones(3),
                             num_hidden=3)
    with pytest.raises(ValueError, match="out\\[0\\] has shape \\(3,\\), the result has shape"):
        gx.nd.exp(gx.nd.ones(2), out=gx.nd.ones(3))


def test_nd_contrib_namespace():
    x = gx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    got = gx.nd.contrib.div_sqrt_dim(x)   # _contrib_div_sqrt_dim: x / sqrt(last dim)
    np.testing.assert_allclose(got, x.asnumpy() / np.sqrt(2), rtol=1e-6)
    assert "div_sqrt_dim" in dir(gx.nd.contrib)
    with pytest.raises(AttributeError, match="_contrib_nosuch"):
        gx.nd.contrib.nosuch


def test_none_is_the_value_none_for_a_declared_attribute():
    """As MXNet's generated functions: ``topk(axis=None)`` and ``sort(axis=None)`` take the
    flattened data (MXNet 1.9.1: [23, 22] for arange(24) in (2, 3, 4)); None for an
    attribute that takes no None is an error, as there."""
    x = gx.nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert gx.nd.topk(x, k=2, axis=None).tolist() == [23, 22]
    assert gx.nd.sort(x, axis=None).shape == (24,)
    assert gx.nd.topk(x, k=1).shape == (2, 3, 1)  # not given: the default, the last axis
    with pytest.raises(gx.GraphexecError, match="stride"):
        gx.nd.Pooling(x.reshape((1, 2, 3, 4)), kernel=(2, 2), pool_type="max", stride=None)
