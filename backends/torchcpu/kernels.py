"""The ``torch`` kernel variants, on the executor's own arrays: Convolution, BatchNorm,
Pooling, relu and RNN, forward and backward, run by PyTorch's CPU operators (oneDNN's
convolutions and LSTM, the library MXNet 1.9.1's CPU backend calls); the forward of softmax
(SoftmaxOutput, masked softmax), gelu and LayerNorm by ATen's vectorised kernels; and
FullyConnected by MKL's sgemm on Intel CPUs, elsewhere by numpy's OpenBLAS split across the
kernel's own threads (MKL ran at half its speed on the AMD machines measured).

Each factory wraps the bound numpy arrays as tensors once (``torch.from_numpy`` shares their
memory) and calls the ATen operator; results are copied into the planned output arrays. The
semantics are the native kernels' (``backends/default/kernels``): BatchNorm's hidden outputs
hold the batch mean and the inverse standard deviation and its backward moves the moving
statistics, fix_gamma counts gamma as 1 (and resets the array, as MXNet); max pooling's
hidden workspace holds each window's argmax (here as the flat input index PyTorch gives,
read only by this variant's backward: the pass gives a backward node the forward node's
kernel); RNN's training forward keeps PyTorch's autograd graph in the node's kernel state,
which its backward node shares. Which nodes qualify is :func:`supported` (``select.py``).
"""
from __future__ import annotations

import ctypes
import math
import os
import sys
import warnings
from functools import lru_cache

import numpy as np

from graphexec.core.ops.common import lowest
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


#: how long PyTorch's OpenMP threads spin after a parallel region before they sleep
#: (libgomp's GOMP_SPINCOUNT; its default is 300000)
SPIN_COUNT = "30000"


def load_torch():
    """PyTorch, imported on first use. Unless the user set OMP_WAIT_POLICY or
    GOMP_SPINCOUNT, its OpenMP threads spin briefly after each parallel region
    (``GOMP_SPINCOUNT=30000``, about 1 ms) before they sleep, read when torch is first
    imported: sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) made every operator wake them
    (ResNet-18 v1's train step 1.16-1.32x MXNet's against 1.07-1.08x, MobileNet v1 0.25
    1.07-1.47x against 0.60-0.64x on a quiet machine), and so did 10000 right after an idle
    pause on a virtual machine whose sleeping threads wake slowly (MobileNet's step 57.7
    against 18.6 ms with 30000, ResNet-18's 184 against 165 ms; back to back alike), while
    libgomp's default spin (~10 ms) cost 2-4x where other work shares the cores
    (benchmarks/README.md)."""
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
    _share_openmp_runtime()
    import torch
    _keep_freed_memory()
    return torch


