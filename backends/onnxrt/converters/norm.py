"""Normalisation converters (core/ops/norm.py). InstanceNorm is ONNX's InstanceNormalization;
GroupNorm (one gamma/beta per group, as MXNet 1.9.1) is InstanceNormalization over the data
seen as (N, groups, rest) — the export targets opset 17, before GroupNormalization (whose
opset-21 form scales per channel); L2Normalization is composed (LpNormalization has no eps);
LRN is ONNX's LRN over MXNet's window of 2 h + 1 channels, h = (nsize - 1) // 2, with alpha
rescaled to keep MXNet's alpha / nsize."""
from __future__ import annotations

from graphexec.core.ops.norm import l2_reduce_axes

from ..convert import ConvertCall, converter


@converter("InstanceNorm")
def _instance_norm(c: ConvertCall) -> None:
    c.b.one("InstanceNormalization", c.inputs[:3], c.out, epsilon=c.p.eps)


def _group_norm_supports(node, shapes) -> "bool | str":
    if not shapes or shapes[0] is None or min(shapes[0]) < 0:
        return "GroupNorm needs the data's shape (it is reshaped to its groups)"
    return True


@converter("GroupNorm", supports=_group_norm_supports)
def _group_norm(c: ConvertCall) -> None:
    b, shape, g = c.b, c.in_shapes[0], c.p.num_groups
    grouped = b.one("Reshape", [c.x, b.ints((shape[0], g, -1), c.hint("groups"))],
                    hint=c.hint("grouped"))
    y = b.one("InstanceNormalization", [grouped, *c.inputs[1:3]], hint=c.hint("normed"),
              epsilon=c.p.eps)
    b.one("Reshape", [y, b.ints(shape, c.hint("shape"))], c.out)
    if c.p.output_mean_var:
        mean = b.one("ReduceMean", [grouped], hint=c.hint("mean"), axes=[2], keepdims=1)
        d = b.one("Sub", [grouped, mean], hint=c.hint("centred"))
        var = b.one("ReduceMean", [b.one("Mul", [d, d], hint=c.hint("sq"))], hint=c.hint("var"),
                    axes=[2], keepdims=0)
        eps = b.const(c.p.eps, c.in_dtypes[0], c.hint("eps"))
        b.one("Sqrt", [b.one("Add", [var, eps], hint=c.hint("var_eps"))], c.outputs[2])
        b.one("Squeeze", [mean, b.ints([2], c.hint("axis"))], c.outputs[1])


def _l2_supports(node, shapes) -> "bool | str":
    if not shapes or shapes[0] is None:
        return "L2Normalization needs the data's rank"
    return True


@converter("L2Normalization", supports=_l2_supports)
def _l2_normalization(c: ConvertCall) -> None:
    b = c.b
    axes = b.ints(l2_reduce_axes(c.p.mode, len(c.in_shapes[0])), c.hint("axes"))
    total = b.one("ReduceSum", [b.one("Mul", [c.x, c.x], hint=c.hint("sq")), axes],
                  hint=c.hint("sum"), keepdims=1)
    eps = b.const(c.p.eps, c.in_dtypes[0], c.hint("eps"))
    norm = b.one("Sqrt", [b.one("Add", [total, eps], hint=c.hint("sum_eps"))],
                 hint=c.hint("norm"))
    b.one("Div", [c.x, norm], c.out)


@converter("LRN")
def _lrn(c: ConvertCall) -> None:
    p = c.p
    size = 2 * ((p.nsize - 1) // 2) + 1
    c.b.one("LRN", [c.x], c.out, size=size, alpha=p.alpha * size / p.nsize, beta=p.beta,
            bias=p.knorm)
