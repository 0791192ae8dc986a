"""gx.metric against values recorded from MXNet 1.9.1 (local and global statistics over
three updates, with reset_local after the second)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

REF = json.loads((Path(__file__).parent / "data" / "harness" / "reference.json").read_text())
BATCHES = REF["metric_batches"]


@pytest.mark.parametrize("case", REF["metrics"],
                         ids=lambda c: f"{c['name']}-{'-'.join(map(str, c['kwargs'].values()))}")
def test_metrics_match_mxnet(case):
    metric = gx.metric.create(case["name"], **case["kwargs"])
    for k, (batch, want) in enumerate(zip(BATCHES, case["values"])):
        metric.update([gx.nd.array(batch[case["label"]])], [gx.nd.array(batch[case["pred"]])])
        got = [metric.get()[1], metric.get_global()[1]]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        if k == 1:
            metric.reset_local()
    assert metric.get()[0] == case["metric_name"]


def test_composite_and_custom_metrics():
    batch = BATCHES[0]
    composite = gx.metric.create(["acc", "ce"])
    composite.update([gx.nd.array(batch["labels"])], [gx.nd.array(batch["probs"])])
    names, values = composite.get()
    assert names == REF["composite"][0]
    np.testing.assert_allclose(values, REF["composite"][1], rtol=1e-6)

    def total(label, pred):
        return float((label == pred.argmax(axis=1)).sum()), len(label)
    custom = gx.metric.create(total)
    custom.update([gx.nd.array(batch["labels"])], [gx.nd.array(batch["probs"])])
    assert custom.get() == ("total", pytest.approx(values[0]))
    mean = gx.metric.np(lambda label, pred: float(np.mean(pred)))
    mean.update([gx.nd.array([1.0])], [gx.nd.array([0.5, 1.5])])
    assert mean.get()[1] == pytest.approx(1.0)


def test_metric_errors_are_clear():
    with pytest.raises(ValueError, match="unknown metric 'acuracy'.*did you mean accuracy"):
        gx.metric.create("acuracy")
    with pytest.raises(gx.metric.MetricError, match="Shape of labels 2 does not match"):
        gx.metric.Accuracy().update([gx.nd.zeros(3)] * 2, [gx.nd.zeros((3, 2))])
    with pytest.raises(gx.metric.MetricError, match="only supports binary"):
        gx.metric.F1().update([gx.nd.array([0, 1, 2])], [gx.nd.zeros((3, 2))])
