"""Symbol and executor behaviours MXNet 1.9.1's own unit tests rely on (issue 18); expected
values were read from MXNet 1.9.1 (the oracle) where they are MXNet's strings."""
from __future__ import annotations

import json

import graphexec as gx
import numpy as np
import pytest


def _run(sym, **arrays):
    return [o.copy() for o in sym.bind(gx.cpu(), {k: np.asarray(v, "f4")
                                                   for k, v in arrays.items()}).forward()]


@pytest.mark.parametrize("fn, twin, ops", [
    (gx.sym.maximum, np.maximum, ("_maximum", "_maximum_scalar", "_maximum_scalar")),
    (gx.sym.minimum, np.minimum, ("_minimum", "_minimum_scalar", "_minimum_scalar")),
    (gx.sym.pow, np.power, ("_power", "_power_scalar", "_rpower_scalar")),
    (gx.sym.power, np.power, ("_power", "_power_scalar", "_rpower_scalar")),
    (gx.sym.hypot, np.hypot, ("_hypot", "_hypot_scalar", "_hypot_scalar")),
])
def test_binary_helpers_take_symbols_or_numbers(fn, twin, ops):
    a, b = gx.sym.var("a"), gx.sym.var("b")
    x, y = np.array([0.5, 2.0, 3.0], "f4"), np.array([1.5, 1.0, 2.0], "f4")
    for sym, expected, op in [(fn(a, b), twin(x, y), ops[0]), (fn(a, 2.0), twin(x, 2.0), ops[1]),
                              (fn(2.0, a), twin(2.0, x), ops[2])]:
        assert json.loads(sym.tojson())["nodes"][-1]["op"] == op
        args = {"a": x, "b": y} if op == ops[0] else {"a": x}
        np.testing.assert_allclose(_run(sym, **args)[0], expected, rtol=1e-6)
    assert fn(2, 3) == twin(2, 3)
    with pytest.raises(TypeError, match="not supported"):
        fn("a", a)


