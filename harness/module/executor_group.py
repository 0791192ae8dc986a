"""``DataParallelExecutorGroup``: one executor per context, each bound to its slice of the
batch (sizes from ``work_load_list``), all sharing the layout of the first; MXNet 1.9.1's
executor group. Parameters are per-device arrays that the module keeps equal (gradients
are summed through the KVStore and the updated weights copied back)."""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from graphexec.core.ir.context import Context, cpu
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.ndarray import user_array

from ..io.base import DataDesc
from ..ndarray.creation import concatenate
from .errors import ModuleError

__all__ = ["DataParallelExecutorGroup", "split_input_slice"]


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> list[slice]:
    """The batch split in proportion to ``work_load_list`` (the last slice takes what
    rounding leaves)."""
    total = sum(work_load_list)
    sizes = [round(w * batch_size / total) for w in work_load_list]
    if sum(sizes) < batch_size:
        sizes[-1] += batch_size - sum(sizes)
    slices, end = [], 0
    for size in sizes:
        begin = min(end, batch_size)
        end = min(begin + size, batch_size)
        if begin >= end:
            raise ModuleError(f"Too many slices. Some splits are empty: batch size {batch_size} "
                              f"cannot be split by work loads {list(work_load_list)}")
        slices.append(slice(begin, end))
    return slices


def _grad_reqs(grad_req: Any, arg_names: list, param_names: list, fixed: list,
               data_names: list, inputs_need_grad: bool) -> dict[str, str]:
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise ModuleError(f"grad_req list has {len(grad_req)} entries for {len(arg_names)} "
                              f"arguments {arg_names}")
        return dict(zip(arg_names, grad_req))
    if not isinstance(grad_req, (str, dict)):
        raise ModuleError("grad_req must be one of str, list, tuple, or dict.")
    default = grad_req if isinstance(grad_req, str) else "write"
    reqs = {}
    for name in arg_names:
        if name in param_names:
            reqs[name] = "null" if name in fixed else default
        elif name in data_names:
            reqs[name] = default if inputs_need_grad else "null"
        else:
            reqs[name] = "null"
    if isinstance(grad_req, dict):
        reqs.update(grad_req)
    return reqs