def _share_openmp_runtime() -> None:
    """Before PyTorch is first imported: numba's OpenMP thread pool loaded, so that PyTorch
    takes the OpenMP runtime it loaded (GNU's libgomp, which numba's pool names by its file
    name ``libgomp.so.1.0.0``; PyTorch's wheel brings its own copy, named ``libgomp.so.1``,
    loaded only when no ``libgomp.so.1`` is there yet). With two copies the strategy's
    kernels ran on two thread pools, each spinning on the cores while the other worked (the
    native BatchNorm, Winograd and depthwise loops beside PyTorch's operators): one shared
    runtime made MobileNet v1 0.25's step 0.955x and ResNet-18 v1's 0.966x the time
    (benchmarks/README.md). PyTorch needs only OpenMP 1.0 and GOMP 4.0 of it. Linux only
    (where this was checked: elsewhere the runtimes are others); nothing happens without
    numba, or when PyTorch was imported first."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import numba.np.ufunc.omppool  # noqa: F401 - loaded for its side effect
    except ImportError:  # no numba, or no OpenMP runtime beside it: nothing to share
        pass


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


def batched_product(a, b, out) -> None:
    """out[i] = a[i] @ b[i] on PyTorch's threads (MKL's products): the batched product
    ``torch`` the plugin registers for native kernels it chooses (the Winograd
    convolutions); numpy's OpenBLAS threads would spin against PyTorch's."""
    load_torch().matmul(_t(a), _t(b), out=_t(out))


# -- Convolution ------------------------------------------------------------------------------
def _conv_args(p) -> tuple:
    geo = conv_geometry(p)
    nd = len(geo.kernel)
    return (list(geo.stride), list(geo.pad), list(geo.dilate), False, [0] * nd, p.num_group)


#: the most weight elements for which a pointwise convolution runs as products (below)
POINTWISE_MAX_WEIGHT = 1 << 20


def _pointwise(p, params: list, data: list) -> str | None:
    """How the convolution ``p`` runs as products, when it is a plain product over channels
    (1x1... kernel, stride 1, no padding or dilation, one group) with a weight (the first of
    ``params``, which are all contiguous) of fewer than POINTWISE_MAX_WEIGHT elements:
    ``"rows"`` when the ``data`` arrays are all stored channels-last (4-D; one product
    over the N*H*W rows of channels), ``"planes"`` when they are all contiguous (batched
    products over each sample's channel planes, out[n] = W x[n]); else None (oneDNN's
    convolution). Either way the products (PyTorch's matmul, MKL) write straight into the
    planned arrays. oneDNN's channel-first convolution reorders the data to its blocked
    layout and back at every call: MobileNet's 1x1 layers took 1.4-9x the products' time
    forward and 1.4-4x backward (8-256 channels, batch 16); with a 512x2048 weight on 7x7
    maps oneDNN's won (0.88x forward, 0.74x backward), hence the bound
    (benchmarks/README.md)."""
    geo = conv_geometry(p)
    if (p.num_group != 1 or any(v != 1 for v in geo.kernel + geo.stride + geo.dilate)
            or any(geo.pad) or params[0].numel() >= POINTWISE_MAX_WEIGHT
            or not all(t.is_contiguous() for t in params)):
        return None
    if all(_stored_channels_last(t) for t in data):
        return "rows"
    return "planes" if all(t.is_contiguous() for t in data) else None


#: the fewest data channels for which a pointwise convolution's backward over channels-last
#: data runs as products (:func:`_pointwise_backward`); below, oneDNN's channels-last
#: backward: MKL's products with 8 columns or fewer stream at a third of their usual speed
#: (MobileNet v1 0.25's 8 -> 16 layer on 56x56 maps, batch 16: 2.5-2.7 ms against oneDNN's
#: 0.6-0.8 ms; 12 channels and more the products won, 0.6x; benchmarks/README.md)
POINTWISE_ROWS_MIN_CHANNELS = 12

#: the fewest data channels for which a strided 1x1 convolution's backward is handed to
#: oneDNN channels-last (see convolution_backward)
ONEDNN_LAST_MIN_CHANNELS = 16


def _stored_channels_last(t) -> bool:
    """Whether the 4-D tensor ``t`` is stored N x H x W x C (and not also channel-first)."""
    return (t.dim() == 4 and t.is_contiguous(memory_format=load_torch().channels_last)
            and not t.is_contiguous())


def _rows(t):
    """The (N*H*W, C) matrix of a channels-last 4-D tensor (a view)."""
    return t.permute(0, 2, 3, 1).reshape(-1, t.shape[1])


@_kernel("Convolution")
def convolution(call):
    """oneDNN's convolution called directly where PyTorch has it (2-D and 3-D): ATen's
    ``convolution`` picks the same kernel after its own checks, 7% slower on ResNet-18's
    3x3 layers (7.3 against 6.8 ms, batch 16, benchmarks/README.md); pointwise ones as
    products (:func:`_pointwise`)."""
    torch = load_torch()
    aten = torch.ops.aten
    p = call.params
    x, w = _t(call.inputs[0]), _t(call.inputs[1])
    b = None if p.no_bias else _t(call.inputs[2])
    out = _t(call.outputs[0])
    args = _conv_args(p)
    how = _pointwise(p, [w] + ([] if b is None else [b]), [x, out])
    if how is not None:
        k = w.shape[0]
        w2 = w.view(k, -1)
        if how == "rows":
            x2, o2, wt = _rows(x), _rows(out), w2.t()

            def run_rows():
                torch.mm(x2, wt, out=o2)
                if b is not None:
                    o2.add_(b)
            return run_rows
        n = x.shape[0]
        x3, o3 = x.view(n, x.shape[1], -1), out.view(n, k, -1)
        b2 = None if b is None else b.view(k, 1)

        def run_planes():
            torch.matmul(w2, x3, out=o3)
            if b2 is not None:
                o3.add_(b2)
        return run_planes
    if torch.backends.mkldnn.is_available() and x.dim() in (4, 5):
        stride, pad, dilate, _, _, groups = args

        def run_onednn():
            out.copy_(aten.mkldnn_convolution(x, w, b, pad, stride, dilate, groups))
        return run_onednn

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
    geo = conv_geometry(p)
    how = _pointwise(p, [w, *outs[1:]], [og, x, outs[0]])
    if how is not None and not (how == "rows" and x.shape[1] < POINTWISE_ROWS_MIN_CHANNELS):
        return _pointwise_backward(og, x, w, outs, mask, how)

    if mask[1] and _weight_gradient_as_product(p, geo, og, x, outs[1]):
        return _product_weight_gradient(call, og, x, w, outs, mask, bias_sizes, args)

    # channel-first for strided 1x1 layers on channels-last data of fewer than
    # ONEDNN_LAST_MIN_CHANNELS channels: oneDNN's weight gradient through PyTorch 2.x
    # corrupted the heap there (3-12 channels; a script of PyTorch calls alone reproduces
    # it; 16 and more, 3x3 and 7x7 kernels, stride 1 and channel-first data ran clean).
    # Channel-first data with a channels-last dY (a network's first layer: its data is the
    # graph's input) goes to oneDNN channels-last: ResNet-18's 7x7 stem, weight gradient,
    # 5.7 against 18.2 ms, 64 channels at 28x28 both gradients 7.9 against 14.7 ms
    # (benchmarks/README.md). Otherwise the arrays as they are: converting dY to the data's
    # layout cost ResNet-18's first layer 20 against 17 ms
    fragile = (x.shape[1] < ONEDNN_LAST_MIN_CHANNELS and all(k == 1 for k in geo.kernel)
               and any(s > 1 for s in geo.stride))
    risky = fragile and _stored_channels_last(x)
    data_to_last = (not fragile and _stored_channels_last(og)
                    and not _stored_channels_last(x))
    last = load_torch().channels_last

    def run():
        data, dy = (x.contiguous(), og.contiguous()) if risky else (x, og)
        if data_to_last:
            data = x.contiguous(memory_format=last)
        grads = aten.convolution_backward(dy, data, w, bias_sizes, *args, mask)
        for k, o in pairs:
            o.copy_(grads[k])
    return run


#: the fewest weight elements per output position of the batch for which a convolution's
#: weight gradient runs as one MKL product over im2col columns
#: (:func:`_product_weight_gradient`): oneDNN's weight gradient keeps a partial weight
#: gradient per thread and sums them, which dominates where the weights are large and the
#: maps small. 512 -> 512 channels 3x3 at 4x4, batch 16 (4608 per position): 0.8x oneDNN's
#: time, at batch 4 0.5x; 256 -> 256 at 4x4 (2304) 1.15x, 512 at 7x7 (3009) 1.09x
#: (benchmarks/README.md)
PRODUCT_WEIGHT_GRADIENT_MIN_RATIO = 4096


def _weight_gradient_as_product(p, geo, og, x, dw) -> bool:
    """Whether the 2-D convolution's weight gradient runs as one MKL product
    (:data:`PRODUCT_WEIGHT_GRADIENT_MIN_RATIO`): Intel CPUs where PyTorch has MKL
    (:func:`mkl_products`), one group, channel-first layout (the strategy's variants take
    float32 only)."""
    if (p.num_group != 1 or len(geo.kernel) != 2 or geo.last or x.dim() != 4
            or not dw.is_contiguous()):
        return False
    positions = og.shape[0] * og.shape[2] * og.shape[3]
    return dw.numel() >= PRODUCT_WEIGHT_GRADIENT_MIN_RATIO * positions and mkl_products()


def _product_weight_gradient(call, og, x, w, outs: list, mask: list, bias_sizes, args):
    """A convolution's backward with its weight gradient as one product: the data's im2col
    columns (K = C*kh*kw rows, one column per output position) and dY as (O, positions), dW =
    dY columns^T straight into the (O, C, kh, kw) gradient; the data's and bias's gradients
    from oneDNN. Both scratch matrices live in the executor's workspace."""
    torch = load_torch()
    aten = torch.ops.aten
    n, o, ho, wo = og.shape
    k = w[0].numel()
    positions = n * ho * wo
    dtype = call.outputs[1].dtype
    specs = (((k, n, ho * wo), dtype), ((o, n, ho, wo), dtype))
    call.workspace.reserve(*specs)
    dw = outs[1].view(o, k)
    stride, pad, dilate = args[:3]
    kernel = list(w.shape[2:])
    rest = [mask[0], False, mask[2]]
    pairs = [(i, outs[i]) for i in (0, 2) if rest[i]]

    def run():
        cols, dy = (_t(a) for a in call.workspace.arrays(*specs))
        cols.copy_(torch.nn.functional.unfold(x, kernel, dilate, pad, stride).permute(1, 0, 2))
        dy.copy_(og.permute(1, 0, 2, 3))
        torch.mm(dy.view(o, positions), cols.view(k, positions).t(), out=dw)
        if pairs:
            grads = aten.convolution_backward(og, x, w, bias_sizes, *args, rest)
            for i, out in pairs:
                out.copy_(grads[i])
    return run


def _pointwise_backward(og, x, w, outs: list, mask: list, how: str):
    """The gradients of a pointwise convolution as products. Rows of channels (``how`` is
    ``"rows"``): dx = dy W, dW = dy^T x, one product each. Channel planes: dx[n] = W^T dy[n];
    dW the sum over samples of dy[n] x[n]^T, by one batched product summed where its (N, K,
    C) result is at most twice the size of the data it reads (MobileNet's layers), else by
    one product over the samples' columns, copied side by side ((16, 512, 7, 7) to 2048
    channels: 0.72x). The bias's gradient: the sums of dy."""
    torch = load_torch()
    n, k, c = x.shape[0], w.shape[0], w.shape[1]
    w2 = w.view(k, c)
    dw2 = outs[1].view(k, c) if mask[1] else None
    db = outs[2] if len(outs) > 2 and mask[2] else None
    if how == "rows":
        g2, x2 = _rows(og), _rows(x)
        dx2 = _rows(outs[0]) if mask[0] else None

        def run_rows():
            if dx2 is not None:
                torch.mm(g2, w2, out=dx2)
            if dw2 is not None:
                torch.mm(g2.t(), x2, out=dw2)
            if db is not None:
                torch.sum(g2, 0, out=db)
        return run_rows
    g3, x3, wt = og.view(n, k, -1), x.view(n, c, -1), w2.t()
    dx3 = outs[0].view(n, c, -1) if mask[0] else None
    batched = n * k * c <= 2 * (k + c) * x3.shape[0] * x3.shape[2]

    def run_planes():
        if dx3 is not None:
            torch.matmul(wt, g3, out=dx3)
        if dw2 is not None:
            if batched:
                torch.sum(torch.bmm(g3, x3.transpose(1, 2)), 0, out=dw2)
            else:
                torch.mm(g3.transpose(0, 1).reshape(k, -1), x3.transpose(0, 1).reshape(c, -1).t(),
                         out=dw2)
        if db is not None:
            torch.sum(g3, (0, 2), out=db)
    return run_planes


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
        if batch:  # written in place: 4.2 against 5.4 ms for 16x64x56x56 with the copies
            aten.native_batch_norm.out(tx, tw, tb, None, None, True, 0.0, eps, out=tout,
                                       save_mean=tmean, save_invstd=tinv)
        else:
            tout.copy_(aten.native_batch_norm(tx, tw, tb, tmm, tmv, False, 0.0, eps)[0])
            tmean.copy_(tmm)
            load_torch().rsqrt(tmv + eps, out=tinv)
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
    # transposing copy on ResNet's first pooling (19 ms against 60 ms, batch 16, 2 threads).
    # The copy also gives MXNet's numbers: PyTorch's maximum takes NaN, MXNet's (a running
    # maximum from the lowest float taking greater elements only) never does and gives the
    # lowest float for a window of NaN or -inf, so those become the lowest float first
    torch = load_torch()
    cl, low = torch.channels_last, float(lowest(call.inputs[0].dtype))

    def run_max():
        xc = torch.empty_like(x, memory_format=cl)
        torch.nan_to_num(x, nan=low, posinf=math.inf, neginf=low, out=xc)
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
    # one memory format for all: the gradient's (PyTorch's kernel for mixed ones walks one
    # of them across its layout); channels-last is no slower than channel-first here (1.6
    # against 2.0 ms for ResNet's first pooling, batch 16)
    fmt = torch.channels_last if _stored_channels_last(dx) else torch.contiguous_format

    def run_max():
        idx = ws.to(torch.int64).contiguous(memory_format=fmt)
        dx.copy_(aten.max_pool2d_with_indices_backward(
            og.contiguous(memory_format=fmt), x.contiguous(memory_format=fmt), kernel, stride,
            pad, [1, 1], ceil, idx))
    return run_max


# -- FullyConnected ---------------------------------------------------------------------------
def _cpu_vendor() -> str:
    """The CPU's vendor string ("GenuineIntel", "AuthenticAMD", ...; "" where unknown)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    proc = platform.processor()
    return next((v for v in ("GenuineIntel", "AuthenticAMD") if v in proc), "")


@lru_cache(maxsize=1)
def mkl_products() -> bool:
    """Whether FullyConnected's products run on PyTorch's MKL (Intel CPUs, PyTorch built
    with MKL) rather than numpy's OpenBLAS. On an AVX-512 Intel Xeon MKL took 0.4-0.5x
    OpenBLAS's time for MobileNet's 16 x 256 x 1000 layer, forward and backward, and
    0.85-0.9x for the LSTM LM's 1120 x 650 x 10000 decoder; on the AMD machines measured
    it ran at half OpenBLAS's speed at every size (benchmarks/README.md)."""
    return load_torch().backends.mkl.is_available() and _cpu_vendor() == "GenuineIntel"


def _product(a, b, out, bias=None):
    """``f()``: out = a @ b (+ bias) for 2-D host arrays, on the library
    :func:`mkl_products` picks: MKL's sgemm through PyTorch, else numpy's OpenBLAS with the
    rows split across threads that each run BLAS on one thread
    (:func:`~graphexec.core.runtime.blas_threads.matmul_rows`)."""
    if not mkl_products():
        from graphexec.core.runtime.blas_threads import matmul_rows
        return lambda: matmul_rows(np, a, b, out, bias=bias)
    torch = load_torch()
    ta, tb, tout = _t(a), _t(b), _t(out)
    if bias is None:
        return lambda: torch.mm(ta, tb, out=tout)
    tbias = _t(bias)
    return lambda: torch.addmm(tbias, ta, tb, out=tout)


def _fc_rows(p, x, w) -> tuple[int, int]:
    """(rows, K): the FullyConnected data ``x`` as a (rows, K) matrix."""
    rows = x.shape[0] if p.flatten else int(np.prod(x.shape[:-1]))
    return rows, w.shape[1]


@_kernel("FullyConnected")
def fully_connected(call):
    """out = data (flattened to 2-D, or over its last axis) @ weight.T + bias
    (:func:`_product`: MKL's threads are PyTorch's own OpenMP pool; OpenBLAS's idle threads
    spin for a while after a call, taking the cores PyTorch's next kernels need, ATen's
    softmax right after a 1120 x 10000 product: 48 ms against 28 ms, benchmarks/README.md,
    hence its rows on the kernel's own threads)."""
    p = call.params
    rows, k = _fc_rows(p, call.inputs[0], call.inputs[1])
    return _product(call.inputs[0].reshape(rows, k), call.inputs[1].T,
                    call.outputs[0].reshape(rows, p.num_hidden),
                    None if p.no_bias else call.inputs[2])


@_kernel("_backward_FullyConnected")
def fully_connected_backward(call):
    """dX = dY @ W and dW = dY^T @ X (:func:`_product`, as the forward); db the sum of dY
    over rows."""
    p = call.params
    rows, k = _fc_rows(p, call.inputs[1], call.inputs[2])
    og = call.inputs[0].reshape(rows, p.num_hidden)
    x, w = call.inputs[1].reshape(rows, k), call.inputs[2]
    steps = []
    if call.req[0] != "null":
        steps.append(_product(og, w, call.outputs[0].reshape(rows, k)))
    if call.req[1] != "null":
        steps.append(_product(og.T, x, call.outputs[1]))
    if not p.no_bias and call.req[2] != "null":
        db = call.outputs[2]
        steps.append(lambda: np.add.reduce(og, axis=0, out=db))

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


# -- forward-only variants: softmax, gelu, LayerNorm (their backward kernels stay native) ----
@_kernel("SoftmaxOutput", "softmax")
def softmax(call):
    """softmax along one axis, as the native kernels take it (SoftmaxOutput: axis 1 of the
    data flattened to (batch, -1), axis 1 with multi_output, the last with preserve_shape;
    softmax with ``use_length``: over each row's first ``length`` entries, the rest and
    rows of length 0 are 0): ATen's vectorised softmax in one pass per row (1120 x 10000
    on two threads: 7 ms against 33 ms for numpy's five passes; BERT-base's 12 masked
    softmaxes 25 ms against 119 ms, benchmarks/README.md)."""
    torch = load_torch()
    aten = torch.ops.aten
    p, x = call.params, call.inputs[0]
    if call.op_name == "softmax":
        shape, axis = x.shape, p.axis % x.ndim
    elif p.preserve_shape or p.multi_output:
        shape, axis = x.shape, (x.ndim - 1 if p.preserve_shape else 1)
    else:
        shape, axis = (x.shape[0], -1), 1
    tx, out = _t(x).reshape(shape), _t(call.outputs[0]).reshape(shape)
    if call.op_name == "softmax" and p.use_length:
        length = _t(call.inputs[1]).unsqueeze(axis)
        pos = torch.arange(x.shape[axis]).reshape([-1 if k == axis else 1
                                                   for k in range(x.ndim)])

        def run_masked():
            invalid = pos >= length
            aten._softmax.out(tx.masked_fill(invalid, float("-inf")), axis, False, out=out)
            out.masked_fill_(invalid, 0.0)  # rows of length 0 came out NaN
        return run_masked

    def run():
        aten._softmax.out(tx, axis, False, out=out)
    return run


@_kernel("LeakyReLU")
def gelu(call):
    """act_type gelu, 0.5 x (1 + erf(x / sqrt 2)) as MXNet computes it: ATen's vectorised
    erf (BERT-base's 12 gelus 17 ms against 222 ms through scipy's erf)."""
    aten = load_torch().ops.aten
    x, out = _t(call.inputs[0]), _t(call.outputs[0])
    return lambda: aten.gelu.out(x, approximate="none", out=out)


@_kernel("LayerNorm")
def layer_norm(call):
    """Over the last axis: ATen's layer norm (BERT-base's 25 in 6 ms against 58 ms); the
    hidden outputs mean and std = sqrt(var + eps) as the native kernel gives them."""
    aten = load_torch().ops.aten
    x, gamma, beta = (_t(a) for a in call.inputs)
    out, mean, std = (_t(o) for o in call.outputs)
    shape, eps = [x.shape[-1]], float(call.params.eps)

    def run():
        y, m, rstd = aten.native_layer_norm(x, shape, gamma, beta, eps)
        out.copy_(y)
        mean.copy_(m.view(mean.shape))
        std.copy_(rstd.view(std.shape)).reciprocal_()
    return run


# -- RNN --------------------------------------------------------------------------------------
def _rnn_blocks(p, flat, width: int) -> list:
    """PyTorch's parameter list (per layer and direction: w_ih, w_hh, b_ih, b_hh) as views of
    MXNet's flat parameter vector ``flat`` (a numpy array: the parameters or their gradient).
    Gate orders agree: LSTM i, f, g, o; GRU r, z, n with the reset gate applied to the
    recurrent product plus its bias."""
    from graphexec.core.ops.rnn import param_layout  # declared once the op plugins load
    views = {(b.layer, b.direction, b.kind): flat[b.offset:b.offset + b.size].reshape(b.shape)
             for b in param_layout(p, width)}
    return [views[(layer, d, kind)] for layer in range(p.num_layers)
            for d in range(2 if p.bidirectional else 1)
            for kind in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias")]


def _rnn_run(p, x, weights: list, states: list, train: bool) -> tuple:
    """(output, final state[, final cell state]) of PyTorch's fused RNN (oneDNN's LSTM, the
    kernel MXNet 1.9.1 runs on CPU; ATen's cells for GRU and vanilla RNNs)."""
    aten = load_torch().ops.aten
    bidir = bool(p.bidirectional)
    if p.mode == "lstm":
        return aten.lstm.input(x, states, weights, True, p.num_layers, 0.0, train, bidir, False)
    fn = {"gru": aten.gru.input, "rnn_tanh": aten.rnn_tanh.input,
          "rnn_relu": aten.rnn_relu.input}[p.mode]
    return fn(x, states[0], weights, True, p.num_layers, 0.0, train, bidir, False)


class _RnnInputs:
    """The forward's inputs as tensors: data, every weight and bias block (its own tensor,
    so each gradient comes out by itself: views of one flat leaf would each add a gradient
    the size of the whole vector), the begin states."""

    def __init__(self, p, data, flat, states: list):
        self.p = p
        self.tensors = [_t(data), *(_t(w) for w in _rnn_blocks(p, flat, data.shape[2])),
                        *(_t(s) for s in states)]
        self.num_blocks = len(self.tensors) - 1 - len(states)

    def _run(self, tensors: list, train: bool) -> tuple:
        nb = self.num_blocks
        return _rnn_run(self.p, tensors[0], tensors[1:1 + nb], tensors[1 + nb:], train)

    def record(self) -> tuple:
        """(leaves, results) of a forward recorded for autograd."""
        leaves = [t.detach().requires_grad_() for t in self.tensors]
        with load_torch().enable_grad():
            return leaves, self._run(leaves, True)

    def infer(self) -> tuple:
        with load_torch().no_grad():
            return self._run(self.tensors, False)


def _num_states(p) -> int:
    return 2 if p.mode == "lstm" else 1


@_kernel("RNN")
def rnn(call):
    """Inference runs without autograd; a training forward records PyTorch's autograd graph
    in the node's state (shared with ``_backward_RNN``), which holds what the backward reads
    (oneDNN's workspace), so the ``reserve`` output stays unwritten. Supported configurations:
    ``select._rnn`` (no projection, clipping, sequence lengths or dropout between layers)."""
    torch = load_torch()
    p = call.params
    ns = _num_states(p)
    inputs = _RnnInputs(p, call.inputs[0], call.inputs[1], call.inputs[2:2 + ns])
    visible = [_t(o) for o in call.outputs[:-1]]
    state = call.state
    train = call.is_train

    def run():
        if train:
            state["torch_rnn"] = recorded = inputs.record()
            results = recorded[1]
        else:
            state.pop("torch_rnn", None)  # a later backward records from these inputs
            results = inputs.infer()
        with torch.no_grad():
            for o, r in zip(visible, results):
                o.copy_(r)
    return run


@_kernel("_backward_RNN")
def rnn_backward(call):
    """Gradients of data, parameters and begin states through the autograd graph the
    training forward recorded (kept for repeated backward calls); after an inference forward
    (MXNet differentiates what it computed) the forward is recorded again from the inputs."""
    from graphexec.core.ops.rnn import backward_inputs
    torch = load_torch()
    p = call.params
    ns = _num_states(p)
    got = dict(zip(backward_inputs(p), call.inputs))
    states = [got["state"], got.get("state_cell")][:ns]
    inputs = _RnnInputs(p, got["data"], got["parameters"], states)
    heads = [_t(got["ograd"])]
    if p.state_outputs:
        heads += [_t(got[name]) for name in ("ograd_state", "ograd_statecell")[:ns]]
    # the gradient of each leaf (data, each block of the flat vector, the states) and the
    # output it belongs to
    targets = [call.outputs[0], *_rnn_blocks(p, call.outputs[1], call.inputs[0].shape[2]),
               *call.outputs[2:2 + ns]]
    owners = [0] + [1] * inputs.num_blocks + [2 + k for k in range(ns)]
    pairs = [(i, _t(t)) for i, (t, k) in enumerate(zip(targets, owners))
             if call.req[k] != "null"]
    if not pairs:
        return _nothing
    state = call.state

    def run():
        recorded = state.get("torch_rnn")
        if recorded is None:
            state["torch_rnn"] = recorded = inputs.record()
        leaves, results = recorded
        grads = torch.autograd.grad(list(results[:len(heads)]), [leaves[i] for i, _ in pairs],
                                    heads, retain_graph=True, allow_unused=True)
        with torch.no_grad():
            for (_, out), g in zip(pairs, grads):
                if g is None:
                    out.zero_()
                else:
                    out.copy_(g)
    return run
