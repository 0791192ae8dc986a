"""Regression and probability metrics: ``MAE``, ``MSE``, ``RMSE``, ``PearsonCorrelation``,
``CrossEntropy``, ``NegativeLogLikelihood``, ``Perplexity`` and ``Loss``, with MXNet
1.9.1's update rules (MAE, MSE and RMSE average per-batch values)."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..ndarray.imperative import invoke
from .base import EvalMetric, MetricError, alias, as_numpy, check_label_shapes, register

__all__ = ["MAE", "MSE", "RMSE", "PearsonCorrelation", "CrossEntropy",
           "NegativeLogLikelihood", "Perplexity", "Loss"]


def _columns(x: Any) -> np.ndarray:
    x = as_numpy(x)
    return x.reshape(x.shape[0], 1) if x.ndim == 1 else x


class _PerBatch(EvalMetric):
    """Averages ``measure(label, pred)`` over batches (labels and predictions of one
    dimension become columns)."""

    measure: Callable[[np.ndarray], float]

    def __init__(self, name: str, output_names: Any, label_names: Any):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            diff = _columns(label) - _columns(pred)
            self._add(type(self).measure(diff), 1)


@register
class MAE(_PerBatch):
    """Mean absolute error."""

    measure = staticmethod(lambda d: np.abs(d).mean())

    def __init__(self, name: str = "mae", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(name, output_names, label_names)


@register
class MSE(_PerBatch):
    """Mean squared error."""

    measure = staticmethod(lambda d: (d ** 2.0).mean())

    def __init__(self, name: str = "mse", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(name, output_names, label_names)


@register
class RMSE(_PerBatch):
    """Root mean squared error (averaged over batches)."""

    measure = staticmethod(lambda d: np.sqrt((d ** 2.0).mean()))

    def __init__(self, name: str = "rmse", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(name, output_names, label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: averaged per batch ('macro') or over
    all values with running moments ('micro')."""

    def __init__(self, name: str = "pearsonr", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, average: str = "macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self) -> None:
        super().reset()
        if self.average == "micro":
            self._label = [0, 0.0, 0.0]   # count, mean, sum of squared deviations
            self._pred = [0, 0.0, 0.0]
            self._cov = 0.0

    @staticmethod
    def _moments(values: np.ndarray, acc: list) -> None:
        acc[0] += len(values)
        delta = values - acc[1]
        acc[1] += np.sum(delta / acc[0])
        acc[2] += np.sum(delta * (values - acc[1]))

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = as_numpy(label).ravel().astype(np.float64)
            pred = as_numpy(pred).ravel().astype(np.float64)
            if self.average == "macro":
                self._add(np.corrcoef(pred, label)[0, 1], 1)
                continue
            self.num_inst += 1
            self.global_num_inst += 1
            self._moments(label, self._label)
            self._cov += np.sum((label - self._label[1]) * (pred - self._pred[1]))
            self._moments(pred, self._pred)

    def get(self) -> tuple[str, float]:
        if self.num_inst == 0:
            return self.name, float("nan")
        if self.average == "macro":
            return self.name, self.sum_metric / self.num_inst
        n = self._label[0]
        return self.name, self._cov / ((n - 1) * np.sqrt(self._pred[2] / (n - 1))
                                       * np.sqrt(self._label[2] / (n - 1)))


class _LogLoss(EvalMetric):
    """-sum(log(p[label] + eps)) over examples."""

    def __init__(self, eps: float, name: str, output_names: Any, label_names: Any):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = as_numpy(label).ravel(), as_numpy(pred)
            if label.shape[0] != pred.shape[0]:
                raise MetricError(f"{self.name}: {label.shape[0]} labels for {pred.shape[0]} "
                                  f"predictions")
            prob = pred[np.arange(label.shape[0], dtype=np.int64), np.int64(label)]
            self._add((-np.log(prob + self.eps)).sum(), label.shape[0])


@register
@alias("ce")
class CrossEntropy(_LogLoss):
    """Cross entropy of predicted class probabilities."""

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LogLoss):
    """Negative log-likelihood of predicted class probabilities."""

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(eps, name, output_names, label_names)


@register
class Perplexity(EvalMetric):
    """exp of the mean negative log-probability of the labels (probabilities along
    ``axis``), skipping ``ignore_label``."""

    def __init__(self, ignore_label: Any, axis: int = -1, name: str = "perplexity",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels: Any, preds: Any) -> None:
        if len(labels) != len(preds):
            raise MetricError(f"{len(labels)} labels for {len(preds)} predictions")
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            label, pred = as_numpy(label), as_numpy(pred)
            if label.size != pred.size / pred.shape[-1]:
                raise MetricError(f"shape mismatch: {label.shape} vs. {pred.shape}")
            label = label.reshape(label.size)
            picked = as_numpy(invoke("pick", (pred, label.astype(np.int32)),
                                     {"axis": self.axis}))
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(picked.dtype)
                num -= float(ignore.sum())
                picked = picked * (1 - ignore) + ignore
            loss -= float(np.log(np.maximum(1e-10, picked)).sum())
            num += picked.size
        self._add(loss, num)

    def get(self) -> tuple[str, float]:
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / self.num_inst)

    def get_global(self) -> tuple[str, float]:
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.global_sum_metric / self.global_num_inst)


@register
class Loss(EvalMetric):
    """The mean of the outputs (for networks whose outputs are losses)."""

    def __init__(self, name: str = "loss", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _: Any, preds: Any) -> None:
        for pred in [preds] if isinstance(preds, np.ndarray) else preds:
            pred = as_numpy(pred)
            self._add(float(pred.sum()), pred.size)
