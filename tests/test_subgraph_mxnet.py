"""MXNet's subgraph tests (the graphs of test_subgraph_op.py, re-expressed with the ``default``
backend and an op-name set): partitioning keeps the argument, auxiliary-state and output lists,
yields a valid partition, and every way of binding gives the unpartitioned results, gradients
and auxiliary states included; validate_partition rejects tampered partitions; MXNet's reference
cases give MXNet's numbers with their operators claimed."""
from __future__ import annotations

import json

import numpy as np
import pytest

import graphexec as gx

S = gx.sym
pytestmark = pytest.mark.usefixtures("subgraph_clean")


# -- the networks: (symbol, input shapes, op-name sets to partition with) ---------------------
def _conv_data_weight():
    """Two variables each used as a convolution's data and as the other's weight."""
    d1, d2 = S.Variable("data1"), S.Variable("data2")
    c1 = S.Convolution(data=d1, weight=d2, no_bias=True, kernel=(1, 1), num_filter=1)
    c2 = S.Convolution(data=d2, weight=d1, no_bias=True, kernel=(1, 1), num_filter=1)
    c3 = S.Convolution(data=d1, kernel=(1, 1), num_filter=2)
    return (S.Group([c1, c2, S.sin(c1) + c2, c3]), {"data1": (1, 2, 1, 1), "data2": (1, 2, 1, 1)},
            [set(), {"Convolution"}, {"Convolution", "sin"}, {"sin", "elemwise_add"},
             {"Convolution", "sin", "elemwise_add"}])


def _exp_sin_cos():
    """exp feeds sin and cos, which meet in an add: claiming exp, add and only one of sin/cos
    would close a cycle through the other."""
    e = S.exp(S.Variable("data"))
    return (S.sin(e) + S.cos(e), {"data": (3, 4)},
            [set(), {"exp", "sin", "elemwise_add"}, {"exp", "cos", "elemwise_add"},
             {"exp", "sin", "cos", "elemwise_add"}, {"exp", "elemwise_add"}, {"sin", "cos"},
             {"exp", "sin", "cos"}])


def _repeated_output():
    """The same output three times in a Group."""
    e = S.exp(S.Variable("data"))
    out = S.sin(e) + S.cos(e)
    return (S.Group([out, out, out]), {"data": (2, 3)},
            [set(), {"exp", "sin", "cos", "elemwise_add"}, {"exp", "sin", "elemwise_add"},
             {"elemwise_add"}, {"sin", "cos"}])


def _data_plus_data():
    """``data + data``: one variable read twice by the same node."""
    d = S.Variable("data")
    return (S.Group([d + d, S.sin(d + d)]), {"data": (2, 5)},
            [set(), {"elemwise_add"}, {"elemwise_add", "sin"}, {"sin"}])


def _zero_size():
    """A 0 (unknown, in MXNet 1.x) dimension in a variable's shape attribute, decided through
    the region by the convolution that uses sin(data2) as its weight."""
    d1, d2 = S.Variable("data1"), S.Variable("data2", shape=(1, 0, 2, 2))
    conv = S.Convolution(data=d1, weight=S.sin(d2), kernel=(2, 2), num_filter=1)
    return (conv, {"data1": (2, 3, 5, 5)},
            [set(), {"Convolution", "sin"}, {"sin"}, {"Convolution"}])


def _cycle_through_chain():
    """sin -> six cos -> add(sin, chain): claiming sin and add but not cos is a cycle."""
    s = S.sin(S.Variable("data"))
    chain = s
    for _ in range(6):
        chain = S.cos(chain)
    return (s + chain, {"data": (4,)},
            [set(), {"sin", "elemwise_add"}, {"sin", "cos", "elemwise_add"}, {"cos"},
             {"cos", "elemwise_add"}, {"sin", "cos"}])


def _shared_input():
    """One region input (exp's output, and the variable) consumed twice inside the region."""
    d = S.Variable("data")
    e = S.exp(d)
    return (S.sin(e) * S.cos(e) + d * d, {"data": (3, 2)},
            [set(), {"sin", "cos", "elemwise_mul", "elemwise_add"}, {"sin", "elemwise_mul"},
             {"exp"}, {"exp", "sin", "cos", "elemwise_mul", "elemwise_add"}])


