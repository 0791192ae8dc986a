"""The Executor: runs a bound graph with preallocated arrays, MXNet's Python API on top."""
from __future__ import annotations

import time
from typing import Any, Callable

from ..ir.arguments import as_array, as_mapping
from ..ir.context import Context
from ..ir.errors import (ArgumentShapeError, ArgumentTypeError, HeadGradientError,
                         UnknownArgumentError)
from ..ir.graph import Graph, topo_order
from ..ir.ndarray import user_array
from ..ir.random import generator
from ..passes.manager import apply_passes
from ..plugins import plugin_manager
from ..symbol.debug_str import graph_debug_str
from ..symbol.symbol import Symbol, check_unique_names, copy_graph
from . import frozen, sharing
from .blas_affinity import workers_apart
from .guard import exclusive, new_guard
from .kernels import KERNEL_ATTR
from .pipeline import build_graph
from .plan import ExecPlan

__all__ = ["Executor"]


class Executor:
    """A symbol bound to arrays on a context. Create with ``Symbol.bind`` / ``simple_bind``.

    >>> exe = (2 * a + b).bind(gx.cpu(), {'a': np.array([1, 2], 'f4'),
    ...                                   'b': np.array([2, 3], 'f4')})
    >>> exe.forward()[0]
    array([4., 7.], dtype=float32)
    """

    def __init__(self, symbol: Symbol, ctx: Context, graph: Graph, arg_arrays: list,
                 grad_arrays: list, aux_arrays: list, grad_req: dict[str, str],
                 group2ctx: Any = None, shared_exec: "Executor | None" = None,
                 backend: Any = None, backend_options: dict | None = None):
        self._symbol = symbol
        self._ctx = ctx
        self._backend = (backend, backend_options)  # reshape and bucketing bind alike
        self._grad_req = grad_req
        self._group2ctx = group2ctx
        self.arg_arrays = list(arg_arrays)
        self.grad_arrays = list(grad_arrays)
        self.aux_arrays = list(aux_arrays)
        external, reqs, arg_reqs = self._external_storage(graph)
        # MXNet shares the internal pool of a shared_exec (reshape, bucketing); new buffers
        # join that pool so that later executors sharing it can reuse them too
        self._shared_pool = shared_exec._shared_pool if shared_exec is not None else []
        self._workspaces = shared_exec._workspaces if shared_exec is not None else []
        self._busy = shared_exec._busy if shared_exec is not None else new_guard()
        self._plan = ExecPlan(graph, ctx, external, reqs, arg_reqs, self._shared_pool,
                              self._workspaces)
        ig = graph.indexed
        num_out = graph.attrs.get("num_forward_outputs", len(graph.outputs))
        # users see NDArray views of the planned buffers; kernels keep the plain arrays
        self._out_eids = ig.outputs[:num_out]
        self._set_outputs()
        self._head_grad_eids = [None if v is None else ig.entry_id(v)
                                for v in graph.attrs.get("head_grad_nodes", [])]
        self._last_forward_trained = self._backward_ran = False
        self._arg_dict = self._grad_dict = self._aux_dict = self._output_dict = None
        plugins = plugin_manager()
        self._observed = plugins.has_observers("graphexec_executor_run")
        plugins.notify("graphexec_executor_bound", executor=self)

    def _set_outputs(self) -> None:
        """``outputs`` as user arrays (None for a dynamic output before the first forward)."""
        arrays = self._plan.arrays
        self.outputs = [None if arrays[e] is None else user_array(arrays[e], self._ctx)
                        for e in self._out_eids]
        self._output_dict = None

    def _external_storage(self, graph: Graph) -> tuple[dict, dict, dict]:
        """Entry id -> user array (arguments, aux states, gradient buffers), entry id -> req of
        the gradient outputs, and argument entry id -> its grad_req."""
        ig = graph.indexed
        nfwd = graph.attrs.get("num_forward_nodes", len(ig.nodes))
        rp = ig.row_ptr
        fwd_inputs = [i for i in ig.input_nodes if i < nfwd]
        arg_nids = [i for i in fwd_inputs if i not in ig.mutable_input_nodes]
        aux_nids = [i for i in fwd_inputs if i in ig.mutable_input_nodes]
        external = {rp[n]: a for n, a in zip(arg_nids, self.arg_arrays)}
        external.update((rp[n], a) for n, a in zip(aux_nids, self.aux_arrays))
        reqs: dict[int, str] = {}
        num_out = graph.attrs.get("num_forward_outputs", len(graph.outputs))
        names = [ig.nodes[n].name for n in arg_nids]
        grads = [(g, self._grad_req[n]) for g, n in zip(self.grad_arrays, names)
                 if g is not None and self._grad_req[n] != "null"]
        for eid, (arr, req) in zip(ig.outputs[num_out:], grads):
            external[eid] = arr
            reqs[eid] = req
        arg_reqs = {rp[n]: self._grad_req[name] for n, name in zip(arg_nids, names)}
        return external, reqs, arg_reqs

    # -- running ---------------------------------------------------------------------------
    @exclusive
    def forward(self, is_train: bool = False, **kwargs: Any) -> list:
        """Compute the outputs. Keyword arrays are copied into the arguments first.

        Returns ``self.outputs``: arrays the next forward overwrites (copy what you keep)."""
        if kwargs:
            self._copy_inputs(kwargs)
        if (is_train and self._plan.forward_draws
                and self._plan.graph.attrs.get("backward_clobbers_forward")):
            self._forward_rng_state = generator().bit_generator.state  # for _replay_forward
        self._run("forward", bool(is_train))
        if self._plan.dynamic is not None:  # outputs whose shape settled in this forward
            self._set_outputs()
        self._last_forward_trained = bool(is_train)
        self._backward_ran = False
        return self.outputs

    @exclusive
    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """Compute the gradients of the arguments whose grad_req is not null.

        ``out_grads`` (an array, a list in output order, or a dict by output name) are the head
        gradients; loss heads (SoftmaxOutput, MakeLoss, BlockGrad, ...) ignore them. May be
        called repeatedly after one forward (grad_req 'add' accumulates)."""
        if not self._plan.segments["backward"]:
            return
        # As MXNet 1.9.1, backward after forward(is_train=False) differentiates the values
        # that inference pass computed (ops with a training mode, BatchNorm and Dropout, give
        # their inference-mode gradients), and a backward before any forward runs on what the
        # buffers hold (zeros here): gradients that need no forward value (repeat, add) are
        # right, as MXNet's tests rely on.
        if self._backward_ran and self._plan.graph.attrs["backward_clobbers_forward"]:
            self._replay_forward()
        grads = self._normalize_out_grads(out_grads)
        for i, eid in enumerate(self._head_grad_eids):
            if eid is None:
                continue
            if i >= len(grads) or grads[i] is None:
                raise HeadGradientError(
                    "Because the last operator is not Loss function, head_gradient is required "
                    "when calling backward. If you are attempting to minimize the output as an "
                    f"objective, please modify your network and pass it through the make_loss "
                    f"symbol. (output {i}, {self._symbol.list_outputs()[i]!r}, has no head "
                    f"gradient)")
            target = self._plan.arrays[eid]
            if self._plan.dynamic is not None:  # shaped like the output settled in forward
                target = self._plan.dynamic.head_gradient(self._plan, eid, self._out_eids[i])
            if tuple(grads[i].shape) != target.shape:
                raise ArgumentShapeError(f"out_grads[{i}] ({self._symbol.list_outputs()[i]!r}) "
                                         f"has shape {tuple(grads[i].shape)}, the output has "
                                         f"shape {target.shape}")
        for i, eid in enumerate(self._head_grad_eids):
            if eid is not None:
                self._plan.arrays[eid][...] = grads[i]
        self._run("backward", bool(is_train))
        self._backward_ran = True

    def _run(self, segment: str, is_train: bool) -> None:
        if not self._observed:
            self._run_plan(is_train, segment)
            return
        start = time.perf_counter()
        self._run_plan(is_train, segment)
        plugin_manager().notify("graphexec_executor_run", executor=self, segment=segment,
                                is_train=is_train, seconds=time.perf_counter() - start)

    def _run_plan(self, is_train: bool, segment: str) -> None:
        """One run of the plan, OpenBLAS's workers off this thread's core after an idle
        pause (:mod:`.blas_affinity`)."""
        with workers_apart():
            self._plan.run(is_train, segment)

    def _replay_forward(self) -> None:
        """Recompute the forward values a previous backward overwrote (the memory plan lets
        backward reuse them, as MXNet's does), drawing the same random numbers as the original
        forward so Dropout masks match; the generator then continues where it was."""
        if not self._plan.forward_draws or not self._last_forward_trained:
            self._run_plan(self._last_forward_trained, "forward")
            return
        gen = generator()
        current = gen.bit_generator.state
        gen.bit_generator.state = self._forward_rng_state
        try:
            self._run_plan(True, "forward")
        finally:
            gen.bit_generator.state = current

    def _normalize_out_grads(self, out_grads: Any) -> list:
        names = self._symbol.list_outputs()
        if out_grads is None:
            grads: list = []
        elif isinstance(out_grads, dict):
            unknown = [k for k in out_grads if k not in names]
            if unknown:
                raise UnknownArgumentError(f"out_grads names {unknown}, which are not outputs "
                                           f"({names})")
            grads = [out_grads.get(n) for n in names]
        elif isinstance(out_grads, (list, tuple)):
            grads = list(out_grads)
        else:
            grads = [out_grads]
        # MXNet 1.9.1 reads one head gradient per output and ignores any beyond them
        grads = grads[:len(names)]
        for i, g in enumerate(grads):
            if g is not None and not (hasattr(g, "shape") and hasattr(g, "dtype")):
                raise ArgumentTypeError(f"out_grads[{i}] must be an array, got "
                                        f"{type(g).__name__}")
            if g is not None:
                as_array(g, f"out_grads[{i}]")
        return grads

    def _copy_inputs(self, kwargs: dict[str, Any]) -> None:
        arg_dict = self.arg_dict
        for name, array in kwargs.items():
            if name not in arg_dict:
                raise UnknownArgumentError(f"Unknown argument {name}: forward() takes the "
                                           f"symbol's arguments {list(arg_dict)}")
            if not hasattr(array, "shape") or not hasattr(array, "dtype"):
                raise ArgumentShapeError(f"forward argument {name!r}: only accept keyword "
                                         f"argument of arrays (numpy.ndarray), got "
                                         f"{type(array).__name__}")
            as_array(array, f"forward argument {name!r}")
            target = arg_dict[name]
            if target.shape != tuple(array.shape):
                raise ArgumentShapeError(f"Shape not match! Argument {name}, need: "
                                         f"{target.shape}, received: {tuple(array.shape)}")
        for name, array in kwargs.items():
            frozen.assign(arg_dict[name], array, f"forward argument {name!r}")

    def set_monitor_callback(self, callback: Callable[[str, Any], None],
                             monitor_all: bool = False) -> None:
        """Call ``callback(name, array)`` for every op output (``<node>_output``) as it is
        computed; with ``monitor_all`` also for every input before the op runs."""
        if callback is not None and not callable(callback):
            raise ArgumentTypeError(f"set_monitor_callback: expected a function (name, array), "
                                    f"got {type(callback).__name__}")
        self._plan.set_monitor(callback, monitor_all)

    # -- arrays by name ------------------------------------------------------------------------
    @property
    def arg_dict(self) -> dict[str, Any]:
        """Argument name -> array."""
        if self._arg_dict is None:
            self._arg_dict = _named("argument", self._symbol.list_arguments(), self.arg_arrays)
        return self._arg_dict

    @property
    def grad_dict(self) -> dict[str, Any]:
        """Argument name -> gradient array (None where grad_req is null)."""
        if self._grad_dict is None:
            self._grad_dict = _named("argument", self._symbol.list_arguments(), self.grad_arrays)
        return self._grad_dict

    @property
    def aux_dict(self) -> dict[str, Any]:
        """Auxiliary state name -> array."""
        if self._aux_dict is None:
            self._aux_dict = _named("auxiliary state", self._symbol.list_auxiliary_states(),
                                    self.aux_arrays)
        return self._aux_dict

    @property
    def output_dict(self) -> dict[str, Any]:
        """Output name -> array."""
        if self._output_dict is None:
            self._output_dict = _named("output", self._symbol.list_outputs(), self.outputs)
        return self._output_dict

    @exclusive
    def copy_params_from(self, arg_params: dict[str, Any], aux_params: dict[str, Any] | None = None,
                         allow_extra_params: bool = False) -> None:
        """Copy parameter values into the executor's arrays (shapes must match)."""
        arg_params = as_mapping(arg_params, "copy_params_from: arg_params")
        aux_params = as_mapping(aux_params, "copy_params_from: aux_params")
        for kind, params, target in (("argument", arg_params, self.arg_dict),
                                     ("auxiliary state", aux_params, self.aux_dict)):
            for name, value in params.items():
                if name not in target:
                    if allow_extra_params:
                        continue
                    raise UnknownArgumentError(f'Find name "{name}" that is not in the '
                                               f'{kind}s ({list(target)})')
                dst = target[name]
                as_array(value, f"copy_params_from: {kind} {name!r}")
                if dst.shape != tuple(value.shape):
                    raise ArgumentShapeError(f"copy_params_from: {kind} {name!r} has shape "
                                             f"{dst.shape}, the value has {tuple(value.shape)}")
                frozen.assign(dst, value, f"{kind} {name!r}")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs: Any) -> "Executor":
        """A new executor for new input shapes that shares parameters (and memory) with this
        one; see :func:`graphexec.core.runtime.sharing.reshape` for MXNet's rules."""
        return sharing.reshape(self, partial_shaping, allow_up_sizing, kwargs)

    # -- introspection ---------------------------------------------------------------------
    @property
    def partition_plan(self):
        """The :class:`PartitionPlan` of this bind (None when no backend was selected); its
        ``fallbacks`` counts regions that run natively after their backend failed,
        ``host_copies`` the arrays regions copied between devices because their backend could
        not run where the executor does."""
        plan = self._plan.graph.attrs.get("partition_plan")
        if plan is not None:
            states = self.region_states.values()
            plan.fallbacks = sum(s.get("fallbacks", 0) for s in states)
            plan.host_copies = sum(s.get("host_copies", 0) for s in states)
            plan.mark_fallbacks(self.region_states)
        return plan

    @property
    def region_states(self) -> dict[str, dict]:
        """Region node name -> the state its backend's runner keeps (``fallbacks``,
        ``host_copies``, the fused backend's generated ``source``, ...), for the region nodes
        of this executor whose runner has been built."""
        nodes = self._plan.graph.indexed.nodes
        return {nodes[nid].name: state for nid, state in sorted(self._plan._states.items())
                if nodes[nid].op is not None and "subgraph" in nodes[nid].op.traits}

    @property
    def memory_plan(self) -> dict[str, int]:
        """Bytes the memory planner allocated (``planned_bytes``), what one buffer per entry
        would take (``unplanned_bytes``) and, when backward mirroring recomputes forward
        values, the bytes mirroring saved (``mirror_saved_bytes``)."""
        attrs = self._plan.graph.attrs
        plan = {"planned_bytes": attrs["planned_bytes"],
                "unplanned_bytes": attrs["unplanned_bytes"]}
        if any(n.name.endswith("_mirror") for n in self._plan.graph.indexed.nodes):
            plan["mirror_saved_bytes"] = self._unmirrored_bytes() - plan["planned_bytes"]
        return plan

    def _unmirrored_bytes(self) -> int:
        g = build_graph(self._symbol, self._symbol._indexed(), self.arg_arrays,
                        self.aux_arrays, self._grad_req, mirror=False, ctx=self._ctx)
        external, _, _ = self._external_storage(g)
        g = apply_passes(g.with_attrs(external_entries=set(external)), ["plan_memory"])
        return g.attrs["planned_bytes"]

    def debug_str(self) -> str:
        """The executed graph in MXNet's layout, ending with the allocated memory."""
        return graph_debug_str(self._plan.graph.outputs, self._plan.allocated_bytes)

    def get_optimized_symbol(self) -> Symbol:
        """The symbol after the executor's graph passes."""
        graph = self._plan.graph
        num_out = graph.attrs.get("num_forward_outputs", len(graph.outputs))
        heads = copy_graph(graph.outputs[:num_out])
        for node in topo_order(e.node for e in heads):  # a kernel variant is this bind's choice
            node.attrs.pop(KERNEL_ATTR, None)
        return Symbol(heads)

    @property
    def symbol(self) -> Symbol:
        return self._symbol

    @property
    def ctx(self) -> Context:
        return self._ctx


def _named(kind: str, names: list[str], arrays: list) -> dict[str, Any]:
    check_unique_names(kind, names)
    return dict(zip(names, arrays))

