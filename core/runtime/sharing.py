"""Memory and parameter sharing between executors: ``Executor.reshape`` and the
``simple_bind(shared_exec=, shared_arg_names=, shared_buffer=)`` path bucketing uses.

MXNet's rules (seed 000/001/003, verified in the refcases):
- reshape: arguments named in the call (or any, with ``partial_shaping``) may change shape; a
  smaller or equal size is a view of the original array, a larger one needs
  ``allow_up_sizing`` and gets a new array; any other changed shape is an error.
- simple_bind with ``shared_buffer`` (a dict, even empty): the parameters named in
  ``shared_arg_names`` (and their gradient buffers, and the auxiliary states) are the shared
  executor's arrays; every other argument (and its gradient, key ``"grad of <name>"``) is
  carved out of ``shared_buffer`` by name, re-allocated with a warning when it is too small.
  Without ``shared_buffer`` nothing is shared.
"""
from __future__ import annotations

import logging
from typing import Any

from ..ir.errors import BindError, GraphexecError
from ..ir.ndarray import user_zeros

__all__ = ["reshape", "ReshapeError", "shrink_view", "reshape_or_create", "shared_arrays"]

log = logging.getLogger("graphexec")


class ReshapeError(GraphexecError, RuntimeError):
    """Executor.reshape was asked for a shape change its flags do not allow."""


def shrink_view(arr: Any, shape: tuple) -> Any:
    """A view of the first ``prod(shape)`` elements of ``arr`` with ``shape`` (MXNet's
    NDArray::Reshape to a smaller size), or None when ``arr`` is not contiguous."""
    size = 1
    for d in shape:
        size *= d
    if not arr.flags.c_contiguous or size > arr.size:
        return None
    return arr.reshape(-1)[:size].reshape(shape)


def reshape(exe: Any, partial_shaping: bool, allow_up_sizing: bool, shapes: dict) -> Any:
    """``Executor.reshape``: see the module docstring."""
    sym = exe.symbol
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    if arg_shapes is None:
        raise ReshapeError(f"Insufficient argument shapes provided: {shapes} does not decide "
                           f"every argument shape of {sym.list_arguments()}")
    new_args, new_grads = {}, {}
    for name, shape, arr, grad in zip(sym.list_arguments(), arg_shapes, exe.arg_arrays,
                                      exe.grad_arrays):
        if not (partial_shaping or name in shapes or tuple(shape) == arr.shape):
            raise ReshapeError(_changed("arg", name, arr.shape, shape))
        new_args[name] = _resized(exe, "arg", name, arr, shape, allow_up_sizing)
        if grad is not None:
            new_grads[name] = _resized(exe, "arg", name, grad, shape, True)
    new_aux = {}
    for name, shape, arr in zip(sym.list_auxiliary_states(), aux_shapes, exe.aux_arrays):
        if not (partial_shaping or tuple(shape) == arr.shape):
            raise ReshapeError(_changed("aux", name, arr.shape, shape))
        new_aux[name] = _resized(exe, "aux", name, arr, shape, allow_up_sizing)
    backend, backend_options = exe._backend
    return sym.bind(exe.ctx, args=new_args, args_grad=new_grads or None,
                    grad_req=dict(exe._grad_req), aux_states=new_aux,
                    group2ctx=exe._group2ctx, shared_exec=exe, backend=backend,
                    backend_options=backend_options)


def _resized(exe: Any, kind: str, name: str, arr: Any, shape: tuple, allow_up_sizing: bool):
    shape = tuple(shape)
    if shape == arr.shape:
        return arr
    view = shrink_view(arr, shape)
    if view is not None:
        return view
    if arr.size < _size(shape) and not allow_up_sizing:
        raise ReshapeError(f"New shape of {kind}: {name} is larger than original. First making "
                           f"a big executor and then down sizing it is more efficient than the "
                           f"reverse. If you really want to up size, set allow_up_sizing=True "
                           f"to enable allocation of new arrays. ({arr.shape} -> {shape})")
    return user_zeros(exe.ctx, shape, arr.dtype)


def _changed(kind: str, name: str, old: tuple, new: tuple) -> str:
    return (f"Shape of unspecified {kind}: {name} changed ({tuple(old)} -> {tuple(new)}). This "
            f"can cause the new executor to not share parameters with the old one. Please check "
            f"for error in network. If this is intended, set partial_shaping=True to suppress "
            f"this warning.")


def _size(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def reshape_or_create(name: str, shape: tuple, dtype: Any, ctx: Any,
                      shared_buffer: dict) -> Any:
    """An array for ``name`` carved out of ``shared_buffer`` (a view when the stored array is
    large enough), else a new zero array that replaces the stored one."""
    old = shared_buffer.get(name)
    if old is not None and old.dtype == dtype:
        view = shrink_view(old, tuple(shape))
        if view is not None:
            return view
        log.warning('bucketing: data "%s" has a shape %s, which is larger than already '
                    'allocated shape %s. Need to re-allocate. Consider putting '
                    'default_bucket_key to be the bucket taking the largest input for better '
                    'memory sharing.', name, tuple(shape), old.shape)
    arr = user_zeros(ctx, shape, dtype)
    shared_buffer[name] = arr
    return arr


def shared_arrays(arg_names: list[str], arg_specs: list[tuple], aux_names: list[str],
                  aux_specs: list[tuple], reqs: dict[str, str], shared_exec: Any,
                  shared_arg_names: list[str], shared_buffer: dict, ctx: Any):
    """(arg_arrays, grad_arrays, aux_arrays) for simple_bind's sharing path; ``*_specs`` are
    (shape, dtype) pairs from inference."""
    shared_names = set(shared_arg_names or ())
    args, grads = [], []
    for name, (shape, dtype) in zip(arg_names, arg_specs):
        if name in shared_names and shared_exec is not None:
            arr = _borrow(shared_exec.arg_dict, name, shape, dtype, "argument")
            grad = (_borrow(shared_exec.grad_dict, name, shape, dtype, "gradient")
                    if reqs[name] != "null" else None)
        else:
            arr = reshape_or_create(name, shape, dtype, ctx, shared_buffer)
            grad = (reshape_or_create(f"grad of {name}", shape, dtype, ctx,
                                      shared_buffer)
                    if reqs[name] != "null" else None)
        args.append(arr)
        grads.append(grad)
    aux = [(_borrow(shared_exec.aux_dict, name, shape, dtype, "auxiliary state")
            if shared_exec is not None else user_zeros(ctx, shape, dtype))
           for name, (shape, dtype) in zip(aux_names, aux_specs)]
    return args, grads, aux


def _borrow(arrays: dict, name: str, shape: tuple, dtype: Any, kind: str) -> Any:
    arr = arrays.get(name)
    if arr is None:
        raise BindError(f"shared_exec has no {kind} {name!r} to share (it has {list(arrays)})")
    if arr.shape != tuple(shape) or arr.dtype != dtype:
        raise BindError(f"shared {kind} {name!r} is {arr.shape} {arr.dtype} in shared_exec but "
                        f"this symbol needs {tuple(shape)} {dtype}")
    return arr
