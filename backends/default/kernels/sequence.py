"""Kernels of SequenceMask, SequenceLast, SequenceReverse and their backward operators
(core/ops/sequence.py). Lengths are truncated to integers (MXNet's reading); the per-run
step indices are computed once into preallocated int64 arrays."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.sequence import batch_axis

from .base import cast_scalar, kernel


class _Steps:
    """The sequence lengths of a run, checked against ``allowed`` = (low, high) bounds (None:
    any length is meaningful)."""

    def __init__(self, xp, p, data_shape: tuple, lengths, op: str, allowed):
        self.xp, self.lengths, self.op, self.allowed = xp, lengths, op, allowed
        self.axis = p.axis
        self.batch_axis = batch_axis(p, data_shape, op)
        self.seq, self.batch = data_shape[p.axis], data_shape[self.batch_axis]
        self.ints = xp.empty(self.batch, np.int64)

    def current(self):
        """(batch,) int64 lengths of this run (T everywhere without a length input)."""
        xp = self.xp
        if self.lengths is None:
            self.ints.fill(self.seq)
            return self.ints
        xp.copyto(self.ints, xp.trunc(self.lengths), casting="unsafe")
        if self.allowed is None:
            return self.ints
        low, high = self.allowed
        if bool(((self.ints < low) | (self.ints > high)).any()):
            raise ValueError(f"{self.op}: sequence_length must lie in [{low}, {high}] for "
                             f"sequences of {self.seq} steps, got {self.lengths.tolist()}")
        return self.ints

    def grid(self, ndim: int):
        """(step index, length) broadcastable against data of ``ndim`` dimensions."""
        xp = self.xp
        shape = [1] * ndim
        shape[self.axis] = self.seq
        steps = xp.arange(self.seq).reshape(shape)
        shape = [1] * ndim
        shape[self.batch_axis] = self.batch
        return steps, self.current().reshape(shape)


def _lengths(call):
    return call.inputs[1] if call.params.use_sequence_length else None


@kernel("SequenceMask")
def sequence_mask(call):
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    steps = _Steps(xp, call.params, x.shape, _lengths(call), "SequenceMask", None)
    value = cast_scalar(call.params.value, out)

    def run():
        t, n = steps.grid(x.ndim)
        xp.copyto(out, xp.where(t < n, x, value))
    return run


@kernel("_backward_SequenceMask")
def sequence_mask_backward(call):
    xp, og, dx = call.xp, call.inputs[0], call.outputs[0]
    steps = _Steps(xp, call.params, dx.shape, _lengths(call), "SequenceMask", None)
    rest = call.outputs[1:]

    def run():
        t, n = steps.grid(og.ndim)
        xp.multiply(og, t < n, out=dx)
        for z in rest:
            z.fill(0)
    return run


def _last_index(steps: _Steps):
    """Index tuple picking each sequence's last step (data axes 0 and 1)."""
    last = steps.current() - 1
    batch = steps.xp.arange(steps.batch)
    return (last, batch) if steps.axis == 0 else (batch, last)


@kernel("SequenceLast")
def sequence_last(call):
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    steps = _Steps(xp, call.params, x.shape, _lengths(call), "SequenceLast",
                   (1, x.shape[call.params.axis]))
    return lambda: xp.copyto(out, x[_last_index(steps)])


@kernel("_backward_SequenceLast")
def sequence_last_backward(call):
    xp, og, dx = call.xp, call.inputs[0], call.outputs[0]
    steps = _Steps(xp, call.params, dx.shape, _lengths(call), "SequenceLast",
                   (1, dx.shape[call.params.axis]))
    rest = call.outputs[1:]

    def run():
        dx.fill(0)
        dx[_last_index(steps)] = og
        for z in rest:
            z.fill(0)
    return run


def _reverse_source(steps: _Steps, ndim: int):
    """For every (step, sequence): the step it takes its value from."""
    t, n = steps.grid(ndim)
    return steps.xp.where(t < n, n - 1 - t, t)


@kernel("SequenceReverse", "_backward_SequenceReverse")
def sequence_reverse(call):
    """Reversal is its own inverse: the backward kernel applies it to the gradient."""
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    steps = _Steps(xp, call.params, x.shape, _lengths(call), "SequenceReverse",
                   (0, x.shape[0]))
    rest = call.outputs[1:]

    def run():
        src = _reverse_source(steps, x.ndim)
        xp.copyto(out, xp.take_along_axis(x, xp.broadcast_to(src, x.shape), axis=0))
        for z in rest:
            z.fill(0)
    return run
