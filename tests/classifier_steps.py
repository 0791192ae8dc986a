"""Binding a small classifier (a symbol ending in SoftmaxOutput with a ``softmax_label``)
for train steps: every argument but the label trained, parameters standard normal,
BatchNorm variances uniform in [0.5, 1.5], labels among 5 classes, from one seed."""
from __future__ import annotations

import numpy as np

import graphexec as gx


def bind_classifier(sym, backend: str, shape: tuple, seed: int):
    """The executor of ``sym`` for data of ``shape`` under ``backend``, filled."""
    exe = sym.simple_bind(gx.cpu(), backend=backend, data=shape, softmax_label=(shape[0],),
                          grad_req={n: "null" if n == "softmax_label" else "write"
                                    for n in sym.list_arguments()})
    rng = np.random.default_rng(seed)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        if name == "softmax_label":
            arr[...] = rng.integers(0, 5, arr.shape)
        elif name.endswith("_var"):
            arr[...] = rng.uniform(0.5, 1.5, arr.shape)
        else:
            arr[...] = rng.standard_normal(arr.shape)
    return exe
