"""``gx.sym.contrib``: MXNet's ``mx.sym.contrib`` namespace. ``foreach``, ``while_loop`` and
``cond`` build the control-flow nodes (``_foreach`` / ``_while_loop`` / ``_cond``, declared in
``core/subgraph/control_flow.py``) from Python functions, as MXNet 1.9.1's do; every other
name resolves to the registered ``_contrib_<name>`` operator.

>>> data, h = gx.sym.var("data"), gx.sym.var("h")
>>> out, states = gx.sym.contrib.foreach(lambda x, s: (x + s[0], [x + s[0]]), data, [h])
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..ir.errors import ArgumentTypeError
from ..ir.graph import Entry, Node
from ..ops.registry import find_op, get_op
from .naming import AttrScope, NameManager
from .symbol import Group, Symbol, Variable, copy_graph, create_op_symbol

__all__ = ["foreach", "while_loop", "cond"]


def _as_list(value: Any, what: str) -> tuple[list[Symbol], bool]:
    """``value`` as a list of Symbols, and whether it was one Symbol."""
    if isinstance(value, Symbol):
        return list(value), True
    if isinstance(value, (list, tuple)) and all(isinstance(v, Symbol) for v in value):
        return [s for v in value for s in v], False
    raise ArgumentTypeError(f"{what} must be a Symbol or a list of Symbols, got "
                            f"{type(value).__name__}")


def _outputs(value: Any, what: str) -> tuple[list[Symbol], bool]:
    """Like :func:`_as_list`, with None or an empty list for no outputs."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return [], False
    return _as_list(value, what)


