"""The ``Custom`` operator: Python operators written against MXNet 1.9.1's
``mx.operator.CustomOp`` / ``CustomOpProp`` API (the user API is ``gx.operator``).

A ``Custom`` node names a registered property class by ``op_type``; its other attributes
are handed to the property's constructor as strings, as MXNet does. The property answers
every declaration question (``list_arguments``, ``list_outputs``,
``list_auxiliary_states``, ``infer_shape``, ``infer_type``, ``declare_backward_dependency``,
``need_top_grad``); the kernels (``backends/default/kernels/custom.py``) run the operator's
``forward`` / ``backward`` on the executor's arrays. No subgraph backend claims a Custom node
(none declares it), so it is a region boundary everywhere, as in MXNet.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..ir.attrs import Params
from ..ir.errors import AttributeParseError, GraphexecError
from ..ir.graph import Entry
from .common import merge
from .registry import InferError, OpDef, ShapeConflict, register_op

__all__ = ["CustomOpError", "register_prop", "registered_props", "call_prop", "OPS"]

_PROPS: dict[str, type] = {}
_INSTANCES: dict[tuple, Any] = {}
_LOCK = threading.Lock()


class CustomOpError(GraphexecError, RuntimeError):
    """A custom operator's Python code raised, or answered a declaration question wrongly."""


def register_prop(op_type: str, prop_cls: type) -> None:
    """Register ``prop_cls`` (a CustomOpProp subclass) as ``op_type``; re-registering
    replaces it, as MXNet's ``mx.operator.register``."""
    with _LOCK:
        _PROPS[op_type] = prop_cls
        for key in [k for k in _INSTANCES if k[0] == op_type]:
            del _INSTANCES[key]


def registered_props() -> dict[str, type]:
    return dict(_PROPS)


def _prop(op_type: str, kwargs: tuple) -> Any:
    key = (op_type, kwargs)
    inst = _INSTANCES.get(key)
    if inst is None:
        cls = _PROPS.get(op_type)
        if cls is None:
            raise AttributeParseError(
                f"Custom: op_type {op_type!r} is not registered (register a CustomOpProp "
                f"subclass with @gx.operator.register({op_type!r})); registered: "
                f"{', '.join(sorted(_PROPS)) or '(none)'}")
        try:
            inst = cls(**dict(kwargs))
        except Exception as exc:  # noqa: BLE001 - user code may raise anything
            raise CustomOpError(f"Custom op_type {op_type!r}: creating {cls.__name__}"
                                f"(**{dict(kwargs)}) raised {type(exc).__name__}: {exc}") from exc
        _INSTANCES[key] = inst
    return inst


def call_prop(p: Params, method: str, *args: Any) -> Any:
    """``p.prop.<method>(*args)``, a user exception becoming a CustomOpError naming the
    op_type."""
    try:
        return getattr(p.prop, method)(*args)
    except GraphexecError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code may raise anything
        raise CustomOpError(f"Custom op_type {p.op_type!r}: {type(p.prop).__name__}.{method} "
                            f"raised {type(exc).__name__}: {exc}") from exc


class CustomOpDef(OpDef):
    """OpDef whose attributes are free-form: ``op_type`` plus the property's keyword
    arguments."""

    def parse(self, attrs: dict[str, Any], node_name: str | None = None) -> Params:
        op_type = attrs.get("op_type")
        if op_type is None:
            raise AttributeParseError(f"{self.name} {node_name!r}: required attribute "
                                      f"'op_type' is missing")
        kwargs = tuple(sorted((k, str(v)) for k, v in attrs.items()
                              if k != "op_type" and not (k.startswith("__") and k.endswith("__"))))
        deps = tuple(t for t in str(attrs.get("__deps__", "")).split(",") if t)
        return Params(op_type=str(op_type), kwargs=kwargs, prop=_prop(str(op_type), kwargs),
                      deps=deps)


def _names(method: str):
    return lambda p: [str(n) for n in call_prop(p, method)]


def _inputs(p: Params) -> list[str]:
    return _names("list_arguments")(p) + _names("list_auxiliary_states")(p)


def _fill(side: str, have: list, got: list, offset: int = 0) -> None:
    for k, v in enumerate(got):
        i = offset + k
        if v is None or i >= len(have):
            continue
        value = tuple(int(d) for d in v) if not isinstance(v, np.dtype) else v
        try:
            have[i] = value if have[i] is None else (
                merge(have[i], value) if isinstance(value, tuple) else
                (value if have[i] == value else _conflict(side, i, have[i], value)))
        except ValueError:
            raise ShapeConflict(side, i, have[i], value) from None


