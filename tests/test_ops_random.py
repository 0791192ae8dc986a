"""The random operators: seeded statistics, reproducibility and independence of the draws,
``_sample_*`` shape semantics, the multinomial log-probability gradient, the densities against
MXNet 1.9.1's own numbers (tests/data/rest/random, recorded by make_pdf.py there), the
``gx.sym.random`` namespace and the errors for invalid parameters."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError

DATA = Path(__file__).parent / "data" / "rest" / "random"
META = json.loads((DATA / "pdf.json").read_text())["cases"]
ARRAYS = np.load(DATA / "pdf.npz")
R = gx.sym.random


def _draw(sym, **args):
    return sym.bind(gx.cpu(), args).forward()[0].copy()


@pytest.mark.parametrize("name", sorted(META))
def test_density_matches_mxnet(name):
    case = META[name]
    ins = {n: ARRAYS[f"{name}/in/{n}"] for n in case["inputs"]}
    exe = gx.sym.load_json(case["symbol_json"]).bind(
        gx.cpu(), ins, args_grad={n: np.zeros_like(a) for n, a in ins.items()})
    out = exe.forward(is_train=True)[0]
    np.testing.assert_allclose(out, ARRAYS[f"{name}/out/0"], rtol=1e-9, atol=1e-12)
    exe.backward([ARRAYS[f"{name}/head/0"]])
    for n in case["inputs"]:
        # digamma: MXNet's cephes port and scipy's agree to ~1e-7 relative
        np.testing.assert_allclose(exe.grad_dict[n], ARRAYS[f"{name}/grad/{n}"], rtol=2e-6,
                                   atol=1e-12, err_msg=f"{name}: gradient of {n}")


@pytest.mark.parametrize("make,mean,var", [
    (lambda: R.normal(1.0, 2.0, shape=(200000,)), 1.0, 4.0),
    (lambda: R.uniform(-2, 2, shape=(200000,)), 0.0, 16 / 12),
    (lambda: R.gamma(3.0, 0.5, shape=(200000,)), 1.5, 0.75),
    (lambda: R.exponential(scale=2.0, shape=(200000,)), 2.0, 4.0),
    (lambda: R.poisson(lam=5.0, shape=(200000,)), 5.0, 5.0),
    (lambda: R.negative_binomial(k=4, p=0.5, shape=(200000,)), 4.0, 8.0),
    (lambda: R.generalized_negative_binomial(mu=3.0, alpha=0.25, shape=(200000,)), 3.0, 5.25),
    (lambda: R.randint(0, 10, shape=(200000,)), 4.5, 8.25),
])
def test_moments_at_a_fixed_seed(make, mean, var):
    """200000 draws at seed 0: mean within 4 standard errors, variance within 3%."""
    gx.random.seed(0)
    x = _draw(make()).astype(np.float64)
    assert abs(x.mean() - mean) < 4 * np.sqrt(var / x.size)
    assert abs(x.var() / var - 1) < 0.03


def test_same_seed_same_draws_and_new_draws_each_call():
    sym = R.normal(shape=(1000,))
    exe = sym.bind(gx.cpu(), {})
    gx.random.seed(7)
    first, second = exe.forward()[0].copy(), exe.forward()[0].copy()
    gx.random.seed(7)
    again = sym.bind(gx.cpu(), {}).forward()[0].copy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.15


def test_two_random_nodes_are_not_merged():
    """Identical random nodes stay two nodes (no common-expression elimination)."""
    gx.random.seed(3)
    a, b = R.uniform(shape=(500,)), R.uniform(shape=(500,))
    outs = gx.sym.Group([a, b]).bind(gx.cpu(), {}).forward()
    assert not np.array_equal(outs[0], outs[1])


def test_sample_shape_is_parameter_shape_plus_shape():
    mu, sigma = gx.sym.var("mu"), gx.sym.var("sigma")
    sym = R.normal(mu, sigma, shape=(4, 5))
    assert sym.infer_shape(mu=(2, 3), sigma=(2, 3))[1] == [(2, 3, 4, 5)]
    assert sym.infer_type(mu=np.float64, sigma=np.float64)[1] == [np.dtype("float32")]
    gx.random.seed(1)
    x = _draw(sym, mu=np.array([[0.0, 100.0, -100.0]] * 2), sigma=np.full((2, 3), 0.1))
    np.testing.assert_allclose(x.mean(axis=(2, 3)), [[0, 100, -100]] * 2, atol=0.1)


def test_multinomial_log_probability_gradient():
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    sym = R.multinomial(gx.sym.var("p"), shape=(6,), get_prob=True)
    exe = sym.bind(gx.cpu(), {"p": probs}, args_grad={"p": np.zeros_like(probs)})
    draws, logp = (o.copy() for o in exe.forward(is_train=True))
    np.testing.assert_allclose(logp, np.log(np.take_along_axis(probs, draws, 1)))
    head = np.arange(12.0).reshape(2, 6)
    exe.backward([np.zeros((2, 6)), head])
    want = np.zeros_like(probs)
    for r in range(2):
        for j, k in enumerate(draws[r]):
            want[r, k] += head[r, j] / probs[r, k]
    np.testing.assert_allclose(exe.grad_dict["p"], want)


def test_random_like_has_zero_gradient():
    exe = R.normal_like(gx.sym.var("d")).bind(gx.cpu(), {"d": np.ones((2, 3))},
                                               args_grad={"d": np.ones((2, 3))})
    exe.forward(is_train=True)
    exe.backward([np.ones((2, 3))])
    assert not exe.grad_dict["d"].any()


@pytest.mark.parametrize("make,match", [
    (lambda: R.normal(0, 0.0, shape=(2,), name="n"), r"operator n: .*scale=0.0 must be positive"),
    (lambda: R.uniform(3, 1, shape=(2,), name="n"), r"operator n: .*low 3.0 must be less than"),
    (lambda: R.gamma(-1.0, 1.0, shape=(2,), name="n"), r"operator n: .*alpha=-1.0 must be"),
    (lambda: R.negative_binomial(2, 1.5, shape=(2,), name="n"), r"operator n: .*p=1.5 must be in"),
    (lambda: R.randint(0, 5, shape=(2,), dtype="float32", name="n"),
     r"operator n: .*dtype=float32 is not allowed"),
    (lambda: gx.sym._sample_unique_zipfian(range_max=3, shape=(2, 5), name="n"),
     r"operator n: .*cannot draw 5 distinct classes"),
])
def test_invalid_parameters_fail_at_bind(make, match):
    with pytest.raises(GraphexecError, match=match):
        make().bind(gx.cpu(), {}).forward()


def test_invalid_parameter_arrays_fail_naming_the_node():
    sym = R.normal(gx.sym.var("mu"), gx.sym.var("sigma"), shape=(2,), name="draw")
    exe = sym.bind(gx.cpu(), {"mu": np.zeros(3), "sigma": np.array([1.0, -1.0, 1.0])})
    with pytest.raises(GraphexecError, match=r"node 'draw'.*at \[1\]: sigma must be positive"):
        exe.forward()


def test_namespace_rejects_mixed_parameters():
    with pytest.raises(GraphexecError, match="all Symbols or all numbers"):
        R.uniform(gx.sym.var("lo"), 1.0)


def test_legacy_aliases_build_mxnets_ops():
    assert '"op": "_random_uniform"' in gx.sym.uniform(shape=(2,)).tojson()
    assert '"op": "_random_normal"' in gx.sym.random_normal(shape=(2,)).tojson()
    assert '"op": "_sample_gamma"' in gx.sym.sample_gamma(gx.sym.var("a"),
                                                          gx.sym.var("b")).tojson()
    assert '"op": "_shuffle"' in gx.sym.shuffle(gx.sym.var("d")).tojson()


RANDOM_META = json.loads((DATA / "random.json").read_text())["cases"]
#: cases whose values are draws (only their names, shapes and dtypes are compared)
STOCHASTIC = {"uniform_f16", "normal_default", "sample_normal_f64"}


@pytest.mark.parametrize("name", sorted(RANDOM_META))
def test_random_op_decisions_match_mxnet(name):
    """Output names, inferred shapes and dtypes, and degenerate draws as MXNet 1.9.1's."""
    case = RANDOM_META[name]
    sym = gx.sym.load_json(case["symbol_json"])
    ins = {k: np.asarray(v["value"], v["dtype"]) for k, v in case["inputs"].items()}
    assert sym.list_outputs() == case["outputs"]
    _, shapes, _ = sym.infer_shape(**{k: v.shape for k, v in ins.items()})
    _, dtypes, _ = sym.infer_type(**{k: v.dtype for k, v in ins.items()})
    assert [list(s) for s in shapes] == case["shapes"]
    assert [np.dtype(t).name for t in dtypes] == case["dtypes"]
    outs = sym.bind(gx.cpu(), ins).forward()
    for got, want, dtype in zip(outs, case["values"], case["dtypes"]):
        assert got.dtype == np.dtype(dtype) and list(got.shape) == list(np.shape(want))
        if name not in STOCHASTIC:
            np.testing.assert_array_equal(got, np.asarray(want, dtype))


