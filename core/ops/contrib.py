"""MXNet 1.9.1's ``_contrib_`` utilities and two older helpers: ``_contrib_allclose``,
``_contrib_quadratic``, ``_contrib_gradientmultiplier``, ``_contrib_index_copy``,
``_contrib_round_ste`` / ``_contrib_sign_ste`` (straight-through estimators),
``_contrib_fft`` / ``_contrib_ifft``, ``_contrib_count_sketch``, ``_contrib_hawkesll`` (the
log-likelihood of marked Hawkes processes), ``_histogram`` and ``IdentityAttachKLSparseReg``.

Gradients as MXNet registers them: ``_contrib_backward_quadratic`` (ograd, data),
``_contrib_backward_gradientmultiplier`` (ograd), ``_contrib_backward_index_copy``
(ograd, old, index, new), the output gradient itself for the straight-through estimators,
the other transform for fft / ifft, ``_backward_IdentityAttachKLSparseReg`` (ograd, data,
moving_avg; it moves the running average, as MXNet's backward does),
``_contrib_backward_hawkesll`` (ograds, inputs; the gradients of lda, alpha and beta from the
log-likelihood's head gradient only, as MXNet's: the state output's is not read, the state and
data inputs get zeros). None for allclose and _histogram. On purpose unlike MXNet 1.9.1: fft, ifft and count_sketch run on every device
(MXNet's are GPU-only and fail on a CPU).
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Entry
from .common import (Bool, Float, FloatTuple, InferError, Int, OpDef, OptInt, assign,
                     assign_dtype, fmt, register_op, same_shape, same_type)
from .nn_grad import backward_op
from .registry import get_op

__all__ = ["histogram_inputs"]

U8, I64 = np.dtype("uint8"), np.dtype("int64")


def _pass_through(g, node, ograds):
    return [ograds[0]]


def _allclose_shape(p, ins, outs):
    if ins[0] is not None and ins[1] is not None and ins[0] != ins[1]:
        raise InferError(f"a {fmt(ins[0])} and b {fmt(ins[1])} must have one shape")
    assign(outs, 0, (), "out")


def _allclose_type(p, ins, outs):
    assign_dtype(outs, 0, U8, "out")


def _index_copy_shape(p, ins, outs):
    old, index, new = ins
    if old is None and outs[0] is not None:
        ins[0] = old = outs[0]
    if index is not None and len(index) != 1:
        raise InferError(f"index_vector {fmt(index)} must be a vector")
    if old is None or new is None:
        return
    if len(old) != len(new) or any(a >= 0 and b >= 0 and b > a for a, b in zip(old, new)) \
            or any(a >= 0 and b >= 0 and a != b for a, b in zip(old[1:], new[1:])):
        raise InferError(f"new_tensor {fmt(new)} must match old_tensor {fmt(old)} but in "
                         f"its first dimension, which may not be longer")
    assign(ins, 1, (new[0],))
    assign(outs, 0, old, "out")


def _index_copy_type(p, ins, outs):
    same_type(p, [ins[0], ins[2]], outs)


def _fft_shape(p, ins, outs):
    if ins[0] is not None:
        assign(outs, 0, tuple(ins[0][:-1]) + (2 * ins[0][-1],), "out")


def _ifft_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if data[-1] >= 0 and data[-1] % 2:
        raise InferError(f"data {fmt(data)}: the last axis holds (real, imaginary) pairs "
                         f"and must have an even length")
    assign(outs, 0, tuple(data[:-1]) + (data[-1] // 2,), "out")


def _count_sketch_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return
    if len(data) != 2:
        raise InferError(f"data {fmt(data)} must be a matrix (batch, in_dim)")
    for k in (1, 2):
        if ins[k] is None:
            ins[k] = (1, data[1])
        elif ins[k][-1] != data[1]:
            raise InferError(f"input {k} {fmt(ins[k])} must hold one entry per column of "
                             f"data {fmt(data)}")
    assign(outs, 0, (data[0], p.out_dim), "out")


def histogram_inputs(p) -> list[str]:
    """data alone with bin_cnt (bins from range), data and bins otherwise."""
    return ["data"] if p.bin_cnt is not None else ["data", "bins"]


def _histogram_shape(p, ins, outs):
    if (p.bin_cnt is None) != (p.range is None):
        raise InferError(f"bin_cnt={p.bin_cnt} and range={p.range}: give both or neither")
    if p.bin_cnt is not None:
        if len(p.range) != 2 or p.range[0] > p.range[1]:
            raise InferError(f"range={p.range} must be (low, high) with low <= high")
        assign(outs, 0, (p.bin_cnt,), "out")
        assign(outs, 1, (p.bin_cnt + 1,), "out")
        return
    bins = ins[1]
    if bins is None:
        return
    if len(bins) != 1 or 0 <= bins[0] < 2:
        raise InferError(f"bins {fmt(bins)} must be a vector of 2 or more bounds")
    assign(outs, 0, (bins[0] - 1,), "out")
    assign(outs, 1, bins, "out")


def _histogram_type(p, ins, outs):
    assign_dtype(outs, 0, I64, "out")
    if ins[0] is not None:
        assign_dtype(outs, 1, ins[0], "out")


def _kl_shape(p, ins, outs):
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return
    if len(data) != 2:
        # MXNet's kernel flattens the data to (batch, rest) but sizes the running average
        # by data.shape[1]: only matrices are consistent
        raise InferError(f"data {fmt(data)} must be a matrix (batch, features)")
    assign(ins, 0, data)
    assign(outs, 0, data, "out")
    assign(ins, 1, (data[1],))


_HAWKES_INPUTS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length",
                  "max_time")


def _hawkes_shape(p, ins, outs):
    lda, lags = ins[0], ins[4]
    if lda is None or lags is None:
        return
    if len(lda) != 2 or len(lags) != 2 or lda[0] != lags[0]:
        raise InferError(f"lda {fmt(lda)} must be (batch, marks) and lags {fmt(lags)} "
                         f"(batch, steps), with one batch size")
    n, k = lda
    for i, want in ((1, (k,)), (2, (k,)), (3, (n, k)), (5, lags), (6, (n,)), (7, (n,))):
        assign(ins, i, want)
    assign(outs, 0, (n,), "out")
    assign(outs, 1, (n, k), "out")


def _hawkes_type(p, ins, outs):
    t = ins[0]
    if t is None:
        return
    for i in range(8):
        if i != 5 and ins[i] is None:
            ins[i] = t
    if ins[5] is None:
        ins[5] = np.dtype("int32")
    assign_dtype(outs, 0, t, "out")
    assign_dtype(outs, 1, t, "out")


def _declare() -> None:
    register_op(OpDef("_contrib_allclose", inputs=("a", "b"),
                      params={"rtol": Float(1e-5), "atol": Float(1e-8),
                              "equal_nan": Bool(True)},
                      infer_shape=_allclose_shape, infer_type=_allclose_type))
    register_op(OpDef("_contrib_quadratic", params={"a": Float(0.0), "b": Float(0.0),
                                                    "c": Float(0.0)},
                      infer_shape=same_shape, infer_type=same_type,
                      traits=("elementwise", "unary"), inplace=((0, 0),)))
    register_op(OpDef("_contrib_gradientmultiplier",
                      params={"scalar": Float(1.0), "is_int": Bool(True)},
                      infer_shape=same_shape, infer_type=same_type,
                      traits=("elementwise", "unary"), inplace=((0, 0),),
                      named_inputs=False))
    for name in ("_contrib_round_ste", "_contrib_sign_ste"):
        register_op(OpDef(name, infer_shape=same_shape, infer_type=same_type,
                          gradient=_pass_through, traits=("elementwise", "unary"),
                          inplace=((0, 0),), named_inputs=False))
    register_op(OpDef("_contrib_index_copy",
                      inputs=("old_tensor", "index_vector", "new_tensor"),
                      infer_shape=_index_copy_shape, infer_type=_index_copy_type))
    for name, shape in (("_contrib_fft", _fft_shape), ("_contrib_ifft", _ifft_shape)):
        register_op(OpDef(name, params={"compute_size": Int(128)}, infer_shape=shape,
                          infer_type=same_type))
    register_op(OpDef("_contrib_count_sketch", inputs=("data", "h", "s"),
                      params={"out_dim": Int(), "processing_batch_size": Int(32)},
                      infer_shape=_count_sketch_shape, infer_type=same_type))
    register_op(OpDef("_histogram", inputs=histogram_inputs,
                      params={"bin_cnt": OptInt(None), "range": _OptFloats()},
                      outputs=("output0", "output1"), infer_shape=_histogram_shape,
                      infer_type=_histogram_type))
    register_op(OpDef("_contrib_hawkesll", inputs=_HAWKES_INPUTS,
                      outputs=("output", "out_state"), infer_shape=_hawkes_shape,
                      infer_type=_hawkes_type))
    register_op(OpDef("IdentityAttachKLSparseReg", inputs=("data", "moving_avg"),
                      aux=("moving_avg",),
                      params={"sparseness_target": Float(0.1), "penalty": Float(0.001),
                              "momentum": Float(0.9)},
                      infer_shape=_kl_shape, infer_type=same_type))


class _OptFloats(FloatTuple):
    """A tuple of floats, or None ("None" or absent)."""

    kind = "floats or None"

    def __init__(self):
        super().__init__(None)

    def parse(self, text):
        return None if text in ("None", "") else super().parse(text)

    def from_python(self, value):
        return None if value is None else tuple(float(v) for v in value)


def _rule(bw: str, build, zero: tuple = ()):
    def rule(g, node, ograds):
        grads = g.outputs(g.backward_node(node, bw, build(node, ograds)))
        for k in zero:
            grads[k] = g.zeros_like(node, node.inputs[k], k)
        return grads
    return rule


def _declare_backward() -> None:
    backward_op("_contrib_backward_quadratic", "_contrib_quadratic", ("ograd", "data"), 1)
    backward_op("_contrib_backward_gradientmultiplier", "_contrib_gradientmultiplier",
                ("ograd",), 1)
    backward_op("_contrib_backward_index_copy", "_contrib_index_copy",
                ("ograd", "old_tensor", "index_vector", "new_tensor"), 3)
    backward_op("_backward_IdentityAttachKLSparseReg", "IdentityAttachKLSparseReg",
                ("ograd", "data", "moving_avg"), 2)
    backward_op("_backward_contrib_count_sketch", "_contrib_count_sketch",
                ("ograd", "h", "s"), 3)
    backward_op("_contrib_backward_hawkesll", "_contrib_hawkesll",
                ("ograd", "ograd_state", *_HAWKES_INPUTS), 8)
    rules = {
        "_contrib_hawkesll": _rule("_contrib_backward_hawkesll",
                                   lambda n, og: [*og, *n.inputs]),
        "_contrib_quadratic": _rule("_contrib_backward_quadratic",
                                    lambda n, og: [og[0], n.inputs[0]]),
        "_contrib_gradientmultiplier": _rule("_contrib_backward_gradientmultiplier",
                                             lambda n, og: [og[0]]),
        "_contrib_index_copy": _rule("_contrib_backward_index_copy",
                                     lambda n, og: [og[0], *n.inputs], zero=(1,)),
        "IdentityAttachKLSparseReg": _kl_grad,
        "_contrib_count_sketch": _rule("_backward_contrib_count_sketch",
                                       lambda n, og: [og[0], *n.inputs[1:]], zero=(1, 2)),
        "_contrib_fft": _transform_grad("_contrib_ifft"),
        "_contrib_ifft": _transform_grad("_contrib_fft"),
    }
    for name, rule in rules.items():
        get_op(name).gradient = rule


def _kl_grad(g, node, ograds):
    bw = g.backward_node(node, "_backward_IdentityAttachKLSparseReg",
                         [ograds[0], *node.inputs])
    return [Entry(bw, 0), None]


def _transform_grad(other: str):
    """fft's gradient is the unnormalised inverse transform of the output gradient (real
    part), ifft's the forward transform: each is the other op."""
    def rule(g, node, ograds):
        return [Entry(g.make(other, f"{node.name}_backward", [ograds[0]], dict(node.attrs),
                             control_deps=[node]), 0)]
    return rule


_declare()
_declare_backward()
