"""Kernels of Python custom operators (``Custom``, ``_backward_Custom``): the operator object
the property creates runs on NDArray views of the executor's buffers, as MXNet 1.9.1 runs
it (``forward(is_train, req, in_data, out_data, aux)``, ``backward(req, out_grad, in_data,
out_data, in_grad, aux)``). An exception in user code becomes a CustomOpError naming the
op_type and node; the executor's arrays and plan are left as they were, so it can run
again."""
from __future__ import annotations

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.ndarray import user_array
from graphexec.core.ops.custom import CustomOpError, call_prop

from .base import kernel


def _operator(call, in_arrays: list):
    """The CustomOp instance of this node, created once per node and executor by the
    property's ``create_operator(ctx, in_shapes, in_dtypes)``."""
    op = call.state.get("custom_op")
    if op is None:
        shapes = [list(a.shape) for a in in_arrays]
        dtypes = [a.dtype.type for a in in_arrays]
        op = call.state["custom_op"] = call_prop(call.params, "create_operator", call.ctx,
                                                 shapes, dtypes)
    return op


def _run_user(call, method: str, fn, *args) -> None:
    try:
        fn(*args)
    except GraphexecError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code may raise anything
        raise CustomOpError(f"Custom op_type {call.params.op_type!r} (node "
                            f"{call.node_name!r}): {method} raised {type(exc).__name__}: "
                            f"{exc}") from exc


def _reqs(call) -> list[str]:
    return ["write" if r == "inplace" else r for r in call.req]


@kernel("Custom")
def custom_forward(call):
    n_args = len(call_prop(call.params, "list_arguments"))
    ctx = call.ctx
    in_data = [user_array(a, ctx) for a in call.inputs[:n_args]]
    aux = [user_array(a, ctx) for a in call.inputs[n_args:]]
    out_data = [user_array(a, ctx) for a in call.outputs]
    reqs = _reqs(call)

    def run():
        op = _operator(call, in_data)
        _run_user(call, "forward", op.forward, call.is_train, reqs, in_data, out_data, aux)
    return run


@kernel("_backward_Custom")
def custom_backward(call):
    p = call.params
    n_args = len(call_prop(p, "list_arguments"))
    n_out = len(call_prop(p, "list_outputs"))
    ctx = call.ctx
    got = {tag: user_array(a, ctx) for tag, a in zip(p.deps, call.inputs)}
    out_grad = [got.get(f"g{k}") for k in range(n_out)]
    in_data = [got.get(f"i{k}") for k in range(n_args)]
    out_data = [got.get(f"o{k}") for k in range(n_out)]
    aux = [user_array(a, ctx) for a in call.inputs[len(p.deps):]]
    in_grad = [user_array(a, ctx) for a in call.outputs]
    reqs = _reqs(call)

    def run():
        op = call.state.get("custom_op")
        if op is None:  # no forward ran yet: the operator object forward and backward share
            op = call.state["custom_op"] = call_prop(
                p, "create_operator", ctx, [list(a.shape) for a in in_grad],
                [a.dtype.type for a in in_grad])
        _run_user(call, "backward", op.backward, reqs, out_grad, in_data, out_data, in_grad,
                  aux)
    return run
