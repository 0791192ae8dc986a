"""Kernels of the dynamic-shape operators (core/ops/dynamic.py). The executor has already
sized the output from the op's ``settle_shape`` when a kernel runs."""
from __future__ import annotations

from functools import partial

from .base import kernel


def _mask_rows(xp, data, index, out) -> None:
    keep = index != 0
    if out.shape[0] != int(keep.sum()):  # the index changed after the shape was settled
        raise ValueError(f"boolean_mask: output has {out.shape[0]} rows, the index keeps "
                         f"{int(keep.sum())}")
    xp.copyto(out, data[keep])


@kernel("_contrib_boolean_mask")
def boolean_mask(call):
    data, index = call.inputs
    return partial(_mask_rows, call.xp, data, index, call.outputs[0])


def _scatter_rows(xp, ograd, index, dx, di) -> None:
    if dx is not None:
        dx.fill(0)
        dx[index != 0] = ograd
    if di is not None:
        di.fill(0)


@kernel("_backward_contrib_boolean_mask")
def boolean_mask_backward(call):
    """The output gradient goes back to the kept rows; the other rows and the index get
    zeros."""
    ograd, _, index = call.inputs
    dx, di = (o if r != "null" else None for o, r in zip(call.outputs, call.req))
    return partial(_scatter_rows, call.xp, ograd, index, dx, di)
