"""The optimizer base class, its registry and the ``Updater``, as MXNet 1.9.1's
``mx.optimizer``: learning rate (or an ``lr_scheduler``), weight decay, ``rescale_grad``,
``clip_gradient``, per-parameter ``lr_mult`` / ``wd_mult`` (from ``set_lr_mult`` /
``set_wd_mult`` and the symbol's ``__lr_mult__`` / ``__wd_mult__`` attributes; parameters not
ending in ``_weight`` or ``_gamma`` get no weight decay), update counts per parameter, and
``multi_precision`` (float16 weights updated through a float32 master copy)."""
from __future__ import annotations

import pickle
import warnings
from typing import Any, Sequence

import numpy as np

from graphexec.core.ir.context import cpu
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.ndarray import user_zeros

from ..registry import Registry

__all__ = ["Optimizer", "Updater", "get_updater", "register", "create", "OptimizerError",
           "zeros_like"]


class OptimizerError(GraphexecError, ValueError):
    """An optimizer got parameters or arrays it cannot work with."""


def zeros_like(weight: Any, dtype: Any = None) -> Any:
    """A zero state array of ``weight``'s shape on its context."""
    return user_zeros(getattr(weight, "context", None) or cpu(), weight.shape,
                      dtype or weight.dtype)


class Optimizer:
    """Base class of the optimizers; subclasses implement ``create_state(index, weight)`` and
    ``update(index, weight, grad, state)``."""

    def __init__(self, rescale_grad: float = 1.0, param_idx2name: dict | None = None,
                 wd: float = 0.0, clip_gradient: float | None = None,
                 learning_rate: float | None = None, lr_scheduler: Any = None, sym: Any = None,
                 begin_num_update: int = 0, multi_precision: bool = False,
                 param_dict: dict | None = None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None:
            if lr_scheduler.base_lr != learning_rate:
                print(UserWarning("learning rate from ``lr_scheduler`` has been overwritten by "
                                  "``learning_rate`` in optimizer."))
                lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: dict = {}
        self.wd_mult: dict = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts: dict = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise OptimizerError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict or {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    @staticmethod
    def register(klass: type) -> type:
        """Register an optimizer class under its lower-cased name."""
        return _REGISTRY.register(klass)

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> "Optimizer":
        """An optimizer by name (``'sgd'``, ``'adam'``, ...)."""
        return _REGISTRY.get(name)(**kwargs)

    @property
    def learning_rate(self) -> float:
        """The current learning rate (the scheduler's at ``num_update`` when there is one)."""
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def create_state(self, index: Any, weight: Any) -> Any:
        """The auxiliary state (momentum, moments, ...) of one weight (None when stateless)."""
        return None

    def create_state_multi_precision(self, index: Any, weight: Any) -> Any:
        """``create_state``; with ``multi_precision`` and a float16 weight, (float32 master
        copy, state of the copy)."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (master, self.create_state(index, master))
        if weight.dtype == np.float16:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          "optimizer")
        return self.create_state(index, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        raise NotImplementedError

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """``update``, through the float32 master copy for float16 weights."""
        if self.multi_precision and weight.dtype == np.float16:
            master, inner = state
            self.update(index, master, grad.astype(np.float32), inner)
            weight[...] = master
        else:
            self.update(index, weight, grad, state)

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate (not allowed with an lr_scheduler)."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of "
                              "the optimizer only when the LRScheduler of the optimizer is "
                              "undefined.")
        self.lr = lr

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Per-parameter learning-rate multipliers (over the symbol's ``__lr_mult__``)."""
        self.lr_mult = self._symbol_mults("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Per-parameter weight-decay multipliers; names not ending in ``_weight`` or
        ``_gamma`` default to 0 (over the symbol's ``__wd_mult__``)."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not (n.endswith("_weight") or n.endswith("_gamma"))}
        self.wd_mult.update(self._symbol_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _symbol_mults(self, key: str) -> dict:
        if not self.sym_info:
            return {}
        attr, arg_names = self.sym_info
        return {n: float(attr[n][key]) for n in arg_names if n in attr and key in attr[n]}

    def _set_current_context(self, device_id: int) -> None:
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index: Any) -> None:
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _get_lrs(self, indices: Sequence[Any]) -> list[float]:
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    def _get_wds(self, indices: Sequence[Any]) -> list[float]:
        return [self.wd * self._mult(i, self.wd_mult, "wd_mult") for i in indices]

    def _mult(self, index: Any, mults: dict, attr: str) -> float:
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in mults:
            return mults[index]
        if index in self.idx2name:
            return mults.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lr(self, index: Any) -> float:
        return self._get_lrs([index])[0]

    def _get_wd(self, index: Any) -> float:
        return self._get_wds([index])[0]

    def _clip(self) -> float:
        """The kernels' clip_gradient (negative: no clipping)."""
        return self.clip_gradient if self.clip_gradient else -1.0

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("param_dict", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
        self.param_dict = {}


_REGISTRY = Registry(Optimizer, "optimizer")
register = Optimizer.register


def create(name: Any, **kwargs: Any) -> Optimizer:
    """An optimizer from a name and keyword arguments (an Optimizer is returned as is)."""
    if isinstance(name, Optimizer):
        return name
    return Optimizer.create_optimizer(name, **kwargs)


class Updater:
    """Applies an optimizer to (index, gradient, weight) triples, keeping each index's state;
    the function KVStore and Module call (``get_updater``)."""

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        if isinstance(index, (list, tuple)):
            triples = list(zip(index, grad, weight))
        else:
            triples = [(index, grad, weight)]
        if triples:
            ctx = getattr(triples[0][2], "context", None)
            self.optimizer._set_current_context(ctx.device_id if ctx is not None else 0)
        for idx, g, w in triples:
            if isinstance(idx, bytes):
                idx = idx.decode()
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, w)
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], w.context)
                self.states_synced[idx] = True
            self.optimizer.update_multi_precision(idx, w, g, self.states[idx])

    def sync_state_context(self, state: Any, context: Any) -> Any:
        """``state`` (an array or nested tuples/lists of them) moved to ``context``."""
        if isinstance(state, np.ndarray):
            return state.as_in_context(context) if hasattr(state, "as_in_context") else state
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes) -> None:
        """Load states ``get_states`` pickled (with the optimizer when it was dumped)."""
        loaded = pickle.loads(states)
        if isinstance(loaded, tuple) and len(loaded) == 2:
            self.states, self.optimizer = loaded
        else:
            self.states = loaded
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states pickled (with the optimizer when ``dump_optimizer``)."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer: Optimizer) -> Updater:
    """An :class:`Updater` for ``optimizer``."""
    return Updater(optimizer)