class DataParallelExecutorGroup:
    """Executors of ``symbol`` on ``contexts`` over slices of each batch."""

    def __init__(self, symbol: Any, contexts: list[Context], workload: list, data_shapes: list,
                 label_shapes: list | None, param_names: list[str], for_training: bool,
                 inputs_need_grad: bool, shared_group: "DataParallelExecutorGroup | None" = None,
                 logger: Any = logging, fixed_param_names: list | None = None,
                 grad_req: Any = "write", state_names: list | None = None,
                 group2ctxs: Any = None):
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.group2ctxs = _group2ctxs(group2ctxs, len(contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = fixed_param_names or []
        self.state_names = state_names or []
        data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
        if label_shapes is not None:
            label_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in label_shapes]
        self.grad_req = _grad_reqs(grad_req if for_training else "null", self.arg_names,
                                   param_names, self.fixed_param_names,
                                   [d.name for d in data_shapes], inputs_need_grad)
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in contexts])
        self.batch_size: int | None = None
        self.slices: list[slice] | None = None
        self.execs: list = []
        self._default_execs: list | None = None
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [DataDesc.get_batch_axis(symbol[k].attr("__layout__"))
                               for k in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # -- binding ----------------------------------------------------------------------------
    def decide_slices(self, data_shapes: list[DataDesc]) -> list[int]:
        """The batch axis of each input; sets ``batch_size`` and ``slices``."""
        if not data_shapes:
            raise ModuleError("the module needs at least one data input")
        axes = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        for desc, axis in zip(data_shapes, axes):
            if axis == -1:
                continue
            size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise ModuleError(f"all data must have the same batch size: batch_size = "
                                  f"{self.batch_size}, but {desc.name} has shape {desc.shape}")
        return axes

    def bind_exec(self, data_shapes: list, label_shapes: list | None,
                  shared_group: "DataParallelExecutorGroup | None" = None,
                  reshape: bool = False) -> None:
        """Bind (or, with ``reshape``, reshape) one executor per context."""
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = (self.decide_slices(label_shapes) if label_shapes is not None
                              else None)
        for i in range(len(self.contexts)):
            shapes = self._sliced_shape(data_shapes, i, self.data_layouts)
            if label_shapes is not None:
                shapes += self._sliced_shape(label_shapes, i, self.label_layouts)
            if reshape:
                self.execs[i] = self._default_execs[i].reshape(
                    allow_up_sizing=True, **{d.name: d.shape for d in shapes})
            else:
                self.execs.append(self._bind_ith_exec(i, shapes, shared_group))
        self.data_shapes, self.label_shapes = data_shapes, label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes is not None else None
        self._collect_arrays()

    def _bind_ith_exec(self, i: int, shapes: list[DataDesc],
                       shared_group: "DataParallelExecutorGroup | None") -> Any:
        shared_exec = None if shared_group is None else shared_group.execs[i]
        types = {d.name: d.dtype for d in shapes}
        attrs = self.symbol.attr_dict()
        for name in list(types):  # a variable's own __dtype__ wins, as in MXNet
            flag = attrs.get(name, {}).get("__dtype__")
            if flag is not None and flag != "-1":
                types.pop(name)
        try:
            return self.symbol.simple_bind(
                self.contexts[i], grad_req=self.grad_req, type_dict=types or None,
                shared_arg_names=self.param_names, shared_exec=shared_exec,
                group2ctx=self.group2ctxs[i], shared_buffer=self.shared_data_arrays[i],
                **{d.name: d.shape for d in shapes})
        except GraphexecError as exc:
            given = ", ".join(f"{d.name}: {d.shape}" for d in shapes)
            raise type(exc)(f"binding the module on {self.contexts[i]} with input shapes "
                            f"{given} failed: {exc}") from None

    def _sliced_shape(self, shapes: list[DataDesc], i: int, axes: list[int]) -> list[DataDesc]:
        out = []
        for desc, axis in zip(shapes, axes):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def _collect_arrays(self) -> None:
        execs = self.execs
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                            for name in self.data_names]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.label_arrays = ([[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                              for name in self.label_names]
                             if self.label_names is not None else None)
        params = [k for k, n in enumerate(self.arg_names) if n in self.param_names]
        self.param_arrays = [[e.arg_arrays[k] for e in execs] for k in params]
        self.grad_arrays = ([[e.grad_arrays[k] for e in execs] for k in params]
                            if self.for_training else None)
        self.input_grad_arrays = ([[e.grad_arrays[self.arg_names.index(n)] for e in execs]
                                   for n in self.data_names if n in self.arg_names]
                                  if self.inputs_need_grad else None)
        self.aux_arrays = [[e.aux_arrays[k] for e in execs] for k in range(len(self.aux_names))]

    def reshape(self, data_shapes: list, label_shapes: list | None) -> None:
        """Rebind for new input shapes, sharing memory with the first binding."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # -- parameters -------------------------------------------------------------------------
    def set_params(self, arg_params: dict, aux_params: dict, allow_extra: bool = False) -> None:
        """Copy parameters into every executor."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params: dict, aux_params: dict) -> None:
        """Write the devices' average of each parameter into ``arg_params`` /
        ``aux_params``."""
        for names, blocks, target in ((self.param_names, self.param_arrays, arg_params),
                                      (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                if len(block) == 1:
                    np.copyto(target[name], block[0], casting="unsafe")
                    continue
                total = np.array(block[0], dtype=np.float64, subok=False)
                for w in block[1:]:
                    total += w
                np.copyto(target[name], total / len(block), casting="unsafe")

    # -- running ----------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Load the batch's slices into the executors and run them forward."""
        _load(_field(data_batch, "data"), self.data_arrays, self.data_layouts, "data")
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None:  # a batch may carry no labels (prediction)
            labels = _field(data_batch, "label")
            if labels:
                _load(labels, self.label_arrays, self.label_layouts, "label")
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        """Backward on every executor (head gradients sliced like the outputs)."""
        if not self.for_training:
            raise ModuleError("re-bind with for_training=True to run backward")
        for i, (exe, part) in enumerate(zip(self.execs, self.slices)):
            grads = []
            for grad, axis in zip(out_grads or [], self.output_layouts):
                if axis >= 0:
                    index = (slice(None),) * axis + (part,)
                    grads.append(np.ascontiguousarray(np.asarray(grad)[index]))
                else:
                    grads.append(np.asarray(grad))
            exe.backward(out_grads=grads)

    def get_output_shapes(self) -> list[tuple[str, tuple]]:
        """(name, shape) of each output over the whole batch."""
        out = []
        for name, arr, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(arr.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            out.append((name, tuple(shape)))
        return out

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0,
                    end: int | None = None) -> list:
        """Outputs ``begin:end``: joined over the devices, or one list per output."""
        end = self.num_outputs if end is None else end
        outputs = [[e.outputs[k] for e in self.execs] for k in range(begin, end)]
        return _merge(outputs, self.output_layouts[begin:end]) if merge_multi_context else outputs

    def get_states(self, merge_multi_context: bool = True) -> list:
        """The state inputs per device (``merge_multi_context`` is not supported)."""
        if merge_multi_context:
            raise ModuleError("merge_multi_context=True is not supported for get_states yet.")
        return self.state_arrays

    def set_states(self, states: list | None = None, value: Any = None) -> None:
        """Set the state inputs from ``states`` (per device lists) or to ``value``."""
        if (states is None) == (value is None):
            raise ModuleError("give exactly one of states and value")
        if states is not None:
            for src, dsts in zip(states, self.state_arrays):
                for s, d in zip(src, dsts):
                    np.copyto(d, s)
            return
        for dsts in self.state_arrays:
            for d in dsts:
                d[...] = value

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """Gradients of the data inputs (needs ``inputs_need_grad``)."""
        if not self.inputs_need_grad:
            raise ModuleError("bind with inputs_need_grad=True to get input gradients")
        if merge_multi_context:
            return _merge(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def update_metric(self, eval_metric: Any, labels: list, pre_sliced: bool = False) -> None:
        """Update ``eval_metric`` with each device's outputs and its slice of ``labels``."""
        for k, (exe, part) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                sliced = labels[k]
            else:
                sliced = [_take_slice(label, part, axis)
                          for label, axis in zip(labels, self.label_layouts or [0] * len(labels))]
            eval_metric.update_dict(OrderedDict(zip(self.label_names or [], sliced)),
                                    OrderedDict(zip(self.output_names, exe.outputs)))

    def install_monitor(self, mon: Any) -> None:
        """Install a Monitor on every executor."""
        for exe in self.execs:
            mon.install(exe)


def _field(batch: Any, name: str) -> Any:
    """The batch's ``data`` or ``label`` arrays (None when it has none); for a list of
    per-device batches, one list of device arrays per input."""
    if isinstance(batch, list):  # one batch per device, already sliced
        if not getattr(batch[0], name, None):
            return None
        return [[getattr(b, name)[k] for b in batch] for k in range(len(getattr(batch[0], name)))]
    return getattr(batch, name, None)


def _take_slice(arr: Any, part: slice, axis: int) -> Any:
    if axis < 0:
        return arr
    return arr[(slice(None),) * axis + (part,)]


def _load(sources: list, targets: list, axes: list, what: str) -> None:
    """Copy each source array (or its slice per device) into the executors' arrays."""
    if len(sources) != len(targets):
        raise ModuleError(f"the batch has {len(sources)} {what} arrays, the module expects "
                          f"{len(targets)}")
    for src, dsts, axis in zip(sources, targets, axes):
        if isinstance(src, (list, tuple)):
            for s, (_, d) in zip(src, dsts):
                _copy_into(d, s, what)
            continue
        total = dsts[-1][0].stop
        if axis >= 0 and src.shape[axis] != total:
            raise ModuleError(f"a {what} array of the batch has shape {tuple(src.shape)}: "
                              f"{src.shape[axis]} examples along axis {axis}, the module was "
                              f"bound for batches of {total}")
        for part, dst in dsts:
            whole = axis < 0 or (part.start == 0 and part.stop == total)
            _copy_into(dst, src if whole else _take_slice(src, part, axis), what)


def _copy_into(dst: Any, src: Any, what: str) -> None:
    if dst.shape != tuple(src.shape):
        raise ModuleError(f"a {what} array of the batch has shape {tuple(src.shape)}, the "
                          f"module was bound for {dst.shape}; bind (or reshape) the module "
                          f"with the iterator's provide_{what}")
    np.copyto(dst, src, casting="unsafe")


def _merge(outputs: list, axes: list) -> list:
    merged = []
    for arrays, axis in zip(outputs, axes):
        if axis < 0 or len(arrays) == 1:
            merged.append(arrays[0])
        else:
            merged.append(concatenate([user_array(np.asarray(a), cpu()) for a in arrays],
                                      axis=axis))
    return merged


def _group2ctxs(group2ctxs: Any, count: int) -> list:
    """One group2ctx dict per device, from a list of them or a dict of contexts (or of
    lists of ``count`` contexts)."""
    if group2ctxs is None:
        return [None] * count
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != count:
            raise ModuleError(f"length of group2ctxs should be {count}")
        return group2ctxs
    if not isinstance(group2ctxs, dict):
        raise ModuleError("group2ctxs should be list of dict of str to context, or dict of str "
                          "to context or list of context")
    out: list[dict] = [{} for _ in range(count)]
    for group, ctxs in group2ctxs.items():
        if isinstance(ctxs, Context):
            ctxs = [ctxs] * count
        elif len(ctxs) == 1:
            ctxs = list(ctxs) * count
        elif len(ctxs) != count:
            raise ModuleError(f"length of group2ctxs[{group}] should be {count} or 1")
        for k in range(count):
            out[k][group] = ctxs[k]
    return out
