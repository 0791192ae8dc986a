"""ONNX normalisation and matrix importers: BatchNormalization, LayerNormalization,
InstanceNormalization, Gemm, MatMul (see :mod:`.importer`)."""
from __future__ import annotations

import numpy as np

from ..importing import importer, node_attrs, node_error, op
from .common import (broadcast_shape, expand_to, merge_trailing, normalize, split_trailing,
                     trailing_dims)


@importer("BatchNormalization")
def _batchnorm(ctx, node):
    attrs = node_attrs(node)
    if attrs.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise node_error(node, "training-mode BatchNormalization (batch statistics, updated "
                          "running statistics) is not imported")
    mean, var = ctx.const(node, 3, "mean"), ctx.const(node, 4, "var")
    ins = [ctx.sym(n) for n in node.input[:3]]
    sym = op(ctx, node, "BatchNorm", ins, eps=attrs.get("epsilon", 1e-5), fix_gamma=False,
             use_global_stats=True, momentum=attrs.get("momentum", 0.9))
    for suffix, value in (("moving_mean", mean), ("moving_var", var)):
        name = f"{ctx.name(node)}_{suffix}"  # the auxiliary states BatchNorm creates
        ctx.used.add(name)
        ctx.aux_params[name] = value
    return [sym]


def _flat_param(ctx, node, index: int, size: int, suffix: str, fill: float):
    """Input ``index`` (a LayerNorm scale or bias) as a (size,) vector; a parameter of
    ``fill`` when the input is absent."""
    name = node.input[index] if index < len(node.input) else ""
    if name and ctx.shape(name) == (size,):
        return ctx.sym(name)
    if name:
        return op(ctx, node, "Reshape", [ctx.sym(name)], shape=(size,), suffix=suffix)
    pname = f"{ctx.name(node)}_{suffix}"
    ctx.spend(node, size * 8, f"its default {suffix}")
    ctx.arg_params[pname] = np.full(size, fill, dtype=ctx.dtype(node.input[0]) or "f4")
    return ctx.variable(pname)


@importer("LayerNormalization")
def _layer_norm(ctx, node):
    """graphexec's LayerNorm normalises one axis: the axes from ``axis`` on are merged into
    one first (their sizes must be static) and split back after."""
    attrs, x = node_attrs(node), node.input[0]
    rank = ctx.rank(x)
    if rank is None:
        raise node_error(node, f"the rank of input {x!r} is unknown")
    axis = normalize(node, [attrs.get("axis", -1)], rank)[0]
    dims = trailing_dims(ctx, node, x, axis, "LayerNormalization over several axes")
    size = int(np.prod(dims))
    data = ctx.sym(x) if axis == rank - 1 else merge_trailing(ctx, node, ctx.sym(x), axis,
                                                               "merged")
    gamma = _flat_param(ctx, node, 1, size, "gamma", 1.0)
    beta = _flat_param(ctx, node, 2, size, "beta", 0.0)
    outs = [o for o in node.output if o]
    ln = op(ctx, node, "LayerNorm", [data, gamma, beta], axis=-1,
            eps=attrs.get("epsilon", 1e-5), output_mean_var=len(outs) > 1,
            suffix="" if axis == rank - 1 and len(outs) == 1 else "ln")
    if len(outs) == 1:
        return [ln if axis == rank - 1 else split_trailing(ctx, node, ln, axis, dims)]
    y = ln[0] if axis == rank - 1 else split_trailing(ctx, node, ln[0], axis, dims, "y")
    ones = (1,) * (rank - axis)
    mean = op(ctx, node, "Reshape", [ln[1]], shape=(0,) * axis + ones, suffix="mean")
    inv = op(ctx, node, "reciprocal", [ln[2]], suffix="invstd_flat")
    return [y, mean, op(ctx, node, "Reshape", [inv], shape=(0,) * axis + ones,
                        suffix="invstd")]


@importer("RMSNormalization")
def _rms_norm(ctx, node):
    """x / sqrt(mean(x^2 over the axes from ``axis``) + epsilon) * scale, in float32 for
    narrower inputs (stash_type 1)."""
    attrs, name = node_attrs(node), node.input[0]
    rank, dtype = ctx.rank(name), ctx.dtype(name)
    if rank is None:
        raise node_error(node, f"the rank of input {name!r} is unknown")
    axis = normalize(node, [attrs.get("axis", -1)], rank)[0]
    x = ctx.sym(name)
    stash = attrs.get("stash_type", 1) == 1 and dtype is not None and dtype.itemsize < 4
    if stash:
        x = op(ctx, node, "Cast", [x], dtype="float32", suffix="stash")
    ms = op(ctx, node, "mean", [op(ctx, node, "square", [x], suffix="sq")],
            axis=tuple(range(axis, rank)), keepdims=True, suffix="ms")
    inv = op(ctx, node, "rsqrt", [op(ctx, node, "_plus_scalar", [ms], scalar=attrs.get(
        "epsilon", 1e-5), suffix="ms_eps")], suffix="inv")
    y = op(ctx, node, "broadcast_mul", [x, inv], suffix="normed")
    if stash:
        y = op(ctx, node, "Cast", [y], dtype=dtype.name, suffix="unstash")
    return [op(ctx, node, "broadcast_mul", [y, ctx.sym(node.input[1])])]


