"""MXNet 1.9.1's optimizers with their defaults: ``SGD``, ``NAG``, ``Signum``, ``Adam``,
``AdamW``, ``RMSProp`` (``centered`` for Graves' variant), ``AdaGrad``, ``AdaDelta``,
``Ftrl``, ``LAMB``. Each ``update`` computes the step's scalars as MXNet's Python layer does
and applies the kernel's rule in place (:mod:`.rules`)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import rules
from .base import Optimizer, register, zeros_like

__all__ = ["SGD", "NAG", "Signum", "Adam", "AdamW", "RMSProp", "AdaGrad", "AdaDelta", "Ftrl",
           "LAMB"]


def _plain(*arrays: Any) -> list:
    """Base-class numpy views (the rules' ufunc calls skip the subclass's dispatch)."""
    return [None if a is None else np.asarray(a) for a in arrays]


class _MasterLast(Optimizer):
    """Optimizers whose multi-precision state is (state, float32 master copy), as MXNet's
    SGD and NAG keep it."""

    def create_state_multi_precision(self, index: Any, weight: Any) -> Any:
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        return super().create_state_multi_precision(index, weight)

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        if self.multi_precision and weight.dtype == np.float16:
            inner, master = state
            self.update(index, master, grad.astype(np.float32), inner)
            weight[...] = master
        else:
            self.update(index, weight, grad, state)


@register
class SGD(_MasterLast):
    """Stochastic gradient descent with momentum (``multi_sgd_mom_update``):
    mom = momentum*mom - lr*wd*w - lr*clip(rescale_grad*g); w += mom.
    ``lazy_update`` (row-sparse gradients) is accepted; gradients are dense."""

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = 4

    def create_state(self, index: Any, weight: Any) -> Any:
        return zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        rules.sgd(*_plain(weight, grad, state), lr, wd, self.momentum, self.rescale_grad,
                  self._clip())


@register
class NAG(_MasterLast):
    """Nesterov accelerated gradient (``nag_mom_update``; plain SGD without momentum)."""

    def __init__(self, momentum: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index: Any, weight: Any) -> Any:
        return zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if state is None:
            rules.sgd(*_plain(weight, grad), None, lr, wd, 0.0, self.rescale_grad, self._clip())
        else:
            rules.nag(*_plain(weight, grad, state), lr, wd, self.momentum, self.rescale_grad,
                      self._clip())


@register
class Signum(Optimizer):
    """signSGD (no momentum) and Signum: the weight moves by lr times the sign of the
    momentum; ``wd_lh`` is decoupled weight decay."""

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index: Any, weight: Any) -> Any:
        return zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        rules.signum(*_plain(weight, grad, state), lr, wd, self.momentum, self.rescale_grad,
                     self._clip(), self.wd_lh)


@register
class Adam(Optimizer):
    """Adam (``adam_update``) with the bias correction folded into the learning rate:
    lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)."""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def create_state(self, index: Any, weight: Any) -> Any:
        return (zeros_like(weight), zeros_like(weight))

    def _corrected_lr(self, index: Any) -> tuple[float, float]:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        return lr * math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t), wd

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        lr, wd = self._corrected_lr(index)
        mean, var = state
        rules.adam(*_plain(weight, grad, mean, var), lr, wd, self.beta1, self.beta2,
                   self.epsilon, self.rescale_grad, self._clip())


@register
class AdamW(Adam):
    """Adam with decoupled weight decay (``_adamw_update`` with eta 1): the bias-corrected
    learning rate as Adam's when ``correct_bias``; w -= lr*mean/(sqrt(var)+eps) + wd*w.
    (MXNet 1.9.1 has the operator; the optimizer class is GluonNLP's and MXNet 2's.)"""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, correct_bias: bool = True, **kwargs: Any):
        super().__init__(learning_rate, beta1, beta2, epsilon, **kwargs)
        self.correct_bias = correct_bias

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        if self.correct_bias:
            lr, wd = self._corrected_lr(index)
        else:
            self._update_count(index)
            lr, wd = self._get_lr(index), self._get_wd(index)
        mean, var = state
        rules.adamw(*_plain(weight, grad, mean, var), lr, wd, self.beta1, self.beta2,
                    self.epsilon, 1.0, self.rescale_grad, self._clip())


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's (``rmsprop_update``), or Graves' centered variant
    (``rmspropalex_update``) with ``centered=True``; ``clip_weights`` bounds the weights."""

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False, clip_weights: float | None = None,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered, self.clip_weights = centered, clip_weights

    def create_state(self, index: Any, weight: Any) -> Any:
        count = 3 if self.centered else 1
        return tuple(zeros_like(weight) for _ in range(count))

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        clip_weights = self.clip_weights if self.clip_weights else -1.0
        if self.centered:
            rules.rmspropalex(*_plain(weight, grad, *state), lr, wd, self.gamma1, self.gamma2,
                              self.epsilon, self.rescale_grad, self._clip(), clip_weights)
        else:
            rules.rmsprop(*_plain(weight, grad, state[0]), lr, wd, self.gamma1, self.epsilon,
                          self.rescale_grad, self._clip(), clip_weights)


