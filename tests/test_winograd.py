"""The native kernels' ``winograd`` variant (issue 21): Winograd's F(2x2, 3x3) convolution,
forward and backward, against the plain native kernel (im2col products) on the same arrays;
which convolutions it takes, the gradient requests, the batched products, and the errors.
Skips (saying so) without numba."""
from __future__ import annotations

import numpy as np
import pytest

import graphexec as gx
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ops.conv import WinogradTiles, winograd_tiles
from graphexec.core.ops.registry import get_op
from graphexec.core.runtime.blas_threads import PRODUCT_ATTR, batched_product, register_product
from graphexec.core.runtime.kernels import KERNEL_ATTR


def _needs_numba():
    pytest.importorskip("numba", reason="the Winograd transforms are compiled loops (numba)")


def _conv(k: int, pad, no_bias: bool = False):
    return gx.sym.Convolution(gx.sym.Variable("x"), kernel=(3, 3), pad=pad, num_filter=k,
                              no_bias=no_bias, name="c")


def _bind(sym, shape, variant=None, product=None, dtype="float32", grad_x="write"):
    reqs = {n: "write" for n in sym.list_arguments()}
    reqs["x"] = grad_x
    exe = sym.simple_bind(gx.cpu(), grad_req=reqs, type_dict={"x": dtype}, x=shape)
    _choose(exe, variant)
    for node in exe._plan.graph.indexed.nodes:
        if variant and product and node.op is not None and "Convolution" in node.op.name:
            node.attrs[PRODUCT_ATTR] = product
    rng = np.random.default_rng(11)
    for arr in exe.arg_dict.values():
        arr[...] = rng.standard_normal(arr.shape)
    return exe


def _choose(exe, variant) -> None:
    """The convolutions' kernels before their first run: ``variant``, or the plain kernel
    (None), whatever the bind's passes chose (the native Winograd choice, for instance)."""
    for node in exe._plan.graph.indexed.nodes:
        if node.op is not None and "Convolution" in node.op.name:
            if variant:
                node.attrs[KERNEL_ATTR] = variant
            else:
                node.attrs.pop(KERNEL_ATTR, None)


def _step(exe, seed: int = 5) -> list:
    exe.forward(is_train=True)
    rng = np.random.default_rng(seed)
    exe.backward(rng.standard_normal(exe.outputs[0].shape).astype(exe.outputs[0].dtype))
    return [exe.outputs[0].copy()] + [exe.grad_dict[n].copy() for n in sorted(exe.grad_dict)
                                      if exe.grad_dict[n] is not None]


def _close(got: list, want: list, tol: float) -> None:
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=tol * max(float(np.abs(w).max()), 1.0))


CASES = [((2, 5, 7, 6), 4, (1, 1), False),    # odd width and height, bias
         ((3, 4, 5, 9), 6, (0, 0), True),     # no padding: 3x7 outputs
         ((2, 3, 6, 5), 2, (2, 2), False),    # padding 2: outputs larger than the input
         ((1, 2, 3, 3), 3, (0, 1), False),    # one output row, padding on one axis only
         ((2, 8, 1, 1), 3, (1, 1), False),    # 1x1 maps: one tile, three quarters cut off
         ((2, 70, 6, 6), 66, (1, 1), True)]   # more channels than one run of the loops


@pytest.mark.parametrize("shape,k,pad,no_bias", CASES)
@pytest.mark.parametrize("product", [None, "torch"])
def test_winograd_matches_the_native_kernel(shape, k, pad, no_bias, product):
    _needs_numba()
    if product == "torch":
        pytest.importorskip("torch", reason="PyTorch's batched product")
    sym = _conv(k, pad, no_bias)
    want = _step(_bind(sym, shape))
    got = _step(_bind(sym, shape, "winograd", product))
    _close(got, want, 2e-6)


@pytest.mark.parametrize("grad_x", ["write", "null"])
def test_winograd_in_chunks_of_samples(monkeypatch, grad_x):
    """A batch larger than one chunk (CHUNK_BYTES forced down to one sample a chunk): the
    outputs and data gradients chunk by chunk, the weight gradient summed over the chunks."""
    _needs_numba()
    from graphexec.backends.default.kernels import winograd
    sym = _conv(5, (1, 1))
    want = _step(_bind(sym, (3, 4, 5, 7), grad_x=grad_x))
    monkeypatch.setattr(winograd, "CHUNK_BYTES", 1)
    assert winograd._chunk(3, 4, 5, 12, 4) == 1
    _close(_step(_bind(sym, (3, 4, 5, 7), "winograd", grad_x=grad_x)), want, 2e-6)


def test_winograd_strided_arrays_bound_by_the_user():
    """A transposed weight and a strided gradient array bound by the user: the kernels work
    on contiguous copies (the plain kernel's numbers), the user's arrays get the results."""
    _needs_numba()
    sym = _conv(6, (1, 1), no_bias=True)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 6, 7)).astype("f4")
    w = np.ascontiguousarray(rng.standard_normal((3, 3, 6, 5)).astype("f4")).transpose(2, 3, 0, 1)
    g = rng.standard_normal((2, 6, 6, 7)).astype("f4")
    results = []
    for variant in (None, "winograd"):
        dw = np.zeros((3, 3, 6, 5), "f4").transpose(2, 3, 0, 1)
        dx = np.zeros((2, 5, 6, 7), "f4")
        exe = sym.bind(gx.cpu(), {"x": x, "c_weight": w}, args_grad={"x": dx, "c_weight": dw})
        assert not exe.arg_dict["c_weight"].flags.c_contiguous
        _choose(exe, variant)
        exe.forward(is_train=True)
        exe.backward(g)
        results.append([exe.outputs[0].copy(), exe.grad_dict["x"].copy(),
                        exe.grad_dict["c_weight"].copy()])
        assert not exe.grad_dict["c_weight"].flags.c_contiguous
    _close(results[1], results[0], 2e-6)


