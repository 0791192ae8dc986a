"""``gx.metric``: MXNet 1.9.1's evaluation metrics (``Accuracy``, ``TopKAccuracy``, ``F1``,
``MCC``, ``PCC``, ``MAE``, ``MSE``, ``RMSE``, ``CrossEntropy``, ``NegativeLogLikelihood``,
``Perplexity``, ``PearsonCorrelation``, ``Loss``, ``CompositeEvalMetric``, ``CustomMetric``),
``create`` by name (``'acc'``, ``'ce'``, ``'top_k_accuracy'``, ...) and ``np``.

>>> metric = gx.metric.create('acc')
>>> metric.update([label], [scores]); metric.get()
('accuracy', 0.75)
"""
from .base import (CompositeEvalMetric, CustomMetric, EvalMetric, MetricError, alias,
                   check_label_shapes, create, register)
from .base import np_metric as np
from .classification import F1, MCC, PCC, Accuracy, TopKAccuracy
from .regression import (MAE, MSE, RMSE, CrossEntropy, Loss, NegativeLogLikelihood,
                         PearsonCorrelation, Perplexity)

__all__ = ["EvalMetric", "CompositeEvalMetric", "CustomMetric", "MetricError", "create",
           "register", "alias", "check_label_shapes", "np", "Accuracy", "TopKAccuracy", "F1",
           "MCC", "PCC", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "Perplexity", "PearsonCorrelation", "Loss"]
