"""Kernel registry: backends register a kernel factory per (operator, device).

A factory receives a :class:`KernelCall` at bind time (parsed params, the preallocated input
and output arrays, the array module) and returns a zero-argument callable that computes the
outputs *into* ``call.outputs`` (the executor handles the 'add' and 'null' requests around
it). Factories specialise once per bind, so the callable does no per-run dispatch.

Example (the default backend's ``exp``)::

    @kernel("exp")
    def exp(call):
        return partial(call.xp.exp, call.inputs[0], out=call.outputs[0])
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir.errors import KernelNotFoundError
from ..ops.registry import get_op

__all__ = ["KernelCall", "KernelRegistry", "kernel_registry", "KernelFn", "KernelFactory",
           "Workspace", "KERNEL_ATTR", "MONITORED_KERNEL_ATTR", "kernel_variant"]

#: the node attribute naming the kernel variant that runs the node (absent: the plain kernel)
KERNEL_ATTR = "__kernel__"
#: the node attribute naming the variant that runs the node while a monitor watches the
#: executor (absent: KERNEL_ATTR's), for variants that do a neighbour's work too (a
#: BatchNorm applying the relu after it): a monitor sees every node's own outputs, as in
#: MXNet; the two variants must accept the same outputs in place of inputs
MONITORED_KERNEL_ATTR = "__kernel_monitored__"  # an empty value: the plain kernel


def kernel_variant(node: Any, monitored: bool = False) -> str | None:
    """The kernel variant a pass chose for ``node`` (None: the plain kernel); with
    ``monitored``, the one for a watched executor (:data:`MONITORED_KERNEL_ATTR`)."""
    if monitored and MONITORED_KERNEL_ATTR in node.attrs:
        return node.attrs[MONITORED_KERNEL_ATTR] or None
    return node.attrs.get(KERNEL_ATTR)

KernelFn = Callable[[], None]


class KernelCall:
    """Everything a kernel factory may use. ``state`` persists for the node across plans of
    one executor, and a backward node shares its forward node's (what a forward keeps for its
    backward: a custom operator object, an autograd graph); ``rng`` is a numpy Generator;
    ``input_grad_reqs`` gives, per input, the grad_req of the argument feeding it ('null' for
    inputs that are not arguments) — BatchNorm's fix_gamma needs it, as in MXNet;
    ``input_is_var`` whether each input is a graph input (an argument or auxiliary state,
    whose array the user owns) rather than a computed entry;
    ``workspace`` is the executor's shared scratch memory (:class:`Workspace`)."""

    __slots__ = ("node_name", "op_name", "params", "inputs", "outputs", "req", "xp", "ctx",
                 "is_train", "state", "rng", "attrs", "input_grad_reqs", "workspace",
                 "input_is_var")

    def __init__(self, node_name: str, op_name: str, params: Any, inputs: list, outputs: list,
                 req: list[str], xp: Any, ctx: Any, is_train: bool, state: dict, rng: Any,
                 attrs: dict | None = None, input_grad_reqs: list[str] | None = None,
                 workspace: "Workspace | None" = None, input_is_var: list[bool] | None = None):
        self.node_name = node_name
        self.op_name = op_name
        self.params = params
        self.inputs = inputs
        self.outputs = outputs
        self.req = req
        self.xp = xp
        self.ctx = ctx
        self.is_train = is_train
        self.state = state
        self.rng = rng
        self.attrs = attrs or {}
        self.input_grad_reqs = input_grad_reqs or ["null"] * len(inputs)
        self.workspace = workspace if workspace is not None else Workspace(ctx)
        self.input_is_var = input_is_var or [False] * len(inputs)

    def with_arrays(self, inputs: list, outputs: list) -> "KernelCall":
        """The same call over other arrays (a kernel computing through scratch copies)."""
        return KernelCall(self.node_name, self.op_name, self.params, inputs, outputs,
                          self.req, self.xp, self.ctx, self.is_train, self.state, self.rng,
                          self.attrs, self.input_grad_reqs, self.workspace, self.input_is_var)