@register
class AdaGrad(Optimizer):
    """AdaGrad (MXNet's Python formula): history += g'^2;
    w += -lr * (g' / sqrt(history + eps) + wd*w), g' = clip(rescale_grad*g)."""

    def __init__(self, eps: float = 1e-7, **kwargs: Any):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: Any, weight: Any) -> Any:
        return zeros_like(weight, np.float32)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        w, g, history = _plain(weight, grad, state)
        t = w.dtype.type
        gr = np.multiply(g, t(self.rescale_grad), out=rules.scratch(w, 0))
        if self.clip_gradient is not None:
            np.clip(gr, -self.clip_gradient, self.clip_gradient, out=gr)
        tmp = np.square(gr, out=rules.scratch(w, 1))
        np.add(history, tmp, out=history)
        np.add(history, t(self.float_stable_eps), out=tmp)
        np.sqrt(tmp, out=tmp)
        np.divide(gr, tmp, out=gr)
        np.add(gr, np.multiply(w, t(wd), out=tmp), out=gr)
        np.multiply(gr, t(-lr), out=gr)
        np.add(w, gr, out=w)


@register
class AdaDelta(Optimizer):
    """AdaDelta (MXNet's Python formula): acc_g = rho*acc_g + (1-rho)*g'^2;
    delta = sqrt(acc_delta + eps) / sqrt(acc_g + eps) * g';
    acc_delta = rho*acc_delta + (1-rho)*delta^2; w -= delta + wd*w."""

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any):
        super().__init__(**kwargs)
        self.rho, self.epsilon = rho, epsilon

    def create_state(self, index: Any, weight: Any) -> Any:
        return (zeros_like(weight, np.float32), zeros_like(weight, np.float32))

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        wd = self._get_wd(index)
        self._update_count(index)
        w, g, acc_g, acc_delta = _plain(weight, grad, *state)
        t = w.dtype.type
        # Python computes the scalars in double before they meet the arrays
        rho, eps, keep = t(self.rho), t(self.epsilon), t(1.0 - self.rho)
        gr = np.multiply(g, t(self.rescale_grad), out=rules.scratch(w, 0))
        if self.clip_gradient is not None:
            np.clip(gr, -self.clip_gradient, self.clip_gradient, out=gr)
        tmp = rules.scratch(w, 1)
        np.multiply(acc_g, rho, out=acc_g)
        np.add(acc_g, np.multiply(np.multiply(gr, keep, out=tmp), gr, out=tmp), out=acc_g)
        delta = np.sqrt(np.add(acc_delta, eps, out=tmp), out=tmp)
        np.divide(delta, np.sqrt(np.add(acc_g, eps, out=rules.scratch(w, 2)),
                                 out=rules.scratch(w, 2)), out=delta)
        np.multiply(delta, gr, out=delta)
        np.multiply(acc_delta, rho, out=acc_delta)
        np.add(acc_delta, np.multiply(np.multiply(delta, keep, out=gr), delta, out=gr),
               out=acc_delta)
        np.add(delta, np.multiply(w, t(wd), out=gr), out=delta)
        np.subtract(w, delta, out=w)


@register
class Ftrl(Optimizer):
    """FTRL-proximal (``ftrl_update``) with L1 strength ``lamda1`` and ``beta``."""

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.lamda1, self.beta = lamda1, beta
        self.lr = learning_rate

    def create_state(self, index: Any, weight: Any) -> Any:
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        wd, lr = self._get_wd(index), self._get_lr(index)
        z, n = state
        rules.ftrl(*_plain(weight, grad, z, n), lr, wd, self.lamda1, self.beta,
                   self.rescale_grad, self._clip())


@register
class LAMB(Optimizer):
    """LAMB (``lamb_update_phase1`` / ``phase2``): Adam's moments, the direction
    mean^/(sqrt(var^)+eps) + wd*w, scaled by the trust ratio ||w|| / ||direction||
    (``lower_bound`` / ``upper_bound`` bound ||w||)."""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: float | None = None,
                 upper_bound: float | None = None, bias_correction: bool = True,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index: Any, weight: Any) -> Any:
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        w, g, mean, var = _plain(weight, grad, *state)
        direction = rules.lamb_phase1(w, g, mean, var, wd, self.beta1, self.beta2,
                                      self.epsilon, t, self.bias_correction,
                                      self.rescale_grad, self._clip())
        r1 = float(np.linalg.norm(w.reshape(-1)))
        r2 = float(np.linalg.norm(direction.reshape(-1)))
        rules.lamb_phase2(w, direction, r1, r2, lr, self.lower_bound or -1.0,
                          self.upper_bound or -1.0)

