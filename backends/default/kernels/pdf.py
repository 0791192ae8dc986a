"""Kernels of the densities ``_random_pdf_*`` (core/ops/pdf.py) and their gradients, with
MXNet 1.9.1's formulas (computed in float64 on the host, then stored in the output dtype)."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.pdf import PDF_PARAMS

from .base import kernel, special

#: MXNet's PI (mxnet_op::PI) is a float constant: its normal density uses it as such
_PI = float(np.float32(np.pi))


def _nb_lpdf(x, k, p):
    lg = special(np).gammaln
    return lg(x + k) - lg(x + 1) - lg(k) + k * np.log(p) + x * np.log1p(-p)


def _gnb_kp(mu, alpha):
    return 1 / alpha, 1 / (mu * alpha + 1)


#: distribution -> log density (x, *params)
LPDF = {
    "uniform": lambda x, lo, hi: np.broadcast_to(-np.log(hi - lo), x.shape),
    "normal": lambda x, u, s: -0.5 * (x - u) ** 2 / s ** 2 - np.log(np.sqrt(2 * _PI) * s),
    "gamma": lambda x, a, b: a * np.log(b) + (a - 1) * np.log(x) - b * x - special(np).gammaln(a),
    "exponential": lambda x, lam: np.log(lam) - lam * x,
    "poisson": lambda x, lam: x * np.log(lam) - special(np).gammaln(x + 1) - lam,
    "negative_binomial": _nb_lpdf,
    "generalized_negative_binomial": lambda x, mu, a: _nb_lpdf(x, *_gnb_kp(mu, a)),
    "dirichlet": lambda x, a: ((a - 1) * np.log(x)).sum(-1) + special(np).gammaln(a.sum(-1))
    - special(np).gammaln(a).sum(-1),
}


def _nb_grads(x, k, p):
    return [np.zeros_like(x), special(np).digamma(x + k) - special(np).digamma(k) + np.log(p),
            k / p - x / (1 - p)]


def _gnb_grads(x, mu, a):
    _, dk, dp = _nb_grads(x, *_gnb_kp(mu, a))
    den = mu * a + 1
    return [np.zeros_like(x), -dp * a / den ** 2, -dk / a ** 2 - dp * mu / den ** 2]


def _dirichlet_grads(x, a):
    psi_sum = special(np).digamma(a.sum(-1, keepdims=True))
    return [(a - 1) / x, np.log(x) + psi_sum - special(np).digamma(a)]


#: distribution -> [d lpdf / d sample, d lpdf / d param...] (x, *params)
DLPDF = {
    "uniform": lambda x, lo, hi: [np.zeros_like(x), 1 / (hi - lo) + 0 * x,
                                  1 / (lo - hi) + 0 * x],
    "normal": lambda x, u, s: [(u - x) / s ** 2, (x - u) / s ** 2,
                               ((x - u) ** 2 - s ** 2) / s ** 3],
    "gamma": lambda x, a, b: [(a - 1) / x - b, np.log(b) + np.log(x) - special(np).digamma(a),
                              a / b - x],
    "exponential": lambda x, lam: [-lam + 0 * x, 1 / lam - x],
    "poisson": lambda x, lam: [np.zeros_like(x), x / lam - 1],
    "negative_binomial": _nb_grads,
    "generalized_negative_binomial": _gnb_grads,
    "dirichlet": _dirichlet_grads,
}


def _host(xp, a):
    return np.asarray(xp.asnumpy(a) if hasattr(xp, "asnumpy") else a, np.float64)


def _aligned(distr, sample, params):
    """The parameters reshaped to broadcast against the samples (one axis per sample axis)."""
    vector = distr == "dirichlet"
    extra = sample.ndim - params[0].ndim
    out = []
    for p in params:
        shape = p.shape[:-1] + (1,) * extra + p.shape[-1:] if vector else \
            p.shape + (1,) * extra
        out.append(p.reshape(shape))
    return out, extra


def _pdf_kernel(distr):
    def factory(call):
        xp, out, is_log = call.xp, call.outputs[0], call.params.is_log

        def run():
            x = _host(xp, call.inputs[0])
            params, _ = _aligned(distr, x, [_host(xp, a) for a in call.inputs[1:]])
            with np.errstate(divide="ignore", invalid="ignore"):
                lp = LPDF[distr](x, *params)
            res = lp if is_log else np.exp(lp)
            xp.copyto(out, xp.asarray(res.reshape(out.shape)), casting="unsafe")
        return run
    return factory


def _pdf_backward_kernel(distr):
    n_params = len(PDF_PARAMS[distr])

    def factory(call):
        xp, outs, is_log = call.xp, call.outputs, call.params.is_log

        def run():
            og, x = _host(xp, call.inputs[0]), _host(xp, call.inputs[1])
            raw = [_host(xp, a) for a in call.inputs[2:2 + n_params]]
            params, extra = _aligned(distr, x, raw)
            value = _host(xp, call.inputs[-1])
            scale = og if is_log else og * value
            if distr == "dirichlet":
                scale = scale.reshape(x.shape[:-1] + (1,))
            with np.errstate(divide="ignore", invalid="ignore"):
                grads = DLPDF[distr](x, *params)
            lead = raw[0].ndim - (1 if distr == "dirichlet" else 0)
            axes = tuple(range(lead, lead + extra))
            for k, (g, o) in enumerate(zip(grads, outs)):
                g = np.broadcast_to(g * scale, x.shape)
                if k:
                    g = g.sum(axis=axes).reshape(raw[k - 1].shape)
                xp.copyto(o, xp.asarray(g), casting="unsafe")
        return run
    return factory


for _distr in PDF_PARAMS:
    kernel(f"_random_pdf_{_distr}")(_pdf_kernel(_distr))
    kernel(f"_backward_pdf_{_distr}")(_pdf_backward_kernel(_distr))