def _locs(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _step_var(sym: Symbol, fallback: str) -> Symbol:
    """The body's variable standing for one step of ``sym`` (MXNet names it '<name>-0')."""
    base = sym.name if sym.name else fallback
    return Variable(f"{base}-0")


def _body(outputs: list[Symbol]) -> tuple[Symbol, dict[str, Node]]:
    """A copy of the body graph (its own nodes) and, by name, the outer variables it reads."""
    group = Group(outputs)
    outer = {n.name: n for n in group._indexed().nodes if n.op is None}
    return Symbol(copy_graph(group.outputs)), outer


def _node(op_name: str, name: str | None, attrs: dict, inputs: list[Entry],
          bodies: list[Symbol]) -> Node:
    op = get_op(op_name)
    name = NameManager.current().get(name, op_name)
    attrs = {**AttrScope.current().get(None), **attrs}
    return Node(op, name, attrs, op.subgraph_params(attrs, bodies), inputs, [], bodies)


def _outer_inputs(body: Symbol, local: set[str], outer: dict[str, Node]) -> list[str]:
    """The body's inputs that are free variables (not made by the builder)."""
    return [n for n in body.list_inputs() if n not in local and n in outer]


def foreach(body: Callable, data: Any, init_states: Any, name: str = "foreach") -> tuple:
    """Run ``body(data_t, states) -> (outputs, new_states)`` over axis 0 of ``data``; returns
    (outputs stacked over the steps, final states), shaped as ``body`` returned them."""
    datas, one_data = _as_list(data, "data")
    states, one_state = _as_list(init_states, "init_states")
    d_vars = [_step_var(d, f"{name}_data{k}") for k, d in enumerate(datas)]
    s_vars = [_step_var(s, f"{name}_state{k}") for k, s in enumerate(states)]
    outs, new_states = body(d_vars[0] if one_data else d_vars,
                            s_vars[0] if one_state else s_vars)
    out_list, one_out = _outputs(outs, "the body's outputs")
    new_list, _ = _as_list(new_states, "the body's states")
    if len(new_list) != len(states):
        raise ArgumentTypeError(f"foreach {name!r}: the body returned {len(new_list)} states "
                                f"for {len(states)} initial states")
    sub, outer = _body(out_list + new_list)
    names = sub.list_inputs()
    d_names, s_names = [v.name for v in d_vars], [v.name for v in s_vars]
    free = _outer_inputs(sub, set(d_names) | set(s_names), outer)
    locs = [[names.index(n) for n in group if n in names] for group in (d_names, s_names)]
    if len(locs[0]) != len(d_names) or len(locs[1]) != len(s_names):
        raise ArgumentTypeError(f"foreach {name!r}: the body must read every data and state "
                                f"input it is given")
    attrs = {"num_args": str(len(names) + 1), "num_outputs": str(len(out_list) +
                                                                 len(new_list)),
             "num_out_data": str(len(out_list)), "in_data_locs": _locs(locs[0]),
             "in_state_locs": _locs(locs[1]),
             "remain_locs": _locs([names.index(n) for n in free])}
    inputs = [d.outputs[0] for d in datas] + [s.outputs[0] for s in states] + \
        [Entry(outer[n]) for n in free]
    node = _node("_foreach", None if name == "foreach" else name, attrs, inputs, [sub])
    results = [Symbol([Entry(node, k)]) for k in range(node.num_outputs)]
    outs_sym = results[:len(out_list)]
    state_sym = results[len(out_list):]
    return (outs_sym[0] if one_out and outs_sym else outs_sym,
            state_sym[0] if one_state else state_sym)


def while_loop(cond: Callable, func: Callable, loop_vars: Any, max_iterations: int,
               name: str = "while_loop") -> tuple:
    """Run ``func(*vars) -> (outputs, new_vars)`` while ``cond(*vars)`` is non-zero, at most
    ``max_iterations`` times; returns (outputs stacked into max_iterations rows, final
    loop variables)."""
    if max_iterations is None or int(max_iterations) < 1:
        raise ArgumentTypeError(f"while_loop {name!r}: max_iterations must be a positive "
                                f"int, got {max_iterations!r}")
    lvars, one_var = _as_list(loop_vars, "loop_vars")
    vars_ = [_step_var(v, f"{name}_var{k}") for k, v in enumerate(lvars)]
    c_sym = cond(*vars_)
    outs, new_vars = func(*vars_)
    out_list, _ = _outputs(outs, "func's outputs")
    new_list, _ = _as_list(new_vars, "func's loop variables")
    if len(new_list) != len(vars_):
        raise ArgumentTypeError(f"while_loop {name!r}: func returned {len(new_list)} loop "
                                f"variables for {len(vars_)}")
    c_body, c_outer = _body([c_sym])
    f_body, f_outer = _body(out_list + new_list)
    local = {v.name for v in vars_}
    free = list(dict.fromkeys(_outer_inputs(c_body, local, c_outer) +
                              _outer_inputs(f_body, local, f_outer)))
    slot = {v.name: k for k, v in enumerate(vars_)}
    slot.update({n: len(vars_) + k for k, n in enumerate(free)})
    f_names = f_body.list_inputs()
    attrs = {"num_args": str(len(slot) + 2),
             "num_outputs": str(len(out_list) + len(new_list)),
             "num_out_data": str(len(out_list)), "max_iterations": str(int(max_iterations)),
             "cond_input_locs": _locs([slot[n] for n in c_body.list_inputs()]),
             "func_input_locs": _locs([slot[n] for n in f_names]),
             "func_var_locs": _locs([f_names.index(v.name) for v in vars_])}
    outer = {**c_outer, **f_outer}
    inputs = [v.outputs[0] for v in lvars] + [Entry(outer[n]) for n in free]
    node = _node("_while_loop", None if name == "while_loop" else name, attrs, inputs,
                 [c_body, f_body])
    results = [Symbol([Entry(node, k)]) for k in range(node.num_outputs)]
    finals = results[len(out_list):]
    return results[:len(out_list)], (finals[0] if one_var else finals)


def cond(pred: Symbol, then_func: Callable, else_func: Callable, name: str = "cond") -> Any:
    """``then_func()`` where the first element of ``pred`` is non-zero, else
    ``else_func()``; both return the same number of outputs."""
    if not isinstance(pred, Symbol):
        raise ArgumentTypeError(f"cond {name!r}: pred must be a Symbol")
    then_out, one = _as_list(then_func(), "then_func's outputs")
    else_out, _ = _as_list(else_func(), "else_func's outputs")
    if len(then_out) != len(else_out):
        raise ArgumentTypeError(f"cond {name!r}: then_func returned {len(then_out)} outputs, "
                                f"else_func {len(else_out)}")
    bodies, used = [], []
    for outs in ([pred], then_out, else_out):
        body, outer = _body(outs)
        bodies.append(body)
        used.append(outer)
    free = list(dict.fromkeys(n for b, o in zip(bodies, used) for n in b.list_inputs()
                              if n in o))
    slot = {n: k for k, n in enumerate(free)}
    attrs = {"num_args": str(len(free) + 3), "num_outputs": str(len(then_out))}
    for label, body in zip(("cond", "then", "else"), bodies):
        attrs[f"{label}_input_locs"] = _locs([slot[n] for n in body.list_inputs()])
    outer = {k: v for o in used for k, v in o.items()}
    node = _node("_cond", None if name == "cond" else name, attrs,
                 [Entry(outer[n]) for n in free], bodies)
    results = [Symbol([Entry(node, k)]) for k in range(node.num_outputs)]
    return results[0] if one else results


def __getattr__(name: str) -> Any:
    """``gx.sym.contrib.<name>``: the operator ``_contrib_<name>``."""
    full = f"_contrib_{name}"
    if name.startswith("__") or find_op(full) is None:
        raise AttributeError(f"module 'graphexec.sym.contrib' has no attribute {name!r} (no "
                             f"operator {full!r} is registered)")

    def op_function(*args: Any, **kwargs: Any) -> Symbol:
        return create_op_symbol(full, args, kwargs)
    op_function.__name__ = name
    return op_function
