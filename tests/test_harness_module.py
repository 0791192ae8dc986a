"""gx.mod.Module: fit / score / predict / checkpoints, data parallelism over contexts through
the KVStore (the same numbers as one context), and clear errors for bad input."""
from __future__ import annotations

import collections
import logging

import numpy as np
import pytest

import graphexec as gx


def _data(n=200, features=20, classes=4, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.normal(0, 1, (classes, features))
    y = rng.randint(0, classes, n)
    x = (centers[y] + rng.normal(0, 0.5, (n, features))).astype("f4")
    return x, y.astype("f4")


def _mlp(hidden=16, classes=4):
    net = gx.sym.FullyConnected(gx.sym.Variable("data"), num_hidden=hidden, name="fc1")
    net = gx.sym.Activation(net, act_type="relu", name="relu1")
    net = gx.sym.FullyConnected(net, num_hidden=classes, name="fc2")
    return gx.sym.SoftmaxOutput(net, name="softmax")


def _trained(context=None, kvstore="local", steps=5, **fit):
    x, y = _data()
    it = gx.io.NDArrayIter(x, y, batch_size=20)
    mod = gx.mod.Module(_mlp(), context=context or gx.cpu())
    gx.random.seed(0)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(gx.init.Xavier())
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3})
    for _, batch in zip(range(steps), it):
        mod.forward_backward(batch)
        mod.update()
    return mod


def test_fit_score_predict_and_checkpoints(tmp_path, caplog):
    x, y = _data()
    train = gx.io.NDArrayIter(x[:150], y[:150], batch_size=20, shuffle=True)
    val = gx.io.NDArrayIter(x[150:], y[150:], batch_size=20)  # 50 examples: last batch padded
    mod = gx.mod.Module(_mlp())
    with caplog.at_level(logging.INFO):
        mod.fit(train, eval_data=val, optimizer="sgd", initializer=gx.init.Xavier(),
                optimizer_params={"learning_rate": 0.2}, eval_metric="acc", num_epoch=4,
                batch_end_callback=gx.callback.Speedometer(20, 2),
                epoch_end_callback=gx.callback.do_checkpoint(str(tmp_path / "m")))
    assert "Epoch[3] Validation-accuracy=" in caplog.text and "samples/sec" in caplog.text
    acc = mod.score(val, "acc")[0][1]
    assert acc > 0.9
    probs = mod.predict(val)
    assert probs.shape == (50, 4)  # padding dropped
    assert np.mean(probs.asnumpy().argmax(1) == y[150:]) == pytest.approx(acc)
    outs = [o[0].shape[0] for o, _, _ in mod.iter_predict(val)]
    assert outs == [20, 20, 10]
    mod.save_checkpoint(str(tmp_path / "ck"), 4, save_optimizer_states=True)
    back = gx.mod.Module.load(str(tmp_path / "ck"), 4, load_optimizer_states=True)
    back.bind(val.provide_data, val.provide_label, for_training=False)
    np.testing.assert_allclose(back.predict(val).asnumpy(), probs.asnumpy(), rtol=1e-6)
    sym, args, _ = gx.model.load_checkpoint(str(tmp_path / "m"), 4)  # do_checkpoint's files
    np.testing.assert_allclose(args["fc1_weight"], mod.get_params()[0]["fc1_weight"].asnumpy())
    back.init_optimizer(optimizer_params={"learning_rate": 0.2})  # reads the .states file
    assert back._updater.states == {0: None, 1: None, 2: None, 3: None}  # loaded


@pytest.mark.parametrize("kvstore, update_on_kvstore", [("local", "1"), ("device", "0")])
def test_two_contexts_train_like_one(monkeypatch, kvstore, update_on_kvstore):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", update_on_kvstore)
    one = _trained()
    two = _trained(context=[gx.cpu(0), gx.cpu(1)], kvstore=kvstore)
    assert two._kvstore is not None and two._update_on_kvstore == (update_on_kvstore == "1")
    for name, value in one.get_params()[0].items():
        np.testing.assert_allclose(two.get_params()[0][name].asnumpy(), value.asnumpy(),
                                   rtol=2e-5, atol=1e-6)
    execs = two._exec_group.execs
    assert execs[0].arg_dict["data"].shape == (10, 20)
    np.testing.assert_array_equal(execs[0].arg_dict["fc1_weight"], execs[1].arg_dict["fc1_weight"])


def test_work_load_list_and_merged_outputs():
    x, y = _data()
    it = gx.io.NDArrayIter(x, y, batch_size=20)
    mod = gx.mod.Module(_mlp(), context=[gx.cpu(0), gx.cpu(1)], work_load_list=[3, 1])
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params()
    assert [e.arg_dict["data"].shape[0] for e in mod._exec_group.execs] == [15, 5]
    mod.forward(next(it))
    assert mod.get_outputs()[0].shape == (20, 4)
    assert len(mod.get_outputs(merge_multi_context=False)[0]) == 2
    assert mod.output_shapes == [("softmax_output", (20, 4))]


