"""The rest of MXNet 1.9.1's tensor operators: ``smooth_l1``, ``softmin``,
``softmax_cross_entropy``, ``moments``, ``diag``, ``khatri_rao``, ``scatter_nd``,
``_ravel_multi_index`` / ``_unravel_index`` (as MXNet's, the leading axis of an unravelled index
is not wrapped), ``_split_v2``, ``fill_element_0index``,
``_slice_assign`` / ``_slice_assign_scalar`` (aliases ``_crop_assign*``), ``all_finite``,
``multi_all_finite``, ``amp_cast`` and ``amp_multicast``.

Gradients follow MXNet 1.9.1's registrations: ``_backward_smooth_l1`` (ograd, data),
``_backward_softmin`` (ograd, out), ``_backward_softmax_cross_entropy`` (ograd, data, label;
the label's gradient is zero), ``_backward_moments`` (ograds, data, mean, var),
``_backward_diag`` (ograd), ``scatter_nd`` back through ``gather_nd``, ``_split_v2_backward``
(every ograd), ``_backward_amp_cast`` / ``_backward_amp_multicast`` (each ograd cast back to
its input's dtype), zeros for the index ops. MXNet registers none for ``khatri_rao``,
``fill_element_0index`` (an NDArray function there), ``_slice_assign*``, ``all_finite`` and
``multi_all_finite``.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import (Bool, DType, Float, InferError, Int, OpDef, OptFloat, OptShape,
                     Shape, assign, assign_dtype, fmt, known, prod, register_op, same_shape,
                     same_type)
from .nn_grad import backward_op
from .registry import get_op
from .slicing import slice_bounds
from .tensor import axes_of

__all__ = ["split_v2_indices", "diag_shape", "smooth_l1_constants"]

F32 = np.dtype("float32")


def smooth_l1_constants(sigma: float) -> tuple[float, float, float]:
    """(sigma^2, the bound 1 / sigma^2 below which |x| is squared, the shift 0.5 / sigma^2) of
    ``smooth_l1``, in float arithmetic: sigma 0 gives bound and shift inf (MXNet's loss is then
    0 wherever |x| is finite), not a ZeroDivisionError."""
    s2 = float(sigma) ** 2
    if s2 == 0.0:
        return 0.0, float("inf"), float("inf")
    return s2, 1.0 / s2, 0.5 / s2


def _grad_rule(bw_name: str, build):
    def rule(g, node, ograds):
        grads = g.outputs(g.backward_node(node, bw_name, build(node, ograds)))
        return grads + [g.zeros_like(node, e, k) for k, e in enumerate(node.inputs)
                        ][len(grads):]
    return rule


# -- softmax_cross_entropy / moments ------------------------------------------------------------
def _sce_shape(p, ins, outs):
    data = ins[0]
    if data is not None and len(data) != 2:
        raise InferError(f"data {fmt(data)} must be a matrix (batch, classes)")
    if data is not None:
        assign(ins, 1, (data[0],))
    if ins[1] is not None and len(ins[1]) != 1:
        raise InferError(f"label {fmt(ins[1])} must be a vector of one class per row")
    assign(outs, 0, (1,), "out")


def _moments_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if not p.axes:
        raise InferError(f"axes={p.axes}: moments needs the axes to reduce (MXNet supports "
                         f"no empty axes; pass every axis for global moments)")
    axes = axes_of(p.axes, len(data), "axes")
    if p.keepdims:
        out = tuple(1 if i in axes else d for i, d in enumerate(data))
    else:
        out = tuple(d for i, d in enumerate(data) if i not in axes) or (1,)
    assign(outs, 0, out, "out")
    assign(outs, 1, out, "out")


# -- diag / khatri_rao --------------------------------------------------------------------------
def diag_shape(p, data: tuple) -> tuple:
    """diag's output shape: a matrix for a vector, else the ``k``-th diagonal of the
    (axis1, axis2) planes as the last axis."""
    if len(data) == 1:
        n = data[0] + abs(p.k)
        return (n, n)
    a1, a2 = (a % len(data) if -len(data) <= a < len(data) else None
              for a in (p.axis1, p.axis2))
    if a1 is None or a2 is None or a1 == a2:
        raise InferError(f"axis1={p.axis1} and axis2={p.axis2} must be two different "
                         f"axes of data {fmt(data)}")
    h, w = data[a1], data[a2]
    n = max(0, min(h, w - p.k) if p.k >= 0 else min(h + p.k, w))
    if n == 0:
        raise InferError(f"k={p.k} is out of range for the {h}x{w} planes of data {fmt(data)}")
    return tuple(d for i, d in enumerate(data) if i not in (a1, a2)) + (n,)


def _diag_shape(p, ins, outs):
    data = ins[0]
    if data is None or not known(data):
        return
    if not data:
        raise InferError("diag needs data of 1 or more dimensions, got a scalar")
    assign(outs, 0, diag_shape(p, data), "out")


def _khatri_rao_shape(p, ins, outs):
    if any(s is None for s in ins):
        return
    for k, s in enumerate(ins):
        if len(s) != 2 or s[1] != ins[0][1]:
            raise InferError(f"input {k} {fmt(s)}: every input must be a matrix with "
                             f"{ins[0][1]} columns, like input 0 {fmt(ins[0])}")
    assign(outs, 0, (prod(s[0] for s in ins), ins[0][1]), "out")


# -- scatter_nd / ravel ---------------------------------------------------------------------------
def _scatter_nd_shape(p, ins, outs):
    idx = ins[1]
    shape = tuple(p.shape)
    assign(outs, 0, shape, "out")
    if idx is None:
        return
    m = idx[0]
    if m > len(shape) or len(idx) < 1:
        raise InferError(f"indices {fmt(idx)}: the first dimension ({m}) counts the indexed "
                         f"axes and may not exceed the {len(shape)} axes of shape={shape}")
    assign(ins, 0, tuple(idx[1:]) + shape[m:])


def _scatter_nd_type(p, ins, outs):
    same_type(p, ins[:1], outs)


def _scatter_nd_grad(g, node, ograds):
    gathered = g.make("gather_nd", f"{node.name}_backward", [ograds[0], node.inputs[1]],
                      control_deps=[node])
    return [Entry(gathered, 0), g.zeros_like(node, node.inputs[1], 1)]


def _ravel_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        if outs[0] is not None and len(outs[0]) == 1:
            ins[0] = (len(p.shape), outs[0][0])
        return
    if not data or data[0] != len(p.shape):
        raise InferError(f"data {fmt(data)} must hold one row per axis of shape={p.shape}")
    assign(outs, 0, tuple(data[1:]), "out")


def _unravel_shape(p, ins, outs):
    """(len(shape), n) for a vector of n flat indices. On purpose unlike MXNet 1.9.1, which
    takes data of more dimensions and returns its first elements unconverted."""
    if ins[0] is not None:
        if len(ins[0]) != 1:
            raise InferError(f"data {fmt(ins[0])} must be a vector of flat indices")
        assign(outs, 0, (len(p.shape), ins[0][0]), "out")
    elif outs[0] is not None and len(outs[0]) == 2:
        ins[0] = (outs[0][1],)


# -- _split_v2 ------------------------------------------------------------------------------------
def split_v2_indices(p, length: int) -> list[int]:
    """The split points of ``_split_v2`` (MXNet's GetSplitIndices for ``sections``)."""
    if p.sections > 0:
        small, extra = divmod(length, p.sections)
        out = [0]
        for i in range(p.sections):
            out.append(out[-1] + small + (1 if i < extra else 0))
        return out[:-1]
    return list(p.indices)


def _split_v2_outputs(p):
    n = p.sections if p.sections > 0 else len(p.indices)
    return [f"output{k}" for k in range(n)]


def _split_v2_shape(p, ins, outs):
    data = ins[0]
    if data is None or not known(data):
        return
    axis = axes_of((p.axis,), len(data), "axis")[0]
    starts = split_v2_indices(p, data[axis])
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else data[axis]
        if not 0 <= start <= end <= data[axis]:
            raise InferError(f"indices={tuple(p.indices)}: part {i} [{start}, {end}) is not "
                             f"an ascending range inside axis {axis} of length {data[axis]}")
        if p.squeeze_axis and end - start != 1:
            raise InferError(f"squeeze_axis=True needs parts of length 1 along axis {axis}, "
                             f"part {i} has {end - start}")
        part = data[:axis] + ((end - start,) if not p.squeeze_axis else ()) + data[axis + 1:]
        assign(outs, i, part, "out")


# -- slice assignment -----------------------------------------------------------------------------
def _slice_assign_shape(p, ins, outs):
    lhs = ins[0] if ins[0] is not None else outs[0]
    if lhs is None:
        return
    assign(ins, 0, lhs)
    assign(outs, 0, lhs, "out")
    if len(ins) == 2 and known(lhs):
        sl = slice_bounds(p, lhs)
        part = tuple(len(range(*k.indices(d))) for k, d in zip(sl, lhs)) + lhs[len(sl):]
        assign(ins, 1, part)


# -- finiteness and AMP casts ---------------------------------------------------------------------
def _flag_shape(p, ins, outs):
    assign(outs, 0, (1,), "out")


def _flag_type(p, ins, outs):
    assign_dtype(outs, 0, F32, "out")


#: the dtypes AMP casts (MXNet's kFloat32 / kFloat16; others pass through unchanged)
_AMP = (np.dtype("float32"), np.dtype("float16"))


def _amp_cast_type(p, ins, outs):
    if ins[0] is not None:
        assign_dtype(outs, 0, p.dtype if ins[0] in _AMP else ins[0], "out")


def _amp_multicast_type(p, ins, outs):
    """MXNet's AMPMultiCastType: float32 wins unless ``cast_narrow`` (then float16 wins)."""
    if any(t is None for t in ins):
        return
    wins = np.dtype("float16") if p.cast_narrow else np.dtype("float32")
    target = wins if wins in ins else (np.dtype("float32") if p.cast_narrow else ins[0])
    for i, t in enumerate(ins):
        assign_dtype(outs, i, target if t in _AMP else t, "out")


def _amp_multicast_shape(p, ins, outs):
    for i in range(len(ins)):
        pair_in, pair_out = [ins[i]], [outs[i]]
        same_shape(p, pair_in, pair_out)
        ins[i], outs[i] = pair_in[0], pair_out[0]


def _zero_grads(g, node, ograds):
    return [g.zeros_like(node, e, k) for k, e in enumerate(node.inputs)]


def _declare() -> None:
    scalar = {"scalar": Float(1.0), "is_int": Bool(True)}
    softmax = {"axis": Int(-1), "temperature": OptFloat(None), "dtype": DType(None),
               "use_length": Bool(False)}
    register_op(OpDef("smooth_l1", params=scalar, infer_shape=same_shape, infer_type=same_type,
                      traits=("elementwise", "scalar"), inplace=((0, 0),), named_inputs=False))
    register_op(OpDef("softmin", params=softmax, infer_shape=_softmin_shape,
                      infer_type=_softmin_type, traits=("softmax",)))
    register_op(OpDef("softmax_cross_entropy", inputs=("data", "label"),
                      infer_shape=_sce_shape, infer_type=_first_type))
    register_op(OpDef("moments", params={"axes": OptShape(None), "keepdims": Bool(False)},
                      outputs=("output0", "output1"), infer_shape=_moments_shape,
                      infer_type=same_type))
    register_op(OpDef("diag", params={"k": Int(0), "axis1": Int(0), "axis2": Int(1)},
                      infer_shape=_diag_shape, infer_type=same_type))
    register_op(OpDef("khatri_rao", params={"num_args": Int()}, variadic="num_args",
                      inputs=lambda p: [f"arg{i}" for i in range(p.num_args)],
                      infer_shape=_khatri_rao_shape, infer_type=same_type))
    register_op(OpDef("scatter_nd", params={"shape": Shape()}, inputs=("data", "indices"),
                      infer_shape=_scatter_nd_shape, infer_type=_scatter_nd_type,
                      gradient=_scatter_nd_grad))
    register_op(OpDef("_ravel_multi_index", aliases=("ravel_multi_index",),
                      params={"shape": Shape()}, infer_shape=_ravel_shape,
                      infer_type=same_type, gradient=_zero_grads))
    register_op(OpDef("_unravel_index", aliases=("unravel_index",),
                      params={"shape": Shape()}, infer_shape=_unravel_shape,
                      infer_type=same_type, gradient=_zero_grads))
    register_op(OpDef("_split_v2", outputs=_split_v2_outputs, infer_shape=_split_v2_shape,
                      infer_type=same_type,
                      params={"indices": Shape(), "axis": Int(1), "squeeze_axis": Bool(False),
                              "sections": Int(0)}))
    register_op(OpDef("fill_element_0index", inputs=("lhs", "mhs", "rhs"),
                      infer_shape=_fill_shape, infer_type=_first_type))
    slice_params = {"begin": Shape(), "end": Shape(), "step": Shape(())}
    register_op(OpDef("_slice_assign", aliases=("_crop_assign",), params=slice_params,
                      inputs=("lhs", "rhs"), infer_shape=_slice_assign_shape,
                      infer_type=same_type, inplace=((0, 0),)))
    register_op(OpDef("_slice_assign_scalar", aliases=("_crop_assign_scalar",),
                      params={**slice_params, "scalar": Float(0.0)},
                      infer_shape=_slice_assign_shape, infer_type=same_type,
                      inplace=((0, 0),)))
    register_op(OpDef("all_finite", params={"init_output": Bool(True)},
                      infer_shape=_flag_shape, infer_type=_flag_type))
    register_op(OpDef("multi_all_finite", params={"num_arrays": Int(1),
                                                  "init_output": Bool(True)},
                      variadic="num_arrays", inputs=lambda p: [f"array_{i}" for i in
                                                               range(p.num_arrays)],
                      infer_shape=_flag_shape, infer_type=_flag_type))
    register_op(OpDef("amp_cast", params={"dtype": DType()}, infer_shape=same_shape,
                      infer_type=_amp_cast_type, traits=("elementwise", "unary")))
    register_op(OpDef("amp_multicast", params={"num_outputs": Int(),
                                               "cast_narrow": Bool(False)},
                      variadic="num_outputs",
                      inputs=lambda p: [f"data_{i}" for i in range(p.num_outputs)],
                      outputs=lambda p: [f"output{i}" for i in range(p.num_outputs)],
                      infer_shape=_amp_multicast_shape, infer_type=_amp_multicast_type))


def _softmin_shape(p, ins, outs):
    if p.use_length:
        raise InferError("use_length=True is not supported: softmin takes no length input "
                         "(MXNet registers it with one input)")
    same_shape(p, ins, outs)


def _softmin_type(p, ins, outs):
    if ins[0] is not None:
        assign_dtype(outs, 0, p.dtype or ins[0], "out")


def _first_type(p, ins, outs):
    if ins[0] is not None:
        assign_dtype(outs, 0, ins[0], "out")


def _fill_shape(p, ins, outs):
    lhs = ins[0]
    if lhs is None:
        return
    if len(lhs) != 2:
        raise InferError(f"lhs {fmt(lhs)} must be a matrix")
    assign(ins, 1, (lhs[0],))
    assign(ins, 2, (lhs[0],))
    assign(outs, 0, lhs, "out")


def _declare_backward() -> None:
    backward_op("_backward_smooth_l1", "smooth_l1", ("ograd", "data"), 1)
    backward_op("_backward_softmin", "softmin", ("ograd", "out"), 1)
    backward_op("_backward_softmax_cross_entropy", "softmax_cross_entropy",
                ("ograd", "data", "label"), 2)
    backward_op("_backward_moments", "moments",
                ("ograd_mean", "ograd_var", "data", "mean", "var"), 1)
    backward_op("_backward_diag", "diag", ("ograd",), 1)
    backward_op("_split_v2_backward", "_split_v2",
                lambda p: [f"ograd{k}" for k in range(len(_split_v2_outputs(p)))], 1)
    backward_op("_backward_amp_multicast", "amp_multicast",
                lambda p: [f"ograd{k}" for k in range(p.num_outputs)],
                lambda p: [f"output{k}" for k in range(p.num_outputs)])
    backward_op("_backward_amp_cast", "amp_cast", ("ograd",), 1)
    rules = {
        "amp_cast": ("_backward_amp_cast", lambda n, og: [og[0]]),
        "amp_multicast": ("_backward_amp_multicast", lambda n, og: list(og)),
        "smooth_l1": ("_backward_smooth_l1", lambda n, og: [og[0], n.inputs[0]]),
        "softmin": ("_backward_softmin", lambda n, og: [og[0], Entry(n, 0)]),
        "softmax_cross_entropy": ("_backward_softmax_cross_entropy",
                                  lambda n, og: [og[0], *n.inputs]),
        "moments": ("_backward_moments",
                    lambda n, og: [*og, n.inputs[0], Entry(n, 0), Entry(n, 1)]),
        "diag": ("_backward_diag", lambda n, og: [og[0]]),
        "_split_v2": ("_split_v2_backward", lambda n, og: list(og)),
    }
    for name, (bw, build) in rules.items():
        get_op(name).gradient = _grad_rule(bw, build)


_declare()
_declare_backward()
