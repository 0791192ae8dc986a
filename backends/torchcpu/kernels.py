"""The ``torch`` kernel variants: Convolution, BatchNorm, Pooling and relu, forward and
backward, run by PyTorch's CPU operators (oneDNN convolutions, the same library MXNet 1.9.1's
CPU backend calls), and FullyConnected (MKL's sgemm, whose threads wait passively where
OpenBLAS's spin against PyTorch's), on the executor's own arrays.

Each factory wraps the bound numpy arrays as tensors once (``torch.from_numpy`` shares their
memory) and calls the ATen operator; results are copied into the planned output arrays. The
semantics are the native kernels' (``backends/default/kernels``): BatchNorm's hidden outputs
hold the batch mean and the inverse standard deviation and its backward moves the moving
statistics, fix_gamma counts gamma as 1 (and resets the array, as MXNet); max pooling's
hidden workspace holds each window's argmax (here as the flat input index PyTorch gives,
read only by this variant's backward: the pass gives a backward node the forward node's
kernel). Which nodes qualify is :func:`supported` (``select.py``).
"""
from __future__ import annotations

import ctypes
import os
import warnings

import numpy as np

from graphexec.core.ops.conv import conv_geometry, pool_geometry

__all__ = ["INPLACE", "KERNELS", "load_torch"]

#: op name -> factory of this variant
KERNELS: dict = {}
#: ops whose variant kernel tolerates an output aliasing an input
INPLACE: set[str] = set()


def _kernel(*names: str, inplace: bool = False):
    def deco(factory):
        for name in names:
            KERNELS[name] = factory
            if inplace:
                INPLACE.add(name)
        return factory
    return deco


def load_torch():
    """PyTorch, imported on first use. Its OpenMP threads wait passively between operators
    (``OMP_WAIT_POLICY=PASSIVE`` unless the user set it; read when torch is first imported):
    spinning threads cost 2-4x on a machine whose cores other work shares (a ResNet-18
    train step 2.46 s against 0.58 s, benchmarks/README.md)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch
    _keep_freed_memory()
    return torch


_MALLOC_SET = []


def _keep_freed_memory() -> None:
    """Once per process: glibc's malloc keeps freed blocks for reuse instead of unmapping
    them (M_MMAP_THRESHOLD 1 GiB, M_TRIM_THRESHOLD 2 GiB), as MXNet's storage pool keeps
    its memory. Every PyTorch result is a fresh allocation; unmapped and mapped again, its
    pages fault in and are zeroed at every call: ResNet-18's convolution layers, forward and
    both gradients, took 1.5-2.5x longer so (benchmarks/README.md). The process's freed memory
    then stays with it. GRAPHEXEC_TORCH_KEEP_MEMORY=0 leaves malloc alone."""
    if _MALLOC_SET or os.environ.get("GRAPHEXEC_TORCH_KEEP_MEMORY", "1") == "0":
        return
    _MALLOC_SET.append(True)
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to tune
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 1 << 30)
    libc.mallopt(m_trim_threshold, (1 << 31) - 1)


def _t(arr):
    """A tensor sharing ``arr``'s memory (read-only inputs too: kernels never write them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "The given NumPy array is not writable"
        return load_torch().from_numpy(arr)


def _nothing() -> None:
    return None


# -- Convolution ------------------------------------------------------------------------------
def _conv_args(p) -> tuple:
    geo = conv_geometry(p)
    nd = len(geo.kernel)
    return (list(geo.stride), list(geo.pad), list(geo.dilate), False, [0] * nd, p.num_group)


@_kernel("Convolution")
def convolution(call):
    aten = load_torch().ops.aten
    p = call.params
    x, w = _t(call.inputs[0]), _t(call.inputs[1])
    b = None if p.no_bias else _t(call.inputs[2])
    out = _t(call.outputs[0])
    args = _conv_args(p)

    def run():
        out.copy_(aten.convolution(x, w, b, *args))
    return run


