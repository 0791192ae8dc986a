"""``BaseModule``: MXNet 1.9.1's module interface and the loops written on top of it
(``fit``, ``score``, ``predict``, ``iter_predict``), shared by ``Module``,
``BucketingModule`` and ``SequentialModule``."""
from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from graphexec.core.ir.ndarray import NDArray

from .. import metric as metric_mod
from ..callback import BatchEndParam
from ..initializer import Uniform
from ..io.base import DataBatch, DataDesc, DataIter
from ..ndarray import array, concatenate, load, save
from .errors import ModuleError, ModuleStateError

__all__ = ["BaseModule", "check_input_names", "parse_data_desc"]


def _as_list(obj: Any) -> list:
    return obj if isinstance(obj, list) else [obj]


def check_input_names(symbol: Any, names: Sequence[str], typename: str, throw: bool) -> None:
    """Every name must be an argument of ``symbol`` (an error, or a warning)."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"You created Module with Module(..., {typename}_names={list(names)}) but input "
               f"with name '{name}' is not found in symbol.list_arguments(). Did you mean one "
               f"of:\n\t" + "\n\t".join(candidates))
        if throw:
            raise ModuleError(msg)
        warnings.warn(msg, stacklevel=3)


def _check_names_match(names: Sequence[str], shapes: list, kind: str, throw: bool) -> None:
    actual = [d[0] for d in shapes]
    if sorted(names) != sorted(actual):
        msg = (f"Data provided by {kind}_shapes don't match names specified by {kind}_names "
               f"({shapes} vs. {list(names)})")
        if throw:
            raise ModuleError(msg)
        warnings.warn(msg, stacklevel=3)


def parse_data_desc(data_names: Sequence[str], label_names: Sequence[str], data_shapes: list,
                    label_shapes: list | None) -> tuple[list, list | None]:
    """DataDescs of the inputs, checked against the module's data and label names."""
    if data_shapes is None:
        raise ModuleError("bind needs data_shapes (e.g. the iterator's provide_data)")
    data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule:
    """The module interface: bind, init_params, init_optimizer, forward, backward, update,
    update_metric, and the training/evaluation loops written on them."""

    def __init__(self, logger: Any = logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    def _require(self, binded: bool = True, params: bool = False, optimizer: bool = False
                 ) -> None:
        steps = (("bind()", binded, self.binded), ("init_params()", params,
                                                   self.params_initialized),
                 ("init_optimizer()", optimizer, self.optimizer_initialized))
        missing = [name for name, needed, done in steps if needed and not done]
        if missing:
            raise ModuleStateError(f"{type(self).__name__}: call {' and '.join(missing)} first")

    # -- loops ------------------------------------------------------------------------------
    def forward_backward(self, data_batch: Any) -> None:
        """A training forward then backward."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _batch_metric(self, eval_metric: Any, batch: Any) -> None:
        if isinstance(batch, list):
            self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
        else:
            self.update_metric(eval_metric, batch.label)

    def score(self, eval_data: DataIter, eval_metric: Any, num_batch: int | None = None,
              batch_end_callback: Any = None, score_end_callback: Any = None,
              reset: bool = True, epoch: int = 0, sparse_row_id_fn: Callable | None = None
              ) -> list[tuple[str, float]]:
        """Evaluate ``eval_metric`` over ``eval_data``; returns its (name, value) pairs."""
        self._require(params=True)
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        eval_metric.reset()
        done = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            self._batch_metric(eval_metric, batch)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            done += 1
        _call_all(score_end_callback, BatchEndParam(epoch, done, eval_metric, locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data: DataIter, num_batch: int | None = None,
                     reset: bool = True, sparse_row_id_fn: Callable | None = None
                     ) -> Iterator[tuple[list, int, Any]]:
        """Yield (outputs without padding, batch number, batch) per batch."""
        self._require(params=True)
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            yield [out[0:out.shape[0] - pad] for out in self.get_outputs()], nbatch, batch

    def predict(self, eval_data: Any, num_batch: int | None = None, merge_batches: bool = True,
                reset: bool = True, always_output_list: bool = False,
                sparse_row_id_fn: Callable | None = None) -> Any:
        """The outputs over ``eval_data`` (a DataIter, or one batch as an array): joined
        over batches with ``merge_batches`` (one array when there is one output)."""
        self._require(params=True)
        if isinstance(eval_data, np.ndarray):
            data = eval_data if isinstance(eval_data, NDArray) else array(eval_data)
            self.forward(DataBatch([data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ModuleError(f"eval_data must be of type NDArray or DataIter, got "
                              f"{type(eval_data).__name__}")
        outputs = [[out.copy() for out in outs] for outs, _, _ in self.iter_predict(
            eval_data, num_batch, reset, sparse_row_id_fn)]
        if not outputs or not merge_batches:
            return outputs
        count = len(outputs[0])
        if any(len(o) != count for o in outputs):
            raise ModuleError("Cannot merge batches, as num of outputs is not the same in "
                              "mini-batches. Maybe bucketing is used?")
        merged = [concatenate([o[k] for o in outputs]) for k in range(count)]
        return merged[0] if count == 1 and not always_output_list else merged

    def fit(self, train_data: DataIter, eval_data: DataIter | None = None,
            eval_metric: Any = "acc", epoch_end_callback: Any = None,
            batch_end_callback: Any = None, kvstore: Any = "local", optimizer: Any = "sgd",
            optimizer_params: Any = (("learning_rate", 0.01),), eval_end_callback: Any = None,
            eval_batch_end_callback: Any = None, initializer: Any = Uniform(0.01),
            arg_params: dict | None = None, aux_params: dict | None = None,
            allow_missing: bool = False, force_rebind: bool = False, force_init: bool = False,
            begin_epoch: int = 0, num_epoch: int | None = None, validation_metric: Any = None,
            monitor: Any = None, sparse_row_id_fn: Callable | None = None) -> None:
        """Train for epochs ``begin_epoch .. num_epoch - 1``: bind, initialize parameters and
        optimizer, then per batch forward, backward, update and the metric, with the
        callbacks; validate on ``eval_data`` after each epoch."""
        if num_epoch is None:
            raise ModuleError("please specify number of epochs")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        validation_metric = eval_metric if validation_metric is None else validation_metric
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            name_values = self._fit_epoch(train_data, epoch, eval_metric, batch_end_callback,
                                          monitor, sparse_row_id_fn)
            for name, val in name_values:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()  # also syncs aux states over devices
            self.set_params(arg_params, aux_params)
            for callback in _as_list(epoch_end_callback or []):
                callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def _fit_epoch(self, train_data: DataIter, epoch: int, eval_metric: Any,
                   batch_end_callback: Any, monitor: Any, sparse_row_id_fn: Any) -> list:
        """One epoch of ``fit``; returns the metric's global (name, value) pairs."""
        eval_metric.reset()
        batches = iter(train_data)
        try:
            next_batch = next(batches)
        except StopIteration:
            raise ModuleError("the training iterator gave no batch (reset it, or check its "
                              "size and batch_size)") from None
        nbatch, end_of_batch, name_values = 0, False, []
        while not end_of_batch:
            data_batch = next_batch
            if monitor is not None:
                monitor.tic()
            self.forward_backward(data_batch)
            self.update()
            self._batch_metric(eval_metric, data_batch)
            try:
                next_batch = next(batches)
                self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
            except StopIteration:
                end_of_batch = True
            if monitor is not None:
                monitor.toc_print()
            if end_of_batch:
                name_values = eval_metric.get_global_name_value()
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            nbatch += 1
        return name_values

    # -- parameters -------------------------------------------------------------------------
    def set_params(self, arg_params: dict, aux_params: dict, allow_missing: bool = False,
                   force_init: bool = True, allow_extra: bool = False) -> None:
        """Assign parameter values (``init_params`` without an initializer)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def save_params(self, fname: str) -> None:
        """Write the parameters (``arg:`` / ``aux:`` keys) in MXNet's format."""
        arg_params, aux_params = self.get_params()
        data = {f"arg:{k}": v for k, v in arg_params.items()}
        data.update({f"aux:{k}": v for k, v in aux_params.items()})
        save(fname, data)

    def load_params(self, fname: str) -> None:
        """Read parameters ``save_params`` (or MXNet) wrote and assign them."""
        arg_params, aux_params = {}, {}
        for key, value in load(fname).items():
            kind, _, name = key.partition(":")
            if kind not in ("arg", "aux") or not name:
                raise ModuleError(f"Invalid param file {fname}: key {key!r} is not "
                                  f"'arg:<name>' or 'aux:<name>'")
            (arg_params if kind == "arg" else aux_params)[name] = value
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context: bool = True) -> list:
        """The state inputs (none by default)."""
        self._require(params=True)
        return []

    def set_states(self, states: Any = None, value: Any = None) -> None:
        """Set the state inputs (none by default)."""
        self._require(params=True)
        if states or value:
            raise ModuleError(f"{type(self).__name__} has no states to set")

    def prepare(self, data_batch: Any, sparse_row_id_fn: Callable | None = None) -> None:
        """Prepare for a batch (nothing to do: parameters are dense)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    @property
    def symbol(self) -> Any:
        """The module's symbol."""
        return self._symbol


def _call_all(callbacks: Any, param: BatchEndParam) -> None:
    for callback in _as_list(callbacks) if callbacks is not None else []:
        callback(param)
