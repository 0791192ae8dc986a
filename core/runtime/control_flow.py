"""Kernels of the control-flow operators (``core/subgraph/control_flow.py``): each body is
bound once as a nested executor on the node's context, and the kernel runs it step by step.

The backward kernels run the forward loop again (keeping the values each step starts from),
then walk the steps backward through the body's own gradient: the gradient of a state flows
from one step into the one before, the gradients of free variables are summed over the
steps, a sliced input's gradient is written row by row. Inputs that are not floating point
get zero gradients.

Loops run with BLAS on one thread on the host: a body's products are one step's, small, and
OpenBLAS's own threads made a 50-step RNN 4x slower on a loaded 2-core machine
(benchmarks/bench_control_flow.py).
"""
from __future__ import annotations

from functools import wraps
from typing import Any, Callable

import numpy as np

from ..ir.random import generator
from ..subgraph.control_flow import body_inputs
from .blas_threads import serial_blas

__all__ = ["CONTROL_FLOW_KERNELS"]


def _serial_blas(call: Any, run: Callable[[], None]) -> Callable[[], None]:
    """``run`` with BLAS limited to one thread while it runs (numpy on the host only)."""
    if call.xp is not np:
        return run

    @wraps(run)
    def serial() -> None:
        with serial_blas(np):
            run()
    return serial


def _key(arrays: list) -> tuple:
    """Which arrays (buffers, shapes, dtypes) a loop ran on."""
    return tuple((a.__array_interface__["data"][0] if hasattr(a, "__array_interface__")
                  else a.data.ptr, a.shape, str(a.dtype)) for a in arrays)


class _Trace:
    """What a training forward loop leaves its backward loop, through the params the two
    nodes share (``link``): the values each step started from and, when the body draws
    random numbers (Dropout), the generator state before each step. The backward loop uses
    them when it runs on the same input arrays (the same executor's forward), else it runs
    the forward loop again to recover them; either way it replays each step's draws, then
    puts the random stream back where it was."""

    def __init__(self, p: Any, inputs: list):
        self.link, self.draws, self.inputs = p.link, p.draws, inputs
        self.steps: list = []
        self.rng: list = []

    def forward_started(self, is_train: bool) -> None:
        self.link.clear()
        if is_train:
            self.link.update(key=_key(self.inputs), steps=[], rng=[])

    def forward_step(self, values: Any) -> None:
        """Before the body runs a step of a training forward loop, with the values it
        starts from."""
        self.link["steps"].append(values)
        if self.draws:
            self.link["rng"].append(generator().bit_generator.state)

    def recorded(self) -> bool:
        """Whether the forward loop left this backward loop its steps (taken, once)."""
        if self.link.get("key") != _key(self.inputs):
            return False
        self.steps, self.rng = self.link.pop("steps"), self.link.pop("rng")
        self.link.clear()
        return True

    def __enter__(self) -> "_Trace":
        self.saved = generator().bit_generator.state if self.draws else None
        self.steps, self.rng = [], []
        return self

    def recompute_step(self, values: Any) -> None:
        """Before the body runs step t when the backward loop recomputes the forward."""
        self.steps.append(values)
        if self.draws:
            self.rng.append(generator().bit_generator.state)

    def replay(self, t: int) -> None:
        if self.draws:
            generator().bit_generator.state = self.rng[t]

    def __exit__(self, *exc: Any) -> None:
        if self.saved is not None:
            generator().bit_generator.state = self.saved


class _Body:
    """A nested graph bound once with inputs of ``specs`` ((shape, dtype) per input, in its
    ``list_inputs`` order); ``grad``: bind with gradients for its floating-point inputs."""

    def __init__(self, sym: Any, call: Any, specs: list[tuple], grad: bool):
        xp = call.xp
        self.names = sym.list_inputs()
        aux = set(sym.list_auxiliary_states())
        arrays = {n: xp.zeros(s, d) for n, (s, d) in zip(self.names, specs)}
        floats = {n for n, (_, d) in zip(self.names, specs) if np.dtype(d).kind == "f"}
        self.grad_names = floats - aux if grad else set()
        self.exe = sym.bind(
            call.ctx, {n: a for n, a in arrays.items() if n not in aux},
            args_grad={n: xp.zeros_like(arrays[n]) for n in self.grad_names} or None,
            grad_req={n: "write" if n in self.grad_names else "null"
                      for n in self.names if n not in aux},
            aux_states={n: arrays[n] for n in self.names if n in aux} or None)
        self.slots = [self.exe.aux_dict[n] if n in aux else self.exe.arg_dict[n]
                      for n in self.names]

    def forward(self, values: list, is_train: bool) -> list:
        for slot, value in zip(self.slots, values):
            slot[...] = value
        return self.exe.forward(is_train=is_train)

    def backward(self, out_grads: list) -> list:
        """The gradient of each input (None for those without one)."""
        self.exe.backward(out_grads)
        return [self.exe.grad_dict[n] if n in self.grad_names else None for n in self.names]


