"""Python custom operators (gx.operator): declaration questions answered by the property,
forward/backward with req, gradients, need_top_grad, errors in user code, backends."""
from __future__ import annotations

import graphexec as gx
import numpy as np
import pytest


class _Sqr(gx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = 1
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert (aux[0].asnumpy() == 1).all()
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@gx.operator.register("test_sqr")
class _SqrProp(gx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ["aux"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return _Sqr()


class _Scale(gx.operator.CustomOp):
    def __init__(self, factor, fail):
        super().__init__()
        self.factor, self.fail = factor, fail

    def forward(self, is_train, req, in_data, out_data, aux):
        if self.fail == "forward" and in_data[0].asnumpy().sum() < 0:
            raise ValueError("negative input")
        self.assign(out_data[0], req[0], in_data[0] * self.factor)
        self.assign(out_data[1], req[1], in_data[1].astype("float64") + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        # need_top_grad=False: a loss; only the inputs were declared
        assert out_grad == [None, None] and out_data == [None, None]
        self.assign(in_grad[0], req[0], np.full(in_data[0].shape, self.factor))
        self.assign(in_grad[1], req[1], np.ones(in_data[1].shape))


@gx.operator.register("test_scale")
class _ScaleProp(gx.operator.CustomOpProp):
    def __init__(self, factor="1", fail="no"):
        super().__init__(need_top_grad=False)
        self.factor, self.fail = float(factor), fail

    def list_arguments(self):
        return ["x", "y"]

    def list_outputs(self):
        return ["scaled", "plus_one"]

    def infer_type(self, in_type):
        return in_type, [in_type[0], np.float64], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return list(in_data)

    def create_operator(self, ctx, shapes, dtypes):
        return _Scale(self.factor, self.fail)


def test_declarations_come_from_the_property():
    data, aux = gx.sym.var("data"), gx.sym.var("aux")
    op = gx.sym.Custom(data=data, aux=aux, name="sqr", op_type="test_sqr")
    assert op.list_arguments() == ["data"] and op.list_auxiliary_states() == ["aux"]
    assert op.list_outputs() == ["sqr_output"]
    assert op.infer_shape(data=(2, 3)) == ([(2, 3)], [(2, 3)], [(2, 3)])
    two = gx.sym.Custom(gx.sym.var("a"), gx.sym.var("b"), op_type="test_scale", factor=3,
                        name="s")
    assert two.list_arguments() == ["a", "b"]
    assert two.list_outputs() == ["s_scaled", "s_plus_one"]
    assert two.infer_type(a="float32", b="float32")[1] == [np.float32, np.float64]
    assert gx.sym.load_json(two.tojson()).tojson() == two.tojson()


def test_forward_backward_and_req_add():
    data = gx.sym.var("data")
    op = gx.sym.Custom(data=data, name="sqr", op_type="test_sqr")
    x = np.random.default_rng(0).uniform(-1, 1, (4, 5)).astype("f4")
    grad = np.ones_like(x)
    exe = op.bind(gx.cpu(), {"data": x}, args_grad={"data": grad}, grad_req="add",
                  aux_states={"sqr_aux": np.zeros_like(x)})
    np.testing.assert_allclose(exe.forward(is_train=True)[0], x * x, rtol=1e-6)
    exe.backward(np.full_like(x, 0.5))
    np.testing.assert_allclose(exe.grad_dict["data"], 1 + x, rtol=1e-6)
    exe.backward(np.full_like(x, 0.5))
    np.testing.assert_allclose(exe.grad_dict["data"], 1 + 2 * x, rtol=1e-6)


def test_gradient_by_finite_differences_inside_a_graph():
    x = gx.sym.var("x")
    net = gx.sym.sum(gx.sym.Custom(gx.sym.sin(x), op_type="test_sqr", name="q") * 3)
    v = np.random.default_rng(1).uniform(-1, 1, (3,))
    exe = net.bind(gx.cpu(), {"x": v}, args_grad={"x": np.zeros(3)},
                   aux_states={"q_aux": np.zeros(3)})
    exe.forward(is_train=True)
    exe.backward(np.ones((1,)))
    def loss(point):
        return float(net.bind(gx.cpu(), {"x": point}, aux_states={"q_aux": np.zeros(3)}
                              ).forward()[0][0])
    eps, numeric = 1e-6, []
    for i in range(3):
        step = np.zeros(3)
        step[i] = eps
        numeric.append((loss(v + step) - loss(v - step)) / (2 * eps))
    np.testing.assert_allclose(exe.grad_dict["x"], numeric, rtol=1e-5)


def test_need_top_grad_false_is_a_loss_and_dependencies_are_declared():
    op = gx.sym.Custom(gx.sym.var("a"), gx.sym.var("b"), op_type="test_scale", factor="2.5")
    exe = op.simple_bind(gx.cpu(), a=(2, 2), b=(2, 2))
    exe.arg_dict["a"][:] = 1
    out = exe.forward(is_train=True)
    assert out[1].dtype == np.float64 and out[1].tolist() == [[1, 1], [1, 1]]
    exe.backward()   # no head gradient needed
    np.testing.assert_array_equal(exe.grad_dict["a"], np.full((2, 2), 2.5))
    np.testing.assert_array_equal(exe.grad_dict["b"], np.ones((2, 2)))


def test_error_in_user_code_names_op_type_and_executor_stays_usable():
    op = gx.sym.Custom(gx.sym.var("a"), gx.sym.var("b"), op_type="test_scale",
                       fail="forward")
    exe = op.simple_bind(gx.cpu(), a=(2,), b=(2,), grad_req="null")
    exe.arg_dict["a"][:] = -1
    with pytest.raises(gx.GraphexecError, match="test_scale.*forward raised ValueError: "
                                                "negative input"):
        exe.forward()
    exe.arg_dict["a"][:] = 2
    assert exe.forward()[0].tolist() == [2, 2]


def test_unknown_op_type_and_bad_property():
    with pytest.raises(gx.AttributeParseError, match="'nope' is not registered"):
        gx.sym.Custom(gx.sym.var("a"), op_type="nope")

    @gx.operator.register("test_bad_shape")
    class _Bad(gx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            raise RuntimeError("cannot")
    with pytest.raises(gx.GraphexecError, match="test_bad_shape.*infer_shape raised "
                                                "RuntimeError: cannot"):
        gx.sym.Custom(gx.sym.var("a"), op_type="test_bad_shape").infer_shape(a=(2,))
    with pytest.raises(TypeError, match="CustomOpProp subclass"):
        gx.operator.register("x")(object)


@pytest.mark.parametrize("backend", ["default", "onnxrt", "fused"])
def test_custom_node_is_a_region_boundary(backend):
    x = gx.sym.var("x")
    net = gx.sym.exp(gx.sym.Custom(gx.sym.exp(x), op_type="test_sqr", name="q"))
    plan = gx.partition(net, backend, op_names={"exp", "Custom"},
                        input_shapes={"x": (2, 3), "q_aux": (2, 3)})
    claimed = [n for n in plan.symbol._indexed().nodes if n.op is not None
               and n.op.name == "Custom"]
    assert len(claimed) == 1   # the Custom node stays in the outer graph
    v = np.random.default_rng(2).uniform(-1, 1, (2, 3)).astype("f4")
    args = {"x": v, "q_aux": np.zeros((2, 3), "f4")}
    want = net.bind(gx.cpu(), {"x": v}, aux_states={"q_aux": np.zeros((2, 3), "f4")}
                    ).forward()[0]
    got = net.bind(gx.cpu(), {"x": v}, aux_states={"q_aux": args["q_aux"]},
                   backend=backend).forward()[0]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_legacy_numpy_op():
    class Double(gx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] * 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = out_grad[0] * 2
    x = gx.sym.var("X")
    s = Double().get_symbol(x, name="numpy_op")
    dx = np.zeros(4, "f4")
    exe = s.bind(gx.cpu(), args=[np.full(4, 10, "f4")], args_grad={"X": dx})
    assert exe.forward(is_train=True)[0].tolist() == [20] * 4
    exe.backward(np.ones(4, "f4"))
    assert dx.tolist() == [2] * 4
    plain = gx.operator.NumpyOp()(x)     # MXNet's defaults: identity, gradient one
    exe = plain.bind(gx.cpu(), args=[np.full(3, 5, "f4")], args_grad={"X": np.zeros(3, "f4")})
    exe.forward(is_train=True)
    exe.backward(np.full(3, 7, "f4"))
    assert exe.grad_dict["X"].tolist() == [1, 1, 1]