@_kernel("_backward_Convolution")
def convolution_backward(call):
    """Inputs (dY, data, weight[, bias]); outputs (d data, d weight[, d bias])."""
    aten = load_torch().ops.aten
    p = call.params
    og, x, w = (_t(a) for a in call.inputs[:3])
    outs = [_t(o) for o in call.outputs]
    mask = [r != "null" for r in call.req] + [False] * (3 - len(call.req))
    if not any(mask):
        return _nothing
    bias_sizes = None if p.no_bias else [p.num_filter]
    args = _conv_args(p)
    pairs = [(k, o) for k, o in enumerate(outs) if mask[k]]

    def run():
        grads = aten.convolution_backward(og, x, w, bias_sizes, *args, mask)
        for k, o in pairs:
            o.copy_(grads[k])
    return run


# -- BatchNorm --------------------------------------------------------------------------------
@_kernel("BatchNorm")
def batch_norm(call):
    """Batch statistics when training without use_global_stats, else the moving ones."""
    aten = load_torch().ops.aten
    p = call.params
    x, gamma, beta, moving_mean, moving_var = call.inputs
    out, mean, invstd = call.outputs
    tx, tb, tout = _t(x), _t(beta), _t(out)
    tw = None if p.fix_gamma else _t(gamma)
    tmean, tinv = _t(mean), _t(invstd)
    tmm, tmv = _t(moving_mean), _t(moving_var)
    batch = call.is_train and not p.use_global_stats
    reset_gamma = p.fix_gamma and any(r != "null" for r in call.input_grad_reqs[:3])
    eps = float(p.eps)

    def run():
        if reset_gamma:
            gamma.fill(1)
        if batch:
            y, m, s = aten.native_batch_norm(tx, tw, tb, None, None, True, 0.0, eps)
            tmean.copy_(m)
            tinv.copy_(s)
        else:
            y = aten.native_batch_norm(tx, tw, tb, tmm, tmv, False, 0.0, eps)[0]
            tmean.copy_(tmm)
            load_torch().rsqrt(tmv + eps, out=tinv)
        tout.copy_(y)
    return run


@_kernel("_backward_BatchNorm", inplace=True)
def batch_norm_backward(call):
    """Inputs (dY, mean, invstd, data, gamma, beta, moving_mean, moving_var); outputs
    (d data, d gamma, d beta). A training backward moves the moving statistics after."""
    aten = load_torch().ops.aten
    p = call.params
    og, mean, invstd, x, gamma, _, moving_mean, moving_var = (_t(a) for a in call.inputs)
    dx, dgamma, dbeta = (_t(o) for o in call.outputs)
    batch = call.is_train and not p.use_global_stats
    mask = [call.req[0] != "null", call.req[1] != "null" and not p.fix_gamma,
            call.req[2] != "null"]
    w = None if p.fix_gamma else gamma
    eps, mom = float(p.eps), float(p.momentum)
    zero_gamma = p.fix_gamma and call.req[1] != "null"

    def run():
        if any(mask):
            if batch:
                grads = aten.native_batch_norm_backward(og, x, w, None, None, mean, invstd,
                                                        True, eps, mask)
            else:
                grads = aten.native_batch_norm_backward(og, x, w, moving_mean, moving_var,
                                                        None, None, False, eps, mask)
            for k, o in enumerate((dx, dgamma, dbeta)):
                if mask[k]:
                    o.copy_(grads[k])
        if zero_gamma:
            dgamma.zero_()
        if batch:  # moving = momentum * moving + (1 - momentum) * batch statistic
            var = invstd.square().reciprocal_().sub_(eps)
            moving_mean.mul_(mom).add_(mean, alpha=1 - mom)
            moving_var.mul_(mom).add_(var, alpha=1 - mom)
    return run


# -- Pooling ----------------------------------------------------------------------------------
def _pool_args(p, shape: tuple) -> tuple:
    geo, _ = pool_geometry(p, shape)
    return (list(geo.kernel), list(geo.stride), [left for left, _ in geo.pad],
            p.pooling_convention == "full")


@_kernel("Pooling")
def pooling(call):
    """Max (keeping the argmax in the workspace when training) or avg pooling, 2-D."""
    aten = load_torch().ops.aten
    p = call.params
    x = _t(call.inputs[0])
    out = _t(call.outputs[0])
    kernel, stride, pad, ceil = _pool_args(p, call.inputs[0].shape)
    if p.pool_type == "avg":
        cip = p.count_include_pad is not False

        def run_avg():
            out.copy_(aten.avg_pool2d(x, kernel, stride, pad, ceil, cip, None))
        return run_avg
    ws = _t(call.outputs[1]) if call.is_train and len(call.outputs) > 1 else None
    # PyTorch's max pooling is vectorised for channels-last tensors only: 3x faster with the
    # transposing copy on ResNet's first pooling (19 ms against 60 ms, batch 16, 2 threads)
    cl = load_torch().channels_last

    def run_max():
        xc = x.contiguous(memory_format=cl)
        y, idx = aten.max_pool2d_with_indices(xc, kernel, stride, pad, [1, 1], ceil)
        out.copy_(y)
        if ws is not None:
            ws.copy_(idx)
    return run_max


