"""Cases for the legacy and single-device layers (core/ops/legacy.py): BatchNorm_v1,
SyncBatchNorm, BatchNormWithReLU, Convolution_v1 and Pooling_v1, against float64 twins of
what MXNet 1.9.1 computes (BatchNorm_v1's var output is the variance; Pooling_v1 divides every
avg window by the kernel's area and pads max windows with zeros)."""
from __future__ import annotations

import numpy as np

from . import OpCase
from .conv import conv_twin, pool_twin
from .nn import _bn_inputs, bn_twin

CASES: list[OpCase] = []
_BN_SHAPES = [(4, 3, 2, 2)] + [(3,)] * 4


def bn_v1_twin(train: bool, relu: bool = False):
    base = bn_twin(train)

    def twin(x, gamma, beta, mean, var, *, eps=1e-3, output_mean_var=False, **attrs):
        out = base(x, gamma, beta, mean, var, eps=eps, output_mean_var=True, **attrs)
        y = np.maximum(out[0], 0) if relu else out[0]
        if not output_mean_var:
            return y
        if relu:
            return [y, out[1], out[2]]
        return [y, out[1], 1 / out[2] ** 2 - eps]
    return twin


for _op, _extra in (("BatchNorm_v1", {}), ("_contrib_SyncBatchNorm", {"key": "k"}),
                    ("_contrib_BatchNormWithReLU", {})):
    relu = _op == "_contrib_BatchNormWithReLU"
    CASES += [
        OpCase(_op, _BN_SHAPES, bn_v1_twin(False, relu), attrs=dict(_extra), gen=_bn_inputs,
               id="inference", grad_inputs=(0, 2)),
        OpCase(_op, _BN_SHAPES, bn_v1_twin(True, relu), gen=_bn_inputs, is_train=True,
               attrs=dict(_extra, fix_gamma=False), id="train", grad_inputs=(0, 1, 2)),
        OpCase(_op, _BN_SHAPES, bn_v1_twin(True, relu), gen=_bn_inputs, is_train=True,
               attrs=dict(_extra, fix_gamma=False, output_mean_var=True), id="mean_var",
               grad_inputs=()),
    ]


def pool_v1_twin(x, *, kernel=(), pool_type="max", pad=(), global_pool=False, **attrs):
    """Pooling with count_include_pad over zero padding, divided by the kernel's area."""
    x = np.asarray(x, np.float64)
    if pool_type == "max" and pad and not global_pool:
        x = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in pad])
        pad = ()
    if pool_type != "avg":
        return pool_twin(x, kernel=kernel, pool_type=pool_type, pad=pad,
                         global_pool=global_pool, **attrs)
    total = pool_twin(x, kernel=kernel, pool_type="sum", pad=pad, global_pool=global_pool,
                      **attrs)
    return total / np.prod(x.shape[2:] if global_pool else kernel)


CASES += [
    OpCase("Convolution_v1", [(2, 3, 5, 5), (4, 3, 3, 3), (4,)], conv_twin,
           attrs={"kernel": (3, 3), "num_filter": 4}),
    OpCase("Convolution_v1", [(1, 4, 6, 5), (4, 2, 3, 2)], conv_twin, id="group",
           attrs={"kernel": (3, 2), "num_filter": 4, "num_group": 2, "stride": (2, 1),
                  "pad": (1, 1), "no_bias": True}),
    OpCase("Pooling_v1", [(2, 2, 5, 5)], pool_v1_twin, id="max_pad",
           attrs={"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}),
    OpCase("Pooling_v1", [(1, 2, 6, 5)], pool_v1_twin, id="avg_full",
           attrs={"kernel": (3, 2), "stride": (2, 2), "pool_type": "avg",
                  "pooling_convention": "full"}),
    OpCase("Pooling_v1", [(2, 3, 4, 3)], pool_v1_twin, id="avg_global",
           attrs={"kernel": (1, 1), "global_pool": True, "pool_type": "avg"}),
    OpCase("Pooling_v1", [(1, 2, 5, 4)], pool_v1_twin, id="sum",
           attrs={"kernel": (2, 2), "pool_type": "sum"}),
]