def _batchnorm():
    """BatchNorm with auxiliary states, inside and around regions."""
    d = S.Variable("data")
    c = S.Convolution(data=d, kernel=(3, 3), pad=(1, 1), num_filter=3, name="conv")
    b1 = S.BatchNorm(c, fix_gamma=False, name="bn1")
    b2 = S.BatchNorm(S.Activation(b1, act_type="relu", name="act"), name="bn2")
    return (b2, {"data": (2, 2, 4, 4)},
            [set(), {"BatchNorm"}, {"Convolution", "BatchNorm"}, {"BatchNorm", "Activation"},
             {"Convolution", "BatchNorm", "Activation"}, {"Activation"}])


def _cycle_between_regions():
    """Two regions, each convex, that would feed each other through outside tanh nodes (not
    one of MXNet's graphs): the later-grown region is dropped."""
    q, p = S.exp(S.Variable("data1"), name="q"), S.exp(S.Variable("data2"), name="p")
    b1 = S.elemwise_mul(p, S.tanh(q, name="x"), name="b1")
    a2 = S.elemwise_mul(q, S.tanh(S.exp(p, name="b2"), name="y"), name="a2")
    return (S.Group([b1, a2]), {"data1": (2, 3), "data2": (2, 3)},
            [{"exp", "elemwise_mul"}, {"exp", "elemwise_mul", "tanh"}, {"exp"}])


def _dropout():
    """Random draws inside regions: the backward region replays the forward's masks."""
    d = S.Variable("data")
    out = S.exp(S.Dropout(S.sin(d), p=0.5)) + S.Dropout(S.cos(d), p=0.3)
    return (out, {"data": (4, 6)},
            [{"Dropout"}, {"sin", "Dropout", "exp"}, {"sin", "cos", "Dropout", "exp",
                                                      "elemwise_add"}, {"exp", "cos"}])


NETWORKS = {f.__name__.strip("_"): f for f in (
    _conv_data_weight, _exp_sin_cos, _repeated_output, _data_plus_data, _zero_size,
    _cycle_through_chain, _shared_input, _batchnorm, _cycle_between_regions, _dropout)}
CASES = [pytest.param(name, k, id=f"{name}-{'+'.join(sorted(ops)) or 'empty'}")
         for name, make in NETWORKS.items() for k, ops in enumerate(make()[2])]
MODES = ["bind", "simple_bind", "env", "optimize_for", "optimize_for_args",
         "backend_options"]


# -- helpers ---------------------------------------------------------------------------------
def _values(sym, shapes, seed=0):
    """Random arguments, positive auxiliary states, head gradients (all float32)."""
    rng = np.random.default_rng(seed)
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
    args = {n: rng.uniform(-1, 1, s).astype("f4")
            for n, s in zip(sym.list_arguments(), arg_shapes)}
    aux = {n: rng.uniform(0.5, 1.5, s).astype("f4")
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    heads = [rng.uniform(-1, 1, s).astype("f4") for s in out_shapes]
    return args, aux, heads


def _bind(sym, args, aux, **kw):
    copies = {n: a.copy() for n, a in args.items()}
    grads = {n: np.zeros_like(a) for n, a in args.items()}
    return sym.bind(gx.cpu(), args=copies, args_grad=grads, grad_req="write",
                    aux_states={n: a.copy() for n, a in aux.items()}, **kw)


def _train_step(exe, args, aux, heads):
    """Load the values, forward for training, backward; outputs, gradients, aux states and
    arguments (BatchNorm's fix_gamma overwrites gamma in place)."""
    for n, a in args.items():
        exe.arg_dict[n][...] = a
    for n, a in aux.items():
        exe.aux_dict[n][...] = a
    gx.random.seed(7)
    outs = [np.array(o) for o in exe.forward(is_train=True)]
    exe.backward(heads)
    grads = {n: np.array(g) for n, g in exe.grad_dict.items() if g is not None}
    state = {n: np.array(a) for n, a in exe.aux_dict.items()}
    state.update((f"arg:{n}", np.array(a)) for n, a in exe.arg_dict.items())
    return outs, grads, state


def _assert_same(got, want):
    outs, grads, state = got
    w_outs, w_grads, w_state = want
    assert len(outs) == len(w_outs)
    for k, (a, b) in enumerate(zip(outs, w_outs)):
        assert a.shape == b.shape and a.dtype == b.dtype, f"output {k}"
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"output {k}")
    assert sorted(grads) == sorted(w_grads)
    for n in w_grads:
        np.testing.assert_allclose(grads[n], w_grads[n], rtol=1e-3, atol=1e-4,
                                   err_msg=f"gradient of {n}")
    assert sorted(state) == sorted(w_state)
    for n in w_state:
        np.testing.assert_allclose(state[n], w_state[n], rtol=1e-5, atol=1e-6, err_msg=n)


