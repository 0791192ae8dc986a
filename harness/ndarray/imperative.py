"""Operators run imperatively (``gx.nd.<op>(...)``) through the kernels the executor runs.

A call is prepared once per (operator, attributes, input shapes, input dtypes, context,
training mode): the one-node graph's output shapes and dtypes are inferred by the core's
passes and its kernel factory is looked up (a :class:`OneNodePlan`, kept in a bounded LRU
cache). Each call then gives the factory the caller's arrays and the outputs, and runs the
callable it returns: no second implementation of any operator, and every operator a plugin
registers is available the moment it is registered.

>>> gx.nd.FullyConnected(x, w, b, num_hidden=4)          # positional inputs, in MXNet's order
>>> gx.nd.softmax(data=x, axis=-1)                         # inputs by name
>>> gx.nd.broadcast_add(a, b, out=a)                       # into an existing array
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from graphexec.core.ir.attrs import to_attr_string
from graphexec.core.ir.context import Context, cpu
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.graph import Entry
from graphexec.core.ir.ndarray import ArrayValueError, NDArray, user_array
from graphexec.core.ir.random import generator
from graphexec.core.ops.common import known
from graphexec.core.ops.registry import OpDef, get_op
from graphexec.core.passes.inference import run_inference
from graphexec.core.runtime.blas_affinity import workers_apart
from graphexec.core.runtime.kernels import KernelCall, Workspace, kernel_registry
from graphexec.core.symbol.op_args import split_call
from graphexec.core.symbol.symbol import Symbol, Variable, create_op_symbol

__all__ = ["invoke", "OneNodePlan", "ImperativeError", "cached_plans"]

#: how many prepared calls are kept (least recently used ones are dropped first)
MAX_PLANS = 2048
_PLANS: "OrderedDict[tuple, OneNodePlan]" = OrderedDict()
_LOCK = threading.Lock()  # the cache is shared by every thread calling operators
_LOCAL = threading.local()  # scratch memory: one per thread and context


class ImperativeError(GraphexecError, TypeError):
    """An imperative operator call got arguments it cannot take."""


def cached_plans() -> int:
    """How many prepared one-node plans the cache holds."""
    return len(_PLANS)


class OneNodePlan:
    """One operator node with fixed attributes, input shapes and dtypes: its parsed
    parameters, output shapes and dtypes, and kernel factory. A dynamic-shape operator
    (``_contrib_boolean_mask``) gets its output shapes from the input values at each call
    (:meth:`specs`, the operator's ``settle_shape``, as the executor settles them)."""

    __slots__ = ("op", "node", "out_specs", "factory", "inplace_ok", "num_visible")

    def __init__(self, op: OpDef, attrs: dict[str, str], in_specs: Sequence[tuple],
                 ctx: Context):
        self.op = op
        positional = [Variable(f"in{k}") for k in range(len(in_specs))]
        node = create_op_symbol(op.name, positional, {**attrs, "name": op.name.lower()}
                                ).outputs[0].node
        self.node = node
        full = Symbol([Entry(node, k) for k in range(node.num_outputs)])  # hidden ones too
        ig = full._indexed()
        by_var = {ig.node_id[id(v.outputs[0].node)]: spec for v, spec in zip(positional,
                                                                              in_specs)}
        g = run_inference(full, {n: s for n, (s, _) in by_var.items()},
                          {n: t for n, (_, t) in by_var.items()})
        rp = ig.row_ptr
        nid = ig.node_id[id(self.node)]
        shapes = g.attrs["shape"][rp[nid]:rp[nid + 1]]
        dtypes = g.attrs["dtype"][rp[nid]:rp[nid + 1]]
        settled_later = op.settle_shape is not None
        if not (settled_later or all(known(s) for s in shapes)) or any(t is None for t in dtypes):
            raise ImperativeError(f"{op.name}: the output shapes {shapes} / dtypes {dtypes} "
                                  f"cannot be decided from inputs {list(in_specs)} and "
                                  f"attributes {attrs}")
        self.out_specs = [(tuple(s), np.dtype(t)) for s, t in zip(shapes, dtypes)]
        registry = kernel_registry()
        self.factory = registry.lookup(op.name, ctx.device_type)
        self.inplace_ok = registry.inplace_ok(op.name, ctx.device_type)
        self.num_visible = op.num_visible_outputs(self.node.params)

    def specs(self, inputs: list) -> list[tuple]:
        """The outputs' (shape, dtype) for ``inputs``."""
        if self.op.settle_shape is None:
            return self.out_specs
        shapes = self.op.settle_shape(self.node.params, inputs)
        return [(tuple(s), t) for s, (_, t) in zip(shapes, self.out_specs)]

    def run(self, inputs: list, outputs: list, ctx: Context, is_train: bool) -> None:
        """Compute ``outputs`` (arrays of ``out_specs``) from ``inputs``."""
        node = self.node
        call = KernelCall(node.name, self.op.name, node.params, inputs, outputs,
                          ["write"] * len(outputs), ctx.xp, ctx, is_train, {}, generator(),
                          node.attrs, None, _workspace(ctx), [True] * len(inputs))
        with workers_apart():  # as an executor's run (core/runtime/blas_affinity.py)
            self.factory(call)()


def _workspace(ctx: Context) -> Workspace:
    spaces = getattr(_LOCAL, "spaces", None)
    if spaces is None:
        spaces = _LOCAL.spaces = {}
    ws = spaces.get(ctx)
    if ws is None:
        ws = spaces[ctx] = Workspace(ctx)
    return ws


def _plan(op: OpDef, attrs: dict[str, str], inputs: list, ctx: Context,
          is_train: bool) -> OneNodePlan:
    specs = tuple((a.shape, a.dtype) for a in inputs)
    key = (op.name, tuple(sorted(attrs.items())), specs, ctx, is_train)
    with _LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
            return plan
    plan = OneNodePlan(op, attrs, specs, ctx)  # outside the lock: inference may take a while
    with _LOCK:
        _PLANS[key] = plan
        if len(_PLANS) > MAX_PLANS:
            _PLANS.popitem(last=False)
    return plan


# -- calling convention --------------------------------------------------------------------
def invoke(name: str, args: Sequence[Any], kwargs: dict[str, Any], is_train: bool = False
           ) -> Any:
    """Run operator ``name`` on NDArrays as MXNet's generated ``mx.nd.<op>`` functions do:
    inputs positionally (in the operator's input order) or by input name, every other
    keyword an attribute (None is the value None for a declared attribute; None for an
    input means not given), ``out=`` an array (or list) to write
    the result into, ``name=`` ignored. Returns an NDArray, or a list for several visible
    outputs."""
    op = get_op(name)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    ctx = kwargs.pop("ctx", None)
    # attributes may follow the inputs positionally, as in MXNet (``nd.tile(x, (2, 2))``)
    try:
        positional, named, raw = split_call(op, name, list(args), kwargs,
                                            lambda v: isinstance(v, np.ndarray))
    except GraphexecError as exc:
        raise ImperativeError(str(exc)) from None
    # None for a declared attribute is the value None (``topk(axis=None)``: the flattened
    # data), as in MXNet's generated functions, whose "not given" is another sentinel
    attrs = {k: to_attr_string(v) for k, v in raw.items()}
    if any(a is None for a in positional):
        raise ImperativeError(f"{op.name}: an input given as None (inputs are arrays here)")
    if op.variadic and op.variadic not in attrs:
        attrs[op.variadic] = str(len(positional) + len(named))
    inputs = _ordered_inputs(op, attrs, positional, named)
    ctx = _context(ctx, inputs)
    plain = [np.ascontiguousarray(a) for a in inputs]
    plan = _plan(op, attrs, plain, ctx, is_train)
    outputs = _run(plan, plain, out, ctx, is_train)
    visible = outputs[:plan.num_visible]
    return visible[0] if len(visible) == 1 else visible


def _ordered_inputs(op: OpDef, attrs: dict[str, str], positional: list, named: dict) -> list:
    params = op.parse(dict(attrs))
    names = op.input_names(params)
    if len(positional) > len(names):
        raise ImperativeError(f"{op.name} takes {len(names)} inputs ({', '.join(names)}), got "
                              f"{len(positional)} positional arrays")
    unknown = [k for k in named if k not in names]
    if unknown:
        raise ImperativeError(f"{op.name}: unknown input(s) {unknown}; inputs are {names}")
    inputs = []
    for k, in_name in enumerate(names):
        arr = positional[k] if k < len(positional) else named.get(in_name)
        if arr is None:
            raise ImperativeError(f"{op.name}: input {in_name!r} is missing (inputs are "
                                  f"{names})")
        inputs.append(arr)
    return inputs


def _context(ctx: Any, inputs: list) -> Context:
    if ctx is not None:
        return ctx if isinstance(ctx, Context) else Context(ctx)
    for a in inputs:
        if isinstance(a, NDArray):
            return a.context
    return cpu()


def _run(plan: OneNodePlan, inputs: list, out: Any, ctx: Context, is_train: bool) -> list:
    specs = plan.specs(inputs)
    fresh = [user_array(ctx.xp.empty(s, t), ctx) for s, t in specs]
    if out is None:
        plan.run(inputs, [np.asarray(a) for a in fresh], ctx, is_train)
        return fresh
    targets = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(targets) > plan.num_visible:
        raise ImperativeError(f"{plan.op.name}: out= gives {len(targets)} arrays for "
                              f"{plan.num_visible} outputs")
    for k, t in enumerate(targets):
        if tuple(t.shape) != specs[k][0]:
            raise ArrayValueError(f"{plan.op.name}: out[{k}] has shape {tuple(t.shape)}, the "
                                  f"result has shape {specs[k][0]}")
    direct = all(t.dtype == specs[k][1] and t.flags.c_contiguous
                 and (plan.inplace_ok or not any(np.may_share_memory(t, a) for a in inputs))
                 for k, t in enumerate(targets))
    if direct:
        outs = [np.asarray(t) for t in targets] + [np.asarray(a) for a in fresh[len(targets):]]
        plan.run(inputs, outs, ctx, is_train)
        return list(targets) + fresh[len(targets):]
    plan.run(inputs, [np.asarray(a) for a in fresh], ctx, is_train)
    for t, a in zip(targets, fresh):
        t[...] = a
    return list(targets) + fresh[len(targets):]
