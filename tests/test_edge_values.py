"""MXNet 1.9.1's numbers at NaN, infinities, signed zeros and ties, for the operators whose
obvious numpy counterpart gives other ones (values recorded from the oracle, ``mx.nd`` on the
CPU, ``MXNET_SUBGRAPH_BACKEND=NONE``; its own kernels and its default oneDNN ones agree on
these): sign (NaN gives 0), rint (ties go down, to floor(x)), gammaln (+inf at -inf), the
gradient of abs (0 at NaN), ROIPooling (NaN never wins); the native kernels, the fused
backend's generated ones and the ``onnxrt`` export; and the ONNX importer's Round and Sign,
which keep ONNX's (numpy's) meaning."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphexec as gx
from graphexec.backends.onnxrt.importer import import_model

NAN, INF = np.nan, np.inf
X = np.array([NAN, -0.0, 0.0, -2, 3, INF, -INF, 1.5, -2.5, 2.5, -0.5, 0.5, -0.3, 0.3, 0.7,
              -0.7, 8388609], np.float32)
# MXNet 1.9.1 on X
MX_SIGN = [0, 0, 0, -1, 1, 1, -1, 1, -1, 1, -1, 1, -1, 1, 1, -1, 1]
MX_RINT = [NAN, -0.0, 0.0, -2, 3, INF, -INF, 1, -3, 2, -1, 0, -0.0, 0, 1, -1, 8388609]
MX_ABS_GRAD = MX_SIGN  # d|x|/dx is sign(x), 0 at NaN

BACKENDS = ["NONE", "fused", "onnxrt"]


def _run(op: str, backend: str, x=X, train: bool = False):
    data = gx.sym.Variable("d")
    # the fused backend claims regions of two or more pointwise nodes
    sym = getattr(gx.sym, op)(data * 1.0 if backend == "fused" else data)
    backend = "fused:cost_model=false,min_size=1" if backend == "fused" else backend
    exe = sym.simple_bind(gx.cpu(), grad_req="write" if train else "null", backend=backend,
                          d=x.shape)
    exe.arg_dict["d"][...] = x
    if backend != "NONE":
        assert "region" in str(exe.partition_plan), exe.partition_plan  # the backend runs it
    out = exe.forward(is_train=train)[0].copy()
    if train:
        exe.backward([np.ones(x.shape, np.float32)])
        return out, exe.grad_dict["d"].copy()
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_sign_of_nan_is_zero(backend):
    got = _run("sign", backend)
    np.testing.assert_array_equal(got, np.array(MX_SIGN, np.float32))
    np.testing.assert_array_equal(np.signbit(got), np.array(MX_SIGN) < 0)  # +0 for -0


@pytest.mark.parametrize("backend", BACKENDS)
def test_rint_ties_go_down(backend):
    got = _run("rint", backend)
    want = np.array(MX_RINT, np.float32)
    np.testing.assert_array_equal(got, want)
    if backend != "onnxrt":  # ONNX Runtime's Where drops a zero's sign (converter docstring)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_rint_of_integers_and_other_floats():
    for dtype in (np.float64, np.float16):
        x = np.array([1.5, -2.5, 2.5, -0.5, INF], dtype)
        exe = gx.sym.rint(gx.sym.Variable("d")).simple_bind(gx.cpu(), grad_req="null", d=(5,),
                                                            type_dict={"d": dtype})
        exe.arg_dict["d"][...] = x
        np.testing.assert_array_equal(exe.forward()[0], np.array([1, -3, 2, -1, INF], dtype))
    ints = gx.nd.array(np.array([-5, 3], np.int32), dtype="int32")
    assert gx.nd.rint(ints).tolist() == [-5, 3] and gx.nd.sign(ints).tolist() == [-1, 1]


@pytest.mark.parametrize("backend", ["NONE", "fused"])
def test_abs_gradient_at_nan_is_zero(backend):
    _, grad = _run("abs", backend, train=True)
    np.testing.assert_array_equal(grad, np.array(MX_ABS_GRAD, np.float32))


def test_gammaln_at_minus_infinity():
    x = np.array([-INF, INF, -1, 0.5, NAN], np.float32)
    got = gx.nd.gammaln(gx.nd.array(x))
    np.testing.assert_allclose(got, [INF, INF, INF, 0.5723649, NAN], rtol=1e-6)


def test_roi_pooling_skips_nan():
    """MXNet 1.9.1: a bin holding NaN and inf gives inf; a bin of NaN only gives -FLT_MAX."""
    data = np.array([NAN, INF, -INF, -0.0, 0.0, 1.5, -2.5, 3.0, -1.0, 0.5, 2.0, -3.0],
                    np.float32).reshape(1, 1, 3, 4)
    rois = np.array([[0, 0, 0, 3, 2]], np.float32)
    out = gx.nd.ROIPooling(gx.nd.array(data), gx.nd.array(rois), pooled_size=(2, 2),
                           spatial_scale=1.0)
    np.testing.assert_array_equal(np.asarray(out).reshape(-1), [INF, 3, 1.5, 3])
    nan_only = gx.nd.ROIPooling(gx.nd.array(np.full((1, 1, 2, 2), NAN, np.float32)),
                                gx.nd.array(np.array([[0, 0, 0, 1, 1]], np.float32)),
                                pooled_size=(1, 1), spatial_scale=1.0)
    assert np.asarray(nan_only).reshape(-1).tolist() == [float(np.finfo(np.float32).min)]


@pytest.mark.parametrize("onnx_op,reference", [("Round", np.rint), ("Sign", np.sign)])
@pytest.mark.parametrize("dtype,proto", [(np.float32, TensorProto.FLOAT),
                                         (np.float64, TensorProto.DOUBLE),
                                         (np.float16, TensorProto.FLOAT16)])
def test_onnx_round_and_sign_keep_onnx_meaning(onnx_op, reference, dtype, proto):
    """ONNX Round goes to even and Sign keeps NaN (numpy's), whatever graphexec's rint and
    sign do."""
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.3, 0.3, 1.2, -2.8, NAN, INF, -INF, -0.0,
                  3.5], dtype)
    node = helper.make_node(onnx_op, ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", proto, x.shape)],
                              [helper.make_tensor_value_info("y", proto, x.shape)])
    sym, _, _ = import_model(helper.make_model(graph,
                                               opset_imports=[helper.make_opsetid("", 13)]))
    exe = sym.simple_bind(gx.cpu(), grad_req="null", x=x.shape, type_dict={"x": dtype})
    exe.arg_dict["x"][...] = x
    with np.errstate(invalid="ignore"):
        got = exe.forward()[0]
    want = reference(x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_l2_norm_of_large_float32_values_does_not_overflow():
    """MXNet 1.9.1 gives 1.4142135e30 for [1e30, 1e30, 1] (float32): its scaled sum of
    squares does not overflow, nor does graphexec's (squares in float64)."""
    x = gx.nd.array(np.array([[1e30, 1e30, 1], [3, 4, 0]], np.float32))
    got = gx.nd.norm(x, ord=2, axis=1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [1.4142135e30, 5], rtol=1e-7)
    half = gx.nd.norm(gx.nd.array(np.array([300, 400], np.float16), dtype="float16"))
    assert half.dtype == np.float16 and half.asscalar() == 500  # 300 ** 2 overflows float16


def test_l2_norm_exported_to_onnx_runtime_does_not_overflow():
    exe = gx.sym.norm(gx.sym.Variable("d"), ord=2, axis=1).simple_bind(
        gx.cpu(), grad_req="null", backend="onnxrt", d=(2, 3))
    assert "onnxrt region" in exe.partition_plan.table()
    exe.arg_dict["d"][...] = np.array([[1e30, 1e30, 1], [3, 4, 0]], np.float32)
    out = exe.forward()[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [1.4142135e30, 5], rtol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sigma,want_out,want_grad", [
    # MXNet 1.9.1 (autograd, head gradient 1) on [0.5, -0.5, 1e10, 0, inf, nan, -3]
    (0.0, [0, 0, 0, 0, NAN, NAN, 0], [0, 0, 0, 0, NAN, NAN, 0]),
    (1.0, [0.125, 0.125, 1e10, 0, INF, NAN, 2.5], [0.5, -0.5, 1, 0, 1, NAN, -1]),
])
def test_smooth_l1_edges(backend, sigma, want_out, want_grad):
    """sigma 0 is a valid loss (0 wherever |x| is finite), not a division by zero."""
    x = np.array([0.5, -0.5, 1e10, 0.0, INF, NAN, -3.0], np.float32)
    data = gx.sym.Variable("d")
    sym = gx.sym.smooth_l1(data * 1.0 if backend == "fused" else data, scalar=sigma)
    train = backend != "onnxrt"
    spec = "fused:cost_model=false,min_size=1" if backend == "fused" else backend
    exe = sym.simple_bind(gx.cpu(), grad_req="write" if train else "null", backend=spec,
                          d=x.shape)
    exe.arg_dict["d"][...] = x
    np.testing.assert_array_equal(exe.forward(is_train=train)[0], np.array(want_out, "f4"))
    if train:
        exe.backward([np.ones(x.shape, np.float32)])
        np.testing.assert_array_equal(exe.grad_dict["d"], np.array(want_grad, "f4"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_round_is_exact_below_one_half(backend):
    """MXNet 1.9.1 (C's roundf): 0.49999997 gives 0 (floor(|x| + 0.5) would give 1: the sum
    rounds to 1 in float32); halves away from zero; zeros keep x's sign (not under onnxrt)."""
    x = np.array([2.5, -2.5, 0.49999997, -0.49999997, -0.3, 0.5, -0.5, 1.5, INF, -INF, NAN,
                  -0.0, 8388609, 1e30], np.float32)
    want = np.array([3, -3, 0, -0.0, -0.0, 1, -1, 2, INF, -INF, NAN, -0.0, 8388609, 1e30],
                    np.float32)
    got = _run("round", backend, x)
    np.testing.assert_array_equal(got, want)
    if backend != "onnxrt":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_with_crossed_bounds(backend):
    """a_min > a_max: MXNet 1.9.1 tests x > a_max first (a_max), then x < a_min (a_min);
    numpy's clip gives a_max everywhere."""
    x = np.array([1.0, 5.0, -5.0, NAN, 2.0, -2.0], np.float32)
    data = gx.sym.Variable("d")
    sym = gx.sym.clip(data * 1.0 if backend == "fused" else data, a_min=2.0, a_max=-2.0)
    spec = "fused:cost_model=false,min_size=1" if backend == "fused" else backend
    exe = sym.simple_bind(gx.cpu(), grad_req="null", backend=spec, d=x.shape)
    exe.arg_dict["d"][...] = x
    np.testing.assert_array_equal(exe.forward()[0], [-2, -2, 2, NAN, -2, 2])
    ints = gx.nd.array(np.array([1, 5, -5], np.int32), dtype="int32")
    assert gx.nd.clip(ints, a_min=2, a_max=-2).tolist() == [-2, -2, 2]


def test_fill_element_0index_rejects_columns_outside_the_row():
    """MXNet 1.9.1 writes outside the row for such an index; here it is an error naming the
    range, and the executor stays usable."""
    lhs, mhs = np.zeros((2, 3), np.float32), np.array([7, 8], np.float32)
    sym = gx.sym.fill_element_0index(gx.sym.Variable("l"), gx.sym.Variable("m"),
                                     gx.sym.Variable("r"))
    exe = sym.simple_bind(gx.cpu(), grad_req="null", l=(2, 3), m=(2,), r=(2,))
    exe.arg_dict["l"][...], exe.arg_dict["m"][...] = lhs, mhs
    exe.arg_dict["r"][...] = [2, -1]
    with pytest.raises(gx.GraphexecError, match=r"must lie in \[0, 3\)"):
        exe.forward()
    exe.arg_dict["r"][...] = [2, 0]
    np.testing.assert_array_equal(exe.forward()[0], [[0, 0, 7], [8, 0, 0]])


@pytest.mark.parametrize("backend", ["NONE", "onnxrt"])
@pytest.mark.parametrize("axis", [1, None])
def test_repeat_zero_times_is_an_empty_vector(backend, axis):
    """MXNet 1.9.1: repeat(x, repeats=0) has shape (0,) whatever the axis; its gradient is 0."""
    sym = gx.sym.repeat(gx.sym.Variable("d"), repeats=0, axis=axis) + 1
    assert sym.infer_shape(d=(2, 3, 4))[1] == [(0,)]
    train = backend == "NONE"
    exe = sym.simple_bind(gx.cpu(), grad_req="write" if train else "null", backend=backend,
                          d=(2, 3, 4))
    exe.arg_dict["d"][...] = 1
    assert exe.forward(is_train=train)[0].shape == (0,)
    if train:
        exe.backward([np.zeros(0, np.float32)])
        assert not exe.grad_dict["d"].any()


def test_trsm_substitutes_as_blas_does():
    """linalg_trsm with a zero on the triangle's diagonal: MXNet 1.9.1 (BLAS's trsm) gives
    [[2, 1], [nan, inf]] for these, not an error; a batch and the transposed and right-side
    forms agree with a solve where the triangle is regular."""
    tri_a = np.array([[2.0, 0.0], [1.0, 0.0]], np.float32)
    b = np.array([[4.0, 2.0], [2.0, 3.0]], np.float32)
    with np.errstate(all="ignore"):
        got = gx.nd.linalg_trsm(gx.nd.array(tri_a), gx.nd.array(b))
    np.testing.assert_array_equal(got, [[2, 1], [NAN, INF]])
    rng = np.random.default_rng(0)
    a = np.tril(rng.uniform(1, 2, (3, 4, 4))) + rng.uniform(-1, 1, (3, 4, 4)) * np.triu(
        np.ones((4, 4)), 1)  # junk above the diagonal: only the lower triangle is read
    bb = rng.uniform(-1, 1, (3, 4, 5))
    for transpose, rightside in ((False, False), (True, False), (False, True), (True, True)):
        m = np.tril(a)
        m = m.swapaxes(-1, -2) if transpose else m
        rhs = bb.swapaxes(-1, -2) if rightside else bb
        want = (np.linalg.solve(m.swapaxes(-1, -2), rhs.swapaxes(-1, -2)).swapaxes(-1, -2)
                if rightside else np.linalg.solve(m, rhs)) * 0.5
        got = gx.nd.linalg_trsm(gx.nd.array(a, dtype="float64"),
                                gx.nd.array(rhs, dtype="float64"), transpose=transpose,
                                rightside=rightside, alpha=0.5)
        np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("backend", ["NONE", "fused"])
def test_relu_and_clip_gradients_at_nan(backend):
    """MXNet 1.9.1 (its own kernels and its default ones agree): relu's gradient at NaN is
    NaN; clip passes the gradient at NaN (only x outside [a_min, a_max] gets 0)."""
    x = np.array([-1.0, 0.0, -0.0, 1.0, 2.0, 2.0, NAN], np.float32)
    _, relu_grad = _run("relu", backend, x, train=True)
    np.testing.assert_array_equal(relu_grad, [0, 0, 0, 1, 1, 1, NAN])
    data = gx.sym.Variable("d")
    sym = gx.sym.clip(data * 1.0 if backend == "fused" else data, a_min=0.0, a_max=2.0)
    spec = "fused:cost_model=false,min_size=1" if backend == "fused" else backend
    exe = sym.simple_bind(gx.cpu(), grad_req="write", backend=spec, d=x.shape)
    exe.arg_dict["d"][...] = x
    exe.forward(is_train=True)
    exe.backward([np.ones(x.shape, np.float32)])
    np.testing.assert_array_equal(exe.grad_dict["d"], [0, 1, 1, 1, 1, 1, 1])


def test_float_math_on_integer_data():
    """MXNet 1.9.1 on int32 data computes in float (its special functions in double) and
    truncates into int32, NaN and infinities giving the lowest int32 (values recorded)."""
    x = gx.nd.array(np.array([-7, -1, 0, 3, 5, -4, 2, 9], np.int32), dtype="int32")
    low = -2147483648
    want = {"sqrt": [low, low, 0, 1, 2, low, 1, 3], "exp": [0, 0, 1, 20, 148, 0, 7, 8103],
            "sigmoid": [0] * 8, "log": [low, low, low, 1, 1, low, 0, 2],
            "reciprocal": [0, -1, low, 0, 0, 0, 0, 0], "cbrt": [-1, -1, 0, 1, 1, -1, 1, 2],
            "tanh": [0] * 8, "erf": [-1, 0, 0, 0, 0, 0, 0, 1],
            "log1p": [low, low, 0, 1, 1, low, 1, 2],
            "rsqrt": [low, low, low, 0, 0, low, 0, 0],
            "gamma": [low, low, low, 2, 24, low, 1, 40320], "softsign": [0] * 8,
            "abs": [7, 1, 0, 3, 5, 4, 2, 9], "square": [49, 1, 0, 9, 25, 16, 4, 81]}
    with np.errstate(all="ignore"):
        for op, values in want.items():
            got = getattr(gx.nd, op)(x)
            assert got.dtype == np.int32 and got.tolist() == values, op


@pytest.mark.parametrize("op,reference", [
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("softsign", lambda x: x / (1 + np.abs(x))),
    ("rsqrt", lambda x: 1 / np.sqrt(x)), ("rcbrt", lambda x: 1 / np.cbrt(x))])
def test_float16_composites_round_once(op, reference):
    """On float16 data MXNet 1.9.1 gives the float32 result rounded once to float16 (checked
    against the oracle on 41 points in [-4, 4]: every one equal); rounding after each step
    gave sigmoid(-1) an ulp low."""
    x = np.linspace(-4, 4, 41).astype(np.float16)
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float32)).astype(np.float16)
        got = getattr(gx.nd, op)(gx.nd.array(x, dtype="float16"))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,attrs", [("Activation", {"act_type": "sigmoid"}),
                                      ("Activation", {"act_type": "softsign"}),
                                      ("Activation", {"act_type": "softrelu"}),
                                      ("Activation", {"act_type": "tanh"}),
                                      ("LeakyReLU", {"act_type": "gelu"}),
                                      ("LeakyReLU", {"act_type": "elu"})])