def test_mirroring_keeps_the_forward_draws(monkeypatch):
    """MXNET_BACKWARD_DO_MIRROR recomputes cheap nodes in backward; a random node is never
    recomputed, so the multinomial gradient uses the draws the forward returned."""
    monkeypatch.setenv("MXNET_BACKWARD_DO_MIRROR", "1")
    draws, logp = R.multinomial(gx.sym.var("p"), shape=(50,), get_prob=True)
    sym = gx.sym.Group([gx.sym.MakeLoss(gx.sym.sum(logp * 2.0)), gx.sym.BlockGrad(draws)])
    probs = np.tile([0.2, 0.3, 0.5], (4, 1))
    exe = sym.bind(gx.cpu(), {"p": probs}, args_grad={"p": np.zeros_like(probs)})
    got = exe.forward(is_train=True)[1].astype(int)
    exe.backward([np.ones(1), np.zeros((4, 50))])
    want = np.zeros_like(probs)
    for r in range(4):
        np.add.at(want[r], got[r], 2 / probs[r, got[r]])
    np.testing.assert_allclose(exe.grad_dict["p"], want)


@pytest.mark.parametrize("op,params", [("random_poisson", {"lam": 1e30}),
                                       ("random_negative_binomial", {"k": 2, "p": 0.0})])
def test_rates_too_large_to_sample_are_named(op, params):
    """numpy refuses Poisson rates from about 9.2e18 (MXNet's samplers overflow to
    -2147483648 there): the error says which distribution and why, not numpy's words only."""
    with pytest.raises(ValueError, match=r"Poisson rate of a draw is too large to sample"):
        getattr(gx.nd, op)(shape=(2,), **params)
    assert getattr(gx.nd, op)(shape=(2,), **{k: (0.5 if k == "p" else 3.0) for k in params}
                              ).shape == (2,)
