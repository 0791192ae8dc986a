"""Classification metrics: ``Accuracy``, ``TopKAccuracy``, ``F1``, ``MCC`` and ``PCC``, with
MXNet 1.9.1's update rules (F1 and MCC 'macro' average per update call, 'micro' over all
examples)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .base import EvalMetric, MetricError, alias, as_numpy, check_label_shapes, register

__all__ = ["Accuracy", "TopKAccuracy", "F1", "MCC", "PCC"]


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of predictions (argmax over ``axis`` of scores) equal to the labels."""

    def __init__(self, axis: int = 1, name: str = "accuracy",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred, label = as_numpy(pred), as_numpy(label)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=self.axis)
            pred = pred.astype(np.int32, copy=False).reshape(-1)
            label = label.astype(np.int32, copy=False).reshape(-1)
            check_label_shapes(label, pred)
            self._add(int(np.count_nonzero(pred == label)), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of labels among the ``top_k`` highest scores (``top_k`` > 1)."""

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise MetricError("Please use Accuracy if top_k is no more than 1")
        self.name += f"_{self.top_k}"

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = as_numpy(pred).astype(np.float32)
            if pred.ndim > 2:
                raise MetricError(f"Predictions should be no more than 2 dims, got shape "
                                  f"{pred.shape}")
            ranked = np.argpartition(pred, -self.top_k)
            label = as_numpy(label).astype(np.int32)
            check_label_shapes(label, ranked)
            if ranked.ndim == 1:  # MXNet counts these locally only
                self.sum_metric += int((ranked.reshape(-1) == label.reshape(-1)).sum())
            else:
                classes = ranked.shape[1]
                for j in range(min(classes, self.top_k)):
                    hits = int((ranked[:, classes - 1 - j] == label.reshape(-1)).sum())
                    self.sum_metric += hits
                    self.global_sum_metric += hits
            self.num_inst += ranked.shape[0]
            self.global_num_inst += ranked.shape[0]


class _BinaryStats:
    """True/false positives/negatives of a binary classifier, local and global."""

    FIELDS = ("tp", "fp", "fn", "tn")

    def __init__(self) -> None:
        self.local = dict.fromkeys(self.FIELDS, 0)
        self.total = dict.fromkeys(self.FIELDS, 0)

    def update(self, label: Any, pred: Any, who: str) -> None:
        pred = as_numpy(pred)
        label = as_numpy(label).astype(np.int32)
        check_label_shapes(label, pred)
        if len(np.unique(label)) > 2:
            raise MetricError(f"{who} currently only supports binary classification.")
        pred_true = pred.argmax(axis=1) == 1
        label_true = label == 1
        counts = {"tp": int((pred_true & label_true).sum()),
                  "fp": int((pred_true & ~label_true).sum()),
                  "fn": int((~pred_true & label_true).sum()),
                  "tn": int((~pred_true & ~label_true).sum())}
        for k, v in counts.items():
            self.local[k] += v
            self.total[k] += v

    def reset(self, everything: bool = True) -> None:
        self.local = dict.fromkeys(self.FIELDS, 0)
        if everything:
            self.total = dict.fromkeys(self.FIELDS, 0)

    @staticmethod
    def examples(c: dict) -> int:
        return c["tp"] + c["fp"] + c["fn"] + c["tn"]

    @staticmethod
    def fscore(c: dict) -> float:
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] > 0 else 0.0
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] > 0 else 0.0
        if precision + recall > 0:
            return 2 * precision * recall / (precision + recall)
        return 0.0

    @classmethod
    def matthewscc(cls, c: dict) -> float:
        if not cls.examples(c):
            return 0.0
        tp, fp, fn, tn = (float(c[k]) for k in cls.FIELDS)
        denom = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term != 0.0:
                denom *= term
        return (tp * tn - fp * fn) / math.sqrt(denom)


class _Binary(EvalMetric):
    """F1 and MCC: a score of the binary statistics, averaged per update ('macro') or over
    every example ('micro')."""

    def __init__(self, name: str, output_names: Any, label_names: Any, average: str):
        self.average = average
        self.stats = _BinaryStats()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def score(self, counts: dict) -> float:
        raise NotImplementedError

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.stats.update(label, pred, type(self).__name__)
        local, total = self.stats.local, self.stats.total
        if self.average == "macro":
            self.sum_metric += self.score(local)
            self.global_sum_metric += self.score(total)
            self.num_inst += 1
            self.global_num_inst += 1
            self.stats.reset()
        else:
            self.sum_metric = self.score(local) * self.stats.examples(local)
            self.global_sum_metric = self.score(total) * self.stats.examples(total)
            self.num_inst = self.stats.examples(local)
            self.global_num_inst = self.stats.examples(total)

    def reset(self) -> None:
        super().reset()
        self.stats.reset()

    def reset_local(self) -> None:
        super().reset_local()
        self.stats.reset(everything=False)


@register
class F1(_Binary):
    """F1 score of a binary classifier (class 1 positive; scores of shape (n, 2))."""

    def __init__(self, name: str = "f1", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)

    def score(self, counts: dict) -> float:
        return _BinaryStats.fscore(counts)


@register
class MCC(_Binary):
    """Matthews correlation coefficient of a binary classifier."""

    def __init__(self, name: str = "mcc", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)

    def score(self, counts: dict) -> float:
        return _BinaryStats.matthewscc(counts)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation from the confusion matrix (grown as classes appear)."""

    def __init__(self, name: str = "pcc", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, has_global_stats: bool = True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc: int) -> None:
        self.lcm = np.pad(self.lcm, ((0, inc), (0, inc)))
        self.gcm = np.pad(self.gcm, ((0, inc), (0, inc)))
        self.k += inc

    @staticmethod
    def _mcc(cmat: np.ndarray) -> float:
        n = cmat.sum()
        x, y = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_xx, cov_yy = np.sum(x * (n - x)), np.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = np.sum(cmat.diagonal() * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = as_numpy(label).astype(np.int32)
            pred = as_numpy(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype(np.int32)
            n = max(pred.max(), label.max())
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = np.zeros((self.k, self.k))
            np.add.at(bcm, (pred, label), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self) -> float:
        return self._mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self) -> float:
        return self._mcc(self.gcm) * self.global_num_inst

    def reset(self) -> None:
        self.global_num_inst = 0.0
        self.gcm = np.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0.0
        self.lcm = np.zeros((self.k, self.k))