def test_float16_activations_round_once(op, attrs):
    """float16 data: the float32 result rounded once (MXNet 1.9.1's numbers on [-4, 4])."""
    x = np.linspace(-4, 4, 41).astype(np.float16)
    got = getattr(gx.nd, op)(gx.nd.array(x, dtype="float16"), **attrs)
    wide = getattr(gx.nd, op)(gx.nd.array(x.astype(np.float32)), **attrs)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.asarray(wide).astype(np.float16))


def test_float16_smooth_l1_rounds_once():
    """MXNet 1.9.1 on float16 data (sigma 1.5, [-4, 4]): the float32 result rounded once."""
    x = np.linspace(-4, 4, 41).astype(np.float16)
    got = gx.nd.smooth_l1(gx.nd.array(x, dtype="float16"), scalar=1.5)
    wide = gx.nd.smooth_l1(gx.nd.array(x.astype(np.float32)), scalar=1.5)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.asarray(wide).astype(np.float16))


@pytest.mark.parametrize("op", ["softmax", "softmin"])
def test_softmax_at_temperature_zero_gives_nan_rows_as_mxnet(op):
    """MXNet divides by the temperature: at 0 every entry is NaN (it was a
    ZeroDivisionError); the onnxrt export agrees."""
    x = np.array([[1, 2, 3], [-1, 0, 5]], np.float32)
    assert np.isnan(getattr(gx.nd, op)(gx.nd.array(x), temperature=0.0).asnumpy()).all()
    sym = getattr(gx.sym, op)(gx.sym.Variable("d"), temperature=0.0)
    exe = sym.simple_bind(gx.cpu(), grad_req="null", backend="onnxrt", d=x.shape)
    exe.arg_dict["d"][...] = x
    assert np.isnan(exe.forward()[0]).all()