def _conflict(side: str, i: int, have: Any, want: Any):
    raise ShapeConflict(side, i, have, want)


def _split(p: Params, result: Any, method: str) -> tuple[list, list, list]:
    if not isinstance(result, (list, tuple)) or len(result) not in (2, 3):
        raise InferError(f"Custom op_type {p.op_type!r}: {method} must return (inputs, "
                         f"outputs[, aux]) lists, got {result!r:.80}")
    return list(result[0]), list(result[1]), list(result[2]) if len(result) == 3 else []


def _infer_shape(p: Params, ins: list, outs: list) -> None:
    n_args = len(call_prop(p, "list_arguments"))
    if any(s is None for s in ins[:n_args]):
        return  # MXNet's custom ops need every argument shape
    args, out_shapes, aux = _split(p, call_prop(p, "infer_shape", [list(s) for s in
                                                                    ins[:n_args]]),
                                   "infer_shape")
    _fill("in", ins, args)
    _fill("in", ins, aux, n_args)
    _fill("out", outs, out_shapes)


def _infer_type(p: Params, ins: list, outs: list) -> None:
    n_args = len(call_prop(p, "list_arguments"))
    if any(t is None for t in ins[:n_args]):
        return
    args, out_types, aux = _split(p, call_prop(p, "infer_type",
                                               [np.dtype(t).type for t in ins[:n_args]]),
                                  "infer_type")
    def as_dt(ts: list) -> list:
        return [None if t is None else np.dtype(t) for t in ts]
    _fill("in", ins, as_dt(args))
    _fill("in", ins, as_dt(aux), n_args)
    _fill("out", outs, as_dt(out_types))


def _gradient(g, node, ograds: list) -> list:
    """One ``_backward_Custom`` node whose inputs are what the property declares it needs
    (MXNet's default: the output gradients when ``need_top_grad``, the inputs and the
    outputs), then the auxiliary states; its outputs are the argument gradients."""
    p = node.params
    args = call_prop(p, "list_arguments")
    n_args = len(args)
    deps = _dependencies(p, node, ograds)
    aux = node.inputs[n_args:]
    bwd = g.make("_backward_Custom", f"{node.name}_backward", [e for _, e in deps] + aux,
                 {**dict(p.kwargs), "op_type": p.op_type,
                  "__deps__": ",".join(tag for tag, _ in deps)}, [node])
    return [Entry(bwd, i) for i in range(n_args)] + [None] * len(aux)


def _dependencies(p: Params, node, ograds: list) -> list[tuple[str, Entry]]:
    n_args = len(call_prop(p, "list_arguments"))
    n_out = len(call_prop(p, "list_outputs"))
    out_grad = list(range(n_out)) if getattr(p.prop, "need_top_grad_", True) else []
    ids = call_prop(p, "declare_backward_dependency", out_grad,
                    [n_out + i for i in range(n_args)],
                    [n_out + n_args + i for i in range(n_out)])
    deps = []
    for d in sorted(set(int(i) for i in ids)):
        if d < n_out:
            deps.append((f"g{d}", ograds[d]))
        elif d < n_out + n_args:
            deps.append((f"i{d - n_out}", node.inputs[d - n_out]))
        else:
            deps.append((f"o{d - n_out - n_args}", Entry(node, d - n_out - n_args)))
    return deps


def _backward_inputs(p: Params) -> list[str]:
    """What ``_gradient`` wired: ``g<k>`` output gradient k, ``i<k>`` input k, ``o<k>``
    output k (the ``__deps__`` attribute), then the auxiliary states."""
    return list(p.deps) + _names("list_auxiliary_states")(p)


def _backward_aux(p: Params) -> list[str]:
    return []


OPS = [
    CustomOpDef("Custom", inputs=_inputs, aux=_names("list_auxiliary_states"),
                outputs=_names("list_outputs"), infer_shape=_infer_shape,
                infer_type=_infer_type, gradient=_gradient, traits=("opaque",),
                doc="A Python operator registered with gx.operator.register(op_type): "
                    "Custom(*inputs, op_type=..., **kwargs)."),
    CustomOpDef("_backward_Custom", inputs=_backward_inputs, traits=("backward", "opaque"),
                outputs=_names("list_arguments"),
                doc="The backward pass of a Custom operator."),
]

for _op in OPS:
    register_op(_op)
