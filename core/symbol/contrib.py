"""``gx.sym.contrib``: MXNet's ``mx.sym.contrib`` namespace. ``foreach``, ``while_loop`` and
``cond`` build the control-flow nodes (``_foreach`` / ``_while_loop`` / ``_cond``, declared in
``core/subgraph/control_flow.py``) from Python functions, as MXNet 1.9.1's do: the functions
run inside an ``AttrScope(__subgraph_name__=...)``, and each body is cut out of the graph at
the nodes made outside that scope (their outputs feed the loop as inputs, computed once), so
the JSON written is MXNet's. Every other name resolves to the ``_contrib_<name>`` operator.

>>> data, h = gx.sym.var("data"), gx.sym.var("h")
>>> out, states = gx.sym.contrib.foreach(lambda x, s: (x + s[0], [x + s[0]]), data, [h])
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..ir.errors import ArgumentTypeError
from ..ir.graph import Entry, IndexedGraph, Node
from ..ops.registry import get_op, op_function
from .naming import AttrScope, NameManager
from .symbol import Group, Symbol, Variable, create_op_symbol, entry_name

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


def _uniq_name(sym: Symbol, fallback: str) -> str:
    """MXNet's name for the body variable standing for ``sym``: '<node>-<output index>'."""
    return f"{sym.name}-{sym.outputs[0].index}" if sym.name else fallback


def _step_var(sym: Symbol, fallback: str) -> Symbol:
    """The body's variable standing for one step of ``sym``."""
    return Variable(_uniq_name(sym, fallback))


#: how many bodies of each name were made (MXNet's AttrScope._subgraph_names)
_BODY_COUNTS: dict[str, int] = {}


def _scope_name(name: str) -> str:
    """A unique ``__subgraph_name__`` (``foreach0``, ``outer$foreach0`` when nested)."""
    outer = AttrScope.current().get(None).get("__subgraph_name__", "")
    name = f"{outer}${name}" if outer else name
    count = _BODY_COUNTS.get(name, 0)
    _BODY_COUNTS[name] = count + 1
    return f"{name}{count}"


def _in_scope(node: Node, scope: str) -> bool:
    return node.attrs.get("__subgraph_name__") == scope


def _identities(outputs: list[Symbol], scope: str, also: set[str] = frozenset()) -> list:
    """MXNet's ``make_identity`` (call inside the scope): a body output that is an input of
    the body, is made outside it, or is named in ``also`` is copied by an ``identity``."""
    inputs = set(Group(outputs).list_inputs()) if outputs else set()
    out = []
    for o in outputs:
        node = o.outputs[0].node
        if o.name in inputs or o.name in also or not _in_scope(node, scope):
            o = create_op_symbol("identity", [o], {})
        out.append(o)
    return out


class _Body:
    """A body cut out of the graph built in ``scope`` (MXNet's CutSubgraph): nodes made in the
    scope are copied; the output of any other operator node they read becomes a variable
    named as that output (``<node>_output``), fed from outside; variables stay variables.
    ``outer[name]`` is the outside entry feeding each body input."""

    def __init__(self, outputs: list[Symbol], scope: str):
        entries = [o.outputs[0] for o in outputs]
        self.outer: dict[str, Entry] = {}
        new: dict[int, Node] = {}
        cut: dict[tuple[int, int], Node] = {}

        def entry(e: Entry) -> Entry:
            node = e.node
            if node.op is not None and not _in_scope(node, scope):
                key = (id(node), e.index)
                if key not in cut:
                    cut[key] = Node(None, entry_name(e), {})
                    self.outer[cut[key].name] = e
                return Entry(cut[key], 0)
            return Entry(new[id(node)], e.index, e.version)
        for node in IndexedGraph(entries).nodes:
            if node.op is None:
                new[id(node)] = Node(None, node.name, dict(node.attrs))
                self.outer.setdefault(node.name, Entry(node))
            elif _in_scope(node, scope):
                new[id(node)] = Node(node.op, node.name, dict(node.attrs), node.params,
                                     [entry(e) for e in node.inputs], [],
                                     list(node.subgraphs))
        self.sym = Symbol([entry(e) for e in entries])
        self.inputs = self.sym.list_inputs()


