"""The metric protocol of ``mx.metric``: ``EvalMetric`` (local and global statistics),
``CompositeEvalMetric``, ``CustomMetric`` / ``np``, the registry and ``create``."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

from graphexec.core.ir.errors import GraphexecError

from ..registry import Registry

__all__ = ["EvalMetric", "CompositeEvalMetric", "CustomMetric", "np_metric", "register",
           "alias", "create", "check_label_shapes", "MetricError", "as_numpy"]


class MetricError(GraphexecError, ValueError):
    """A metric got labels and predictions it cannot compare."""


def as_numpy(x: Any) -> np.ndarray:
    """The values of an array as a plain numpy array (a view when possible)."""
    return np.asarray(x)


def check_label_shapes(labels: Any, preds: Any, wrap: bool = False, shape: bool = False
                       ) -> tuple[Any, Any]:
    """Check that there are as many labels as predictions (or, with ``shape``, that their
    shapes agree); with ``wrap`` single arrays become one-element lists."""
    have = (labels.shape, preds.shape) if shape else (len(labels), len(preds))
    if have[0] != have[1]:
        raise MetricError(f"Shape of labels {have[0]} does not match shape of predictions "
                          f"{have[1]}")
    if wrap:
        labels = [labels] if isinstance(labels, np.ndarray) else labels
        preds = [preds] if isinstance(preds, np.ndarray) else preds
    return labels, preds


class EvalMetric:
    """Base class: ``update(labels, preds)`` accumulates ``sum_metric`` / ``num_inst``
    (and their global counterparts, which ``reset_local`` keeps); ``get()`` returns
    ``(name, value)``."""

    def __init__(self, name: str, output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, **kwargs: Any):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict:
        """The arguments that re-create this metric with ``create(**config)``."""
        config = self._kwargs.copy()
        config.update({"metric": type(self).__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label: dict, pred: dict) -> None:
        """``update`` with dicts name -> array, picking ``label_names`` / ``output_names``."""
        preds = ([pred[n] for n in self.output_names] if self.output_names is not None
                 else list(pred.values()))
        labels = ([label[n] for n in self.label_names] if self.label_names is not None
                  else list(label.values()))
        self.update(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        raise NotImplementedError

    def _add(self, value: Any, count: Any) -> None:
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self) -> None:
        """Clear local and global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the local statistics (the global ones keep counting)."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self) -> tuple[Any, Any]:
        """(name, value) of the local statistics (NaN before any update)."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / self.num_inst

    def get_global(self) -> tuple[Any, Any]:
        """(name, value) of the global statistics."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, self.global_sum_metric / self.global_num_inst

    def get_name_value(self) -> list[tuple[str, Any]]:
        """``get()`` as a list of (name, value) pairs."""
        return _pairs(*self.get())

    def get_global_name_value(self) -> list[tuple[str, Any]]:
        """``get_global()`` as a list of (name, value) pairs."""
        return _pairs(*self.get_global()) if self._has_global_stats else self.get_name_value()


def _pairs(name: Any, value: Any) -> list[tuple[str, Any]]:
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values))


_REGISTRY = Registry(EvalMetric, "metric")


def register(klass: type) -> type:
    """Register an EvalMetric subclass under its lower-cased name."""
    return _REGISTRY.register(klass)


def alias(*names: str) -> Callable[[type], type]:
    """Class decorator: register an EvalMetric under more names."""
    return _REGISTRY.alias(*names)


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name (``'acc'``, ``'ce'``, ``'f1'``, ``'mse'``, ...), an EvalMetric,
    a function ``feval(label, pred)`` (a CustomMetric) or a list of those (a composite)."""
    if callable(metric) and not isinstance(metric, (EvalMetric, type)):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _REGISTRY.create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(self, metrics: Sequence[Any] | None = None, name: str = "composite",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def add(self, metric: Any) -> None:
        """Add a child metric."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        """The ``index``-th child."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise MetricError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")
        return self.metrics[index]

    def update_dict(self, labels: dict, preds: dict) -> None:
        if self.label_names is not None:
            labels = OrderedDict(i for i in labels.items() if i[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(i for i in preds.items() if i[0] in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self) -> None:
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter: str) -> tuple[list, list]:
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, getter)()
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self) -> tuple[list, list]:
        return self._collect("get")

    def get_global(self) -> tuple[list, list]:
        return self._collect("get_global")

    def get_config(self) -> dict:
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on numpy arrays, returning a value (averaged
    over updates) or ``(sum, count)``; ``allow_extra_outputs`` permits more predictions
    than labels."""

    def __init__(self, feval: Callable, name: str | None = None,
                 allow_extra_outputs: bool = False, output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels: Any, preds: Any) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            result = self._feval(np.array(label), np.array(pred))
            if isinstance(result, tuple):
                self._add(*result)
            else:
                self._add(result, 1)

    def get_config(self) -> dict:
        raise NotImplementedError("CustomMetric cannot be serialized")


def np_metric(numpy_feval: Callable, name: str | None = None,
              allow_extra_outputs: bool = False) -> CustomMetric:
    """A CustomMetric from a function of numpy arrays (``mx.metric.np``)."""
    def feval(label: np.ndarray, pred: np.ndarray) -> Any:
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
