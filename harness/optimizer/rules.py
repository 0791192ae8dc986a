"""The update rules of MXNet 1.9.1's optimizer operators (``sgd_mom_update``,
``multi_sgd_mom_update``, ``nag_mom_update``, ``adam_update``, ``_adamw_update``,
``rmsprop_update``, ``rmspropalex_update``, ``ftrl_update``, ``signum_update``,
``lamb_update_phase1/2``), each applied in place to a weight and its states.

Arithmetic follows the C++ kernels term by term in the weight's dtype: scalars are cast to
that dtype first and combined in the kernels' order (``lr * wd`` before it multiplies the
weight, ...), so float32 results match MXNet's to the last bits in most elements. Each rule
is a short sequence of numpy calls writing into the arrays or into scratch buffers reused
between calls (no allocation per update).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["sgd", "nag", "signum", "adam", "adamw", "rmsprop", "rmspropalex", "ftrl",
           "lamb_phase1", "lamb_phase2", "scratch"]

_LOCAL = threading.local()


def scratch(like: np.ndarray, k: int = 0) -> np.ndarray:
    """The ``k``-th scratch array of ``like``'s shape and dtype (reused across updates of
    this thread)."""
    pool = getattr(_LOCAL, "pool", None)
    if pool is None:
        pool = _LOCAL.pool = {}
    key = (like.shape, like.dtype, k)
    buf = pool.get(key)
    if buf is None:
        buf = pool[key] = np.empty(like.shape, like.dtype)
    return buf


def _scalars(dtype: np.dtype, *values: float) -> list:
    t = np.dtype(dtype).type
    return [t(v) for v in values]


def _rescaled(g: np.ndarray, rescale: Any, clip: Any, out: np.ndarray) -> np.ndarray:
    """clip(rescale * g) into ``out`` (no clipping when clip < 0)."""
    np.multiply(g, rescale, out=out)
    if clip >= 0:
        np.clip(out, -clip, clip, out=out)
    return out


def sgd(w: np.ndarray, g: np.ndarray, mom: np.ndarray | None, lr: float, wd: float,
        momentum: float, rescale: float, clip: float) -> None:
    """MultiSGDKernel: mom = momentum*mom - lr*wd*w - lr*clip(rescale*g); w += mom (the
    momentum is 0 and not kept without ``mom``)."""
    lr, wd, momentum, rescale, clip = _scalars(w.dtype, lr, wd, momentum, rescale, clip)
    step = scratch(w, 0)
    if clip >= 0:
        np.multiply(_rescaled(g, rescale, clip, step), lr, out=step)
    else:
        np.multiply(g, lr * rescale, out=step)
    decay = np.multiply(w, lr * wd, out=scratch(w, 1))
    m = mom if mom is not None else scratch(w, 2)
    if mom is not None:
        np.multiply(mom, momentum, out=m)
    else:
        m[...] = 0
    np.subtract(m, decay, out=m)
    np.subtract(m, step, out=m)
    np.add(w, m, out=w)


def nag(w: np.ndarray, g: np.ndarray, mom: np.ndarray, lr: float, wd: float, momentum: float,
        rescale: float, clip: float) -> None:
    """NAGMomKernel run in place, as MXNet's optimizer runs it (``out=weight``): mom *=
    momentum; w = w - mom + (momentum + 1)*(mom - lr*(clip(rescale*g) + wd*w)); then
    mom -= lr*(clip(rescale*g) + wd*w) with the weight already updated (the kernel reads
    the weight after writing the output that aliases it)."""
    lr, wd, momentum, rescale, clip = _scalars(w.dtype, lr, wd, momentum, rescale, clip)
    gr = _rescaled(g, rescale, clip, scratch(w, 0))
    d = np.add(gr, np.multiply(w, wd, out=scratch(w, 1)), out=scratch(w, 1))
    np.multiply(d, lr, out=d)
    np.multiply(mom, momentum, out=mom)
    ahead = np.subtract(mom, d, out=d)
    np.multiply(ahead, momentum + 1, out=ahead)
    np.subtract(w, mom, out=w)
    np.add(w, ahead, out=w)
    d = np.add(gr, np.multiply(w, wd, out=scratch(w, 1)), out=scratch(w, 1))
    np.multiply(d, lr, out=d)
    np.subtract(mom, d, out=mom)


def signum(w: np.ndarray, g: np.ndarray, mom: np.ndarray | None, lr: float, wd: float,
           momentum: float, rescale: float, clip: float, wd_lh: float) -> None:
    """SignumKernel (signsgd_update without momentum): the weight moves by lr times the sign
    of the momentum (of the gradient for signSGD), decayed by lr*wd_lh (by lr*wd)."""
    lr, wd, momentum, rescale, clip, wd_lh = _scalars(w.dtype, lr, wd, momentum, rescale, clip,
                                                      wd_lh)
    if mom is None:  # SignSGDKernel: (1 - lr*wd)*w - lr*sign(g)
        np.multiply(w, 1 - lr * wd, out=w)
        np.subtract(w, np.multiply(np.sign(g, out=scratch(w, 0)), lr, out=scratch(w, 0)), out=w)
        return
    one_minus = 1 - momentum
    step = scratch(w, 0)
    if clip >= 0:
        np.multiply(_rescaled(g, rescale, clip, step), one_minus, out=step)
    else:
        np.multiply(g, one_minus * rescale, out=step)
    np.multiply(mom, momentum, out=mom)
    np.subtract(mom, np.multiply(w, one_minus * wd, out=scratch(w, 1)), out=mom)
    np.subtract(mom, step, out=mom)
    np.multiply(w, 1 - lr * wd_lh, out=w)
    np.add(w, np.multiply(np.sign(mom, out=step), lr, out=step), out=w)


def adam(w: np.ndarray, g: np.ndarray, mean: np.ndarray, var: np.ndarray, lr: float,
         wd: float, beta1: float, beta2: float, epsilon: float, rescale: float,
         clip: float) -> None:
    """AdamUpdateKernel: g' = clip(rescale*g + wd*w); mean = b1*mean + (1-b1)*g';
    var = b2*var + (1-b2)*g'^2; w -= lr*mean/(sqrt(var) + eps)."""
    lr, wd, beta1, beta2, epsilon, rescale, clip = _scalars(
        w.dtype, lr, wd, beta1, beta2, epsilon, rescale, clip)
    gr = np.multiply(g, rescale, out=scratch(w, 0))
    np.add(gr, np.multiply(w, wd, out=scratch(w, 1)), out=gr)
    if clip >= 0:
        np.clip(gr, -clip, clip, out=gr)
    _moments(gr, mean, var, beta1, beta2, scratch(w, 1))
    denom = np.sqrt(var, out=scratch(w, 1))
    np.add(denom, epsilon, out=denom)
    np.multiply(mean, lr, out=gr)
    np.divide(gr, denom, out=gr)
    np.subtract(w, gr, out=w)