def _node(op_name: str, attrs: dict, inputs: list[Entry], bodies: list[Symbol]) -> Node:
    op = get_op(op_name)
    name = NameManager.current().get(None, op_name)
    attrs = {**AttrScope.current().get(None), **attrs}
    return Node(op, name, attrs, op.subgraph_params(attrs, bodies), inputs, [], bodies)


def _results(node: Node) -> list[Symbol]:
    return [Symbol([Entry(node, k)]) for k in range(node.num_outputs)]


def foreach(body: Callable, data: Any, init_states: Any, name: str = "foreach") -> tuple:
    """Run ``body(data_t, states) -> (outputs, new_states)`` over axis 0 of ``data``; returns
    (outputs stacked over the steps, final states), shaped as ``body`` returned them."""
    datas, one_data = _as_list(data, "data")
    states, one_state = _as_list(init_states, "init_states")
    scope = _scope_name(name)
    with AttrScope(__subgraph_name__=scope):
        d_vars = [_step_var(d, f"{name}_data{k}") for k, d in enumerate(datas)]
        s_vars = [_step_var(s, f"{name}_state{k}") for k, s in enumerate(states)]
        outs, new_states = body(d_vars[0] if one_data else d_vars,
                                s_vars[0] if one_state else s_vars)
        out_list, one_out = _outputs(outs, "the body's outputs")
        new_list, _ = _as_list(new_states, "the body's states")
        if len(new_list) != len(states):
            raise ArgumentTypeError(f"foreach {name!r}: the body returned {len(new_list)} "
                                    f"states for {len(states)} initial states")
        out_list = _identities(out_list, scope)
        new_list = _identities(new_list, scope, {o.name for o in out_list})
    cut = _Body(out_list + new_list, scope)
    names = cut.inputs
    d_names, s_names = [v.name for v in d_vars], [v.name for v in s_vars]
    missing = [n for n in d_names + s_names if n not in names]
    if missing:
        raise ArgumentTypeError(f"foreach {name!r}: the body does not read {missing}; every "
                                f"data and state input must be used")
    free = [n for n in names if n not in d_names and n not in s_names]
    attrs = {"num_args": str(len(names) + 1),
             "num_outputs": str(len(out_list) + len(new_list)),
             "num_out_data": str(len(out_list)),
             "in_data_locs": _locs([names.index(n) for n in d_names]),
             "in_state_locs": _locs([names.index(n) for n in s_names]),
             "remain_locs": _locs([names.index(n) for n in free])}
    inputs = [d.outputs[0] for d in datas] + [s.outputs[0] for s in states] + \
        [cut.outer[n] for n in free]
    results = _results(_node("_foreach", attrs, inputs, [cut.sym]))
    outs_sym, state_sym = results[:len(out_list)], results[len(out_list):]
    return (outs_sym[0] if one_out and outs_sym else outs_sym,
            state_sym[0] if one_state else state_sym)


def _loop_body(fn: Callable, name: str, var_names: list[str]):
    """Build one while_loop body in its own scope: (cut body, number of step outputs)."""
    scope = _scope_name(name)
    with AttrScope(__subgraph_name__=scope):
        new_vars = [Variable(n) for n in var_names]
        outs, final = fn(*new_vars)
        graph = _identities(outs + final, scope)
    return _Body(graph, scope), len(outs)


