"""``SequentialModule``: modules chained output to input (MXNet 1.9.1's
``mx.mod.SequentialModule``); ``add(module, take_labels=True)`` gives a module the labels,
``auto_wiring=True`` renames the previous outputs to its data names."""
from __future__ import annotations

import copy
import logging
from typing import Any

from ..initializer import Uniform
from .base_module import BaseModule
from .errors import ModuleError

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A chain of modules trained as one."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger: Any = logging):
        super().__init__(logger=logger)
        self._modules: list[BaseModule] = []
        self._metas: list[dict] = []
        self._label_shapes: list | None = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module: BaseModule, **kwargs: Any) -> "SequentialModule":
        """Append ``module`` (meta options ``take_labels``, ``auto_wiring``); returns self."""
        unknown = [k for k in kwargs if k not in self._meta_keys]
        if unknown:
            raise ModuleError(f'Unknown meta "{unknown[0]}", a typo? (known: '
                              f'{sorted(self._meta_keys)})')
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = self.params_initialized = self.optimizer_initialized = False
        return self

    @property
    def data_names(self) -> list[str]:
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self) -> list[str]:
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self) -> list:
        self._require()
        return self._modules[0].data_shapes

    @property
    def label_shapes(self) -> list | None:
        self._require()
        return self._label_shapes

    @property
    def output_shapes(self) -> list:
        self._require()
        return self._modules[-1].output_shapes

    def get_params(self) -> tuple[dict, dict]:
        self._require(params=True)
        arg_params: dict = {}
        aux_params: dict = {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        if self.params_initialized and not force_init:
            return
        self._require()
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        seen_args: dict[str, int] = {}
        seen_aux: dict[str, int] = {}
        for k, module in enumerate(self._modules):
            args, aux = module.get_params()
            self._check_names(seen_args, args, k)
            self._check_names(seen_aux, aux, k)
        self.params_initialized = True

    def _check_names(self, seen: dict, names: Any, layer: int) -> None:
        for name in names:
            if name in seen:
                first = seen[name]
                raise ModuleError(f'Duplicated parameter names: name "{name}" in layer {layer} '
                                  f'({type(self._modules[layer]).__name__}) is already used in '
                                  f'layer {first} ({type(self._modules[first]).__name__}).')
            seen[name] = layer

    def bind(self, data_shapes: list, label_shapes: list | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind every module, each on the previous one's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ModuleError("inputs_need_grad needs for_training=True")
        if shared_module is not None:
            raise ModuleError("Shared module is not supported")
        if not self._modules:
            raise ModuleError("Attempting to bind an empty SequentialModule")
        self.binded = True
        self._label_shapes = label_shapes
        shapes, needs_label = data_shapes, False
        for k, (module, meta) in enumerate(zip(self._modules, self._metas)):
            takes = bool(meta.get(self.META_TAKE_LABELS))
            needs_label |= takes
            if meta.get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(shapes):
                    raise ModuleError(f"auto_wiring: module {k} takes {len(names)} inputs, the "
                                      f"previous module gives {len(shapes)}")
                shapes = [(name, shape) for name, (_, shape) in zip(names, shapes)]
            module.bind(data_shapes=shapes, label_shapes=label_shapes if takes else None,
                        for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and k > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        if not needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        self._require(params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        self._require(params=True)
        batch = copy.copy(data_batch)
        for k, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if k + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            if hasattr(batch, "provide_data"):
                names = [name for name, _ in module.output_shapes]
                batch.provide_data = [(n, x.shape) for n, x in zip(names, batch.data)]

    def backward(self, out_grads: Any = None) -> None:
        self._require(params=True)
        for k in reversed(range(len(self._modules))):
            self._modules[k].backward(out_grads=out_grads)
            if k:
                out_grads = self._modules[k].get_input_grads()

    def update(self) -> None:
        self._require(params=True, optimizer=True)
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        self._require(params=True)
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        self._require(params=True)
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: list, pre_sliced: bool = False) -> None:
        self._require(params=True)
        for meta, module in zip(self._metas, self._modules):
            if meta.get(self.META_TAKE_LABELS):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        self._require()
        for module in self._modules:
            module.install_monitor(mon)
