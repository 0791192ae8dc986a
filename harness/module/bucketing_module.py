"""``BucketingModule``: one symbol per bucket key (``sym_gen(key) -> (symbol, data_names,
label_names)``), each bound on first use as a ``Module`` sharing the default bucket's
parameters, gradients, data buffers and memory pool (``simple_bind(shared_exec=,
shared_arg_names=, shared_buffer=)``, the sharing ``gx.BucketingExecutor`` is built on);
MXNet 1.9.1's ``mx.mod.BucketingModule``. Bind with the largest bucket as the default for
the best memory reuse.

>>> mod = gx.mod.BucketingModule(sym_gen, default_bucket_key=train_iter.default_bucket_key)
>>> mod.fit(train_iter, eval_metric=gx.metric.Perplexity(0), num_epoch=3)
"""
from __future__ import annotations

import logging
import warnings
from typing import Any, Callable, Hashable

import numpy as np

from graphexec.core.ir.context import cpu
from graphexec.core.symbol import model, naming
from graphexec.core.symbol.json_io import load as load_symbol

from ..initializer import Uniform
from ..ndarray import array, load, save
from .base_module import BaseModule, check_input_names
from .errors import ModuleError
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """A module whose symbol depends on each batch's ``bucket_key``."""

    def __init__(self, sym_gen: Callable, default_bucket_key: Hashable = None,
                 logger: Any = logging, context: Any = None, work_load_list: Any = None,
                 fixed_param_names: Any = None, state_names: Any = None, group2ctxs: Any = None,
                 compression_params: dict | None = None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ModuleError("BucketingModule needs a default_bucket_key")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._fixed_param_names = list(fixed_param_names or [])
        self._state_names = list(state_names or [])
        check_input_names(symbol, list(data_names or []), "data", True)
        check_input_names(symbol, list(label_names or []), "label", False)
        check_input_names(symbol, self._state_names, "state", True)
        check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._context = cpu() if context is None else context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets: dict[Hashable, Module] = {}
        self._curr_module: Module | None = None
        self._curr_bucket_key: Hashable = None
        self._params_dirty = False
        self._monitor: Any = None
        self._grad_req: Any = None

    def _call_sym_gen(self, key: Hashable) -> tuple:
        with naming.NameManager():
            result = self._sym_gen(key)
        if not (isinstance(result, tuple) and len(result) == 3):
            raise ModuleError(f"sym_gen({key!r}) must return (symbol, data_names, label_names), "
                              f"got {type(result).__name__}")
        return result

    def _module(self, symbol: Any, data_names: Any, label_names: Any) -> Module:
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)

    def _reset_bind(self) -> None:
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    # -- names and shapes -------------------------------------------------------------------
    @property
    def default_bucket_key(self) -> Hashable:
        return self._default_bucket_key

    @property
    def data_names(self) -> list[str]:
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self) -> list[str]:
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self) -> list:
        self._require()
        return self._curr_module.data_shapes

    @property
    def label_shapes(self) -> list | None:
        self._require()
        return self._curr_module.label_shapes

    @property
    def output_shapes(self) -> list:
        self._require()
        return self._curr_module.output_shapes

    @property
    def symbol(self) -> Any:
        self._require()
        return self._curr_module.symbol

    # -- parameters -------------------------------------------------------------------------
    def get_params(self) -> tuple[dict, dict]:
        self._require(binded=False, params=True)
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params: dict, aux_params: dict, allow_missing: bool = False,
                   force_init: bool = True, allow_extra: bool = False) -> None:
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params "
                          "call ignored.", stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        if self.params_initialized and not force_init:
            return
        self._require()
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context: bool = True) -> list:
        self._require(params=True)
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states: Any = None, value: Any = None) -> None:
        self._require(params=True)
        self._curr_module.set_states(states, value)

    # -- binding ----------------------------------------------------------------------------
    def bind(self, data_shapes: list, label_shapes: list | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind the default bucket."""
        params = self.get_params() if self.params_initialized else None
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise ModuleError("shared_module for BucketingModule is not supported")
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        key = self._default_bucket_key
        module = self._buckets.get(key) or self._module(*self._call_sym_gen(key))
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self._curr_module, self._curr_bucket_key = module, key
        self._buckets[key] = module
        if params is not None:
            self.set_params(*params)

    def switch_bucket(self, bucket_key: Hashable, data_shapes: list | None,
                      label_shapes: list | None = None) -> None:
        """Make ``bucket_key`` current, binding its module (sharing the default bucket's)
        on first use."""
        if not self.binded:
            raise ModuleError("call bind before switching bucket")
        module = self._buckets.get(bucket_key)
        if module is None:
            if data_shapes is None:
                raise ModuleError(f"bucket {bucket_key!r} is not bound yet: give its data shapes")
            module = self._module(*self._call_sym_gen(bucket_key))
            self._buckets[bucket_key] = module
        if not module.binded:
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
        self._curr_module, self._curr_bucket_key = module, bucket_key

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        self._require(params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # -- computation ------------------------------------------------------------------------
    def prepare(self, data_batch: Any, sparse_row_id_fn: Callable | None = None) -> None:
        self._require(params=True)
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        self._require(params=True)
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        self.switch_bucket(key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        self._require(params=True)
        self._curr_module.backward(out_grads=out_grads)

    def update(self) -> None:
        self._require(params=True, optimizer=True)
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        self._require(params=True)
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        self._require(params=True)
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: list, pre_sliced: bool = False) -> None:
        self._require(params=True)
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        self._require()
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    # -- checkpoints ------------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Write the parameters, one symbol per bound bucket (``prefix-<key>-symbol.json``)
        and the bucket keys (``prefix.buckets``)."""
        if not self._buckets:
            raise ModuleError("Empty BucketingModule cannot be saved")
        self.save_params(model.params_file(prefix, epoch))
        for key in self._buckets:
            symbol = self._call_sym_gen(key)[0]
            (model.remove_amp_casts(symbol) if remove_amp_cast else symbol).save(
                f"{prefix}-{key}-symbol.json")
        save(f"{prefix}.buckets", array(list(self._buckets), dtype=np.int32))

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen: Callable | None = None,
             default_bucket_key: Hashable = None, **kwargs: Any) -> "BucketingModule":
        """A module from ``save_checkpoint``'s files; bind it before use."""
        if sym_gen is None or default_bucket_key is None:
            raise ModuleError("sym_gen and default_bucket_key are required for loading "
                              "BucketingModule")
        keys = [int(k) for k in load(f"{prefix}.buckets")[0].asnumpy()]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        symbols = {k: load_symbol(f"{prefix}-{k}-symbol.json") for k in keys}
        arg_params, aux_params = model.load_params(prefix, epoch)
        mod._adopt(symbols, arg_params, aux_params, kwargs)
        return mod

    @staticmethod
    def load_dict(sym_dict: dict | None = None, sym_gen: Callable | None = None,
                  default_bucket_key: Hashable = None, arg_params: dict | None = None,
                  aux_params: dict | None = None, **kwargs: Any) -> "BucketingModule":
        """A module from symbols per bucket and parameter dicts."""
        if None in (sym_dict, arg_params, aux_params, default_bucket_key):
            raise ModuleError("sym_dict, arg_params, aux_params and default_bucket_key are "
                              "required for BucketingModule.load_dict")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        mod._adopt(sym_dict, arg_params, aux_params, kwargs)
        return mod

    def _adopt(self, symbols: dict, arg_params: dict, aux_params: dict, kwargs: dict) -> None:
        _, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        for key, symbol in symbols.items():
            self._buckets[key] = Module(symbol, data_names, label_names, **kwargs)
        if self._default_bucket_key not in self._buckets:
            raise ModuleError(f"the default bucket {self._default_bucket_key!r} is not among "
                              f"the saved buckets {list(symbols)}")
        self._curr_module = self._buckets[self._default_bucket_key]
        self._curr_module._arg_params = arg_params
        self._curr_module._aux_params = aux_params
        self._curr_module.params_initialized = True
        self.params_initialized = True