def test_winograd_float64():
    _needs_numba()
    sym = _conv(5, (1, 1))
    want = _step(_bind(sym, (2, 6, 7, 8), dtype="float64"))
    got = _step(_bind(sym, (2, 6, 7, 8), "winograd", dtype="float64"))
    _close(got, want, 1e-13)


def test_winograd_gradient_requests():
    """No data gradient (a first layer): dX left alone, dW right; 'add' accumulates."""
    _needs_numba()
    sym = _conv(4, (1, 1))
    want = _step(_bind(sym, (2, 3, 6, 6)))
    exe = _bind(sym, (2, 3, 6, 6), "winograd", grad_x="null")
    got = _step(exe)
    assert exe.grad_dict.get("x") is None
    _close(got[:3], want[:3], 2e-6)  # output, bias and weight gradients

    reqs = {"x": "add", "c_weight": "add", "c_bias": "add"}
    adds = sym.simple_bind(gx.cpu(), grad_req=reqs, x=(2, 3, 6, 6))
    for node in adds._plan.graph.indexed.nodes:
        if node.op is not None and "Convolution" in node.op.name:
            node.attrs[KERNEL_ATTR] = "winograd"
    ref = _bind(sym, (2, 3, 6, 6))
    for name in adds.arg_dict:
        adds.arg_dict[name][...] = ref.arg_dict[name]
        adds.grad_dict[name][...] = 1.0
    _step(adds)
    _step(adds)
    _close([adds.grad_dict[n] for n in sorted(adds.grad_dict)],
           [1.0 + 2 * w for w in want[1:]], 2e-6)


def test_winograd_without_compiled_loops_runs_the_plain_kernel(monkeypatch):
    """When numba cannot compile the transforms (compiled_for gives None, having warned),
    the kernels are the plain native ones: same numbers."""
    from graphexec.backends.default.kernels import winograd
    monkeypatch.setattr(winograd, "compiled_for", lambda name, *args: None)
    sym = _conv(4, (1, 1))
    _close(_step(_bind(sym, (2, 3, 6, 6), "winograd")), _step(_bind(sym, (2, 3, 6, 6))), 0)


def test_winograd_refuses_other_convolutions():
    _needs_numba()
    sym = gx.sym.Convolution(gx.sym.Variable("x"), kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                             num_filter=4, name="strided")
    exe = _bind(sym, (1, 3, 8, 8), "winograd")
    with pytest.raises(GraphexecError, match="'strided'.*stride 1"):
        exe.forward()


def test_unknown_batched_product_is_named():
    _needs_numba()
    exe = _bind(_conv(4, (1, 1)), (1, 3, 6, 6), "winograd", "no-such-product")
    with pytest.raises(GraphexecError, match="no batched product 'no-such-product'.*numpy"):
        exe.forward()
    with pytest.raises(GraphexecError, match="no batched product"):
        batched_product("other")


def test_registered_product_is_used():
    _needs_numba()
    calls = []

    def counting(a, b, out):
        calls.append(out.shape)
        np.matmul(a, b, out=out)
    register_product("counting", counting)
    sym = _conv(4, (1, 1))
    want = _step(_bind(sym, (2, 3, 6, 6)))
    _close(_step(_bind(sym, (2, 3, 6, 6), "winograd", "counting")), want, 2e-6)
    # forward U @ V; backward U^T @ dM and dM @ V^T: 16 planes of 2 * 3 * 3 tiles
    assert calls == [(16, 4, 18), (16, 3, 18), (16, 4, 3)]


def _params(**kw):
    op = get_op("Convolution")
    return op.parse({"kernel": "(3, 3)", "num_filter": "4", **kw})


@pytest.mark.parametrize("kw,data", [({"stride": "(2, 2)"}, (1, 4, 8, 8)),
                                     ({"dilate": "(2, 2)"}, (1, 4, 8, 8)),
                                     ({"kernel": "(5, 5)"}, (1, 4, 8, 8)),
                                     ({"num_group": "2"}, (1, 4, 8, 8)),
                                     ({"layout": "NHWC"}, (1, 8, 8, 4)),
                                     ({"pad": "(3, 3)"}, (1, 4, 8, 8))])
def test_winograd_tiles_refuses(kw, data):
    assert winograd_tiles(_params(**kw), data) is None


def test_winograd_tiles():
    assert winograd_tiles(_params(pad="(1, 1)"), (2, 4, 7, 8)) == WinogradTiles(4, 4, 1, 1)
    assert winograd_tiles(_params(), (2, 4, 7, 8)) == WinogradTiles(3, 3, 0, 0)
    assert winograd_tiles(_params(pad="(2, 0)"), (2, 4, 3, 3)) == WinogradTiles(3, 1, 2, 0)
