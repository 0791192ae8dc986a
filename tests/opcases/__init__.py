"""Golden per-op cases: each family module lists OpCase records; tests run every case against
its numpy twin (forward) and, later, finite differences (gradient). A registered op with no
case fails ``test_every_op_has_a_case``."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

FAMILIES = ("elemwise", "nn", "conv", "tensor", "slicing", "matrix", "reduce", "indexing", "loss", "init", "rnn", "sequence", "attention", "ranges", "sorting",
            "detection", "detection_roi", "resample", "legacy", "norm", "geometry", "deformable",
            "dynamic",
            "linalg", "random", "misc", "loss_extra", "contrib", "custom")


@dataclass
class OpCase:
    """One operator application: input shapes, attributes, and a plain-numpy twin.

    ``twin(*inputs, **attrs)`` returns the expected output(s) computed in float64 where it
    matters. ``gen(rng, shape, dtype, index)`` makes input ``index`` (default: uniform in
    [low, high)). ``dtypes`` are the dtypes the case runs in."""

    op: str
    shapes: list[tuple]
    twin: Callable[..., Any]
    attrs: dict = field(default_factory=dict)
    dtypes: tuple = ("float32", "float64", "float16")
    low: float = -2.0
    high: float = 2.0
    gen: Callable | None = None
    rtol: float | None = None
    atol: float | None = None
    id: str = ""
    is_train: bool = False
    #: inputs whose gradient is checked by finite differences (None: every float input;
    #: () for none, e.g. index inputs or ops without gradients)
    grad_inputs: tuple | None = None
    #: random operators: ``check(outputs, inputs, **attrs)`` asserts what the draws must
    #: satisfy (support, moments within 5 standard errors); the forward test calls it in
    #: place of comparing with ``twin``
    check: Callable | None = None

    def make_inputs(self, rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
        out = []
        for i, s in enumerate(self.shapes):
            if self.gen is not None:
                arr = self.gen(rng, s, dtype, i)
                if arr is not None:
                    out.append(np.asarray(arr))
                    continue
            out.append(rng.uniform(self.low, self.high, size=s).astype(dtype))
        return out

    def tolerance(self, dtype: str) -> tuple[float, float]:
        base = {"float16": (1e-2, 1e-2), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10),
                "int32": (0, 0), "int64": (0, 0)}[dtype]
        return (self.rtol if self.rtol is not None and dtype != "float64" else base[0],
                self.atol if self.atol is not None and dtype != "float64" else base[1])

    @property
    def name(self) -> str:
        return f"{self.op}-{self.id}" if self.id else self.op


def all_cases() -> list[OpCase]:
    cases = []
    for fam in FAMILIES:
        mod = importlib.import_module(f"{__name__}.{fam}")
        cases.extend(mod.CASES)
    return cases
