"""Native kernels of the loss heads and of their backward operators.

Forward: SoftmaxOutput is a softmax, the regression outputs the identity (a sigmoid for
LogisticRegressionOutput), MakeLoss and make_loss the identity. Backward (MXNet 1.9.1's
rules, checked against it): the output gradient is never read, the label's gradient buffer
is never written."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from .base import kernel, special
from .nn import softmax_fn
from .nn_grad import nothing, target


@kernel("SoftmaxOutput")
def softmax_output(call):
    """softmax over axis 1 of the data flattened to (batch, -1); over axis 1 of the data as
    it is with multi_output; over the last axis with preserve_shape (MXNet's three modes)."""
    p, x, out = call.params, call.inputs[0], call.outputs[0]
    if p.preserve_shape:
        return softmax_fn(call.xp, x, out, x.ndim - 1)
    if p.multi_output:
        return softmax_fn(call.xp, x, out, 1)
    return softmax_fn(call.xp, x, out, tuple(range(1, x.ndim)))


@kernel("LogisticRegressionOutput")
def logistic_regression_output(call):
    return partial(special(call.xp).expit, call.inputs[0], out=call.outputs[0])


@kernel("LinearRegressionOutput", "MAERegressionOutput", "MakeLoss", "make_loss")
def identity(call):
    return partial(call.xp.copyto, call.outputs[0], call.inputs[0])


# -- backward -------------------------------------------------------------------------------
def _class_layout(p, out):
    """(rows, classes, positions): the output seen as (rows, classes, positions) with the
    class axis in the middle, as each mode of SoftmaxOutput takes it."""
    shape = out.shape  # products, not divisions: a batch may be empty
    if p.preserve_shape:
        return math.prod(shape[:-1]), shape[-1], 1
    if p.multi_output:
        return shape[0], shape[1], math.prod(shape[2:])
    return shape[0], math.prod(shape[1:]), 1


@kernel("_backward_SoftmaxOutput")
def softmax_output_backward(call):
    """(softmax - target) * grad_scale / norm, per row (position with multi_output), where
    the target is the one-hot label (class = int(label), none when out of range), smoothed
    by smooth_alpha (not with multi_output), or the label itself when it has the output's
    shape (probabilities: no normalisation). norm: 'null' 1 (the positions per sample with
    multi_output), 'batch' the label's size, 'valid' the labels != ignore_label (at least 1).
    use_ignore zeroes rows labelled ignore_label; out_grad=True multiplies by the output
    (MXNet hands its backward the output where the output gradient would go)."""
    xp, p = call.xp, call.params
    out, label = call.inputs
    if call.req[0] == "null":
        return nothing
    rows, classes, positions = _class_layout(p, out)
    grad, commit = target(xp, call.outputs[0], (rows, classes, positions))
    out3 = out.reshape(rows, classes, positions)
    if label.shape == out.shape:
        lab3 = label.reshape(grad.shape)

        def soft():
            xp.subtract(out3, lab3, out=grad)
            _finish(xp, p, grad, out3, p.grad_scale)
            commit()
        return soft
    ignore = int(p.ignore_label)
    fixed = p.normalization != "valid"   # 'valid' counts the labels of each call
    scale = p.grad_scale / _softmax_norm(xp, p, label, positions, ignore) if fixed else None
    smooth = p.smooth_alpha if not p.multi_output and classes > 1 else 0.0
    if not smooth and not p.out_grad:
        return _scaled_minus_one_hot(xp, p, label, out3, grad, commit, scale, positions,
                                     ignore)
    subtract_target = _one_hot_subtract(xp, p, label, grad)

    def run():
        lab = subtract_target(out3)
        if p.use_ignore:
            xp.multiply(grad, (lab != ignore).reshape(rows, 1, positions), out=grad)
        _finish(xp, p, grad, out3, scale if fixed else
                p.grad_scale / _softmax_norm(xp, p, label, positions, ignore))
        commit()
    return run


def _int_labels(xp, label, count: int):
    """(lab, read): an int64 array of the first ``count`` labels and a function filling it
    from ``label``, truncating as MXNet's int cast does."""
    labels = label.reshape(-1)[:count]
    lab = xp.empty(labels.shape, np.int64)
    return lab, lambda: xp.copyto(lab, labels, casting="unsafe")


def _scaled_minus_one_hot(xp, p, label, out3, grad, commit, scale, positions: int,
                          ignore: int):
    """``f()``: grad = (out - one_hot(label)) * scale without a dense one-hot target: one
    pass writes out * scale (out - 0 times scale, the same rounding), then each row's hot
    element (out - 1) * scale; rows labelled ignore_label zeroed with use_ignore. The
    LSTM LM's 1120 x 10000 gradient: one pass over the output where the target's comparison,
    subtraction and scaling took three (SoftmaxOutput without smoothing or out_grad)."""
    rows, classes, _ = grad.shape
    lab, read_labels = _int_labels(xp, label, rows * positions)
    lab2 = lab.reshape(rows, positions)

    def run():
        read_labels()
        s = grad.dtype.type(scale if scale is not None else
                            p.grad_scale / _softmax_norm(xp, p, label, positions, ignore))
        if s == 1:
            xp.copyto(grad, out3)
        else:
            xp.multiply(out3, s, out=grad)
        r, q = xp.nonzero((lab2 >= 0) & (lab2 < classes))  # out of range: no hot class
        c = lab2[r, q]
        picked = out3[r, c, q] - grad.dtype.type(1)
        grad[r, c, q] = picked if s == 1 else picked * s
        if p.use_ignore:
            xp.multiply(grad, (lab2 != ignore).reshape(rows, 1, positions), out=grad)
        commit()
    return run


def _one_hot_subtract(xp, p, label, grad):
    """A callable ``f(out3)`` writing out3 - target into ``grad`` (rows, classes, positions)
    and returning the labels as integers (truncated; out-of-range ones have no hot class).

    The one-hot target is a comparison of the labels with the class ids, so labels out of
    range simply match nothing (no per-call range check or gather)."""
    rows, classes, positions = grad.shape
    smooth = p.smooth_alpha if not p.multi_output and classes > 1 else 0.0
    off = grad.dtype.type(smooth / (classes - 1) if smooth else 0.0)
    hit = grad.dtype.type(1.0 - smooth) - off
    lab, read_labels = _int_labels(xp, label, rows * positions)
    lab3 = lab.reshape(rows, 1, positions)
    class_ids = xp.arange(classes).reshape(1, classes, 1)
    hot = xp.empty(grad.shape, bool)

    def run(out3):
        read_labels()
        xp.equal(lab3, class_ids, out=hot)
        if smooth:
            xp.subtract(out3, off, out=grad)
            xp.subtract(grad, hot * hit, out=grad)
        else:
            xp.subtract(out3, hot, out=grad)
        return lab
    return run


def _softmax_norm(xp, p, label, positions: int, ignore: int) -> float:
    if p.normalization == "batch":
        return max(label.size, 1)  # an empty batch has no gradient to scale
    if p.normalization == "valid":
        return max(int((label.astype(np.int64) != ignore).sum()), 1)
    return positions if p.multi_output else 1


def _finish(xp, p, grad, out3, scale: float) -> None:
    if p.out_grad:
        xp.multiply(grad, out3, out=grad)
    if scale != 1.0:
        xp.multiply(grad, grad.dtype.type(scale), out=grad)


_REGRESSION = {
    "_backward_linear_reg_out": lambda xp, d: d,
    "_backward_logistic_reg_out": lambda xp, d: d,
    "_backward_mae_reg_out": lambda xp, d: xp.where(d > 0, 1, -1).astype(d.dtype),
}


@kernel(*_REGRESSION)
def regression_backward(call):
    """f(out - label) * grad_scale / (label elements per sample): f is the identity (linear,
    logistic: out is the sigmoid there) or the sign with 0 counted negative (MAE)."""
    xp, (label, out) = call.xp, call.inputs
    if call.req[0] == "null":
        return nothing
    dx = call.outputs[0]
    fn = _REGRESSION[call.op_name]
    lab = label.reshape(out.shape)
    scale = dx.dtype.type(call.params.grad_scale * label.shape[0] / label.size)

    def run():
        xp.multiply(fn(xp, out - lab), scale, out=dx)
    return run


@kernel("_backward_MakeLoss")
def make_loss_backward(call):
    """grad_scale everywhere, divided by 'batch': the elements per last-axis entry (the
    product of every dimension but the last), 'valid': the data elements > valid_thresh (at
    least 1)."""
    p, dx = call.params, call.outputs[0]
    if p.normalization == "valid":
        data = call.inputs[0]
        return lambda: dx.fill(p.grad_scale / max(int((data > p.valid_thresh).sum()), 1))
    norm = dx.size // dx.shape[-1] if p.normalization == "batch" and dx.ndim else 1
    value = p.grad_scale / max(norm, 1)
    return lambda: dx.fill(value)
