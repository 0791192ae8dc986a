"""An ONNX backend (in the sense of :mod:`onnx.backend.base`) that runs ONNX models on
graphexec's native executor: import with :func:`~.importer.import_model`, bind with
``grad_req="null"``, forward with ``is_train=False``.

This is what lets people run an ONNX model on graphexec, and what ONNX's own node conformance
suite (``tests/test_onnx_backend_suite.py``) runs through::

    from graphexec.backends.onnxrt.backend import GraphexecBackend
    rep = GraphexecBackend.prepare(onnx.load("model.onnx"), device="CPU")
    (probs,) = rep.run([image])              # or rep.run({"data": image})

graphexec binds static shapes, so a representation binds on its first run and binds again
only when the inputs' shapes or dtypes change. Graph inputs that a node reads as attributes
(a Reshape target, Unsqueeze axes, ...) are fixed to the values of the run that binds: a run
with other values for them imports the model again.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from graphexec.core.ir.context import Context
from graphexec.core.ir.errors import ContextError

from .checks import read_model
from .errors import ConstantInputRequired, OnnxImportError, StaticShapeRequired
from .importer import import_model

__all__ = ["GraphexecBackend", "GraphexecRep", "prepare", "run_model", "supports_device"]


def _context(device: str) -> Context:
    dev = Device(device)
    kind = "gpu" if dev.type == DeviceType.CUDA else "cpu"
    return Context(kind, dev.device_id)


def _key(arrays: Mapping[str, np.ndarray], static: set) -> tuple:
    """What a bound executor depends on: every input's shape and dtype, the static inputs'
    values."""
    return tuple((n, a.shape, a.dtype.str, a.tobytes() if n in static else None)
                 for n, a in sorted(arrays.items()))


class GraphexecRep(BackendRep):
    """A prepared ONNX model: ``run(inputs)`` computes the graph outputs on graphexec.

    ``inputs`` is a list in the order of the graph inputs that are not initializers, or a dict
    by input name. Outputs come back in graph-output order as numpy arrays (a named tuple that
    can also be indexed by output name)."""

    def __init__(self, model: onnx.ModelProto, ctx: Context):
        self._model = model
        self._ctx = ctx
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [vi.name for vi in model.graph.input if vi.name not in inits]
        self.output_names = [vi.name for vi in model.graph.output]
        self._scalar_outputs = [_declared_rank(vi) == 0 for vi in model.graph.output]
        self._static: set = set()
        self._exe = None
        self._bound_key: tuple | None = None
        try:  # fail early on unsupported nodes; shapes and attribute inputs come with run()
            self._import({})
        except (ConstantInputRequired, StaticShapeRequired):
            pass

    def _import(self, feed: Mapping[str, np.ndarray]) -> tuple:
        """``import_model`` at the shapes of ``feed``, with the graph inputs that nodes read
        as attributes fixed to their values there (learnt from the importer's errors)."""
        shapes = {n: a.shape for n, a in feed.items()}
        while True:
            consts = {n: feed[n] for n in self._static}
            try:
                return import_model(self._model, constants=consts, input_shapes=shapes)
            except ConstantInputRequired as err:
                new = set(err.input_names) - self._static
                if not new or not new <= set(feed):
                    raise
                self._static |= new

    def _feed(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, Mapping):
            unknown = sorted(set(inputs) - set(self.input_names))
            if unknown:
                raise OnnxImportError(f"run: inputs {unknown} are not graph inputs of the "
                                      f"model; it takes {self.input_names}")
            return {n: self._array(n, a) for n, a in inputs.items()}
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence):
            inputs = [inputs]
        if len(inputs) > len(self.input_names):
            raise OnnxImportError(f"run: got {len(inputs)} inputs; the model takes "
                                  f"{len(self.input_names)} ({self.input_names})")
        return {n: self._array(n, a) for n, a in zip(self.input_names, inputs)}

    @staticmethod
    def _array(name: str, value: Any) -> np.ndarray:
        """Input ``name`` as a numeric array (ml_dtypes' bfloat16 and float8 included)."""
        try:
            arr = numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else \
                np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - numpy and onnx raise several types
            raise OnnxImportError(f"run: input {name!r} is not an array ({exc})") from None
        if arr.dtype.kind in "OSUcmM":
            raise OnnxImportError(f"run: input {name!r} has dtype {arr.dtype}; graphexec "
                                  f"computes with numbers (bool, integers, floats)")
        return arr

    def _bind(self, feed: dict[str, np.ndarray]) -> None:
        sym, arg_params, aux_params = self._import(feed)
        xp = self._ctx.xp  # copies: the executor keeps these arrays and later runs write them
        args = {n: xp.array(a) for n, a in {**feed, **arg_params}.items()}
        aux = {n: xp.array(a) for n, a in aux_params.items()}
        self._exe = sym.bind(self._ctx, args, grad_req="null", aux_states=aux)
        self._bound_key = _key(feed, self._static)

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        """Compute the graph outputs for ``inputs`` (a list in graph-input order, or a dict by
        name); binds again only when shapes, dtypes or attribute-like inputs change."""
        feed = self._feed(inputs)
        if _key(feed, self._static) != self._bound_key:
            self._bind(feed)
            outs = self._exe.forward(is_train=False)
        else:
            xp, args = self._ctx.xp, self._exe.arg_dict
            outs = self._exe.forward(is_train=False, **{n: xp.asarray(a) for n, a in
                                                        feed.items() if n in args})
        values = [_host(o, scalar) for o, scalar in zip(outs, self._scalar_outputs)]
        return namedtupledict("Outputs", self.output_names)(*values)


def _declared_rank(vi) -> int | None:
    t = vi.type.tensor_type
    return len(t.shape.dim) if t.HasField("shape") else None


def _host(out: Any, scalar: bool) -> np.ndarray:
    """A numpy copy of an output; graphexec, as MXNet 1.x, gives shape (1,) where ONNX
    declares a 0-d output (a full reduction), so those come back 0-d."""
    value = out.get() if hasattr(out, "get") else np.array(out, copy=True)
    return value.reshape(()) if scalar and value.shape == (1,) else value


class GraphexecBackend(Backend):
    """ONNX backend running models on graphexec's native executor ("CPU", or "CUDA:<i>" where
    CuPy and a GPU are present)."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> GraphexecRep:
        """Check ``model`` (a ModelProto or a file path) and import it; raises
        :class:`OnnxImportError` naming what is wrong, or every node graphexec cannot run.
        (``import_model``'s checks replace ``onnx.checker``, which the base class runs.)"""
        return GraphexecRep(read_model(model), _context(device))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for "CPU"; for "CUDA[:i]" when CuPy can reach that GPU."""
        try:
            _context(device).xp
        except (ContextError, AttributeError):
            return False
        return True


prepare = GraphexecBackend.prepare
run_model = GraphexecBackend.run_model
supports_device = GraphexecBackend.supports_device
