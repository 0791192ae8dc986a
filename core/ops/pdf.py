"""Densities of the sampling distributions: ``_random_pdf_<distr>`` (alias
``random_pdf_<distr>``) for uniform, normal, gamma, exponential, poisson, negative_binomial,
generalized_negative_binomial and dirichlet, with ``is_log``, as MXNet 1.9.1 defines them.

Inputs: ``sample`` then the parameter arrays, which share one shape P; the samples have shape
P + S (S: the samples drawn per parameter set), and so does the output. dirichlet's
parameter arrays are P + (k,) and its samples P + S + (k,): the output drops the k axis.
Here gamma's ``beta`` is a rate (MXNet's pdf, unlike its sampler, where it is a scale).
The gradient (``_backward_pdf_<distr>``: output gradient, inputs, output) covers the samples
and the parameters, whose gradients are summed over S.
"""
from __future__ import annotations

from .common import Bool, InferError, OpDef, assign, fmt, known, register_op
from .linalg import la_gradient
from .tensor_grad import backward_op

__all__ = ["PDF_PARAMS"]

#: distribution -> names of its parameter inputs
PDF_PARAMS = {
    "uniform": ("low", "high"), "normal": ("mu", "sigma"), "gamma": ("alpha", "beta"),
    "exponential": ("lam",), "poisson": ("lam",), "negative_binomial": ("k", "p"),
    "generalized_negative_binomial": ("mu", "alpha"), "dirichlet": ("alpha",),
}


def _pdf_shape(vector: bool):
    def rule(p, ins, outs):
        sample = ins[0]
        params = next((s for s in ins[1:] if known(s)), None)
        for i in range(1, len(ins)):
            assign(ins, i, params)
        if not (known(sample) and params is not None):
            return
        lead = len(params) - (1 if vector else 0)
        if len(sample) < len(params) or tuple(sample[:lead]) != tuple(params[:lead]) or \
                (vector and sample[-1] != params[-1]):
            raise InferError(f"the parameters {fmt(params)} must match the leading axes of "
                             f"the samples {fmt(sample)}" + (" and their last axis (the "
                                                             "vector length)" if vector
                                                             else ""))
        out = (tuple(sample[:-1]) or (1,)) if vector else tuple(sample)
        assign(outs, 0, out, "out")
    return rule


def _pdf_type(p, ins, outs):
    t = next((v for v in (*ins, outs[0]) if v is not None), None)
    if t is None:
        return
    if t.kind != "f":
        raise InferError(f"densities take floating-point samples and parameters, got {t}")
    for lst in (ins, outs):
        for i, v in enumerate(lst):
            if v is not None and v != t:
                raise InferError(f"every input must have one dtype: {v} and {t} differ")
            lst[i] = t


def _declare() -> None:
    for distr, params in PDF_PARAMS.items():
        bw = f"_backward_pdf_{distr}"
        register_op(OpDef(
            f"_random_pdf_{distr}", aliases=(f"random_pdf_{distr}",),
            inputs=("sample",) + params, params={"is_log": Bool(False)},
            infer_shape=_pdf_shape(distr == "dirichlet"), infer_type=_pdf_type,
            gradient=la_gradient(bw, True, True)))
        backward_op(bw, inputs=("ograd", "sample") + params + ("output",),
                    outputs=len(params) + 1, params={"is_log": Bool(False)})


_declare()