def _moments(gr: np.ndarray, mean: np.ndarray, var: np.ndarray, beta1: Any, beta2: Any,
             tmp: np.ndarray) -> None:
    """mean = b1*mean + (1-b1)*gr; var = b2*var + (1-b2)*gr*gr (``tmp`` is scratch)."""
    np.multiply(mean, beta1, out=mean)
    np.add(mean, np.multiply(gr, 1 - beta1, out=tmp), out=mean)
    np.multiply(gr, 1 - beta2, out=tmp)
    np.multiply(tmp, gr, out=tmp)
    np.multiply(var, beta2, out=var)
    np.add(var, tmp, out=var)


def adamw(w: np.ndarray, g: np.ndarray, mean: np.ndarray, var: np.ndarray, lr: float,
          wd: float, beta1: float, beta2: float, epsilon: float, eta: float, rescale: float,
          clip: float) -> None:
    """``_adamw_update``: g' = clip(rescale*g); mean, var as Adam;
    w -= eta*(lr*mean/(sqrt(var) + eps) + wd*w) (decoupled weight decay)."""
    lr, wd, beta1, beta2, epsilon, eta, rescale, clip = _scalars(
        w.dtype, lr, wd, beta1, beta2, epsilon, eta, rescale, clip)
    gr = _rescaled(g, rescale, clip, scratch(w, 0))
    tmp = scratch(w, 1)
    np.multiply(mean, beta1, out=mean)
    np.add(mean, np.multiply(gr, 1 - beta1, out=tmp), out=mean)
    np.square(gr, out=tmp)
    np.multiply(tmp, 1 - beta2, out=tmp)
    np.multiply(var, beta2, out=var)
    np.add(var, tmp, out=var)
    denom = np.sqrt(var, out=tmp)
    np.add(denom, epsilon, out=denom)
    np.multiply(mean, lr, out=gr)
    np.divide(gr, denom, out=gr)
    np.add(gr, np.multiply(w, wd, out=tmp), out=gr)
    np.multiply(gr, eta, out=gr)
    np.subtract(w, gr, out=w)


