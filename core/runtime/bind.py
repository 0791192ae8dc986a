"""``Symbol.bind`` and ``Symbol.simple_bind`` (installed on Symbol here): check and gather the
user's arrays, infer shapes and dtypes, build the executed graph (:mod:`.pipeline`) and an
:class:`~graphexec.core.runtime.executor.Executor`."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..ir.arguments import as_dtype, as_mapping, as_shape
from ..ir.context import Context
from ..ir.errors import ArgumentTypeError, BindError, ContextError, UndecidedShapeError
from ..ir.graph import Graph, IndexedGraph
from ..ir.ndarray import user_zeros
from ..ops.common import known
from ..passes.assign_context import check_group2ctx, variable_context
from ..passes.inference import dtype_seeds, run_inference, shape_seeds
from ..symbol.symbol import Symbol, check_unique_names, symbol_method
from .executor import Executor
from .pipeline import build_graph
from .sharing import shared_arrays

__all__ = ["bind", "simple_bind", "normalize_grad_req", "GRAD_REQS"]

GRAD_REQS = ("write", "add", "null", "inplace")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: binding creates many small objects and a
    collection over a large graph costs more than the bind itself."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _array_module_of(arr: Any) -> str:
    mod = type(arr).__module__.split(".")[0]
    return "numpy" if isinstance(arr, np.ndarray) else mod


def _check_array(arr: Any, what: str, ctx: Context) -> Any:
    if arr is None:
        raise BindError(f"{what} is None; an array is required")
    mod = _array_module_of(arr)
    if mod not in ("numpy", "cupy"):
        raise BindError(f"{what} must be a numpy.ndarray (cupy.ndarray on a gpu context), got "
                        f"{type(arr).__name__}")
    want = "cupy" if ctx.is_gpu else "numpy"
    if mod != want:
        where = "gpu" if mod == "cupy" else "cpu"
        raise ContextError(f"{what} lives on {where} while binding with ctx={ctx}: all arrays "
                           f"must be in the global context ({ctx}) unless group2ctx is "
                           f"specified for a cross-device graph")
    return arr


def _gather(names: list[str], given: Any, what: str, ctxs: list[Context], allow_missing: bool
            ) -> list[Any]:
    """Arrays in ``names`` order from a list or a dict (extra dict keys are ignored, as
    MXNet); ``ctxs`` is where each must live."""
    if given is None:
        given = {} if allow_missing or not names else None
        if given is None:
            raise BindError(f"{what} is required: the symbol has {names}")
    if isinstance(given, Mapping):
        arrays = [given.get(n) for n in names]
        for n, a in zip(names, arrays):
            if a is None and not allow_missing:
                raise BindError(f"key `{n}` is missing in `{what}`")
        labels = [f"{what}[{n!r}]" for n in names]
    elif isinstance(given, (list, tuple)):
        if len(given) != len(names):
            raise BindError(f"Length of {what} does not match the number of arguments: "
                            f"got {len(given)}, the symbol has {len(names)} ({names})")
        arrays, labels = list(given), [f"{what}[{i}]" for i in range(len(names))]
    else:
        raise BindError(f"{what} must be a list or a dict of arrays, got {type(given).__name__}")
    return [None if (a is None and allow_missing) else _check_array(a, label, c)
            for a, label, c in zip(arrays, labels, ctxs)]


def normalize_grad_req(grad_req: Any, names: list[str]) -> dict[str, str]:
    """grad_req given as a string, a list (one per argument) or a dict (missing -> 'null';
    other keys ignored, as in MXNet 1.9.1)."""
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise BindError(f"grad_req list has {len(grad_req)} entries for {len(names)} "
                            f"arguments ({names})")
        reqs = dict(zip(names, grad_req))
    elif isinstance(grad_req, Mapping):   # keys naming no argument are ignored, as MXNet
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        raise BindError(f"grad_req must be a string, list or dict, got {type(grad_req).__name__}")
    for n, r in reqs.items():
        if r not in GRAD_REQS:
            raise BindError(f"grad_req for {n!r} is {r!r}; expected one of {GRAD_REQS}")
    return {n: ("write" if r == "inplace" else r) for n, r in reqs.items()}


@symbol_method
def bind(self: Symbol, ctx: Context, args: Any, args_grad: Any = None, grad_req: Any = "write",
         aux_states: Any = None, group2ctx: Any = None, shared_exec: Any = None,
         backend: Any = None, backend_options: dict | None = None) -> Executor:
    """Bind arrays to the arguments (a list in ``list_arguments()`` order, or a dict by name)
    and return an :class:`Executor`; ``backend`` ("name" or "a,b") overrides
    MXNET_SUBGRAPH_BACKEND, ``backend_options`` maps backend name -> options."""
    group2ctx = check_group2ctx(group2ctx)
    _check_shared(shared_exec, None)
    with gc_paused():
        return _bind(self, ctx, args, args_grad, grad_req, aux_states, group2ctx, shared_exec,
                     backend, backend_options)


def _check_shared(shared_exec: Any, shared_arg_names: Any) -> None:
    if shared_exec is not None and not isinstance(shared_exec, Executor):
        raise ArgumentTypeError(f"shared_exec must be an Executor, got "
                                f"{type(shared_exec).__name__}")
    if shared_arg_names is not None and (
            not isinstance(shared_arg_names, (list, tuple, set, frozenset))
            or not all(isinstance(n, str) for n in shared_arg_names)):
        raise ArgumentTypeError(f"shared_arg_names must be a list of argument names, got "
                                f"{shared_arg_names!r:.60}")


def _bind(sym: Symbol, ctx: Context, args: Any, args_grad: Any, grad_req: Any,
          aux_states: Any, group2ctx: dict, shared_exec: Any, backend: Any,
          backend_options: dict | None):
    ctx = Context(ctx) if not isinstance(ctx, Context) else ctx
    ig = sym._indexed()
    arg_names = [ig.nodes[i].name for i in ig.arg_nodes]
    aux_ids = [i for i in ig.input_nodes if i in ig.mutable_input_nodes]
    check_unique_names("argument", arg_names)
    arg_ctx = [variable_context(ig.nodes[i], ctx, group2ctx) for i in ig.arg_nodes]
    aux_ctx = [variable_context(ig.nodes[i], ctx, group2ctx) for i in aux_ids]
    arg_arrays = _gather(arg_names, args, "args", arg_ctx, allow_missing=False)
    aux_arrays = _gather([ig.nodes[i].name for i in aux_ids], aux_states, "aux_states", aux_ctx,
                         allow_missing=False)
    grad_arrays = _gather(arg_names, args_grad, "args_grad", arg_ctx, allow_missing=True)
    reqs = normalize_grad_req(grad_req, arg_names)
    for i, n in enumerate(arg_names):
        if grad_arrays[i] is None:
            reqs[n] = "null"
        elif grad_arrays[i].shape != arg_arrays[i].shape:
            raise BindError(f"args_grad[{n!r}] has shape {grad_arrays[i].shape} but the argument "
                            f"has shape {arg_arrays[i].shape}")
    graph = build_graph(sym, ig, arg_arrays, aux_arrays, reqs, ctx=ctx, group2ctx=group2ctx,
                        backend=backend, backend_options=backend_options)
    return Executor(sym, ctx, graph, arg_arrays, grad_arrays, aux_arrays, reqs, group2ctx,
                    shared_exec, backend, backend_options)


def _infer(sym: Symbol, ig: IndexedGraph, shapes: dict, dtypes: dict, exact: bool) -> Graph:
    return run_inference(sym, shape_seeds(ig, shapes, unknown_zero=not exact),
                         dtype_seeds(ig, dtypes))


def _undecided_error(ig: IndexedGraph, g: Graph, given: dict[str, tuple]) -> None:
    shapes, dtypes, rp = g.attrs["shape"], g.attrs["dtype"], ig.row_ptr
    bad_s = [i for i in ig.input_nodes if not known(shapes[rp[i]])]
    bad_t = [i for i in ig.input_nodes if dtypes[rp[i]] is None]
    if not bad_s and not bad_t:
        return
    listing = "".join(f"{n}: {tuple(s)}\n" for n, s in given.items())
    if bad_s:
        detail = "".join(f"{ig.nodes[i].name}: {_legacy(shapes[rp[i]])}, " for i in bad_s)
        raise UndecidedShapeError(
            f"simple_bind error. Arguments:\n{listing}InferShape pass cannot decide shapes for "
            f"the following arguments (-1 means unknown dimensions). Please consider providing "
            f"them as inputs:\n{detail}")
    detail = "".join(f"{ig.nodes[i].name}, " for i in bad_t)
    raise UndecidedShapeError(f"simple_bind error. Arguments:\n{listing}InferType pass cannot "
                              f"decide dtypes for the following arguments: {detail}; give them "
                              f"in type_dict")


def _legacy(s: tuple | None) -> str:
    return "None" if s is None else str(tuple(s))


@symbol_method
def simple_bind(self: Symbol, ctx: Context, grad_req: Any = "write",
                type_dict: Mapping[str, Any] | None = None, stype_dict: Any = None,
                group2ctx: Any = None, shared_arg_names: Sequence[str] | None = None,
                shared_exec: Any = None, shared_buffer: dict | None = None,
                backend: Any = None, backend_options: dict | None = None,
                **shapes: Any) -> Executor:
    """Infer every shape and dtype from ``shapes`` (and ``type_dict``; float32 by default),
    allocate zero-filled arguments, gradients and auxiliary states, and bind them. As in
    MXNet 1.9.1, keywords that name no input and whose value is not a shape (``axis=1``,
    ``mode='clip'``: an operator's attributes passed along by a test helper) are ignored.
    ``stype_dict`` (storage types) is accepted for MXNet compatibility: arrays are dense."""
    group2ctx = check_group2ctx(group2ctx)
    inputs = set(self.list_inputs())
    shapes = {k: v for k, v in shapes.items() if k in inputs or isinstance(v, (tuple, list))}
    if shared_buffer is not None and not isinstance(shared_buffer, dict):
        raise BindError(f"shared_buffer must be a dict, got {type(shared_buffer).__name__}")
    _check_shared(shared_exec, shared_arg_names)
    with gc_paused():
        return _simple_bind(self, ctx, grad_req, type_dict, group2ctx, shapes, shared_exec,
                            shared_arg_names, shared_buffer, backend, backend_options)


def _simple_bind(sym: Symbol, ctx: Context, grad_req: Any, type_dict: Mapping[str, Any] | None,
                 group2ctx: Any, shapes: dict[str, Any], shared_exec: Any,
                 shared_arg_names: Sequence[str] | None, shared_buffer: dict | None,
                 backend: Any, backend_options: dict | None):
    ctx = Context(ctx) if not isinstance(ctx, Context) else ctx
    ctx.xp  # a gpu context without CuPy or a device fails here, with its reason
    ig = sym._indexed()
    arg_names = [ig.nodes[i].name for i in ig.arg_nodes]
    check_unique_names("argument", arg_names)
    by_name = {ig.nodes[i].name: i for i in ig.input_nodes}
    type_dict = as_mapping(type_dict, "simple_bind: type_dict", "dtypes") \
        if type_dict is not None else None
    for n in list(shapes) + list(type_dict or {}):
        if n not in by_name:
            raise BindError(f"simple_bind: {n!r} is not an input of the symbol; inputs are "
                            f"{list(by_name)}")
    shapes = {n: as_shape(s, f"simple_bind: shape of {n!r}") for n, s in shapes.items()}
    if type_dict is None:
        type_dict = {n: "float32" for n in arg_names
                     if "__dtype__" not in ig.nodes[by_name[n]].attrs}
    type_dict = {n: as_dtype(t, f"simple_bind: type_dict[{n!r}]") for n, t in type_dict.items()}
    g = _infer(sym, ig, {by_name[n]: s for n, s in shapes.items()},
               {by_name[n]: t for n, t in type_dict.items()}, exact=False)
    _undecided_error(ig, g, shapes)
    reqs = normalize_grad_req(grad_req, arg_names)
    sh, dt, rp = g.attrs["shape"], g.attrs["dtype"], ig.row_ptr

    aux_ids = [i for i in ig.input_nodes if i in ig.mutable_input_nodes]
    arg_specs = [(sh[rp[i]], dt[rp[i]]) for i in ig.arg_nodes]
    aux_specs = [(sh[rp[i]], dt[rp[i]]) for i in aux_ids]
    if shared_buffer is not None:  # MXNet shares only on this path (see core/runtime/sharing.py)
        arg_arrays, grad_arrays, aux_arrays = shared_arrays(
            arg_names, arg_specs, [ig.nodes[i].name for i in aux_ids], aux_specs, reqs,
            shared_exec, list(shared_arg_names or ()), shared_buffer, ctx)
    else:  # the arrays are fresh; a shared_exec still lends its internal memory pool
        arg_ctx = [variable_context(ig.nodes[i], ctx, group2ctx) for i in ig.arg_nodes]
        aux_ctx = [variable_context(ig.nodes[i], ctx, group2ctx) for i in aux_ids]
        arg_arrays = [user_zeros(c, s, t) for c, (s, t) in zip(arg_ctx, arg_specs)]
        grad_arrays = [user_zeros(c, s, t) if reqs[n] != "null" else None
                       for c, (s, t), n in zip(arg_ctx, arg_specs, arg_names)]
        aux_arrays = [user_zeros(c, s, t) for c, (s, t) in zip(aux_ctx, aux_specs)]
    g = build_graph(sym, ig, arg_arrays, aux_arrays, reqs, inferred=g, ctx=ctx,
                    group2ctx=group2ctx, backend=backend, backend_options=backend_options)
    return Executor(sym, ctx, g, arg_arrays, grad_arrays, aux_arrays, reqs, group2ctx,
                    shared_exec, backend, backend_options)


@symbol_method
def eval(self: Symbol, ctx: Context | None = None, **kwargs: Any) -> list:  # noqa: A001
    """MXNet's ``sym.eval(ctx, **inputs)``: bind the inputs given by name (no gradients), run
    one inference forward and return the outputs (a list, one array per output)."""
    from ..ir.context import current_context
    return bind(self, ctx or current_context(), kwargs, grad_req="null").forward()
