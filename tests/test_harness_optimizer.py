"""gx.optimizer and gx.lr_scheduler against values recorded from MXNet 1.9.1
(tests/data/harness/make_reference.py)."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx

DATA = Path(__file__).parent / "data" / "harness"
REF = json.loads((DATA / "reference.json").read_text())
ARRAYS = np.load(DATA / "optimizers.npz")


def _run(opt, steps=3, dtype="float32"):
    updater = gx.optimizer.get_updater(opt)
    w = gx.nd.array(ARRAYS["weight"], dtype=dtype)
    out = []
    for k in range(steps):
        updater(0, gx.nd.array(ARRAYS[f"grad{k}"], dtype=dtype), w)
        out.append(w.asnumpy().copy())
    return out


@pytest.mark.parametrize("n", range(len(REF["optimizers"])),
                         ids=[f"{c['name']}-{i}" for i, c in enumerate(REF["optimizers"])])
def test_optimizer_updates_match_mxnet(n):
    case = REF["optimizers"][n]
    opt = gx.optimizer.create(case["name"], param_idx2name={0: "fc_weight"}, **case["kwargs"])
    for k, got in enumerate(_run(opt)):
        np.testing.assert_allclose(got, ARRAYS[f"opt{n}/step{k}"], rtol=2e-6, atol=1e-7)


def test_adamw_is_the_adamw_update_operator_with_bias_corrected_lr():
    case = REF["adamw"]
    opt = gx.optimizer.AdamW(learning_rate=case["learning_rate"], wd=case["wd"],
                             epsilon=case["epsilon"], rescale_grad=case["rescale_grad"])
    for k, got in enumerate(_run(opt)):
        np.testing.assert_allclose(got, ARRAYS[f"adamw/step{k}"], rtol=2e-6, atol=1e-7)


def test_multi_precision_sgd_updates_float16_weights_through_a_master_copy():
    opt = gx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, multi_precision=True)
    got = _run(opt, dtype="float16")[-1]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, ARRAYS["sgd_fp16"])


def test_lr_and_wd_multipliers_follow_names_symbol_attributes_and_set_lr_mult():
    data = gx.sym.Variable("data")
    w = gx.sym.Variable("fc_weight", lr_mult=2.0)
    b = gx.sym.Variable("fc_bias", wd_mult=3.0)
    net = gx.sym.BatchNorm(gx.sym.FullyConnected(data, w, b, num_hidden=3, name="fc"), name="bn")
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta", 4: "other"}
    opt = gx.optimizer.SGD(learning_rate=0.1, wd=0.01, sym=net, param_idx2name=names)
    opt.set_lr_mult({"bn_beta": 0.5})
    assert [opt._get_lr(i) for i in range(5)] == pytest.approx(REF["mults"]["lr"])
    assert [opt._get_wd(i) for i in range(5)] == pytest.approx(REF["mults"]["wd"])


@pytest.mark.parametrize("case", REF["schedulers"], ids=lambda c: c["name"])
def test_lr_schedulers_match_mxnet(case):
    sched = getattr(gx.lr_scheduler, case["name"])(**case["kwargs"])
    assert [sched(n) for n in range(12)] == pytest.approx(case["values"], rel=1e-12)


def test_scheduler_drives_the_optimizer_learning_rate():
    sched = gx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = gx.optimizer.SGD(lr_scheduler=sched)
    _run(opt, steps=3)
    assert opt.num_update == 3 and opt.learning_rate == pytest.approx(0.25)


def test_updater_states_round_trip_through_pickle():
    opt = gx.optimizer.create("adam", learning_rate=0.01)
    updater = gx.optimizer.get_updater(opt)
    w = gx.nd.array(ARRAYS["weight"])
    updater(0, gx.nd.array(ARRAYS["grad0"]), w)
    restored = gx.optimizer.get_updater(gx.optimizer.create("adam", learning_rate=0.01))
    restored.set_states(updater.get_states(dump_optimizer=True))
    assert restored.optimizer._index_update_count == {0: 1}
    w2 = w.copy()
    updater(0, gx.nd.array(ARRAYS["grad1"]), w)
    restored(0, gx.nd.array(ARRAYS["grad1"]), w2)
    np.testing.assert_array_equal(w.asnumpy(), w2.asnumpy())
    assert isinstance(pickle.loads(updater.get_states()), dict)


def test_updater_takes_lists_of_indices():
    opt = gx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9)
    updater = gx.optimizer.get_updater(opt)
    ws = [gx.nd.array(ARRAYS["weight"]), gx.nd.array(ARRAYS["weight"])]
    updater([0, 1], [gx.nd.array(ARRAYS["grad0"])] * 2, ws)
    np.testing.assert_array_equal(ws[0].asnumpy(), ws[1].asnumpy())
    assert sorted(updater.states) == [0, 1]


def test_unknown_optimizer_and_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unknown optimizer 'sdg'.*did you mean sgd"):
        gx.optimizer.create("sdg")
    with pytest.raises(TypeError, match="momentun"):
        gx.optimizer.create("sgd", momentun=0.9)
    with pytest.raises(gx.lr_scheduler.SchedulerError, match="Factor must be no more than 1"):
        gx.lr_scheduler.FactorScheduler(step=2, factor=2.0)
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer"):
        gx.optimizer.SGD(lr_scheduler=gx.lr_scheduler.FactorScheduler(2)).set_learning_rate(1)
