"""Control-flow operators with nested graphs: ``_foreach``, ``_while_loop`` and ``_cond``, as
MXNet 1.9.1 writes them into symbol JSON (``mx.sym.contrib.foreach / while_loop / cond``,
hybridized Gluon blocks): the bodies are the node's ``subgraphs``, the attributes say which
node input feeds which body input.

- ``_foreach`` (one subgraph, the step): node inputs are the sliced data, then the initial
  states, then the free variables; ``in_data_locs`` / ``in_state_locs`` / ``remain_locs``
  give their positions among the step's inputs. The step's first ``num_out_data`` outputs
  are stacked along a new axis 0, the rest are the new states (the node's last outputs).
- ``_while_loop`` (cond, func): ``cond_input_locs`` / ``func_input_locs`` map each body input
  to a node input, ``func_var_locs`` say which func inputs are the loop variables. Step
  outputs are stacked into ``max_iterations`` rows; rows past the last step are zeros
  (MXNet leaves them unwritten). The last outputs are the final loop variables.
- ``_cond`` (cond, then, else): ``*_input_locs`` map each body input to a node input.

Shapes and dtypes are inferred by running inference on the bodies; gradients are backward
operators (``_backward_foreach`` / ``_backward_while_loop`` / ``_backward_cond``) that read
the output gradients and the forward inputs and whose kernels (``core/runtime/control_flow``)
run the bodies' own gradients step by step. These nodes carry the ``control_flow`` trait: no
subgraph backend claims them (a region boundary), they are never merged.
"""
from __future__ import annotations

from typing import Any

from ..ir.attrs import Params
from ..ir.errors import AttributeParseError
from ..ir.graph import Graph, Node
from ..ops.common import Int, Shape, merge
from ..ops.registry import InferError, OpDef, ShapeConflict
from ..passes.manager import apply_passes

__all__ = ["CONTROL_FLOW_OPS", "body_inputs", "foreach_locs"]

#: number of subgraphs of each operator (MXNet counts them in ``num_args``)
_BODIES = {"_foreach": 1, "_while_loop": 2, "_cond": 3}


def foreach_locs(p) -> list[int]:
    """For each node input of a ``_foreach``, its position among the step's inputs."""
    return [*p.in_data_locs, *p.in_state_locs, *p.remain_locs]


def body_inputs(p) -> list[list[int]]:
    """For each body, the node input feeding each of its inputs (in ``list_inputs`` order)."""
    if p.op_name == "_foreach":
        locs = foreach_locs(p)
        slot = {pos: k for k, pos in enumerate(locs)}
        return [[slot[pos] for pos in range(len(locs))]]
    if p.op_name == "_while_loop":
        return [list(p.cond_input_locs), list(p.func_input_locs)]
    return [list(p.cond_input_locs), list(p.then_input_locs), list(p.else_input_locs)]


# -- parameters ----------------------------------------------------------------------------------
def _check(p, subgraphs: list) -> None:
    """The attributes must describe the stored bodies: one location per body input, every
    location naming a node input."""
    name, want = p.op_name, _BODIES[p.op_name]
    if len(subgraphs) != want:
        raise AttributeParseError(f"{name} needs {want} subgraphs, the node has "
                                  f"{len(subgraphs)}")
    n_in = p.num_args - want
    for k, body in enumerate(subgraphs):
        count = 1 if k == 0 and name != "_foreach" else p.num_outputs
        if len(body.outputs) != count:
            raise AttributeParseError(f"{name}: subgraph {k} has {len(body.outputs)} outputs, "
                                      f"num_outputs={p.num_outputs} asks for {count}")
    if name == "_foreach":
        locs = foreach_locs(p)
        if sorted(locs) != list(range(len(subgraphs[0].list_inputs()))):
            raise AttributeParseError(
                f"_foreach: in_data_locs={p.in_data_locs}, in_state_locs={p.in_state_locs} "
                f"and remain_locs={p.remain_locs} must together name each of the step's "
                f"{len(subgraphs[0].list_inputs())} inputs once")
        if len(p.in_state_locs) != p.num_outputs - p.num_out_data:
            raise AttributeParseError(
                f"_foreach: {len(p.in_state_locs)} states (in_state_locs) but num_outputs - "
                f"num_out_data = {p.num_outputs - p.num_out_data}")
        return
    labels = ("cond_input_locs", "func_input_locs") if name == "_while_loop" else \
        ("cond_input_locs", "then_input_locs", "else_input_locs")
    for label, body, locs in zip(labels, subgraphs, body_inputs(p)):
        if len(locs) != len(body.list_inputs()) or any(not 0 <= k < n_in for k in locs):
            raise AttributeParseError(
                f"{name}: {label}={tuple(locs)} must give, for each of the body's "
                f"{len(body.list_inputs())} inputs, one of the node's {n_in} inputs")
    if name == "_while_loop" and any(not 0 <= v < len(p.func_input_locs)
                                     for v in p.func_var_locs):
        raise AttributeParseError(f"_while_loop: func_var_locs={p.func_var_locs} must name "
                                  f"inputs of func")