def _write(call: Any, k: int, value: Any) -> None:
    if call.req[k] != "null":
        if value is None:
            call.outputs[k].fill(0)
        else:
            call.outputs[k][...] = value


# -- _foreach -------------------------------------------------------------------------------------
class _Foreach:
    """The step body and the layout of a ``_foreach`` node's inputs (``fwd``: the forward
    inputs, after the output gradients in a backward node)."""

    def __init__(self, call: Any, fwd: list, grad: bool):
        p = call.params
        self.feed = body_inputs(p)[0]
        self.n_data, self.n_state, self.n_out = (len(p.in_data_locs), len(p.in_state_locs),
                                                 p.num_out_data)
        self.fwd = fwd
        self.steps = fwd[0].shape[0] if self.n_data else 0
        specs = [(fwd[k].shape[1:] if k < self.n_data else fwd[k].shape, fwd[k].dtype)
                 for k in self.feed]
        self.body = _Body(p.subgraphs[0], call, specs, grad)

    def values(self, t: int, states: list) -> list:
        nd, ns = self.n_data, self.n_state
        return [self.fwd[k][t] if k < nd else states[k - nd] if k < nd + ns else self.fwd[k]
                for k in self.feed]

    def run(self, is_train: bool, on_step: Callable | None = None,
            before: Callable | None = None) -> list:
        """Every step; ``before(states)`` and ``on_step(t, outputs)`` around the body;
        returns the last states."""
        states = [self.fwd[self.n_data + j] for j in range(self.n_state)]
        for t in range(self.steps):
            if before is not None:
                before(states)
            outs = self.body.forward(self.values(t, states), is_train)
            if on_step is not None:
                on_step(t, outs)
            states = [outs[self.n_out + j].copy() for j in range(self.n_state)]
        return states


def foreach_kernel(call: Any) -> Callable[[], None]:
    loop, trace = _Foreach(call, call.inputs, grad=False), _Trace(call.params, call.inputs)
    train = call.is_train

    def on_step(t, outs):
        for j in range(loop.n_out):
            call.outputs[j][t] = outs[j]

    def record(states):
        trace.forward_step([s.copy() for s in states])

    def run() -> None:
        trace.forward_started(train)
        for j, state in enumerate(loop.run(train, on_step, record if train else None)):
            call.outputs[loop.n_out + j][...] = state
    return _serial_blas(call, run)


def foreach_backward_kernel(call: Any) -> Callable[[], None]:
    m = call.params.num_outputs
    ograds, loop = call.inputs[:m], _Foreach(call, call.inputs[m:], grad=True)
    nd, ns, n_out, xp = loop.n_data, loop.n_state, loop.n_out, call.xp
    trace = _Trace(call.params, call.inputs[m:])

    def run() -> None:
        with trace:
            if not trace.recorded():
                loop.run(True, before=lambda states: trace.recompute_step(
                    [s.copy() for s in states]))
            backward_steps(trace.steps)

    def backward_steps(history: list) -> None:
        data_grads = [xp.zeros_like(loop.fwd[k]) for k in range(nd)]
        g_states = [ograds[n_out + j] for j in range(ns)]
        g_free: dict[int, Any] = {}
        for t in range(loop.steps - 1, -1, -1):
            trace.replay(t)
            loop.body.forward(loop.values(t, history[t]), True)
            grads = loop.body.backward([ograds[j][t] for j in range(n_out)] + g_states)
            new_states = [xp.zeros_like(s) for s in g_states]
            for pos, k in enumerate(loop.feed):
                g = grads[pos]
                if g is None:
                    continue
                if k < nd:
                    data_grads[k][t] = g
                elif k < nd + ns:
                    new_states[k - nd] += g
                else:
                    g_free[k] = g_free[k] + g if k in g_free else g.copy()
            g_states = new_states
        for k in range(len(loop.fwd)):
            value = data_grads[k] if k < nd else g_states[k - nd] if k < nd + ns \
                else g_free.get(k)
            _write(call, k, value)
    return _serial_blas(call, run)


# -- _while_loop ----------------------------------------------------------------------------------
class _WhileLoop:
    def __init__(self, call: Any, fwd: list, grad: bool):
        p = call.params
        self.c_feed, self.f_feed = body_inputs(p)
        self.vars = [self.f_feed[v] for v in p.func_var_locs]
        self.n_out, self.max_steps, self.fwd = p.num_out_data, p.max_iterations, fwd
        spec = [(a.shape, a.dtype) for a in fwd]
        self.cond = _Body(p.subgraphs[0], call, [spec[k] for k in self.c_feed], False)
        self.func = _Body(p.subgraphs[1], call, [spec[k] for k in self.f_feed], grad)

    def values(self, feed: list[int], cur: dict) -> list:
        return [cur.get(k, self.fwd[k]) for k in feed]

    def run(self, is_train: bool, on_step: Callable | None = None,
            before: Callable | None = None) -> dict:
        """Steps while the condition holds (at most max_iterations); returns the final
        loop variables (node input index -> array)."""
        cur = {k: self.fwd[k] for k in self.vars}
        for t in range(self.max_steps):
            flag = self.cond.forward(self.values(self.c_feed, cur), is_train)[0]
            if not bool(flag.reshape(-1)[0]):
                break
            if before is not None:
                before(cur)
            outs = self.func.forward(self.values(self.f_feed, cur), is_train)
            if on_step is not None:
                on_step(t, outs)
            cur = {k: outs[self.n_out + i].copy() for i, k in enumerate(self.vars)}
        return cur


