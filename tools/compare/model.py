"""The :class:`Model` the comparison tools bind: a symbol with every parameter and the shapes
and dtypes of its inputs (``models.load_model`` makes one from what a user names)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from graphexec.core.ir.context import cpu
from graphexec.core.symbol.symbol import Symbol

__all__ = ["Model", "Shape"]

Shape = tuple[int, ...]


@dataclass
class Model:
    """A bound-ready model. ``input_shapes`` / ``input_dtypes`` cover every input, labels
    included; ``arg_params`` holds every other argument, ``aux_params`` every auxiliary
    state."""

    name: str
    source: str  # 'zoo' | 'checkpoint' | 'json' | 'onnx' | 'symbol'
    symbol: Symbol
    arg_params: dict[str, np.ndarray]
    aux_params: dict[str, np.ndarray]
    input_shapes: dict[str, Shape]
    input_dtypes: dict[str, np.dtype]
    label_names: list[str]

    @property
    def num_params(self) -> int:
        """Number of parameter values (arguments and auxiliary states)."""
        return sum(int(a.size) for a in self._params())

    @property
    def param_bytes(self) -> int:
        """Bytes held by the parameters."""
        return sum(int(a.nbytes) for a in self._params())

    def _params(self) -> Iterable[np.ndarray]:
        return [*self.arg_params.values(), *self.aux_params.values()]

    def bind(self, strategy: str = "NONE", train: bool = False, params: bool = True):
        """An executor of the model on the CPU partitioned by ``strategy`` (a backend text;
        ``+`` chains backends); with ``train`` every parameter gets a gradient (inputs none);
        with ``params`` the parameters are copied in."""
        grad_req = {n: ("write" if train and n in self.arg_params else "null")
                    for n in self.symbol.list_arguments()}
        exe = self.symbol.simple_bind(cpu(), grad_req=grad_req, type_dict=dict(self.input_dtypes),
                                      backend=strategy.replace("+", ",").strip(),
                                      **self.input_shapes)
        if params:
            exe.copy_params_from(self.arg_params, self.aux_params, allow_extra_params=True)
        return exe

    def op_counts(self) -> dict[str, int]:
        """Operator name -> node count, most frequent first."""
        counts = Counter(n.op.name for n in self.symbol._indexed().nodes if n.op is not None)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def output_shapes(self) -> dict[str, Shape]:
        """Output name -> shape for ``input_shapes``."""
        _, outs, _ = self.symbol.infer_shape(**self.input_shapes)
        return dict(zip(self.symbol.list_outputs(), outs))

    def info(self) -> dict[str, Any]:
        """The facts :meth:`summary` prints, as plain data."""
        return {"name": self.name, "source": self.source, "ops": self.op_counts(),
                "num_params": self.num_params, "param_bytes": self.param_bytes,
                "param_arrays": len(self.arg_params) + len(self.aux_params),
                "inputs": {k: {"shape": list(v), "dtype": np.dtype(self.input_dtypes[k]).name}
                           for k, v in self.input_shapes.items()},
                "labels": list(self.label_names),
                "outputs": {k: list(v) for k, v in self.output_shapes().items()}}

    def summary(self) -> str:
        """A few lines describing the model (what ``graphexec info`` prints)."""
        info = self.info()
        ops = info["ops"]
        lines = [f"model    {self.name} ({self.source})"]
        lines += [f"input    {k} {tuple(v['shape'])} {v['dtype']}"
                  + (" (label)" if k in self.label_names else "")
                  for k, v in info["inputs"].items()]
        lines += [f"output   {k} {tuple(s)}" for k, s in info["outputs"].items()]
        lines.append(f"params   {self.num_params:,} values in {info['param_arrays']} arrays, "
                     f"{self.param_bytes / 2**20:.2f} MiB")
        lines.append(f"ops      {sum(ops.values())} nodes: "
                     + ", ".join(f"{op} {n}" for op, n in ops.items()))
        return "\n".join(lines)
