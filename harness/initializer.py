"""``gx.init`` / ``gx.initializer``: MXNet 1.9.1's parameter initializers.

An initializer is called as ``init(InitDesc(name, attrs), array)`` and fills the array in
place. MXNet's name rules pick what to do: a variable's ``__init__`` attribute (an
initializer's ``dumps()``, e.g. BatchNorm's moving statistics carry ``["zero", {}]`` /
``["one", {}]``) wins; otherwise names ending in ``weight`` get the initializer's own rule,
``bias`` and ``beta`` zeros, ``gamma`` ones, ``min`` zeros, ``max`` ones, anything else is
an error. ``init(name, array)`` with a plain string uses MXNet's older rules (deprecated).

Random draws come from the process-wide generator (``gx.random.seed``); they follow MXNet's
distributions and bounds, not its random streams.
"""
from __future__ import annotations

import json
import logging
import re
import warnings
from math import sqrt
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.ir.random import generator

from .ndarray import load as nd_load
from .registry import Registry

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Zero", "One", "Constant",
           "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu", "Bilinear", "LSTMBias",
           "Load", "Mixed", "InitError"]

log = logging.getLogger("graphexec")


class InitError(GraphexecError, ValueError):
    """An initializer cannot fill a parameter (unknown name pattern, wrong shape)."""


class InitDesc(str):
    """A parameter's name with its variable ``attrs`` (``__init__``, ``__lr_mult__``, ...)
    and the ``global_init`` that handles it."""

    def __new__(cls, name: str, attrs: Mapping[str, str] | None = None,
                global_init: "Initializer | None" = None) -> "InitDesc":
        desc = super().__new__(cls, name)
        desc.attrs = dict(attrs or {})
        desc.global_init = global_init
        return desc


# name suffix -> method, in MXNet's order (InitDesc path)
_SUFFIX_RULES = (("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
                 ("beta", "_init_beta"), ("min", "_init_zero"), ("max", "_init_one"))
# the older rules of init(name, array)
_LEGACY_RULES = (("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
                 ("weight", "_init_weight"), ("moving_mean", "_init_zero"),
                 ("moving_var", "_init_one"), ("moving_inv_var", "_init_zero"),
                 ("moving_avg", "_init_zero"), ("min", "_init_zero"), ("max", "_init_one"))


class Initializer:
    """Base class: subclasses implement ``_init_weight(name, arr)``."""

    def __init__(self, **kwargs: Any):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Callable | None = None

    def set_verbosity(self, verbose: bool = False, print_func: Callable | None = None
                      ) -> "Initializer":
        """Log every initialized parameter with ``print_func(arr)`` (default: its RMS)."""
        self._verbose = verbose
        self._print_func = print_func or (lambda x: str(float(np.sqrt(np.mean(
            np.square(np.asarray(x, np.float64)))))))
        return self

    def _verbose_print(self, desc: str, init: str, arr: Any) -> None:
        if self._verbose and self._print_func:
            log.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """``[name, kwargs]`` as JSON (what a variable's ``__init__`` attribute holds)."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, desc: Any, arr: Any) -> None:
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _SUFFIX_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name: Any, arr: Any) -> None:
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated. please "
                      "use init(mx.init.InitDesc(...), NDArray) instead.", DeprecationWarning,
                      stacklevel=3)
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"arr must be an NDArray, got {type(arr).__name__}")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            method = next((m for s, m in _LEGACY_RULES if name.endswith(s)), "_init_default")
            getattr(self, method)(name, arr)

    def _init_bilinear(self, _: str, arr: Any) -> None:
        arr[...] = bilinear_kernel(arr.shape)

    def _init_loc_bias(self, name: str, arr: Any) -> None:
        if arr.shape[0] != 6:
            raise InitError(f"{name}: a spatial-transformer location bias has 6 values, got "
                            f"shape {arr.shape}")
        arr[...] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_zero(self, _: str, arr: Any) -> None:
        arr[...] = 0.0

    def _init_one(self, _: str, arr: Any) -> None:
        arr[...] = 1.0

    _init_bias = _init_beta = _init_zero
    _init_gamma = _init_one

    def _init_weight(self, name: str, arr: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _init_weight")

    def _init_default(self, name: str, _: Any) -> None:
        raise InitError(f'Unknown initialization pattern for {name}. Default initialization is '
                        f'now limited to "weight", "bias", "gamma" (1.0), and "beta" (0.0). '
                        f'Please use mx.sym.Variable(init=mx.init.*) to set initialization '
                        f'pattern')

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._kwargs})"


_REGISTRY = Registry(Initializer, "initializer")


def register(klass: type) -> type:
    """Register an Initializer subclass under its lower-cased name."""
    return _REGISTRY.register(klass)


def alias(*names: str) -> Callable[[type], type]:
    """Class decorator: register an Initializer under more names."""
    return _REGISTRY.alias(*names)


def create(spec: Any, *args: Any, **kwargs: Any) -> Initializer:
    """An initializer from an instance, a name (``'xavier'``) or ``dumps()`` JSON."""
    return _REGISTRY.create(spec, *args, **kwargs)


def bilinear_kernel(shape: Sequence[int]) -> np.ndarray:
    """MXNet's bilinear upsampling weights for a 4-D ``shape`` (float32)."""
    if len(shape) != 4:
        raise InitError(f"bilinear weights need a 4-D shape, got {tuple(shape)}")
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    x = 1 - np.abs(np.arange(shape[3]) / f - c)
    y = 1 - np.abs(np.arange(shape[2]) / f - c)
    return np.broadcast_to((y[:, None] * x[None, :]).astype(np.float32), tuple(shape))


def _fill(arr: Any, values: np.ndarray) -> None:
    arr[...] = values


@register
@alias("zeros")
class Zero(Initializer):
    """Fills weights with 0."""

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[...] = 0


@register
@alias("ones")
class One(Initializer):
    """Fills weights with 1."""

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[...] = 1


@register
class Constant(Initializer):
    """Fills weights with ``value`` (a scalar or an array of the parameter's shape)."""

    def __init__(self, value: Any):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[...] = np.asarray(self.value)

    def dumps(self) -> str:
        value = self._kwargs["value"]
        if not np.isscalar(value):
            self._kwargs["value"] = np.asarray(value).tolist()
        return super().dumps()


@register
class Uniform(Initializer):
    """Weights from U(-scale, scale)."""

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _: str, arr: Any) -> None:
        _fill(arr, generator().uniform(-self.scale, self.scale, arr.shape))


@register
class Normal(Initializer):
    """Weights from N(0, sigma^2)."""

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _: str, arr: Any) -> None:
        _fill(arr, generator().normal(0, self.sigma, arr.shape))