def _params_of(op: OpDef):
    def parse(attrs: dict, subgraphs: list) -> Params:
        # a copy: the schema caches parsed params by attribute text, and two loops with the
        # same attributes have different bodies
        p = Params(**vars(op.schema.parse(attrs, op.name, None)))
        p.op_name = op.name.replace("_backward", "")
        p.subgraphs = list(subgraphs)
        _check(p, p.subgraphs)
        p.draws = any(n.op is not None and n.op.draws_random(n.params)
                      for body in p.subgraphs for n in body._indexed().nodes)
        # shared with the backward node (same params): the forward loop records where the
        # random stream started, the backward one replays it (the same Dropout masks)
        p.link = {}
        return p
    return parse


# -- inference -------------------------------------------------------------------------------
def _infer_body(body, kind: str, ins: list, outs: list) -> tuple[list, list]:
    """Run the inference pass on ``body`` seeded with its inputs ``ins`` (in list_inputs
    order) and outputs ``outs``; the values of its inputs and outputs."""
    ig = body._indexed()
    key = "shape" if kind == "shape" else "dtype"
    seeds = {nid: v for nid, v in zip(ig.input_nodes, ins) if v is not None}
    g = Graph(body.outputs, {f"{key}_inputs": seeds, f"{key}_outputs": list(outs)}, ig)
    g = apply_passes(g, ["infer_shape" if kind == "shape" else "infer_type"])
    values, rp = g.attrs[key], ig.row_ptr
    return [values[rp[n]] for n in ig.input_nodes], [values[e] for e in ig.outputs]


def _put(lst: list, k: int, value: Any, side: str) -> None:
    if value is None:
        return
    if lst[k] is None:
        lst[k] = value
        return
    if lst[k] == value:
        return
    if isinstance(value, tuple):
        try:
            lst[k] = merge(lst[k], value)
            return
        except ValueError:
            pass
    raise ShapeConflict(side, k, lst[k], value)


def _stack(kind: str, rows: int, value):
    """An output stacked over ``rows`` steps (dtypes pass through)."""
    if kind != "shape" or value is None:
        return value
    return (rows, *value)


def _unstack(kind: str, value):
    if kind != "shape" or value is None:
        return value
    if not value:
        raise InferError("a sliced input needs at least one dimension to iterate over")
    return tuple(value[1:])


def _foreach_rule(kind: str):
    def rule(p, ins, outs):
        body, feed = p.subgraphs[0], body_inputs(p)[0]
        n_data, n_out = len(p.in_data_locs), p.num_out_data
        steps = next((s[0] for s in ins[:n_data] + outs[:n_out]
                      if kind == "shape" and s is not None and s and s[0] >= 0), -1)
        for _ in range(2):  # twice: a state's shape may come back through the step
            b_in = [_unstack(kind, ins[k]) if k < n_data else ins[k] for k in feed]
            b_out = [_unstack(kind, o) if j < n_out else o for j, o in enumerate(outs)]
            b_in, b_out = _infer_body(body, kind, b_in, b_out)
            for pos, k in enumerate(feed):
                _put(ins, k, _stack(kind, steps, b_in[pos]) if k < n_data else b_in[pos], "in")
            for j, v in enumerate(b_out):
                _put(outs, j, _stack(kind, steps, v) if j < n_out else v, "out")
            for j in range(len(p.in_state_locs)):  # a state keeps its shape across steps
                _put(ins, n_data + j, outs[n_out + j], "in")
                _put(outs, n_out + j, ins[n_data + j], "out")
    return rule