def while_loop_kernel(call: Any) -> Callable[[], None]:
    loop, trace = _WhileLoop(call, call.inputs, grad=False), _Trace(call.params, call.inputs)
    train = call.is_train

    def on_step(t, outs):
        for j in range(loop.n_out):
            call.outputs[j][t] = outs[j]

    def record(cur):
        trace.forward_step({k: v.copy() for k, v in cur.items()})

    def run() -> None:
        for j in range(loop.n_out):
            call.outputs[j].fill(0)  # rows past the last step (MXNet leaves them unwritten)
        trace.forward_started(train)
        final = loop.run(train, on_step, record if train else None)
        for i, k in enumerate(loop.vars):
            call.outputs[loop.n_out + i][...] = final[k]
    return _serial_blas(call, run)


def while_loop_backward_kernel(call: Any) -> Callable[[], None]:
    m = call.params.num_outputs
    ograds, loop = call.inputs[:m], _WhileLoop(call, call.inputs[m:], grad=True)
    n_out, xp = loop.n_out, call.xp
    trace = _Trace(call.params, call.inputs[m:])

    def run() -> None:
        with trace:
            if not trace.recorded():
                loop.run(True, before=lambda cur: trace.recompute_step(
                    {k: v.copy() for k, v in cur.items()}))
            backward_steps(trace.steps)

    def backward_steps(history: list) -> None:
        g_vars = {k: ograds[n_out + i] for i, k in enumerate(loop.vars)}
        g_free: dict[int, Any] = {}
        for t in range(len(history) - 1, -1, -1):
            trace.replay(t)
            loop.func.forward(loop.values(loop.f_feed, history[t]), True)
            grads = loop.func.backward([ograds[j][t] for j in range(n_out)] +
                                       [g_vars[k] for k in loop.vars])
            new_vars = {k: xp.zeros_like(v) for k, v in g_vars.items()}
            for pos, k in enumerate(loop.f_feed):
                g = grads[pos]
                if g is None:
                    continue
                if k in new_vars:
                    new_vars[k] += g
                else:
                    g_free[k] = g_free[k] + g if k in g_free else g.copy()
            g_vars = new_vars
        for k in range(len(loop.fwd)):
            _write(call, k, g_vars[k] if k in g_vars else g_free.get(k))
    return _serial_blas(call, run)


# -- _cond ----------------------------------------------------------------------------------------
class _Cond:
    def __init__(self, call: Any, fwd: list, grad: bool):
        p = call.params
        self.feeds, self.fwd = body_inputs(p), fwd
        spec = [(a.shape, a.dtype) for a in fwd]
        self.bodies = [_Body(sym, call, [spec[k] for k in feed], grad and i > 0)
                       for i, (sym, feed) in enumerate(zip(p.subgraphs, self.feeds))]

    def branch(self, is_train: bool) -> int:
        """1 (then) when the condition's first element is non-zero, else 2 (else)."""
        flag = self.bodies[0].forward([self.fwd[k] for k in self.feeds[0]], is_train)[0]
        return 1 if bool(flag.reshape(-1)[0]) else 2

    def forward(self, which: int, is_train: bool) -> list:
        return self.bodies[which].forward([self.fwd[k] for k in self.feeds[which]], is_train)


def cond_kernel(call: Any) -> Callable[[], None]:
    branch = _Cond(call, call.inputs, grad=False)

    def run() -> None:
        outs = branch.forward(branch.branch(call.is_train), call.is_train)
        for k, out in enumerate(outs):
            call.outputs[k][...] = out
    return run


def cond_backward_kernel(call: Any) -> Callable[[], None]:
    m = call.params.num_outputs
    ograds, branch = call.inputs[:m], _Cond(call, call.inputs[m:], grad=True)

    def run() -> None:
        which = branch.branch(True)
        branch.forward(which, True)
        grads = branch.bodies[which].backward(list(ograds))
        total: dict[int, Any] = {}
        for k, g in zip(branch.feeds[which], grads):
            if g is not None:
                total[k] = total[k] + g if k in total else g.copy()
        for k in range(len(branch.fwd)):
            _write(call, k, total.get(k))
    return run


#: op name -> kernel factory, registered by ``core/startup.py``
CONTROL_FLOW_KERNELS = {
    "_foreach": foreach_kernel, "_backward_foreach": foreach_backward_kernel,
    "_while_loop": while_loop_kernel, "_backward_while_loop": while_loop_backward_kernel,
    "_cond": cond_kernel, "_backward_cond": cond_backward_kernel,
}