def test_unravel_index_of_negative_and_large_indices_as_mxnet():
    """MXNet's kernel takes C's remainder and quotient (toward zero) and leaves the leading
    axis the whole quotient: recorded from MXNet 1.9.1 (numpy's floor division gave (-1, 3)
    for -1)."""
    got = gx.nd.unravel_index(gx.nd.array([9, -1, -9, 5, 0]), shape=(2, 4)).asnumpy()
    np.testing.assert_array_equal(got, [[2, 0, -2, 1, 0], [1, -1, -1, 1, 0]])


def test_mod_signs_its_zeros_as_mxnet():
    """MXNet's mod gives -0 where b > 0 and a is -0, or b < 0 and a < 0, else +0 (numpy's
    remainder takes the divisor's sign); values recorded from MXNet 1.9.1."""
    a = gx.nd.array([7.5, -7.5, 0, -0.0, 4, -4, -0.0, 3])
    b = gx.nd.array([2, 2, -2, -2, 2, -2, 2, 0])
    got = gx.nd.broadcast_mod(a, b).asnumpy()
    want = np.array([1.5, 0.5, 0, 0, 0, -0.0, -0.0, 0], np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    got = gx.nd._internal._mod_scalar(gx.nd.array([7.5, -7.5, 0]), scalar=-2).asnumpy()
    np.testing.assert_array_equal(np.signbit(got), [True, True, False])


def test_integer_power_is_powf_truncated_as_mxnet():
    """MXNet raises integers through powf on float32 copies: 7^9 is 40353608, negative
    exponents truncate to 0, inf and values beyond the dtype give its lowest value (numpy's
    integer power refuses negative exponents); recorded from MXNet 1.9.1."""
    a = gx.nd.array([7, 3, 2, -3, 0, 5], dtype="int32")
    b = gx.nd.array([9, -2, 31, 3, -1, 10], dtype="int32")
    np.testing.assert_array_equal(gx.nd.broadcast_power(a, b).asnumpy(),
                                  [40353608, 0, -2147483648, -27, -2147483648, 9765625])
    np.testing.assert_array_equal(
        gx.nd._internal._rpower_scalar(gx.nd.array([9, -1], dtype="int32"), scalar=7).asnumpy(),
        [40353608, 0])
    np.testing.assert_array_equal(
        gx.nd.broadcast_power(gx.nd.array([7, 3], dtype="int64"),
                              gx.nd.array([9, 21], dtype="int64")).asnumpy(),
        [40353608, 10460353536])


def test_nd_internal_namespace_as_mxnet():
    """``gx.nd._internal.<op>`` runs the registered operator, as ``mx.nd._internal`` (Gluon
    blocks call ``F._internal``); an unknown name is an AttributeError naming it."""
    x = gx.nd.array([1, 2])
    np.testing.assert_array_equal(gx.nd._internal._plus_scalar(x, scalar=1).asnumpy(), [2, 3])
    np.testing.assert_array_equal(gx.nd._internal.plus_scalar(x, scalar=1).asnumpy(), [2, 3])
    with pytest.raises(AttributeError, match="no_such_op"):
        gx.nd._internal.no_such_op