def _while_rule(kind: str):
    def rule(p, ins, outs):
        cond, func = p.subgraphs
        c_feed, f_feed = body_inputs(p)
        var_inputs = [f_feed[v] for v in p.func_var_locs]
        n_out = p.num_out_data
        b_in, _ = _infer_body(cond, kind, [ins[k] for k in c_feed], [None])
        for pos, k in enumerate(c_feed):
            _put(ins, k, b_in[pos], "in")
        for _ in range(2):
            b_out = [_unstack(kind, o) if j < n_out else o for j, o in enumerate(outs)]
            b_in, b_out = _infer_body(func, kind, [ins[k] for k in f_feed], b_out)
            for pos, k in enumerate(f_feed):
                _put(ins, k, b_in[pos], "in")
            for j, v in enumerate(b_out):
                _put(outs, j, _stack(kind, p.max_iterations, v) if j < n_out else v, "out")
            for j, k in enumerate(var_inputs):  # a loop variable keeps its shape
                _put(ins, k, outs[n_out + j], "in")
                _put(outs, n_out + j, ins[k], "out")
    return rule


def _cond_rule(kind: str):
    def rule(p, ins, outs):
        feeds = body_inputs(p)
        b_in, _ = _infer_body(p.subgraphs[0], kind, [ins[k] for k in feeds[0]], [None])
        for pos, k in enumerate(feeds[0]):
            _put(ins, k, b_in[pos], "in")
        for body, feed in zip(p.subgraphs[1:], feeds[1:]):
            b_in, b_out = _infer_body(body, kind, [ins[k] for k in feed], list(outs))
            for pos, k in enumerate(feed):
                _put(ins, k, b_in[pos], "in")
            for j, v in enumerate(b_out):
                _put(outs, j, v, "out")
    return rule


# -- gradients -----------------------------------------------------------------------------------
def _gradient(g, node: Node, ograds: list) -> list:
    """One backward node reading every output gradient, then every forward input; its
    output k is the gradient of forward input k."""
    bw = BACKWARD[node.op.name]
    bnode = Node(bw, f"{node.name}_backward", dict(node.attrs), node.params,
                 [*ograds, *node.inputs], [node], node.subgraphs)
    return g.outputs(bnode)


def _schema(name: str) -> dict:
    common = {"num_args": Int(), "num_outputs": Int()}
    if name == "_foreach":
        return {**common, "num_out_data": Int(0), "in_data_locs": Shape(()),
                "in_state_locs": Shape(()), "remain_locs": Shape(())}
    if name == "_while_loop":
        return {**common, "num_out_data": Int(0), "max_iterations": Int(),
                "cond_input_locs": Shape(()), "func_input_locs": Shape(()),
                "func_var_locs": Shape(())}
    return {**common, "cond_input_locs": Shape(()), "then_input_locs": Shape(()),
            "else_input_locs": Shape(())}


_RULES = {"_foreach": _foreach_rule, "_while_loop": _while_rule, "_cond": _cond_rule}


def _declare(name: str) -> tuple[OpDef, OpDef]:
    n_bodies = _BODIES[name]
    forward = OpDef(
        name, params=_schema(name), named_inputs=False,
        inputs=lambda p: [f"data{k}" for k in range(p.num_args - n_bodies)],
        outputs=lambda p: ["output"] if p.num_outputs == 1 else
        [f"output{k}" for k in range(p.num_outputs)],
        infer_shape=_RULES[name]("shape"), infer_type=_RULES[name]("dtype"),
        gradient=_gradient, traits=("control_flow",), random=lambda p: p.draws,
        doc=f"MXNet's {name}: a loop or branch over nested graphs (core/subgraph/"
            f"control_flow.py).")
    forward.subgraph_params = _params_of(forward)
    backward = OpDef(
        f"_backward{name}", params=_schema(name), named_inputs=False,
        inputs=lambda p: [f"ograd{k}" for k in range(p.num_outputs)] +
        [f"data{k}" for k in range(p.num_args - n_bodies)],
        outputs=lambda p: [f"output{k}" for k in range(p.num_args - n_bodies)],
        traits=("backward", "control_flow"))
    backward.subgraph_params = _params_of(backward)
    return forward, backward


_PAIRS = {name: _declare(name) for name in _BODIES}
#: the forward and backward operators, registered by ``core/startup.py``
CONTROL_FLOW_OPS = [op for pair in _PAIRS.values() for op in pair]
BACKWARD = {name: pair[1] for name, pair in _PAIRS.items()}