@importer("LpNormalization")
def _lp_norm(ctx, node):
    """x / ||x||_p along ``axis``; 0 where the norm is 0, as ONNX defines it."""
    attrs, name = node_attrs(node), node.input[0]
    axis = normalize(node, [attrs.get("axis", -1)], ctx.rank(name))[0]
    if attrs.get("p", 2) not in (1, 2):
        raise node_error(node, f"p={attrs['p']}: only the L1 and L2 norms (p 1 or 2) exist")
    x = ctx.sym(name)
    norm = op(ctx, node, "norm", [x], ord=attrs.get("p", 2), axis=(axis,), keepdims=True,
              suffix="norm")
    full = op(ctx, node, "broadcast_like", [norm, x], suffix="norm_full")
    ratio = op(ctx, node, "elemwise_div", [x, full], suffix="ratio")
    zero = op(ctx, node, "_equal_scalar", [full], scalar=0.0, suffix="zero_norm")
    return [op(ctx, node, "where", [zero, op(ctx, node, "zeros_like", [x], suffix="zero"),
                                    ratio])]


@importer("InstanceNormalization")
def _instance_norm(ctx, node):
    """(x - mean) / sqrt(var + epsilon) * scale + bias over each sample's channel plane."""
    x, rank = ctx.sym(node.input[0]), ctx.rank(node.input[0])
    if rank is None or rank < 3:
        raise node_error(node, f"input {node.input[0]!r} must have a known rank of 3 or more")
    axes = tuple(range(2, rank))
    mean = op(ctx, node, "mean", [x], axis=axes, keepdims=True, suffix="mean")
    centered = op(ctx, node, "broadcast_sub", [x, mean], suffix="centered")
    var = op(ctx, node, "mean", [op(ctx, node, "square", [centered], suffix="sq")], axis=axes,
             keepdims=True, suffix="var")
    std = op(ctx, node, "sqrt", [op(ctx, node, "_plus_scalar", [var], scalar=node_attrs(node).get(
        "epsilon", 1e-5), suffix="var_eps")], suffix="std")
    norm = op(ctx, node, "broadcast_div", [centered, std], suffix="norm")
    shape = (-1,) + (1,) * (rank - 2)
    scale = op(ctx, node, "Reshape", [ctx.sym(node.input[1])], shape=shape, suffix="scale")
    bias = op(ctx, node, "Reshape", [ctx.sym(node.input[2])], shape=shape, suffix="bias")
    return [op(ctx, node, "broadcast_add", [op(ctx, node, "broadcast_mul", [norm, scale],
                                               suffix="scaled"), bias])]


@importer("Gemm")
def _gemm(ctx, node):
    attrs = node_attrs(node)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    ta, tb = attrs.get("transA", 0), attrs.get("transB", 0)
    has_c = len(node.input) > 2 and bool(node.input[2])
    w = ctx.consts.get(node.input[1])
    bias = ctx.consts.get(node.input[2]) if has_c else None
    fc_bias = not has_c or (bias is not None and w is not None and bias.shape == w.shape[:1])
    if (tb, ta, alpha, beta) == (1, 0, 1.0, 1.0) and w is not None and fc_bias:
        ins = [ctx.sym(n) for n in node.input if n]
        return [op(ctx, node, "FullyConnected", ins, num_hidden=w.shape[0],
                   no_bias=not has_c)]
    out = op(ctx, node, "dot", [ctx.sym(node.input[0]), ctx.sym(node.input[1])],
             transpose_a=bool(ta), transpose_b=bool(tb), suffix="dot" if has_c else "")
    if alpha != 1.0:
        out = op(ctx, node, "_mul_scalar", [out], scalar=alpha, suffix="alpha")
    if not has_c:
        return [out]
    c = ctx.sym(node.input[2])
    if beta != 1.0:
        c = op(ctx, node, "_mul_scalar", [c], scalar=beta, suffix="beta")
    return [op(ctx, node, "broadcast_add", [out, c])]


@importer("MatMul")
def _matmul(ctx, node):
    """numpy matmul: ``dot`` when the right operand is 1-D or 2-D, else a ``batch_dot`` over
    the (broadcast) batch dimensions flattened into one."""
    a, b = node.input
    ra, rb = ctx.rank(a), ctx.rank(b)
    if ra is None or rb is None:
        raise node_error(node, f"MatMul needs the ranks of {a!r} and {b!r}")
    if rb <= 2:
        return [op(ctx, node, "dot", [ctx.sym(a), ctx.sym(b)])]
    if ra == 1:
        ctx.values[f"{node.output[0]}__row"] = op(ctx, node, "expand_dims", [ctx.sym(a)],
                                                   axis=0, suffix="row")
        ctx.shapes[f"{node.output[0]}__row"] = (1,) + tuple(ctx.shape(a))
        out = _batched(ctx, node, f"{node.output[0]}__row", b, "rows")
        return [op(ctx, node, "squeeze", [out], axis=(rb - 2,))]
    return [_batched(ctx, node, a, b, "")]


def _batched(ctx, node, a: str, b: str, suffix: str):
    sa, sb = ctx.shape(a), ctx.shape(b)
    if len(sa) == len(sb) == 3 and sa[0] == sb[0] and sa[0] is not None:
        return op(ctx, node, "batch_dot", [ctx.sym(a), ctx.sym(b)], suffix=suffix)
    sa = ctx.static_shape(node, a, "MatMul over broadcast batch dimensions")
    sb = ctx.static_shape(node, b, "MatMul over broadcast batch dimensions")
    batch = broadcast_shape(node, [sa[:-2], sb[:-2]])
    flat = []
    for tag, name, shape in (("a", a, sa), ("b", b, sb)):
        full = expand_to(ctx, node, name, batch + tuple(shape[-2:]), f"{tag}_bcast")
        flat.append(op(ctx, node, "Reshape", [full], shape=(-1, 0, 0), reverse=True,
                       suffix=f"{tag}_3d"))
    prod = op(ctx, node, "batch_dot", flat, suffix=f"{suffix}bdot")
    return op(ctx, node, "Reshape", [prod], shape=tuple(batch) + (0, 0), reverse=True,
              suffix=suffix)