@_kernel("_backward_Pooling")
def pooling_backward(call):
    """Inputs (dY, dY_workspace, data, out, workspace) for max pooling, (dY, data, out) for
    avg; the data's gradient."""
    aten = load_torch().ops.aten
    if call.req[0] == "null":
        return _nothing
    p = call.params
    ins = [_t(a) for a in call.inputs]
    dx = _t(call.outputs[0])
    kernel, stride, pad, ceil = _pool_args(p, call.inputs[2 if len(ins) == 5 else 1].shape)
    if p.pool_type == "avg":
        og, x = ins[0], ins[1]
        cip = p.count_include_pad is not False

        def run_avg():
            dx.copy_(aten.avg_pool2d_backward(og, x, kernel, stride, pad, ceil, cip, None))
        return run_avg
    og, x, ws = ins[0], ins[2], ins[4]
    torch = load_torch()

    def run_max():
        idx = ws.to(torch.int64)
        dx.copy_(aten.max_pool2d_with_indices_backward(og, x, kernel, stride, pad, [1, 1],
                                                       ceil, idx))
    return run_max


# -- FullyConnected ---------------------------------------------------------------------------
def _fc_rows(p, x, w) -> tuple[int, int]:
    """(rows, K): the FullyConnected data ``x`` as a (rows, K) matrix."""
    rows = x.shape[0] if p.flatten else int(np.prod(x.shape[:-1]))
    return rows, w.shape[1]


@_kernel("FullyConnected")
def fully_connected(call):
    """out = data (flattened to 2-D, or over its last axis) @ weight.T + bias, written in
    place by MKL's sgemm."""
    torch = load_torch()
    p = call.params
    rows, k = _fc_rows(p, call.inputs[0], call.inputs[1])
    x, w = _t(call.inputs[0]).view(rows, k), _t(call.inputs[1]).t()
    out = _t(call.outputs[0]).view(rows, p.num_hidden)
    if p.no_bias:
        return lambda: torch.mm(x, w, out=out)
    b = _t(call.inputs[2])
    return lambda: torch.addmm(b, x, w, out=out)


@_kernel("_backward_FullyConnected")
def fully_connected_backward(call):
    """dX = dY @ W, dW = dY^T @ X, db = sum of dY over rows, each written in place."""
    torch = load_torch()
    p = call.params
    rows, k = _fc_rows(p, call.inputs[1], call.inputs[2])
    og = _t(call.inputs[0]).view(rows, p.num_hidden)
    x, w = _t(call.inputs[1]).view(rows, k), _t(call.inputs[2])
    steps = []
    if call.req[0] != "null":
        dx = _t(call.outputs[0]).view(rows, k)
        steps.append(lambda: torch.mm(og, w, out=dx))
    if call.req[1] != "null":
        dw = _t(call.outputs[1])
        steps.append(lambda: torch.mm(og.t(), x, out=dw))
    if not p.no_bias and call.req[2] != "null":
        db = _t(call.outputs[2])
        steps.append(lambda: torch.sum(og, 0, out=db))

    def run():
        for step in steps:
            step()
    return run


# -- relu -------------------------------------------------------------------------------------
@_kernel("Activation", inplace=True)
def relu(call):
    torch = load_torch()
    x, out = _t(call.inputs[0]), _t(call.outputs[0])

    def run():
        torch.clamp_min(x, 0, out=out)
    return run


@_kernel("_backward_Activation", inplace=True)
def relu_backward(call):
    """Inputs (dY, out): dY where the output is positive."""
    aten = load_torch().ops.aten
    if call.req[0] == "null":
        return _nothing
    og, y = _t(call.inputs[0]), _t(call.inputs[1])
    dx = _t(call.outputs[0])

    def run():
        aten.threshold_backward.grad_input(og, y, 0, grad_input=dx)
    return run