def _decayed_grad(w: np.ndarray, g: np.ndarray, wd: Any, rescale: Any, clip: Any
                  ) -> np.ndarray:
    """clip(rescale*g + wd*w) in scratch 0 (the RMSProp kernels' rescaled gradient)."""
    gr = np.multiply(g, rescale, out=scratch(w, 0))
    np.add(gr, np.multiply(w, wd, out=scratch(w, 1)), out=gr)
    if clip >= 0:
        np.clip(gr, -clip, clip, out=gr)
    return gr


def rmsprop(w: np.ndarray, g: np.ndarray, n: np.ndarray, lr: float, wd: float, gamma1: float,
            epsilon: float, rescale: float, clip: float, clip_weights: float) -> None:
    """RMSPropUpdateKernel (Tieleman & Hinton): n = (1-g1)*g'^2 + g1*n;
    w -= lr*g'/sqrt(n + eps), then clipped to ``clip_weights`` when >= 0."""
    lr, wd, gamma1, epsilon, rescale, clip, clip_weights = _scalars(
        w.dtype, lr, wd, gamma1, epsilon, rescale, clip, clip_weights)
    gr = _decayed_grad(w, g, wd, rescale, clip)
    tmp = np.square(gr, out=scratch(w, 1))
    np.multiply(tmp, 1 - gamma1, out=tmp)
    np.multiply(n, gamma1, out=n)
    np.add(n, tmp, out=n)
    np.add(n, epsilon, out=tmp)
    np.sqrt(tmp, out=tmp)
    np.divide(gr, tmp, out=gr)
    np.multiply(gr, lr, out=gr)
    np.subtract(w, gr, out=w)
    if clip_weights >= 0:
        np.clip(w, -clip_weights, clip_weights, out=w)


def rmspropalex(w: np.ndarray, g: np.ndarray, n: np.ndarray, gbar: np.ndarray,
                delta: np.ndarray, lr: float, wd: float, gamma1: float, gamma2: float,
                epsilon: float, rescale: float, clip: float, clip_weights: float) -> None:
    """RMSPropAlexUpdateKernel (Graves, centered): n = (1-g1)*g'^2 + g1*n;
    gbar = (1-g1)*g' + g1*gbar; delta = g2*delta - lr*g'/sqrt(n - gbar^2 + eps);
    w += delta, then clipped to ``clip_weights`` when >= 0."""
    lr, wd, gamma1, gamma2, epsilon, rescale, clip, clip_weights = _scalars(
        w.dtype, lr, wd, gamma1, gamma2, epsilon, rescale, clip, clip_weights)
    gr = _decayed_grad(w, g, wd, rescale, clip)
    tmp = scratch(w, 1)
    np.multiply(gr, 1 - gamma1, out=tmp)
    np.multiply(tmp, gr, out=tmp)
    np.multiply(n, gamma1, out=n)
    np.add(tmp, n, out=n)
    np.multiply(gbar, gamma1, out=gbar)
    np.add(np.multiply(gr, 1 - gamma1, out=tmp), gbar, out=gbar)
    np.square(gbar, out=tmp)
    np.subtract(n, tmp, out=tmp)
    np.add(tmp, epsilon, out=tmp)
    np.sqrt(tmp, out=tmp)
    np.multiply(gr, lr, out=gr)
    np.divide(gr, tmp, out=gr)
    np.multiply(delta, gamma2, out=delta)
    np.subtract(delta, gr, out=delta)
    np.add(w, delta, out=w)
    if clip_weights >= 0:
        np.clip(w, -clip_weights, clip_weights, out=w)


