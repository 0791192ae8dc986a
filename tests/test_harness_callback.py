"""gx.callback: MXNet's messages and checkpoint files; Module state inputs."""
from __future__ import annotations

import logging

import numpy as np

import graphexec as gx


def _param(nbatch, metric=None, epoch=0):
    return gx.callback.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric, locals={})


def test_speedometer_log_train_metric_and_progress_bar(caplog):
    metric = gx.metric.Accuracy()
    metric.update([gx.nd.array([1, 0])], [gx.nd.array([[0, 1], [0, 1]])])
    speed = gx.callback.Speedometer(batch_size=10, frequent=2)
    with caplog.at_level(logging.INFO):
        for n in range(5):
            speed(_param(n, metric))
        gx.callback.log_train_metric(2, auto_reset=True)(_param(4, metric))
        gx.callback.ProgressBar(total=4, length=8)(_param(2))
    lines = caplog.messages
    assert lines[0].startswith("Epoch[0] Batch [0-2]\tSpeed: ") and "accuracy=0.500000" in lines[0]
    assert lines[1].startswith("Epoch[0] Batch [2-4]") and "accuracy=nan" in lines[1]  # reset
    assert lines[2] == "Iter[0] Batch[4] Train-accuracy=nan"
    assert lines[3] == "[====----] 50%\r"  # standard error is not a terminal under pytest


def test_checkpoint_callbacks_write_mxnet_files(tmp_path):
    net = gx.sym.FullyConnected(gx.sym.Variable("data"), num_hidden=2, name="fc")
    args = {"fc_weight": gx.nd.ones((2, 3)), "fc_bias": gx.nd.zeros(2)}
    save = gx.callback.do_checkpoint(str(tmp_path / "m"), period=2)
    save(0, net, args, {})
    save(1, net, args, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-0002.params", "m-symbol.json"]
    mod = gx.mod.Module(gx.sym.SoftmaxOutput(net, name="softmax"))
    mod.bind([("data", (4, 3))], [("softmax_label", (4,))])
    mod.init_params()
    gx.callback.module_checkpoint(mod, str(tmp_path / "mod"))(0)
    assert (tmp_path / "mod-0001.params").exists()


def test_state_inputs_are_kept_and_set():
    data, state = gx.sym.Variable("data"), gx.sym.Variable("state")
    net = gx.sym.FullyConnected(data, num_hidden=3, name="fc") + state
    mod = gx.mod.Module(net, data_names=["data"], label_names=None, state_names=["state"])
    mod.bind([("data", (2, 4))], for_training=False)
    mod.init_params(gx.init.Zero())
    mod.set_states(value=1.5)
    mod.forward(gx.io.DataBatch([gx.nd.ones((2, 4))]))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((2, 3), 1.5))
    assert mod.get_states(merge_multi_context=False)[0][0].shape == (2, 3)
