"""``Module``: a symbol bound on one or more contexts (data parallel), with its parameters,
optimizer and KVStore; MXNet 1.9.1's ``mx.mod.Module``.

>>> mod = gx.mod.Module(net, context=[gx.cpu(0), gx.cpu(1)])
>>> mod.fit(train_iter, eval_data=val_iter, optimizer='sgd',
...         optimizer_params={'learning_rate': 0.1}, initializer=gx.init.Xavier(),
...         eval_metric='acc', num_epoch=5, kvstore='local')
"""
from __future__ import annotations

import logging
import warnings
from typing import Any, Sequence

import numpy as np

from graphexec.core.ir.context import Context, cpu
from graphexec.core.ir.ndarray import user_array, user_zeros
from graphexec.core.symbol import model

from .. import optimizer as opt
from ..initializer import InitDesc, Uniform
from ..io.base import DataDesc
from .base_module import BaseModule, check_input_names, parse_data_desc
from .errors import ModuleError, ModuleStateError
from .executor_group import DataParallelExecutorGroup
from .updates import (create_kvstore, initialize_kvstore, make_optimizer, update_params,
                      update_params_on_kvstore)

__all__ = ["Module"]


class Module(BaseModule):
    """A symbol with data inputs ``data_names`` and labels ``label_names``; every other
    argument is a parameter (``fixed_param_names`` are not updated, ``state_names`` are
    inputs kept across batches)."""

    def __init__(self, symbol: Any, data_names: Sequence[str] | None = ("data",),
                 label_names: Sequence[str] | None = ("softmax_label",),
                 logger: Any = logging, context: Any = None,
                 work_load_list: Sequence[float] | None = None,
                 fixed_param_names: Sequence[str] | None = None,
                 state_names: Sequence[str] | None = None, group2ctxs: Any = None,
                 compression_params: dict | None = None):
        super().__init__(logger=logger)
        context = cpu() if context is None else context
        self._context = [context] if isinstance(context, Context) else list(context)
        self._work_load_list = list(work_load_list or [1] * len(self._context))
        if len(self._work_load_list) != len(self._context):
            raise ModuleError(f"work_load_list has {len(self._work_load_list)} entries for "
                              f"{len(self._context)} contexts")
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        check_input_names(symbol, self._data_names, "data", True)
        check_input_names(symbol, self._label_names, "label", False)
        check_input_names(symbol, self._state_names, "state", True)
        check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = self._data_names + self._label_names + self._state_names
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params: dict | None = None
        self._aux_params: dict | None = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer: opt.Optimizer | None = None
        self._kvstore: Any = None
        self._update_on_kvstore: bool | None = None
        self._updater: Any = None
        self._preload_opt_states: str | None = None
        self._grad_req: Any = None
        self._exec_group: DataParallelExecutorGroup | None = None
        self._data_shapes: list | None = None
        self._label_shapes: list | None = None

    # -- checkpoints ------------------------------------------------------------------------
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False,
             **kwargs: Any) -> "Module":
        """A module from ``prefix-symbol.json`` and ``prefix-%04d.params`` (and the optimizer
        states of ``prefix-%04d.states`` with ``load_optimizer_states``); bind it before
        use. ``kwargs`` go to the constructor."""
        sym, args, auxs = model.load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = {k: user_array(v) for k, v in args.items()}
        mod._aux_params = {k: user_array(v) for k, v in auxs.items()}
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{int(epoch):04d}.states"
        return mod

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False,
                        remove_amp_cast: bool = True) -> None:
        """Write the symbol, the parameters (and the optimizer states) under ``prefix``."""
        symbol = model.remove_amp_casts(self._symbol) if remove_amp_cast else self._symbol
        symbol.save(model.symbol_file(prefix))
        param_name = model.params_file(prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = f"{prefix}-{int(epoch):04d}.states"
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # -- names and shapes -------------------------------------------------------------------
    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    @property
    def data_shapes(self) -> list[DataDesc]:
        self._require()
        return self._data_shapes

    @property
    def label_shapes(self) -> list[DataDesc] | None:
        self._require()
        return self._label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple]]:
        self._require()
        return self._exec_group.get_output_shapes()

    # -- parameters -------------------------------------------------------------------------
    def get_params(self) -> tuple[dict, dict]:
        """(arg_params, aux_params), synchronised from the devices."""
        self._require(binded=False, params=True)
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialize the parameters: values from ``arg_params`` / ``aux_params`` where given
        (all of them unless ``allow_missing``), ``initializer`` for the others."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params "
                          "call ignored.", stacklevel=2)
            return
        self._require()
        attrs = self._symbol.attr_dict()
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name, arr in sorted(params.items()):
                desc = InitDesc(name, attrs.get(name))
                self._init_one(desc, arr, given, initializer, allow_missing)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    @staticmethod
    def _init_one(desc: InitDesc, arr: Any, given: dict | None, initializer: Any,
                  allow_missing: bool) -> None:
        if given is None:
            if initializer is None:
                raise ModuleError(f"{desc}: no value and no initializer")
            initializer(desc, arr)
            return
        if desc in given:
            value = given[desc]
            if value is not arr:
                if tuple(value.shape) != arr.shape:
                    raise ModuleError(f"parameter {desc!s}: the given value has shape "
                                      f"{tuple(value.shape)}, the module needs {arr.shape}")
                np.copyto(arr, value, casting="unsafe")
            return
        if not allow_missing:
            raise ModuleStateError(f"{desc} is not presented (give it in arg_params / "
                                   f"aux_params, or allow_missing=True)")
        if initializer is not None:
            initializer(desc, arr)

    def set_params(self, arg_params: dict, aux_params: dict, allow_missing: bool = False,
                   force_init: bool = True, allow_extra: bool = False) -> None:
        """Assign parameter values to every device."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params "
                          "call ignored.", stacklevel=2)
            return
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self) -> None:
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # -- binding ----------------------------------------------------------------------------
    def _reset_bind(self) -> None:
        self.binded = False
        self._exec_group = None
        self._data_shapes = self._label_shapes = None

    def bind(self, data_shapes: list, label_shapes: list | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: "Module | None" = None,
             grad_req: Any = "write") -> None:
        """Bind executors for inputs of ``data_shapes`` / ``label_shapes`` (DataDescs or
        (name, shape) pairs, e.g. an iterator's ``provide_data`` / ``provide_label``)."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise ModuleError("inputs_need_grad needs for_training=True")
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded
                    and shared_module.params_initialized):
                raise ModuleError("shared_module must be a bound Module with initialized "
                                  "parameters")
            shared_group = shared_module._exec_group
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad, shared_group,
            logger=self.logger, fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            group2ctxs=self._group2ctxs, state_names=self._state_names)
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params, self._aux_params = shared_module._arg_params, shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {n: user_zeros(cpu(), a[0].shape, a[0].dtype)
                                for n, a in zip(self._param_names, self._exec_group.param_arrays)}
            self._aux_params = {n: user_zeros(cpu(), a[0].shape, a[0].dtype)
                                for n, a in zip(self._aux_names, self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes: list, label_shapes: list | None = None) -> None:
        """Rebind for new input shapes (memory shared with the first binding)."""
        self._require()
        self._data_shapes, self._label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # -- optimizer --------------------------------------------------------------------------
    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Create the optimizer (a name with ``optimizer_params``, or an Optimizer) and the
        KVStore; ``rescale_grad`` defaults to 1 / (batch size x workers)."""
        self._require(params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = create_kvstore(kvstore, len(self._context),
                                                    self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        self._optimizer = make_optimizer(optimizer, optimizer_params, 1.0 / batch_size,
                                         self.symbol, self._exec_group.param_names,
                                         len(self._context), update_on_kvstore)
        self._kvstore, self._update_on_kvstore, self._updater = kvstore, update_on_kvstore, None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            initialize_kvstore(kvstore, self._exec_group.param_arrays, self._arg_params,
                               self._param_names, update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(self._optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module: "Module") -> None:
        """Use ``shared_module``'s optimizer, store and updater."""
        if not shared_module.optimizer_initialized:
            raise ModuleError("the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer states."""
        self._require(binded=False, optimizer=True)
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as f:
                f.write(self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Read optimizer states ``save_optimizer_states`` wrote."""
        self._require(binded=False, optimizer=True)
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as f:
                self._updater.set_states(f.read())

    # -- computation ------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Forward on a batch (reshaping first when its shapes differ from the bound ones)."""
        self._require(params=True)
        new_shapes = _batch_shapes(data_batch)
        if tuple(d.shape for d in self._data_shapes) != new_shapes:
            self.reshape(*self._new_descs(data_batch, new_shapes))
        self._exec_group.forward(data_batch, is_train)

    def _new_descs(self, batch: Any, shapes: tuple) -> tuple[list, list | None]:
        provided = getattr(batch, "provide_data", None)
        data = provided or [DataDesc(d.name, s, d.dtype, d.layout)
                            for d, s in zip(self._data_shapes, shapes)]
        label = getattr(batch, "provide_label", None)
        if not label and getattr(batch, "label", None) and self._label_shapes:
            label = [DataDesc(d.name, tuple(a.shape), d.dtype, d.layout)
                     for d, a in zip(self._label_shapes, batch.label)]
        return data, label or None

    def backward(self, out_grads: Any = None) -> None:
        """Backward (head gradients only for outputs that are not losses)."""
        self._require(params=True)
        self._exec_group.backward(out_grads=out_grads)

    def update(self) -> None:
        """Update the parameters from the gradients of the last backward."""
        self._require(params=True, optimizer=True)
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                     group.param_names)
        else:
            update_params(group.param_arrays, group.grad_arrays, self._updater,
                          len(self._context), self._kvstore, group.param_names)

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """The outputs of the last forward (arrays the next forward overwrites)."""
        self._require(params=True)
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """The gradients of the data inputs (bind with ``inputs_need_grad``)."""
        self._require(params=True)
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context: bool = True) -> list:
        self._require(params=True)
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states: Any = None, value: Any = None) -> None:
        self._require(params=True)
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric: Any, labels: list, pre_sliced: bool = False) -> None:
        """Update ``eval_metric`` with the last outputs and ``labels``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        """Install a Monitor on every executor."""
        self._require()
        self._exec_group.install_monitor(mon)


def _batch_shapes(batch: Any) -> tuple:
    """The data shapes of a batch (of a list of per-device batches, joined)."""
    if not isinstance(batch, list):
        return tuple(tuple(d.shape) for d in batch.data)
    if not batch:
        raise ModuleError("Encountered empty data batch")
    shapes = []
    for k in range(len(batch[0].data)):
        shape = tuple(batch[0].data[k].shape)
        if any(tuple(b.data[k].shape) != shape for b in batch):
            raise ModuleError("All data batches in a list need to have the same shape")
        shapes.append((len(batch) * shape[0],) + shape[1:])
    return tuple(shapes)
