"""Symbol API: MXNet's automatic names, operator overloading, structure queries, attributes."""
from __future__ import annotations

import copy
import json
import pickle

import pytest

import graphexec as gx

# (expression, op, name, attrs) as MXNet 1.9.1 builds them (checked with the real MXNet)
OVERLOADS = [
    ("a+b", "elemwise_add", "_plus0", None), ("a+1", "_plus_scalar", "_plusscalar0", {"scalar": "1"}),
    ("1+a", "_plus_scalar", "_plusscalar0", {"scalar": "1"}), ("a-b", "elemwise_sub", "_minus0", None),
    ("a-1", "_minus_scalar", "_minusscalar0", {"scalar": "1"}),
    ("1-a", "_rminus_scalar", "_rminusscalar0", {"scalar": "1"}), ("a*b", "elemwise_mul", "_mul0", None),
    ("a*2", "_mul_scalar", "_mulscalar0", {"scalar": "2"}), ("a/b", "elemwise_div", "_div0", None),
    ("a/2", "_div_scalar", "_divscalar0", {"scalar": "2"}), ("2/a", "_rdiv_scalar", "_rdivscalar0", {"scalar": "2"}),
    ("a%b", "_mod", "_mod0", None), ("a%2", "_mod_scalar", "_modscalar0", {"scalar": "2"}),
    ("2%a", "_rmod_scalar", "_rmodscalar0", {"scalar": "2"}), ("a**b", "_power", "_power0", None),
    ("a**2", "_power_scalar", "_powerscalar0", {"scalar": "2"}),
    ("2**a", "_rpower_scalar", "_rpower_scalar0", {"scalar": "2"}),
    ("-a", "_mul_scalar", "_mulscalar0", {"scalar": "-1.0"}), ("a==b", "_equal", "_equal0", None),
    ("a==1", "_equal_scalar", "_equal_scalar0", {"scalar": "1"}), ("a!=b", "_not_equal", "_not_equal0", None),
    ("a!=1", "_not_equal_scalar", "_not_equal_scalar0", {"scalar": "1"}), ("a>b", "_greater", "_greater0", None),
    ("a>1", "_greater_scalar", "_greater_scalar0", {"scalar": "1"}),
    ("a>=b", "_greater_equal", "_greater_equal0", None),
    ("a>=1", "_greater_equal_scalar", "_greater_equal_scalar0", {"scalar": "1"}),
    ("a<b", "_lesser", "_lesser0", None), ("a<1", "_lesser_scalar", "_lesser_scalar0", {"scalar": "1"}),
    ("a<=b", "_lesser_equal", "_lesser_equal0", None),
    ("a<=1", "_lesser_equal_scalar", "_lesser_equal_scalar0", {"scalar": "1"}),
    ("abs(a)", "abs", "abs0", None),
]


@pytest.mark.parametrize("expr,op,name,attrs", OVERLOADS, ids=[o[0] for o in OVERLOADS])
def test_operator_overloading_matches_mxnet(expr, op, name, attrs):
    with gx.name.NameManager():
        a, b = gx.sym.Variable("a"), gx.sym.Variable("b")
        node = json.loads(eval(expr).tojson())["nodes"][-1]
    assert (node["op"], node["name"], node.get("attrs")) == (op, name, attrs)


def test_names_count_per_hint_and_scope():
    with gx.name.NameManager():
        x = gx.sym.Variable("x")
        y = gx.sym.FullyConnected(x, num_hidden=3) if gx.core.ops.find_op("FullyConnected") else x
        s1, s2 = gx.sym.sin(x), gx.sym.sin(x)
        assert (s1.name, s2.name) == ("sin0", "sin1")
    with gx.name.Prefix("net_"):
        assert gx.sym.exp(gx.sym.Variable("x")).name == "net_exp0"
    del y