def _assert_same_lists(original, partitioned):
    for what in ("list_arguments", "list_auxiliary_states", "list_outputs", "list_inputs"):
        assert getattr(partitioned, what)() == getattr(original, what)(), what


def _region_nodes(sym):
    from graphexec.core.ir.graph import IndexedGraph
    return [n.name for n in IndexedGraph(sym.outputs).nodes
            if n.op is not None and n.op.name == "_subgraph_op"]


def _executor(mode, sym, shapes, args, aux, ops, monkeypatch):
    """An executor of ``sym`` partitioned by the default backend in one of MODES."""
    if mode == "backend_options":
        return _bind(sym, args, aux, backend="default",
                     backend_options={"default": {"op_names": ops}})
    gx.subgraph.set_op_names("default", ops)
    if mode == "bind":
        return _bind(sym, args, aux, backend="default")
    if mode == "simple_bind":
        return sym.simple_bind(gx.cpu(), backend="default", **shapes)
    if mode == "env":
        monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
        return _bind(sym, args, aux)
    kw = {"args": args, "aux": aux} if mode == "optimize_for_args" else {}
    part = sym.optimize_for("default", **kw)
    _assert_same_lists(sym, part)
    gx.validate_partition(sym, part)
    return _bind(part, args, aux, backend="NONE")


# -- tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name,k", CASES)
def test_partition_keeps_lists_and_is_valid(name, k):
    sym, _, opsets = NETWORKS[name]()
    plan = gx.partition(sym, "default", op_names=opsets[k])
    _assert_same_lists(sym, plan.symbol)
    gx.validate_partition(sym, plan.symbol)
    for d in plan.nodes.values():
        assert d.region is not None or d.reason == ("unsupported" if d.op not in opsets[k]
                                                    else "cycle"), d
    claimed = {d.node for d in plan.nodes.values() if d.region is not None}
    assert claimed == {m for r in plan.regions for m in r.members}
    if not opsets[k]:
        assert plan.symbol is sym and not plan.regions


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,k", CASES)
def test_partitioned_executor_matches(name, k, mode, monkeypatch):
    sym, shapes, opsets = NETWORKS[name]()
    args, aux, heads = _values(sym, shapes)
    want = _train_step(_bind(sym, args, aux, backend="NONE"), args, aux, heads)
    exe = _executor(mode, sym, shapes, args, aux, opsets[k], monkeypatch)
    _assert_same(_train_step(exe, args, aux, heads), want)
    expected = gx.partition(sym, "default", need_grad=True, op_names=opsets[k])
    if mode.startswith("optimize_for"):
        assert exe.partition_plan is None
        assert _region_nodes(exe.symbol) == [r.node for r in expected.regions]
    else:
        assert exe.partition_plan.num_claimed == expected.num_claimed


