"""Kernels of core/ops/loss_extra.py: SVMOutput and the CTC loss.

The CTC forward runs the alpha-beta recursions in log space in float64 on the host, one
sample at a time (MXNet's CPU kernel, warp-ctc, does the same per sample in float32); it
writes the per-sample loss and the gradient of the loss with respect to the activations,
which the backward kernel scales by each sample's head gradient."""
from __future__ import annotations

import numpy as np

from .base import kernel


@kernel("SVMOutput", inplace=True)
def svm_output(call):
    xp, x, out = call.xp, call.inputs[0], call.outputs[0]
    return (lambda: None) if out is x else (lambda: xp.copyto(out, x))


@kernel("_backward_SVMOutput")
def svm_output_backward(call):
    """L2-SVM: -2 reg (margin - y) on the label's class where y < margin and
    2 reg (margin + y) on the others where -y < margin; L1-SVM: -reg / +reg there."""
    xp, p = call.xp, call.params
    label, out = call.inputs
    dx = call.outputs[0]
    rows = out.reshape(out.shape[0], -1)
    index = xp.arange(rows.shape[0])

    def run():
        k = label.reshape(-1)[:rows.shape[0]].astype(np.int64)
        is_k = xp.zeros(rows.shape, bool)
        is_k[index, k] = True
        m, reg = p.margin, p.regularization_coefficient
        if p.use_linear:
            grad = xp.where(is_k, xp.where(m > rows, -reg, 0), xp.where(m > -rows, reg, 0))
        else:
            grad = xp.where(is_k, xp.where(m > rows, -2 * reg * (m - rows), 0),
                            xp.where(m > -rows, 2 * reg * (m + rows), 0))
        xp.copyto(dx.reshape(rows.shape), grad, casting="unsafe")
        for k in range(1, len(call.outputs)):
            if call.req[k] != "null":
                call.outputs[k].fill(0)
    return run


# -- CTC --------------------------------------------------------------------------------------------
def _log_softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(axis=-1, keepdims=True)
    return a - np.log(np.exp(a).sum(axis=-1, keepdims=True))


def _labels_of(p, label: np.ndarray, lengths: np.ndarray | None) -> list[np.ndarray]:
    """Each sample's label sequence: by the given lengths, or up to the first padding value
    (0 with blank_label='first', -1 with 'last')."""
    rows = label.astype(np.int64)
    if lengths is not None:
        return [r[:int(n)] for r, n in zip(rows, lengths)]
    pad = 0 if p.blank_label == "first" else -1
    out = []
    for r in rows:
        hit = np.nonzero(r == pad)[0]
        out.append(r[:hit[0]] if hit.size else r)
    return out


def _lse(*terms):
    return np.logaddexp.reduce(np.stack(terms), axis=0)


def ctc_sample(logp: np.ndarray, labels: np.ndarray, blank: int) -> tuple[float, np.ndarray]:
    """Loss and activation gradient of one sample: ``logp`` (T, C) log-probabilities."""
    T, C = logp.shape
    ext = np.full(2 * len(labels) + 1, blank, np.int64)
    ext[1::2] = labels
    S = ext.size
    repeats = int(np.sum(labels[1:] == labels[:-1])) if len(labels) > 1 else 0
    if len(labels) + repeats > T:
        return 0.0, np.zeros((T, C))
    skip = np.zeros(S, bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    emit = logp[:, ext]                     # (T, S)
    alpha = np.full((T, S), -np.inf)
    alpha[0, :min(2, S)] = emit[0, :min(2, S)]
    for t in range(1, T):
        prev = alpha[t - 1]
        shifted1 = np.concatenate([[-np.inf], prev[:-1]])
        shifted2 = np.where(skip, np.concatenate([[-np.inf, -np.inf], prev[:-2]]), -np.inf)
        alpha[t] = _lse(prev, shifted1, shifted2) + emit[t]
    beta = np.full((T, S), -np.inf)
    beta[T - 1, max(0, S - 2):] = emit[T - 1, max(0, S - 2):]
    skip_next = np.zeros(S, bool)
    skip_next[:-2] = skip[2:]
    for t in range(T - 2, -1, -1):
        nxt = beta[t + 1]
        shifted1 = np.concatenate([nxt[1:], [-np.inf]])
        shifted2 = np.where(skip_next, np.concatenate([nxt[2:], [-np.inf, -np.inf]]), -np.inf)
        beta[t] = _lse(nxt, shifted1, shifted2) + emit[t]
    loglike = np.logaddexp.reduce(alpha[T - 1, max(0, S - 2):])
    occupancy = np.full((T, C), -np.inf)
    both = alpha + beta - emit
    for s in range(S):
        occupancy[:, ext[s]] = np.logaddexp(occupancy[:, ext[s]], both[:, s])
    grad = np.exp(logp) - np.exp(occupancy - loglike)
    return -float(loglike), grad


@kernel("CTCLoss")
def ctc_loss(call):
    xp, p = call.xp, call.params
    data, label = call.inputs[:2]
    rest = list(call.inputs[2:])
    data_len = rest.pop(0) if p.use_data_lengths else None
    label_len = rest.pop(0) if p.use_label_lengths else None
    loss, grad = call.outputs
    T, N, C = data.shape
    blank = 0 if p.blank_label == "first" else C - 1

    def run():
        host = np.asarray(data if xp is np else data.get(), np.float64)
        lens = (np.full(N, T) if data_len is None else
                np.asarray(data_len if xp is np else data_len.get()).astype(np.int64))
        lab_len = None if label_len is None else \
            np.asarray(label_len if xp is np else label_len.get())
        labels = _labels_of(p, np.asarray(label if xp is np else label.get()), lab_len)
        costs, grads = np.zeros(N), np.zeros((T, N, C))
        for n in range(N):
            steps = int(lens[n])
            if steps <= 0:
                continue
            costs[n], grads[:steps, n] = ctc_sample(_log_softmax(host[:steps, n]),
                                                    labels[n], blank)
        xp.copyto(loss, xp.asarray(costs), casting="unsafe")
        if call.req[1] != "null":
            xp.copyto(grad, xp.asarray(grads), casting="unsafe")
    return run


@kernel("_backward_ctc_loss")
def ctc_loss_backward(call):
    """data's gradient: the forward's gradient times each sample's head gradient; the
    label and length inputs get zeros."""
    xp = call.xp
    og, _og_grad, _loss, grad = call.inputs

    def run():
        xp.multiply(grad, og.reshape(1, -1, 1), out=call.outputs[0], casting="unsafe")
        for k in range(1, len(call.outputs)):
            if call.req[k] != "null":
                call.outputs[k].fill(0)
    return run