def while_loop(cond: Callable, func: Callable, loop_vars: Any, max_iterations: int,
               name: str = "while_loop") -> tuple:
    """Run ``func(*vars) -> (outputs, new_vars)`` while ``cond(*vars)`` is non-zero, at most
    ``max_iterations`` times; returns (outputs stacked into max_iterations rows, final
    loop variables)."""
    if max_iterations is None or int(max_iterations) < 1:
        raise ArgumentTypeError(f"while_loop {name!r}: max_iterations must be a positive "
                                f"int, got {max_iterations!r}")
    lvars, one_var = _as_list(loop_vars, "loop_vars")
    var_names = [_uniq_name(v, f"{name}_var{k}") for k, v in enumerate(lvars)]

    def cond_fn(*vs):
        return [], [cond(*vs)]

    def func_fn(*vs):
        outs, new_vars = func(*vs)
        out_list, _ = _outputs(outs, "func's outputs")
        new_list, _ = _as_list(new_vars, "func's loop variables")
        if len(new_list) != len(vs):
            raise ArgumentTypeError(f"while_loop {name!r}: func returned {len(new_list)} "
                                    f"loop variables for {len(vs)}")
        return out_list, new_list
    c_body, _ = _loop_body(cond_fn, name + "_cond", var_names)
    f_body, n_out = _loop_body(func_fn, name + "_func", var_names)
    # MXNet's _union_inputs: loop variables are shared by both bodies, every other input
    # (free or cut) is a node input of its own for each body
    inputs: list[Entry] = []
    slot: dict[str, int] = {}
    locs = []
    for body in (c_body, f_body):
        body_locs = []
        for n in body.inputs:
            if n in var_names:
                if n not in slot:
                    slot[n] = len(inputs)
                    inputs.append(lvars[var_names.index(n)].outputs[0])
                body_locs.append(slot[n])
            else:
                body_locs.append(len(inputs))
                inputs.append(body.outer[n])
        locs.append(body_locs)
    unused = [k + 1 for k, n in enumerate(var_names) if n not in f_body.inputs]
    if unused:
        raise ArgumentTypeError(f"while_loop {name!r}: loop variable(s) {unused} do not take "
                                f"part in func's computation")
    attrs = {"num_args": str(len(inputs) + 2), "num_outputs": str(len(f_body.sym.outputs)),
             "num_out_data": str(n_out), "max_iterations": str(int(max_iterations)),
             "cond_input_locs": _locs(locs[0]), "func_input_locs": _locs(locs[1]),
             "func_var_locs": _locs([f_body.inputs.index(n) for n in var_names])}
    results = _results(_node("_while_loop", attrs, inputs, [c_body.sym, f_body.sym]))
    finals = results[n_out:]
    return results[:n_out], (finals[0] if one_var else finals)


def cond(pred: Symbol, then_func: Callable, else_func: Callable, name: str = "cond") -> Any:
    """``then_func()`` where the first element of ``pred`` is non-zero, else
    ``else_func()``; both return the same number of outputs."""
    if not isinstance(pred, Symbol):
        raise ArgumentTypeError(f"cond {name!r}: pred must be a Symbol")
    bodies, one = [], False
    for suffix, fn in (("_pred", lambda: pred), ("_then", then_func), ("_else", else_func)):
        scope = _scope_name(name + suffix)
        with AttrScope(__subgraph_name__=scope):
            outs, single = _as_list(fn(), f"{name}{suffix} outputs")
            graph = _identities(outs, scope)
        one = one or (single and suffix == "_then")
        bodies.append(_Body(graph, scope))
    if len(bodies[0].sym.outputs) != 1:
        raise ArgumentTypeError(f"cond {name!r}: pred must have a single output")
    if len(bodies[1].sym.outputs) != len(bodies[2].sym.outputs):
        raise ArgumentTypeError(f"cond {name!r}: then_func returned "
                                f"{len(bodies[1].sym.outputs)} outputs, else_func "
                                f"{len(bodies[2].sym.outputs)}")
    # MXNet's _union_inputs for cond: an input already taken by name is shared
    inputs: list[Entry] = []
    by_name: dict[str, int] = {}
    attrs = {"num_outputs": str(len(bodies[1].sym.outputs))}
    for label, body in zip(("cond", "then", "else"), bodies):
        body_locs = []
        for n in body.inputs:
            e = body.outer[n]
            key = e.node.name if e.node.op is None else None
            if key is not None and key in by_name:
                body_locs.append(by_name[key])
                continue
            body_locs.append(len(inputs))
            if key is not None:
                by_name[key] = len(inputs)
            inputs.append(e)
        attrs[f"{label}_input_locs"] = _locs(body_locs)
    attrs["num_args"] = str(len(inputs) + 3)
    results = _results(_node("_cond", attrs, inputs, [b.sym for b in bodies]))
    return results[0] if one else results


def __getattr__(name: str) -> Any:
    """``gx.sym.contrib.<name>``: the operator ``_contrib_<name>``."""
    return op_function("graphexec.sym.contrib", name, "_contrib_", create_op_symbol)