def test_fixed_params_input_grads_and_head_gradients():
    x, y = _data()
    it = gx.io.NDArrayIter(x, y, batch_size=20)
    mod = gx.mod.Module(_mlp(), fixed_param_names=["fc1_weight"])
    mod.bind(it.provide_data, it.provide_label, inputs_need_grad=True)
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    before = mod.get_params()[0]["fc1_weight"].asnumpy().copy()
    batch = next(it)
    mod.forward_backward(batch)
    mod.update()
    np.testing.assert_array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), before)
    assert mod.get_input_grads()[0].shape == (20, 20)
    head = gx.mod.Module(gx.sym.FullyConnected(gx.sym.Variable("data"), num_hidden=3,
                                               name="fc"), label_names=None)
    head.bind([("data", (4, 2))])
    head.init_params(gx.init.One())
    head.forward(gx.io.DataBatch([gx.nd.ones((4, 2))]), is_train=True)
    head.backward([gx.nd.ones((4, 3))])
    np.testing.assert_array_equal(head._exec_group.grad_arrays[0][0].asnumpy(),
                                  np.full((3, 2), 4.0))


def test_forward_reshapes_for_a_new_batch_size_and_takes_batches_without_labels():
    mod = gx.mod.Module(_mlp())
    mod.bind([("data", (20, 20))], [("softmax_label", (20,))], for_training=False)
    mod.init_params()
    mod.forward(gx.io.DataBatch([gx.nd.ones((7, 20))], [gx.nd.zeros(7)]))
    assert mod.get_outputs()[0].shape == (7, 4)
    Batch = collections.namedtuple("Batch", ["data"])  # MXNet's prediction idiom
    mod.forward(Batch([gx.nd.ones((7, 20))]))
    assert mod.get_outputs()[0].shape == (7, 4)


def test_sequential_module_chains_modules():
    x, y = _data()
    it = gx.io.NDArrayIter(x, y, batch_size=20)
    first = gx.mod.Module(gx.sym.Activation(gx.sym.FullyConnected(
        gx.sym.Variable("data"), num_hidden=16, name="a"), act_type="relu"), label_names=None)
    second = gx.mod.Module(gx.sym.SoftmaxOutput(gx.sym.FullyConnected(
        gx.sym.Variable("hidden"), num_hidden=4, name="b"), name="softmax"),
        data_names=["hidden"])
    seq = gx.mod.SequentialModule().add(first).add(second, take_labels=True, auto_wiring=True)
    seq.fit(it, optimizer_params={"learning_rate": 0.2}, initializer=gx.init.Xavier(),
            num_epoch=5)
    assert seq.score(it, "acc")[0][1] > 0.9
    assert sorted(seq.get_params()[0]) == ["a_bias", "a_weight", "b_bias", "b_weight"]


def test_bad_input_gives_clear_errors():
    x, y = _data()
    it = gx.io.NDArrayIter(x, y, batch_size=20)
    with pytest.raises(gx.mod.ModuleError, match="input with name 'image' is not found"):
        gx.mod.Module(_mlp(), data_names=["image"])
    mod = gx.mod.Module(_mlp())
    with pytest.raises(gx.mod.ModuleStateError, match="call bind\\(\\) and init_params\\(\\)"):
        mod.forward(next(it))
    with pytest.raises(gx.mod.ModuleError, match="don't match names specified by data_names"):
        mod.bind([("pixels", (20, 20))])
    with pytest.raises(ValueError, match="unknown optimizer 'sgdd'"):
        mod.fit(it, optimizer="sgdd", num_epoch=1)
    mod = gx.mod.Module(_mlp())
    with pytest.raises(ValueError, match="unknown metric 'accuracyy'"):
        mod.fit(it, eval_metric="accuracyy", num_epoch=1)
    conv = gx.sym.SoftmaxOutput(gx.sym.Convolution(gx.sym.Variable("data"), kernel=(3, 3),
                                                   num_filter=2), name="softmax")
    with pytest.raises(gx.GraphexecError, match="binding the module .*data: \\(20, 20\\)"):
        gx.mod.Module(conv).fit(it, num_epoch=1)
    mod = gx.mod.Module(_mlp())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    batch = gx.io.DataBatch([gx.nd.ones((20, 20))], [gx.nd.zeros(21)])
    with pytest.raises(gx.mod.ModuleError, match="label array of the batch has shape \\(21,\\): 21 examples.*batches of 20"):
        mod.forward(batch)