KernelFactory = Callable[[KernelCall], KernelFn]


class Workspace:
    """Scratch memory shared by every kernel of an executor (MXNet's TempSpace resource).

    Kernels run one at a time, so one buffer serves all of them: a factory may ``reserve``
    the largest scratch it will need, and the kernel takes views with ``arrays`` when it runs
    (views from one ``arrays`` call never overlap; views from different calls may)."""

    def __init__(self, ctx: Any):
        self.ctx = ctx
        self.nbytes = 0
        self._buf = None

    def reserve(self, *specs: tuple) -> None:
        """Record that up to ``specs`` ((shape, dtype) pairs) will be needed at once."""
        self.nbytes = max(self.nbytes, _span(specs))

    def arrays(self, *specs: tuple) -> list:
        """Non-overlapping scratch arrays for ``specs`` ((shape, dtype) pairs)."""
        need = _span(specs)
        if self._buf is None or self._buf.nbytes < need:
            self._buf = self.ctx.zeros(max(need, self.nbytes), "uint8")
        out, offset = [], 0
        for shape, dtype in specs:
            dt = np.dtype(dtype)
            n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            out.append(self._buf[offset:offset + n].view(dt).reshape(shape))
            offset += -(-n // 64) * 64
        return out


def _span(specs) -> int:
    total = 0
    for shape, dtype in specs:
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        total += -(-n // 64) * 64
    return total


class KernelRegistry:
    """(op name, device type) -> factory. Device ``"any"`` serves every device whose array
    module supports the code (the default backend's kernels are written that way)."""

    def __init__(self) -> None:
        self._table: dict[tuple[str, str], KernelFactory] = {}
        self._inplace: set[tuple[str, str]] = set()

    def register(self, op_name: str, factory: KernelFactory, device: str = "any",
                 inplace: bool = False, variant: str | None = None) -> None:
        """Register ``factory`` for ``op_name`` (canonical name or alias) on ``device``;
        ``inplace`` says the kernel stays correct when an output aliases an input. A
        ``variant`` kernel runs only nodes whose ``__kernel__`` attribute names it (a pass
        of the backend providing it sets that; see :func:`kernel_variant`)."""
        canonical = get_op(op_name).name
        key = (canonical, device) if variant is None else (canonical, device, variant)
        self._table[key] = factory
        if inplace:
            self._inplace.add(key)
        else:
            self._inplace.discard(key)

    def inplace_ok(self, op_name: str, device: str, variant: str | None = None) -> bool:
        """Whether the kernel that ``lookup`` returns tolerates output/input aliasing."""
        key = self._key(op_name, device, variant)
        return key in self._inplace

    def lookup(self, op_name: str, device: str, variant: str | None = None) -> KernelFactory:
        """The factory for ``op_name`` on ``device`` (``variant``: that variant's, never the
        plain kernel in its place)."""
        hit = self._table.get(self._key(op_name, device, variant))
        if hit is None:
            what = f" (kernel variant {variant!r})" if variant is not None else ""
            raise KernelNotFoundError(f"no kernel{what} is registered for operator "
                                      f"{op_name!r} on {device}")
        return hit

    def _key(self, op_name: str, device: str, variant: str | None) -> tuple:
        tail = () if variant is None else (variant,)
        key = (op_name, device, *tail)
        return key if key in self._table else (op_name, "any", *tail)

    def has(self, op_name: str, device: str) -> bool:
        return (op_name, device) in self._table or (op_name, "any") in self._table

    def ops(self) -> set[str]:
        return {key[0] for key in self._table}


_REGISTRY: KernelRegistry | None = None


def kernel_registry() -> KernelRegistry:
    """The process-wide kernel registry, filled by plugins' ``graphexec_register_kernels``
    when ``graphexec`` is imported (``core/startup.py``)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = KernelRegistry()
    return _REGISTRY
