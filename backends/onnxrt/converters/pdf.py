"""Converters of the densities ONNX expresses exactly: ``_random_pdf_uniform``, ``_normal``
and ``_exponential`` (Sub, Div, Mul, Log, Exp; the parameters reshaped to broadcast over the
sample axes). The others need log-gamma or digamma, which ONNX lacks: region boundaries."""
from __future__ import annotations

import math

import numpy as np

from ..convert import ConvertCall, converter

#: MXNet's normal density uses its float constant PI (mxnet_op::PI), as the native kernel
_LOG_SQRT_2PI = 0.5 * math.log(2 * float(np.float32(np.pi)))


def _supports(node, shapes) -> "bool | str":
    if any(s is None for s in shapes):
        return "the density converters need the sample and parameter shapes"
    return True


def _params(c: ConvertCall) -> list[str]:
    """The parameter inputs reshaped to P + (1,) * (sample axes)."""
    sample, param = c.in_shapes[0], c.in_shapes[1]
    extra = len(sample) - len(param)
    if not extra:
        return list(c.inputs[1:])
    shape = c.b.ints(tuple(param) + (1,) * extra, c.hint("pshape"))
    return [c.b.one("Reshape", [p, shape], hint=c.hint(f"p{k}"))
            for k, p in enumerate(c.inputs[1:])]


def _k(c: ConvertCall, value: float, what: str) -> str:
    return c.b.const(value, c.out_dtypes[0], c.hint(what))


def _log_density(c: ConvertCall, distr: str) -> str:
    b, x, ps = c.b, c.x, _params(c)
    if distr == "normal":
        z = b.one("Div", [b.one("Sub", [x, ps[0]], hint=c.hint("d")), ps[1]], hint=c.hint("z"))
        sq = b.one("Mul", [b.one("Mul", [z, z], hint=c.hint("z2")), _k(c, -0.5, "half")],
                   hint=c.hint("e"))
        norm = b.one("Add", [b.one("Log", [ps[1]], hint=c.hint("ls")),
                             _k(c, _LOG_SQRT_2PI, "l2pi")], hint=c.hint("norm"))
        return b.one("Sub", [sq, norm], hint=c.hint("lp"))
    if distr == "exponential":
        return b.one("Sub", [b.one("Log", [ps[0]], hint=c.hint("ll")),
                             b.one("Mul", [ps[0], x], hint=c.hint("lx"))], hint=c.hint("lp"))
    width = b.one("Log", [b.one("Sub", [ps[1], ps[0]], hint=c.hint("w"))], hint=c.hint("lw"))
    return b.one("Expand", [b.one("Neg", [width], hint=c.hint("nl")),
                            b.ints(c.out_shapes[0], c.hint("shape"))], hint=c.hint("lp"))


def _pdf(distr: str):
    def convert(c: ConvertCall) -> None:
        lp = _log_density(c, distr)
        c.b.one("Identity" if c.p.is_log else "Exp", [lp], c.out)
    return convert


for _distr in ("uniform", "normal", "exponential"):
    converter(f"_random_pdf_{_distr}", supports=_supports)(_pdf(_distr))