def test_positional_attributes_and_none_inputs():
    x = gx.sym.var("x")
    r = gx.sym.repeat(x, 2)
    assert r.list_attr() == {"repeats": "2"}
    assert gx.sym.reshape(x, (2, 3)).list_attr()["shape"] == "(2, 3)"
    with pytest.raises(TypeError, match="given positionally and by keyword"):
        gx.sym.repeat(x, 2, repeats=3)
    fc = gx.sym.FullyConnected(data=x, weight=None, num_hidden=3, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight", "fc_bias"]
    conv = gx.sym.Convolution(x, None, None, kernel=(1, 1), num_filter=1, name="c")
    assert conv.list_arguments() == ["x", "c_weight", "c_bias"]
    # an attribute given as None keeps MXNet's 'None' (sort over the flattened array)
    assert gx.sym.sort(x, axis=None).list_attr() == {"axis": "None"}


def test_numpy_integers_in_tuple_attributes():
    x = gx.sym.var("x")
    t = gx.sym.transpose(x, axes=(np.int64(1), np.int32(0)))
    assert t.list_attr() == {"axes": "(1, 0)"}
    assert gx.sym.broadcast_axis(x, axis=(np.int64(3),), size=(2,)).attr("axis") == "(3,)"


def test_hidden_keys_and_attr_scope_as_mxnet():
    with gx.AttrScope(group="4", __data__="great", ctx_group="dev1"):
        data = gx.sym.Variable("data", attr={"mood": "angry", "force_mirroring": "True"},
                               lr_mult=1)
        e = gx.sym.exp(data, name="e")
    conv = gx.sym.Convolution(data=data, name="conv", kernel=(1, 1), num_filter=1,
                              attr={"__mood__": "so so", "wd_mult": "x"}, lr_mult=2)
    assert data.attr("lr_mult") == data.attr("__lr_mult__") == "1"
    assert data.attr("force_mirroring") == "True" and data.attr("group") == "4"
    assert conv.list_attr() == {"num_filter": "1", "kernel": "(1, 1)", "__wd_mult__": "x",
                                "wd_mult": "x", "__mood__": "so so", "__lr_mult__": "2",
                                "lr_mult": "2"}
    nodes = json.loads(conv.tojson())["nodes"]
    # MXNet 1.9.1's tojson: only the stored (__key__) form, also on the implicit variables
    assert nodes[0]["attrs"] == {"__ctx_group__": "dev1", "__data__": "great",
                                 "__force_mirroring__": "True", "__lr_mult__": "1",
                                 "group": "4", "mood": "angry"}
    assert nodes[1]["attrs"] == nodes[3]["attrs"] == {
        "__lr_mult__": "2", "__mood__": "so so", "__wd_mult__": "x", "kernel": "(1, 1)",
        "num_filter": "1"}
    assert json.loads(e.tojson())["nodes"][1]["attrs"] == {
        "__ctx_group__": "dev1", "__data__": "great", "group": "4"}
    with pytest.raises(gx.AttributeParseError, match="deprecated"):
        gx.sym.exp(data, my_lr_mult=3)
    # an operator without parameters keeps unknown attributes; one with parameters refuses
    assert gx.sym.exp(data, foo="bar").attr("foo") == "bar"
    with pytest.raises(gx.AttributeParseError, match="unknown attribute 'foo'"):
        gx.sym.FullyConnected(data, num_hidden=1, foo="bar")


def test_context_is_a_with_scope():
    assert gx.current_context() == gx.cpu(0)
    with gx.cpu(1):
        assert gx.current_context() == gx.cpu(1)
        with gx.cpu(2):
            assert gx.current_context() == gx.cpu(2)
        assert gx.current_context() == gx.cpu(1)
        assert gx.nd.zeros((2,)).context == gx.cpu(1)
    assert gx.current_context() == gx.cpu(0)


def test_cse_never_makes_two_outputs_one_array():
    v = gx.sym.var("v")
    exe = gx.sym.Group([v * 2, v * 2]).bind(gx.cpu(), {"v": np.ones(3, "f4")},
                                             args_grad={"v": np.zeros(3, "f4")})
    out = exe.forward(is_train=True)
    assert out[0] is not out[1] and not np.shares_memory(out[0], out[1])
    exe.backward([np.ones(3, "f4"), np.ones(3, "f4")])
    np.testing.assert_array_equal(exe.grad_dict["v"], [4, 4, 4])
    opt = exe.get_optimized_symbol()
    first, second = opt.list_outputs()
    assert second == first[:-len("_output")] + "_0_copy_output"   # MXNet's <node>_<k>_copy
    assert len(opt.get_internals()) == 3   # v, one multiplication, one copy (MXNet's count)
    same = gx.sym.Group([v, v]).bind(gx.cpu(), {"v": np.ones(3, "f4")}).forward()
    assert not np.shares_memory(same[0], same[1])


def test_backward_after_inference_forward():
    a, b = gx.sym.var("a"), gx.sym.var("b")
    exe = (a * b).simple_bind(gx.cpu(), a=(2,), b=(2,))
    rep = gx.sym.repeat(a, repeats=2).simple_bind(gx.cpu(), a=(2,))
    rep.backward(np.array([1, 2, 3, 4], "f4"))   # no forward needed (MXNet's test_repeat)
    np.testing.assert_array_equal(rep.grad_dict["a"], [3, 7])
    exe.arg_dict["a"][:] = [1, 2]
    exe.arg_dict["b"][:] = [3, 4]
    exe.forward(is_train=False)
    exe.backward(np.ones(2, "f4"))
    np.testing.assert_array_equal(exe.grad_dict["a"], [3, 4])
    x = gx.sym.var("x")
    drop = gx.sym.Dropout(x, p=0.5).simple_bind(gx.cpu(), x=(4, 3))
    drop.forward()
    drop.backward(np.ones((4, 3), "f4"))   # MXNet 1.9.1: the gradient passes through
    np.testing.assert_array_equal(drop.grad_dict["x"], np.ones((4, 3)))


def test_inconsistent_shapes_rejected_at_bind():
    v, x = gx.sym.var("V"), gx.sym.var("x")
    s3 = gx.sym.transpose(v) + (x + v)
    with pytest.raises(gx.ShapeInferenceError, match="inconsistent"):
        s3.simple_bind(gx.cpu(), x=(2, 3), grad_req="null")
    assert (gx.sym.transpose(v) + (x + v)).infer_shape(x=(3, 3))[1] == [(3, 3)]


def test_eval_children_and_bool():
    a = gx.sym.var("a")
    out = (a * 2).eval(ctx=gx.cpu(), a=np.array([1, 2], "f4"))
    assert isinstance(out, list) and out[0].tolist() == [2, 4]
    sliced = gx.sym.SliceChannel(a, num_outputs=3, name="slice")
    assert sliced.get_children().list_outputs() == ["a"]
    assert gx.sym.Concat(*sliced).get_children().list_outputs() == [
        "slice_output0", "slice_output1", "slice_output2"]
    with pytest.raises(gx.NotImplementedForSymbol):
        bool(a)


def test_default_v2_backend_and_dedup_subgraph():
    assert "default_v2" in gx.list_backends()
    d = gx.sym.var("data", shape=(2, 3))
    net = gx.sym.exp(d) + gx.sym.sin(d)
    gx.subgraph.set_op_names("default_v2", {"exp", "sin", "_plus", "elemwise_add"})
    try:
        part = net.optimize_for("default_v2", dedup_subgraph=True)
        region = [n for n in part._indexed().nodes if n.op is not None]
        assert [n.op.name for n in region] == ["_subgraph_op"]
        assert len(region[0].inputs) == 1     # 'data' once although two nodes read it
        with pytest.raises(gx.ArgumentValueError, match="dedup_subgraph=False"):
            net.optimize_for("default_v2", dedup_subgraph=False)
        v = np.random.default_rng(0).uniform(size=(2, 3)).astype("f4")
        np.testing.assert_allclose(part.eval(data=v)[0], np.exp(v) + np.sin(v), rtol=1e-6)
    finally:
        gx.subgraph.set_op_names("default_v2", None)


def test_operator_listing_and_arguments(capsys):
    from graphexec.tools.cli import main
    names = gx.operator.get_all_registered_operators()
    assert "Activation" in names and "_Plus" in names and names == sorted(names)
    args = gx.operator.get_operator_arguments("Activation")
    assert args == (["data", "act_type"], ["NDArray-or-Symbol", "{'relu', 'sigmoid', "
                    "'softrelu', 'softsign', 'tanh'}, required"], 2)   # MXNet 1.9.1's answer
    assert gx.operator.get_operator_arguments("FullyConnected").names[:4] == [
        "data", "weight", "bias", "num_hidden"]
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert "Activation: " in out and "Custom: A Python operator" in out
    assert main(["ops", "Activation"]) == 0
    assert "act_type : {'relu'" in capsys.readouterr().out
    assert main(["ops", "nosuch"]) == 1


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_modulo_gradients_zero_on_integers(dtype):
    x, b = gx.sym.var("x"), gx.sym.var("b")
    # values read from MXNet 1.9.1: integer modulo has no gradient (not -2**31 where b is 0)
    want_float = {"mod": [[1] * 4, [-2, -6, -2, -2]], "mod_scalar": [[1] * 4],
                  "rmod_scalar": [[0] * 4], "broadcast": [[1] * 4, [-2, -6, -2, -2]]}
    for key, sym in [("mod", x % b), ("mod_scalar", x % 3), ("rmod_scalar", 3 % x),
                     ("broadcast", gx.sym.broadcast_mod(x, b))]:
        shapes = {n: (4,) for n in sym.list_arguments()}
        exe = sym.simple_bind(gx.cpu(), type_dict={n: dtype for n in shapes}, **shapes)
        exe.arg_dict["x"][:] = [5, 6, 7, 8]
        if "b" in exe.arg_dict:
            exe.arg_dict["b"][:] = [2, 1 if dtype == "float32" else 0, 3, 4]
        exe.forward(is_train=True)
        exe.backward(np.ones(4, dtype))
        exe.backward(np.ones(4, dtype))   # twice: kernels' context managers are fresh per run
        got = [g.tolist() for g in exe.grad_arrays]
        assert got == (want_float[key] if dtype == "float32" else [[0] * 4] * len(got)), key


def test_second_backward_through_max_reduction():
    x = gx.sym.var("x")
    exe = gx.sym.max(x, axis=1).simple_bind(gx.cpu(), x=(2, 3))
    exe.arg_dict["x"][:] = [[1, 5, 2], [7, 0, 3]]
    exe.forward(is_train=True)
    for _ in range(2):   # numpy 2 refused to re-enter one errstate object
        exe.backward(np.ones(2, "f4"))
    np.testing.assert_array_equal(exe.grad_dict["x"], [[0, 1, 0], [1, 0, 0]])


def test_shapes_inferred_backward_from_a_known_output():
    # the results MXNet 1.9.1's infer_shape gives (0 = unknown dimension in the given shapes)
    w, wshift, data = gx.sym.var("weight"), gx.sym.var("wshift", shape=(1,)), gx.sym.var("d")
    wt = gx.sym._internal._identity_with_attr_like_rhs(gx.sym.broadcast_add(w, wshift), w)
    fc = gx.sym.FullyConnected(data=data, weight=wt, num_hidden=11, no_bias=True)
    assert fc.infer_shape(d=(7, 100))[0] == [(7, 100), (11, 100), (1,)]
    a = gx.sym.var("a", shape=(0, 10))
    d = gx.sym.SliceChannel(a, num_outputs=10, axis=1, squeeze_axis=True)[1] + \
        gx.sym.var("c", shape=(5,))
    assert d.infer_shape()[0] == [(5, 10), (5,)]
    a = gx.sym.var("a", shape=(0, 15, 0))
    d = gx.sym.SliceChannel(a, num_outputs=3)[1] + gx.sym.var("c", shape=(3, 5, 2))
    assert d.infer_shape()[0] == [(3, 15, 2), (3, 5, 2)]
    a = gx.sym.var("a", shape=(0, 10, 0, 0))
    conv = gx.sym.Convolution(a, num_filter=21, kernel=(3, 3), pad=(1, 1), name="cv")
    assert (conv + gx.sym.var("c", shape=(5, 21, 32, 32))).infer_shape()[0][0] == (5, 10, 32, 32)
    strided = gx.sym.Convolution(a, num_filter=21, kernel=(3, 3), stride=(2, 2), name="cs")
    assert (strided + gx.sym.var("c", shape=(5, 21, 8, 8))).infer_shape_partial()[0][0] == \
        (5, 10, 0, 0)   # only the batch size: a strided input size is ambiguous
    r = gx.sym.Reshape(gx.sym.var("a", shape=(0, 6)), shape=(-1, 2, 3))
    assert (r + gx.sym.var("c", shape=(4, 2, 3))).infer_shape()[0][0] == (4, 6)


def test_group2ctx_with_ndarrays_bound_on_two_contexts():
    d1, d2, d3 = gx.sym.var("data1"), gx.sym.var("data2"), gx.sym.var("data3")
    with gx.AttrScope(ctx_group="dev1"):
        net = (d1 + d2) * 3
    with gx.AttrScope(ctx_group="dev2"):
        net = net + d3
    with gx.cpu(0):
        arrs = [gx.nd.ones((2, 3)), gx.nd.ones((2, 3)) * 2]
    with gx.cpu(1):
        arrs.append(gx.nd.ones((2, 3)) * 3)   # an NDArray on the second context
    exe = net.bind(gx.cpu(0), args=arrs, args_grad=[gx.nd.zeros((2, 3)) for _ in range(3)],
                   group2ctx={"dev1": gx.cpu(0), "dev2": gx.cpu(1)})
    assert exe.forward(is_train=True)[0].tolist() == [[12] * 3] * 2
    assert arrs[2].context == gx.cpu(1)
    exe.backward(gx.nd.ones((2, 3)))
    assert exe.grad_arrays[0].tolist() == [[3] * 3] * 2


@pytest.mark.parametrize("backend", ["default", "default_v2"])
@pytest.mark.parametrize("ops", [{"sin"}, {"Convolution"}, {"sin", "Convolution"}])
def test_simple_bind_with_backend_and_partly_known_variable_shapes(backend, ops):
    data1 = gx.sym.var("data1", shape=(3, 3, 10, 10), dtype=np.float32)
    data2 = gx.sym.var("data2", shape=(1, 0, 2, 2))   # the channel count is inferred
    conv = gx.sym.Convolution(data=data1, weight=gx.sym.sin(data2), kernel=(2, 2),
                              num_filter=1, name="conv")
    gx.subgraph.set_op_names(backend, ops)
    try:
        exe = conv.simple_bind(gx.cpu(), grad_req="null", backend=backend)
        ref = conv.simple_bind(gx.cpu(), grad_req="null")
        rng = np.random.default_rng(0)
        for name in ref.arg_dict:
            ref.arg_dict[name][:] = exe.arg_dict[name][:] = rng.uniform(
                size=ref.arg_dict[name].shape)
        assert exe.arg_dict["data2"].shape == (1, 3, 2, 2)
        np.testing.assert_allclose(exe.forward()[0], ref.forward()[0], rtol=1e-5)
        assert exe.partition_plan.regions
    finally:
        gx.subgraph.set_op_names(backend, None)


def test_loading_names_every_unknown_operator_at_once():
    nodes = [{"op": "null", "name": "x", "inputs": []}]
    for i, op in enumerate(["Foo", "Bar", "Foo", "relu"]):
        nodes.append({"op": op, "name": f"n{i}", "inputs": [[i, 0, 0]]})
    doc = {"nodes": nodes, "arg_nodes": [0], "heads": [[4, 0, 0]]}
    with pytest.raises(gx.JSONFormatError, match=r"2 operators are not registered: 'Bar' "
                       r"\(node 2 \('n1'\)\); 'Foo' \(node 1 \('n0'\), node 3 \('n2'\)\)") as info:
        gx.sym.load_json(json.dumps(doc))
    assert info.value.unknown_ops == ["Bar", "Foo"]


def test_simple_bind_ignores_non_shape_keywords_as_mxnet():
    a, idx = gx.sym.var("a"), gx.sym.var("indices")
    out = gx.sym.take(a=a, indices=gx.sym.BlockGrad(idx), axis=1, mode="clip")
    exe = out.simple_bind(gx.cpu(), a=(3, 4), indices=(2,), axis=1, mode="clip")
    assert exe.arg_dict["a"].shape == (3, 4)
    with pytest.raises(gx.BindError, match="'c' is not an input"):
        out.simple_bind(gx.cpu(), a=(3, 4), indices=(2,), c=(3,))


def test_gen_atomic_symbol_keeps_op_attributes_and_outputs():
    data, p, h0, h1 = (gx.sym.var(n) for n in ("data", "param", "h0", "h1"))
    s = gx.sym.RNN(data, p, h0, h1, state_size=10, num_layers=2, bidirectional=True,
                   state_outputs=True, mode="lstm", name="rnn")
    atomic = s._gen_atomic_symbol()
    assert atomic.list_outputs() == s.list_outputs()
    assert atomic.list_attr() == s.list_attr()
    assert atomic.list_arguments() == ["rnn_data", "rnn_parameters", "rnn_state",
                                       "rnn_state_cell"]


def test_grad_req_dict_keys_naming_no_argument_are_ignored():
    x, w = gx.sym.var("x"), gx.sym.var("w")
    exe = (x * w).simple_bind(gx.cpu(), x=(2,), w=(2,), grad_req={"x": "write", "b": "add"})
    assert exe.grad_dict["w"] is None and exe.grad_dict["x"] is not None


def test_tojson_identical_to_mxnet_with_attributes():
    """tojson of symbols built with attr=, hidden keys, AttrScope and numpy integers is MXNet
    1.9.1's text (recorded by tests/data/attrs/make_attrs.py)."""
    import importlib.util
    from pathlib import Path
    here = Path(__file__).parent / "data" / "attrs"
    spec = importlib.util.spec_from_file_location("make_attrs", here / "make_attrs.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    recorded = json.loads((here / "attrs.json").read_text())
    built = make.build(gx, np)
    assert sorted(built) == sorted(recorded)
    for name, sym in built.items():
        assert sym.tojson() == recorded[name], name


def test_deconvolution_target_shape_overrides_adj_and_pad():
    d = gx.sym.var("data")
    s = gx.sym.Deconvolution(d, kernel=(3, 3), stride=(2, 2), target_shape=(8, 8),
                             adj=(101, 101), pad=(99, 99), num_filter=5, name="dc")
    assert s.infer_shape(data=(2, 3, 4, 4))[1] == [(2, 5, 8, 8)]   # MXNet 1.9.1's answer
    with pytest.raises(gx.ShapeInferenceError, match="adj must be smaller than stride"):
        gx.sym.Deconvolution(d, kernel=(3, 3), stride=(2, 2), adj=(101, 101), num_filter=5,
                             name="dc2").infer_shape(data=(2, 3, 4, 4))


def test_arange_linspace_eye_helpers_and_integer_arange():
    # MXNet 1.9.1: an integer arange truncates start and step first (1.3 steps by 1)
    got = gx.sym.arange(1.3, 456.6, 1.3, dtype="int32").eval()[0]
    assert len(got) == 351 and got[:3].tolist() == [1, 2, 3] and got[-1] == 351
    assert gx.nd.arange(1.3, 456.6, 1.3, dtype="int32")[-1] == 351
    assert gx.sym.arange(3, repeat=2).eval()[0].tolist() == [0, 0, 1, 1, 2, 2]
    assert gx.sym.linspace(0, 1, 5).eval()[0].tolist() == [0, 0.25, 0.5, 0.75, 1]
    assert gx.sym.eye(2, k=1).eval()[0].tolist() == [[0, 1], [0, 0]]
    s = gx.sym.arange(start=0, stop=None, infer_range=True) + gx.sym.zeros(shape=[5])
    assert s.bind(gx.cpu(), args={}).forward()[0].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("xs, gs", [((3, 4), (3, 4)), ((3, 4, 4, 5), (3, 4)),
                                    ((3, 4, 4, 5), (4,)), ((3, 4), (1,))])
def test_prelu_gamma_over_leading_axes(xs, gs):
    """MXNet 1.9.1's prelu: a gamma of several dimensions covers data's leading axes (its
    test_prelu's gam_full); its gradient sums over the others."""
    x, g = gx.sym.var("x"), gx.sym.var("gamma")
    y = gx.sym.LeakyReLU(data=x, gamma=g, act_type="prelu")
    rng = np.random.default_rng(0)
    xv, gv = rng.uniform(-1, 1, xs), rng.uniform(0.1, 0.4, gs)
    gb = gv.reshape(gs + (1,) * (len(xs) - len(gs))) if len(gs) > 1 else \
        gv.reshape((1, gs[0]) + (1,) * (len(xs) - 2)) if gs[0] != 1 else gv
    exe = y.bind(gx.cpu(), {"x": xv, "gamma": gv},
                 args_grad={"x": np.zeros(xs), "gamma": np.zeros(gs)})
    np.testing.assert_allclose(exe.forward(is_train=True)[0], np.where(xv > 0, xv, xv * gb))
    exe.backward(np.ones(xs))
    axes = tuple(i for i, n in enumerate(np.broadcast_to(gb, xs).strides) if n == 0)
    np.testing.assert_allclose(exe.grad_dict["gamma"],
                               np.where(xv > 0, 0, xv).sum(axis=axes).reshape(gs))
    onnx = y.bind(gx.cpu(), {"x": xv.astype("f4"), "gamma": gv.astype("f4")}, grad_req="null",
                  backend="onnxrt").forward()[0]
    np.testing.assert_allclose(onnx, np.where(xv > 0, xv, xv * gb), rtol=1e-5, atol=1e-6)
    with pytest.raises(gx.ShapeInferenceError, match="leading axes"):
        y.infer_shape(x=(3, 4), gamma=(4, 3))
