"""``gx.optimizer``: MXNet 1.9.1's optimizers (``SGD``, ``NAG``, ``Signum``, ``Adam``,
``AdamW``, ``RMSProp``, ``AdaGrad``, ``AdaDelta``, ``Ftrl``, ``LAMB``), ``Optimizer``,
``create`` / ``register``, ``Updater`` / ``get_updater``.

>>> opt = gx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9, wd=1e-4)
>>> updater = gx.optimizer.get_updater(opt)
>>> updater(0, grad, weight)                    # weight updated in place
"""
from .algorithms import LAMB, NAG, SGD, AdaDelta, AdaGrad, Adam, AdamW, Ftrl, RMSProp, Signum
from .base import Optimizer, OptimizerError, Updater, create, get_updater, register

__all__ = ["Optimizer", "OptimizerError", "Updater", "create", "get_updater", "register", "SGD",
           "NAG", "Signum", "Adam", "AdamW", "RMSProp", "AdaGrad", "AdaDelta", "Ftrl", "LAMB"]