def ftrl(w: np.ndarray, g: np.ndarray, z: np.ndarray, n: np.ndarray, lr: float, wd: float,
         lamda1: float, beta: float, rescale: float, clip: float) -> None:
    """FtrlUpdateKernel: z += g' - (sqrt(n + g'^2) - sqrt(n))*w/lr; n += g'^2;
    w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)."""
    lr, wd, lamda1, beta, rescale, clip = _scalars(w.dtype, lr, wd, lamda1, beta, rescale, clip)
    gr = _rescaled(g, rescale, clip, scratch(w, 0))
    sq = np.square(gr, out=scratch(w, 1))
    a = np.add(n, sq, out=scratch(w, 2))
    np.sqrt(a, out=a)
    np.subtract(a, np.sqrt(n, out=scratch(w, 3)), out=a)
    np.multiply(a, w, out=a)
    np.divide(a, lr, out=a)
    np.subtract(gr, a, out=gr)
    np.add(z, gr, out=z)
    np.add(n, sq, out=n)
    num = np.sign(z, out=scratch(w, 0))
    np.multiply(num, lamda1, out=num)
    np.subtract(num, z, out=num)
    den = np.sqrt(n, out=scratch(w, 1))
    np.add(den, beta, out=den)
    np.divide(den, lr, out=den)
    np.add(den, wd, out=den)
    np.divide(num, den, out=w)
    np.multiply(w, np.abs(z) > lamda1, out=w)


def lamb_phase1(w: np.ndarray, g: np.ndarray, mean: np.ndarray, var: np.ndarray, wd: float,
                beta1: float, beta2: float, epsilon: float, t: int, bias_correction: bool,
                rescale: float, clip: float) -> np.ndarray:
    """LambUpdatePhaseOneKernel: the moments as Adam's (without weight decay in the
    gradient); returns the update direction mean^/(sqrt(var^) + eps) + wd*w (in scratch)."""
    wd, beta1, beta2, epsilon, rescale, clip = _scalars(w.dtype, wd, beta1, beta2, epsilon,
                                                        rescale, clip)
    gr = _rescaled(g, rescale, clip, scratch(w, 0))
    _moments(gr, mean, var, beta1, beta2, scratch(w, 1))
    mean_hat, var_hat = mean, var
    if bias_correction:
        beta1_t, beta2_t = _scalars(w.dtype, beta1 ** t, beta2 ** t)
        mean_hat = np.divide(mean, 1 - beta1_t, out=scratch(w, 0))
        var_hat = np.divide(var, 1 - beta2_t, out=scratch(w, 1))
    direction = np.sqrt(var_hat, out=scratch(w, 1))
    np.add(direction, epsilon, out=direction)
    np.divide(mean_hat, direction, out=direction)
    np.add(direction, np.multiply(w, wd, out=scratch(w, 0)), out=direction)
    return direction


def lamb_phase2(w: np.ndarray, direction: np.ndarray, r1: float, r2: float, lr: float,
                lower_bound: float, upper_bound: float) -> None:
    """LambUpdatePhaseTwoKernel: the trust ratio r1/r2 (r1 bounded; 1 when either is 0)
    scales lr; w -= lr*direction."""
    r1, r2, lr, lower_bound, upper_bound = _scalars(w.dtype, r1, r2, lr, lower_bound,
                                                    upper_bound)
    if lower_bound >= 0:
        r1 = max(r1, lower_bound)
    if upper_bound >= 0:
        r1 = min(r1, upper_bound)
    if r1 != 0 and r2 != 0:
        lr = lr * r1 / r2
    np.subtract(w, np.multiply(direction, lr, out=direction), out=w)
