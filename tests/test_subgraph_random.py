"""Property test of the partitioner: random DAGs of elementwise ops, a few multi-input ones and
a multi-output one, random op-name sets and minimum region sizes. The partition is valid and
the partitioned executor computes the unpartitioned outputs and gradients."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import graphexec as gx

S = gx.sym
pytestmark = pytest.mark.usefixtures("subgraph_clean")

UNARY = ["sin", "cos", "tanh", "sigmoid", "relu", "softsign", "negative", "abs"]
BINARY = ["elemwise_add", "elemwise_mul", "elemwise_sub", "_maximum"]
ROWS = 2


@st.composite
def dags(draw):
    """(symbol, input shapes, op names used): variables of shape (ROWS, 3) and a few dozen
    nodes, each reading earlier nodes (or outputs of a SliceChannel) of a compatible width."""
    nodes = [S.Variable(f"x{i}") for i in range(draw(st.integers(1, 3)))]
    first_op = len(nodes)
    widths = [3] * len(nodes)
    used: set[str] = set()

    def pick(width=None):
        choices = [i for i, w in enumerate(widths) if width is None or w == width]
        return choices[draw(st.integers(0, len(choices) - 1))]

    for k in range(draw(st.integers(3, 30))):
        name = f"n{k}"
        kind = draw(st.sampled_from(["unary"] * 3 + ["binary"] * 3 + [
            "add_n", "Concat", "FullyConnected", "SliceChannel"]))
        if kind == "unary":
            op = draw(st.sampled_from(UNARY))
            i = pick()
            node, width = getattr(S, op)(nodes[i], name=name), widths[i]
        elif kind == "binary":
            op = draw(st.sampled_from(BINARY))
            i = pick()
            node, width = getattr(S, op)(nodes[i], nodes[pick(widths[i])], name=name), widths[i]
        elif kind == "add_n":
            op, i = kind, pick()
            ins = [nodes[i]] + [nodes[pick(widths[i])] for _ in range(draw(st.integers(1, 3)))]
            node, width = S.add_n(*ins, name=name), widths[i]
        elif kind == "Concat":
            op, ins = kind, [pick() for _ in range(draw(st.integers(2, 3)))]
            width = sum(widths[i] for i in ins)
            node = S.Concat(*[nodes[i] for i in ins], dim=1, name=name)
        elif kind == "SliceChannel":  # a multi-output node: every output becomes a node
            op, i = kind, pick()
            parts = draw(st.sampled_from([d for d in (2, 3) if widths[i] % d == 0] or [1]))
            split = S.SliceChannel(nodes[i], num_outputs=parts, axis=1, name=name)
            nodes += [split[j] for j in range(parts - 1)]
            widths += [widths[i] // parts] * (parts - 1)
            node, width = split[parts - 1], widths[i] // parts
        else:
            op, width = kind, draw(st.integers(2, 4))
            node = S.FullyConnected(nodes[pick()], num_hidden=width, name=name)
        used.add(op)
        nodes.append(node)
        widths.append(width)
    extra = draw(st.lists(st.integers(first_op, len(nodes) - 1), max_size=2))
    sym = S.Group([nodes[i] for i in [len(nodes) - 1] + extra]) if extra else nodes[-1]
    shapes = {n: (ROWS, 3) for n in sym.list_arguments() if n.startswith("x")}
    return sym, shapes, sorted(used)


@st.composite
def cases(draw):
    sym, shapes, used = draw(dags())
    if draw(st.booleans()):
        ops = draw(st.sets(st.sampled_from(used)))
    else:  # most ops claimed: large regions, cycles through the few left out
        ops = set(used) - draw(st.sets(st.sampled_from(used), max_size=2))
    min_size = draw(st.sampled_from([1, 1, 1, 2, 3]))
    return sym, shapes, ops, min_size


def _run(sym, shapes, seed, **kw):
    """Outputs and gradients of a training step with random values (grad_req write)."""
    rng = np.random.default_rng(seed)
    arg_shapes, out_shapes, _ = sym.infer_shape(**shapes)
    args = {n: rng.uniform(-1, 1, s).astype("f4") for n, s in zip(sym.list_arguments(),
                                                                    arg_shapes)}
    grads = {n: np.zeros_like(a) for n, a in args.items()}
    exe = sym.bind(gx.cpu(), args=args, args_grad=grads, **kw)
    outs = [np.array(o) for o in exe.forward(is_train=True)]
    exe.backward([rng.uniform(-1, 1, s).astype("f4") for s in out_shapes])
    return outs, {n: np.array(g) for n, g in exe.grad_dict.items()}, exe


def _consumer_between_members():
    """exp -> {sin, cos} -> add, claiming exp, cos, add: sin reads the region's exp output and
    comes between its members in topological order."""
    e = S.exp(S.Variable("x0"), name="e")
    return (S.elemwise_add(S.sin(e, name="s"), S.cos(e, name="c"), name="a"),
            {"x0": (ROWS, 3)}, {"exp", "cos", "elemwise_add"}, 1)


def _cycle_between_regions():
    """Two convex regions {p, b1, b2} and {q, a2} that feed each other through tanh nodes."""
    q, p = S.exp(S.Variable("x0"), name="q"), S.exp(S.Variable("x1"), name="p")
    b1 = S.elemwise_mul(p, S.tanh(q, name="x"), name="b1")
    a2 = S.elemwise_mul(q, S.tanh(S.exp(p, name="b2"), name="y"), name="a2")
    return S.Group([b1, a2]), {"x0": (ROWS, 3), "x1": (ROWS, 3)}, {"exp", "elemwise_mul"}, 1


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(cases())
@example(_consumer_between_members())
@example(_cycle_between_regions())
def test_random_dags_partition_validly_and_compute_the_same(case):
    sym, shapes, ops, min_size = case
    options = {"op_names": ops, "min_size": min_size}
    plan = gx.partition(sym, "default", need_grad=True, **options)
    for what in ("list_arguments", "list_auxiliary_states", "list_outputs"):
        assert getattr(plan.symbol, what)() == getattr(sym, what)(), what
    gx.validate_partition(sym, plan.symbol)
    assert gx.partition(sym, "default", need_grad=True, **options).symbol.tojson() == \
        plan.symbol.tojson()
    for d in plan.nodes.values():
        if d.region is None:
            assert d.reason in (("cycle", "min_size", "order") if d.op in ops
                                else ("unsupported",)), d
    for r in plan.regions:
        assert len(r.members) >= min_size
    want_outs, want_grads, _ = _run(sym, shapes, 0, backend="NONE")
    outs, grads, exe = _run(sym, shapes, 0, backend="default",
                            backend_options={"default": options})
    assert exe.partition_plan.num_claimed == plan.num_claimed
    for k, (a, b) in enumerate(zip(outs, want_outs)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"output {k}")
    for n, g in want_grads.items():
        np.testing.assert_allclose(grads[n], g, rtol=1e-3, atol=1e-4, err_msg=f"grad {n}")