@register
class Orthogonal(Initializer):
    """An orthogonal matrix (from the SVD of a random one) times ``scale``."""

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise InitError(f"Orthogonal: rand_type {rand_type!r}; expected 'uniform' or "
                            f"'normal'")
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, _: str, arr: Any) -> None:
        nout, nin = arr.shape[0], int(np.prod(arr.shape[1:]))
        gen = generator()
        tmp = (gen.uniform(-1.0, 1.0, (nout, nin)) if self.rand_type == "uniform"
               else gen.normal(0.0, 1.0, (nout, nin)))
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        _fill(arr, self.scale * res.reshape(arr.shape))


@register
class Xavier(Initializer):
    """Glorot initialization: U(-c, c) (or N(0, c^2) with ``rnd_type='gaussian'``),
    c = sqrt(magnitude / factor), factor = fan_in, fan_out or their mean (``factor_type``
    'in', 'out', 'avg'); fans count the receptive field of convolution weights."""

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg",
                 magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type, self.factor_type = rnd_type, factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name: str, arr: Any) -> None:
        shape = arr.shape
        if len(shape) < 2:
            raise InitError(f"Xavier initializer cannot be applied to vector {name}. It "
                            f"requires at least 2D.")
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise InitError(f"Xavier: incorrect factor type {self.factor_type!r}; expected "
                            f"'avg', 'in' or 'out'")
        scale = sqrt(self.magnitude / factors[self.factor_type])
        if self.rnd_type == "uniform":
            _fill(arr, generator().uniform(-scale, scale, shape))
        elif self.rnd_type == "gaussian":
            _fill(arr, generator().normal(0, scale, shape))
        else:
            raise InitError(f"Xavier: unknown random type {self.rnd_type!r}; expected "
                            f"'uniform' or 'gaussian'")


@register
class MSRAPrelu(Xavier):
    """He initialization for PReLU networks: Gaussian Xavier with magnitude
    2 / (1 + slope^2)."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Bilinear upsampling weights (for Deconvolution)."""

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[...] = bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """LSTM biases: zeros, with the forget gate's (the second quarter) at ``forget_bias``."""

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _: str, arr: Any) -> None:
        arr[...] = 0.0
        n = int(arr.shape[0] / 4)
        arr[n:2 * n] = self.forget_bias


class Load:
    """Values from a saved parameter dict (or file; ``arg:`` / ``aux:`` prefixes dropped),
    ``default_init`` for the names it lacks."""

    def __init__(self, param: Any, default_init: Any = None, verbose: bool = False):
        if isinstance(param, str):
            param = nd_load(param)
        if not isinstance(param, dict):
            raise InitError(f"Load needs a dict of arrays (or a file holding one), got "
                            f"{type(param).__name__}")
        self.param = {(k[4:] if k.startswith(("arg:", "aux:")) else k): v
                      for k, v in param.items()}
        self.default_init, self.verbose = default_init, verbose

    def __call__(self, name: str, arr: Any) -> None:
        if name in self.param:
            value = self.param[name]
            if tuple(arr.shape) != tuple(value.shape):
                raise InitError(f"Parameter {name} cannot be initialized from loading. Shape "
                                f"mismatch, target {tuple(arr.shape)} vs loaded "
                                f"{tuple(value.shape)}")
            arr[...] = value
            if self.verbose:
                log.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise InitError(f"Cannot Initialize {name}. Not found in loaded param and no "
                            f"default Initializer is provided.")
        self.default_init(name, arr)
        if self.verbose:
            log.info("Initialized %s by default", name)


class Mixed:
    """The initializer of the first regular expression in ``patterns`` matching the name."""

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]):
        if len(patterns) != len(initializers):
            raise InitError(f"Mixed: {len(patterns)} patterns for {len(initializers)} "
                            f"initializers")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name: str, arr: Any) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise InitError(f"Parameter name {name} did not match any pattern. Consider add a "
                        f'".*" pattern at the and with default Initializer.')
