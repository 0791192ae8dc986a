"""Cases for the normalisation family (InstanceNorm, GroupNorm, L2Normalization, LRN):
float64 twins written from the definitions (core/ops/norm.py); tests/test_vision_geometry.py
compares with MXNet's own numbers."""
from __future__ import annotations

import numpy as np

from . import OpCase

CASES: list[OpCase] = []


def _normalised(x, groups: int, eps: float):
    xg = np.asarray(x, np.float64).reshape(x.shape[0], groups, -1)
    mu, var = xg.mean(axis=2, keepdims=True), xg.var(axis=2, keepdims=True)
    return (xg - mu) / np.sqrt(var + eps), mu[..., 0], np.sqrt(var + eps)[..., 0]


def instance_norm_twin(x, gamma, beta, *, eps=1e-3):
    y, _, _ = _normalised(x, x.shape[1], eps)
    return (y * np.asarray(gamma, np.float64)[None, :, None]
            + np.asarray(beta, np.float64)[None, :, None]).reshape(x.shape)


def group_norm_twin(x, gamma, beta, *, num_groups=1, eps=1e-5, output_mean_var=False):
    y, mu, sd = _normalised(x, num_groups, eps)
    out = (y * np.asarray(gamma, np.float64)[None, :, None]
           + np.asarray(beta, np.float64)[None, :, None]).reshape(x.shape)
    return [out, mu, sd] if output_mean_var else out


def l2_twin(x, *, mode="instance", eps=1e-10):
    x = np.asarray(x, np.float64)
    axes = {"instance": tuple(range(1, x.ndim)), "channel": (1,),
            "spatial": tuple(range(2, x.ndim))}[mode]
    return x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)


def lrn_twin(x, *, nsize, alpha=1e-4, beta=0.75, knorm=2.0):
    x = np.asarray(x, np.float64)
    half, c = (nsize - 1) // 2, x.shape[1]
    out = np.empty_like(x)
    for ch in range(c):
        window = x[:, max(0, ch - half):ch + half + 1]
        out[:, ch] = x[:, ch] * (knorm + alpha / nsize * (window ** 2).sum(axis=1)) ** -beta
    return out


def _positive_gamma(rng, shape, dtype, index):
    return None if index == 0 else rng.uniform(0.5, 1.5, size=shape).astype(dtype)


CASES += [
    OpCase("InstanceNorm", [(2, 3, 4, 5), (3,), (3,)], instance_norm_twin, gen=_positive_gamma),
    OpCase("InstanceNorm", [(2, 3, 6), (3,), (3,)], instance_norm_twin, id="3d",
           attrs={"eps": 0.1}, gen=_positive_gamma),
    OpCase("GroupNorm", [(2, 4, 3, 3), (2,), (2,)], group_norm_twin, attrs={"num_groups": 2},
           gen=_positive_gamma),
    OpCase("GroupNorm", [(2, 6, 5), (3,), (3,)], group_norm_twin, id="mean_std",
           attrs={"num_groups": 3, "eps": 0.01, "output_mean_var": True},
           gen=_positive_gamma, grad_inputs=()),
]
for _mode in ("instance", "channel", "spatial"):
    CASES.append(OpCase("L2Normalization", [(2, 3, 4, 2)], l2_twin, attrs={"mode": _mode},
                        id=_mode))
CASES += [
    OpCase("L2Normalization", [(3, 4)], l2_twin, id="2d"),
    OpCase("LRN", [(2, 5, 3, 3)], lrn_twin, attrs={"nsize": 3}),
    OpCase("LRN", [(1, 6, 2, 3)], lrn_twin, id="n5",
           attrs={"nsize": 5, "alpha": 0.01, "beta": 0.5, "knorm": 1.5}),
    OpCase("LRN", [(1, 6, 2, 2)], lrn_twin, attrs={"nsize": 4, "alpha": 0.1}, id="even"),
]