@pytest.mark.parametrize("name,k", CASES)
def test_inference_forward_matches(name, k):
    """forward(is_train=False) twice (the second reuses the runners) and no gradients."""
    sym, shapes, opsets = NETWORKS[name]()
    args, aux, _ = _values(sym, shapes, seed=1)
    gx.subgraph.set_op_names("default", opsets[k])
    want = sym.bind(gx.cpu(), args=args, aux_states=aux, grad_req="null", backend="NONE")
    exe = sym.bind(gx.cpu(), args=args, aux_states=aux, grad_req="null", backend="default")
    ref = [np.array(o) for o in want.forward()]
    for _ in range(2):
        for a, b in zip(exe.forward(), ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_optimize_for_is_deterministic_and_leaves_the_input_alone():
    sym, _, _ = NETWORKS["shared_input"]()
    before = sym.tojson()
    gx.subgraph.set_op_names("default", {"sin", "cos", "elemwise_mul"})
    first, second = sym.optimize_for("default"), sym.optimize_for("default")
    assert sym.tojson() == before
    assert first.tojson() == second.tojson() != before


def test_dropout_regions_replay_their_masks_per_executor():
    """Two executors of one partitioned symbol, interleaved: each backward region replays the
    masks of its own executor's forward, also on a repeated backward."""
    sym, shapes, _ = NETWORKS["dropout"]()
    gx.subgraph.set_op_names("default", {"sin", "cos", "Dropout", "exp", "elemwise_add"})
    part = sym.optimize_for("default")
    args, aux, heads = _values(sym, shapes)
    plain, exe1, exe2 = (_bind(s, args, aux, backend="NONE") for s in (sym, part, part))
    gx.random.seed(1)
    want_out = np.array(plain.forward(is_train=True)[0])
    plain.backward(heads)
    gx.random.seed(1)
    got_out = np.array(exe1.forward(is_train=True)[0])
    exe2.forward(is_train=True)      # other masks, drawn between exe1's forward and backward
    for _ in range(2):
        exe1.backward(heads)
        np.testing.assert_allclose(exe1.grad_dict["data"], plain.grad_dict["data"],
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_out, want_out)
    exe2.backward(heads)
    assert not np.allclose(exe2.grad_dict["data"], exe1.grad_dict["data"])


# -- validate_partition catches bad partitions -----------------------------------------------
def _tampered(net, ops, edit):
    """The partitioned JSON of ``net`` with ``edit`` applied to its first region's graph."""
    data = json.loads(gx.partition(net, "default", op_names=ops).symbol.tojson())
    region = next(n for n in data["nodes"] if n["op"] == "_subgraph_op")
    edit(region["subgraphs"][0])
    return gx.sym.load_json(json.dumps(data))


def _swap_inputs_of(name):
    def edit(graph):
        node = next(n for n in graph["nodes"] if n["name"] == name)
        node["inputs"].reverse()
    return edit


def _swap_heads(graph):
    graph["heads"].reverse()


@pytest.mark.parametrize("ops,edit,problem", [
    ({"sin", "cos", "elemwise_sub"}, _swap_inputs_of("d"), "node 'd' reads [('c', 0), ('s', 0)]"),
    ({"exp", "sin", "cos"}, _swap_heads, "node 'd' reads [('c', 0), ('s', 0)]"),
])
def test_validate_partition_reports_miswired_regions(ops, edit, problem):
    x = S.Variable("x")
    e = S.exp(x, name="e")
    net = S.elemwise_sub(S.sin(e, name="s"), S.cos(e, name="c"), name="d")
    bad = _tampered(net, ops, edit)
    assert bad.list_arguments() == net.list_arguments()
    with pytest.raises(gx.core.subgraph.frontend.PartitionError, match=problem.replace(
            "[", r"\[").replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
        gx.validate_partition(net, bad)
    gx.validate_partition(net, _tampered(net, ops, lambda graph: None))


def test_validate_partition_reports_lost_extra_nodes_and_changed_lists():
    x = S.Variable("x")
    net = S.Group([S.elemwise_add(S.sin(x, name="s"), S.cos(x, name="c"), name="a"),
                   S.tanh(x, name="t")])
    with pytest.raises(gx.core.subgraph.frontend.PartitionError) as err:
        gx.validate_partition(net, S.Group([S.tanh(x, name="t"), S.exp(x, name="z")]))
    assert "operator nodes lost by the partition: ['a', 'c', 's']" in str(err.value)
    assert "operator nodes not in the original: ['z']" in str(err.value)
    assert "list_outputs() differs" in str(err.value)


# -- MXNet reference cases under MXNET_SUBGRAPH_BACKEND=default -------------------------------
def _case_opsets():
    """Every replayable case with all its operators claimed, and with every other one."""
    from refcase_replay import case_names, load_case

    from graphexec.core.ops.registry import get_op
    params = []
    for name in case_names():
        ops = sorted({get_op(o).name for o in load_case(name)[0]["ops"]})
        sets = {"all": ops, "even": ops[::2], "odd": ops[1::2]}
        params += [pytest.param(name, label, set(chosen), id=f"{name}-{label}")
                   for label, chosen in sets.items() if chosen]
    return params


@pytest.mark.parametrize("name,label,ops", _case_opsets())
def test_refcase_replay_under_default_backend(name, label, ops, monkeypatch):
    """Forward, backward, gradients, aux states, reshape: MXNet's numbers, partitioned."""
    from refcase_replay import Replay, load_case, tolerance
    meta, expected = load_case(name)
    monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "default")
    gx.subgraph.set_op_names("default", ops)
    rep = Replay(name, backward=True, reshape=True)
    assert set(expected) <= set(rep.results)
    for key, want in expected.items():
        got = rep.results[key]
        rtol, atol = tolerance(meta, key)
        assert got.shape == want.shape and got.dtype == want.dtype, key
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name} {key}")
    if label == "all":
        main = rep.execs[meta["binds"][0]["id"]]
        assert main.partition_plan.num_claimed == sum(meta["ops"].values())
