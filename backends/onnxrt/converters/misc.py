"""Converters of the misc, loss and contrib operators ONNX expresses exactly: smooth_l1,
softmin, moments, _split_v2, the AMP casts, _contrib_quadratic, the straight-through
estimators, and the identities (gradientmultiplier, SVMOutput, IdentityAttachKLSparseReg:
their inference output is the data). Reductions of float16 data run in float32, as the
kernels do."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.misc import smooth_l1_constants

from ..convert import ConvertCall, converter, onnx_dtype
from .nn import _softmax_into

F16, F32 = np.dtype("float16"), np.dtype("float32")


def _cast(c: ConvertCall, name: str, src, dst, out: str | None = None) -> str:
    if np.dtype(src) == np.dtype(dst):
        return name if out is None else c.b.one("Identity", [name], out)
    return c.b.one("Cast", [name], out, hint=c.hint("cast"), to=onnx_dtype(dst))


def _k(c: ConvertCall, value: float, hint: str, dtype=None) -> str:
    return c.b.const(value, dtype or c.in_dtypes[0], c.hint(hint))


@converter("_contrib_gradientmultiplier", "SVMOutput", "IdentityAttachKLSparseReg")
def identity(c: ConvertCall) -> None:
    c.b.one("Identity", [c.x], c.out)


@converter("smooth_l1")
def smooth_l1(c: ConvertCall) -> None:
    """0.5 (sigma x)^2 where |x| < 1 / sigma^2, else |x| - 0.5 / sigma^2."""
    s2, bound, shift = smooth_l1_constants(c.p.scalar)
    a = c.b.one("Abs", [c.x], hint=c.hint("abs"))
    near = c.b.one("Less", [a, _k(c, bound, "bound")], hint=c.hint("near"))
    sq = c.b.one("Mul", [c.b.one("Mul", [c.x, c.x], hint=c.hint("sq")),
                         _k(c, 0.5 * s2, "half_s2")], hint=c.hint("quad"))
    lin = c.b.one("Sub", [a, _k(c, shift, "shift")], hint=c.hint("lin"))
    c.b.one("Where", [near, sq, lin], c.out)


@converter("softmin", supports=lambda node, shapes: True if not node.params.use_length
           else "use_length is not converted")
def softmin(c: ConvertCall) -> None:
    neg = c.b.one("Neg", [c.x], hint=c.hint("neg"))
    _softmax_into(c, neg, "Softmax", c.p.axis, c.out, c.p.temperature)


@converter("moments")
def moments(c: ConvertCall) -> None:
    work = F32 if np.dtype(c.in_dtypes[0]) == F16 else np.dtype(c.in_dtypes[0])
    x = _cast(c, c.x, c.in_dtypes[0], work)
    axes = [a % len(c.in_shapes[0]) for a in c.p.axes]
    mean = c.b.one("ReduceMean", [x], hint=c.hint("mean"), axes=axes, keepdims=1)
    dev = c.b.one("Sub", [x, mean], hint=c.hint("dev"))
    var = c.b.one("ReduceMean", [c.b.one("Mul", [dev, dev], hint=c.hint("dev2"))],
                  hint=c.hint("var"), axes=axes, keepdims=1)
    for k, value in enumerate((mean, var)):
        shaped = c.b.one("Reshape", [value, c.b.ints(c.out_shapes[k], c.hint("shape"))],
                         hint=c.hint(f"out{k}"))
        _cast(c, shaped, work, c.out_dtypes[k], c.outputs[k])


@converter("_split_v2")
def split_v2(c: ConvertCall) -> None:
    axis = c.p.axis % len(c.in_shapes[0])
    sizes = [1 if c.p.squeeze_axis else s[axis] for s in c.out_shapes]
    if not c.p.squeeze_axis:
        c.b.add("Split", [c.x, c.b.ints(sizes, c.hint("sizes"))], list(c.outputs),
                hint=c.hint("split"), axis=axis)
        return
    parts = [c.b.fresh(c.hint("part")) for _ in sizes]
    c.b.add("Split", [c.x, c.b.ints(sizes, c.hint("sizes"))], parts, hint=c.hint("split"),
            axis=axis)
    for part, out in zip(parts, c.outputs):
        c.b.one("Squeeze", [part, c.b.ints([axis], c.hint("axis"))], out)


@converter("amp_cast", "amp_multicast")
def amp_cast(c: ConvertCall) -> None:
    for name, src, dst, out in zip(c.inputs, c.in_dtypes, c.out_dtypes, c.outputs):
        _cast(c, name, src, dst, out)


@converter("_contrib_quadratic")
def quadratic(c: ConvertCall) -> None:
    """(a x + b) x + c, the kernel's order of operations."""
    ax = c.b.one("Mul", [c.x, _k(c, c.p.a, "a")], hint=c.hint("ax"))
    axb = c.b.one("Add", [ax, _k(c, c.p.b, "b")], hint=c.hint("axb"))
    c.b.one("Add", [c.b.one("Mul", [axb, c.x], hint=c.hint("axbx")), _k(c, c.p.c, "c")],
            c.out)


@converter("_contrib_sign_ste")
def sign_ste(c: ConvertCall) -> None:
    c.b.one("Sign", [c.x], c.out)


@converter("_contrib_round_ste")
def round_ste(c: ConvertCall) -> None:
    """Halves away from zero: sign(x) floor(|x| + 0.5) (ONNX Round goes to even)."""
    a = c.b.one("Add", [c.b.one("Abs", [c.x], hint=c.hint("abs")), _k(c, 0.5, "half")],
                hint=c.hint("shifted"))
    c.b.one("Mul", [c.b.one("Sign", [c.x], hint=c.hint("sign")),
                    c.b.one("Floor", [a], hint=c.hint("floor"))], c.out)