def test_structure_queries():
    a, b = gx.sym.Variable("a"), gx.sym.Variable("b")
    c = gx.sym.elemwise_add(a, b, name="c")
    d = gx.sym.sin(c, name="d")
    g = gx.sym.Group([c, d])
    assert g.list_outputs() == ["c_output", "d_output"]
    assert g.name is None and d.name == "d"
    assert g.list_arguments() == ["a", "b"] and g.list_inputs() == ["a", "b"]
    assert d.get_internals().list_outputs() == ["a", "b", "c_output", "d_output"]
    assert d.get_internals()["c_output"].name == "c"
    assert g[1].list_outputs() == ["d_output"] and len(g) == 2
    assert [s.name for s in g] == ["c", "d"]
    assert d.get_children().list_outputs() == ["c_output"]
    with pytest.raises(ValueError, match="no output named"):
        g["nope"]
    with pytest.raises(IndexError):
        g[5]


def test_attributes_and_scopes():
    with gx.AttrScope(ctx_group="dev1"):
        v = gx.sym.Variable("v", shape=(2, 3), dtype="float16", lr_mult=2.0)
        s = gx.sym.exp(v, name="e", attr={"__mood__": "ok"})
    assert v.attr("__shape__") == "(2, 3)" and v.attr("__dtype__") == "2"
    assert v.attr("__lr_mult__") == "2.0" and v.attr("__ctx_group__") == "dev1"
    assert s.list_attr() == {"__ctx_group__": "dev1", "ctx_group": "dev1", "__mood__": "ok"}
    assert s.attr_dict()["e"]["__mood__"] == "ok"
    assert s.infer_shape() == ([(2, 3)], [(2, 3)], [])
    s._set_attr(__note__="x")
    assert s.attr("__note__") == "x" and s.attr("missing") is None


def test_unknown_attribute_and_op_errors():
    x = gx.sym.Variable("x")
    with pytest.raises(gx.AttributeParseError, match="unknown attribute 'foo'"):
        gx.sym.clip(x, a_min=0, a_max=1, foo=3)
    with pytest.raises(gx.AttributeParseError, match="required attribute 'a_min'"):
        gx.sym.clip(x, a_max=1)
    with pytest.raises(gx.AttributeParseError, match="a_min='abc' is not a valid float"):
        gx.sym.clip(x, a_min="abc", a_max=1)
    with pytest.raises(AttributeError, match="no operator of that name"):
        gx.sym.NoSuchOp
    with pytest.raises(TypeError, match="takes 1 inputs and 0 attributes"):
        gx.sym.exp(x, 3)
    with pytest.raises(gx.AttributeParseError, match="single-output"):
        gx.sym.exp(gx.sym.Group([x, x]))


def test_symbol_methods_call_ops_and_copies_are_independent():
    x = gx.sym.Variable("x")
    y = x.exp().sin()
    assert y.list_arguments() == ["x"]
    z = copy.deepcopy(y)
    z._set_attr(__tag__="copy")
    assert y.attr("__tag__") is None
    w = pickle.loads(pickle.dumps(y))
    assert w.tojson() == y.tojson()


def test_infer_type_and_partial():
    a, b = gx.sym.Variable("a"), gx.sym.Variable("b")
    c = a + b
    import numpy as np
    assert c.infer_type(a="float16") == ([np.float16, np.float16], [np.float16], [])
    assert c.infer_shape_partial(a=(0, 3)) == ([(0, 3), (0, 3)], [(0, 3)], [])
    with pytest.warns(UserWarning, match="Cannot decide type"):
        assert c.infer_type() == (None, None, None)
    with pytest.raises(gx.UnknownArgumentError, match="'q' is not an input"):
        c.infer_shape(q=(1,))


def test_compose_replaces_arguments():
    x, w = gx.sym.Variable("x"), gx.sym.Variable("w")
    net = gx.sym.elemwise_mul(x, w, name="m")
    y = gx.sym.Variable("y")
    composed = net(x=gx.sym.exp(y, name="e"))
    assert composed.list_arguments() == ["y", "w"]
    assert net.list_arguments() == ["x", "w"]
    assert net(gx.sym.sin(y, name="s")).list_arguments() == ["y", "w"]
    with pytest.raises(gx.UnknownArgumentError, match="'q' is not an argument"):
        net(q=y)
