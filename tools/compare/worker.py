"""``--isolate``: each strategy bound in its own process, so that its peak memory is its own and
no library one strategy loads (ONNX Runtime, numba's threads) runs in another's process. The
comparison still times them in turn: a worker times one sample per request, and the parent
asks the workers one after another.

The parent (:class:`IsolatedSession`, with the interface of :class:`~.measure.Session`) saves
the model (symbol, parameters, input shapes) and the inputs in a folder; the worker (``python
-m graphexec.tools.compare.worker``) reads a JSON request line, binds, writes its values to an
``.npz`` file and answers one JSON line; then it answers ``forward N W`` / ``train N W`` (N
timed calls after W untimed ones) with seconds per call and ``finish`` with its last figures
and its peak RSS.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from graphexec.core.ir.errors import GraphexecError

from .measure import Session, peak_rss, prepare
from .model import Model

__all__ = ["IsolatedSession", "StrategyFailed", "save_model", "main"]


class StrategyFailed(GraphexecError):
    """A strategy failed in its worker process; the message is the worker's own
    ``Type: message``."""


def save_model(model: Model, inputs: dict[str, np.ndarray], folder: Path) -> None:
    """Write ``model`` and ``inputs`` to ``folder`` for workers to load."""
    meta = {"name": model.name, "source": model.source,
            "input_shapes": {k: list(v) for k, v in model.input_shapes.items()},
            "input_dtypes": {k: np.dtype(v).name for k, v in model.input_dtypes.items()},
            "label_names": list(model.label_names), "aux": sorted(model.aux_params)}
    (folder / "model.json").write_text(json.dumps(meta))
    (folder / "symbol.json").write_text(model.symbol.tojson())
    np.savez(folder / "params.npz", **model.arg_params, **model.aux_params)
    np.savez(folder / "inputs.npz", **inputs)


def _load_model(folder: Path) -> tuple[Model, dict[str, np.ndarray]]:
    from graphexec.core.symbol.json_io import load_json
    meta = json.loads((folder / "model.json").read_text())
    with np.load(folder / "params.npz") as params:
        arrays = {k: params[k] for k in params.files}
    aux = set(meta["aux"])
    model = Model(meta["name"], meta["source"], load_json((folder / "symbol.json").read_text()),
                  {k: v for k, v in arrays.items() if k not in aux},
                  {k: v for k, v in arrays.items() if k in aux},
                  {k: tuple(v) for k, v in meta["input_shapes"].items()},
                  {k: np.dtype(v) for k, v in meta["input_dtypes"].items()},
                  meta["label_names"])
    with np.load(folder / "inputs.npz") as inputs:
        return model, {k: inputs[k] for k in inputs.files}


class IsolatedSession:
    """One strategy bound in a worker process (see the module docstring)."""

    def __init__(self, folder: Path, strategy: str, index: int, *, train: bool, seed: int):
        self.train = train
        values_path = folder / f"values-{index}.npz"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "graphexec.tools.compare.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        request = {"folder": str(folder), "strategy": strategy, "train": train, "seed": seed,
                   "values": str(values_path)}
        answer = json.loads(self._ask(json.dumps(request)))
        if answer.get("error"):
            self.close()
            raise StrategyFailed(answer["error"])
        self.row = answer["row"]
        with np.load(values_path) as values:
            self.values = {k: values[k] for k in values.files}

    def _ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            code = self.proc.wait()
            raise StrategyFailed(f"the worker process of this strategy ended (exit status "
                                 f"{code}) without answering")
        return answer

    def timer(self, kind: str, number: int, warm: int = 0) -> Callable[[], float]:
        """A function asking the worker to time ``number`` calls of ``kind`` after ``warm``
        untimed ones; seconds per timed call."""
        return lambda: float(self._ask(f"{kind} {number} {warm}"))

    def finish(self) -> dict:
        """The worker's last figures and its peak RSS; ends the worker."""
        figures = json.loads(self._ask("finish"))
        self.close()
        return figures

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def main() -> int:
    """The worker's loop (see the module docstring)."""
    out = sys.stdout
    sys.stdout = sys.stderr   # whatever a backend prints stays off the answers
    request = json.loads(sys.stdin.readline())
    try:
        model, inputs = _load_model(Path(request["folder"]))
        session: Session = prepare(model, request["strategy"], inputs, train=request["train"],
                                   seed=request["seed"])
    except Exception as exc:  # noqa: BLE001 - the parent records it in the strategy's row
        out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        return 1
    np.savez(request["values"], **session.values)
    out.write(json.dumps({"row": session.row}, default=str) + "\n")
    out.flush()
    for line in sys.stdin:
        kind, *counts = line.split()
        if kind == "finish":
            figures = session.finish()
            figures["peak_rss_bytes"] = peak_rss()
            out.write(json.dumps(figures, default=str) + "\n")
            out.flush()
            return 0
        number, warm = (int(c) for c in counts)
        out.write(f"{session.timer(kind, number, warm)()!r}\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
