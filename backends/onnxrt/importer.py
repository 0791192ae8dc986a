"""Import of an ONNX model as a graphexec symbol: ``import_model(path_or_model) -> (sym,
arg_params, aux_params)``.

Initializers (and ``Constant`` nodes) feeding a node as a tensor become variables with their
values in ``arg_params``; those read as attributes (shapes, axes, scalars) are folded in, and
a value computed from constants alone is evaluated with graphexec when an attribute needs it.
graphexec binds static shapes, as MXNet does: ``Shape`` of a tensor of known shape is a
constant, and importers that need a static shape say so (:class:`StaticShapeRequired`).
BatchNormalization statistics become ``aux_params`` under the ``<node>_moving_mean`` /
``<node>_moving_var`` names graphexec creates. Graph inputs that are not initializers become
data variables. ``IMPORTERS`` maps an ONNX op type to its function ``(ctx, node) -> outputs``
(filled by the modules of ``importers/``, one per op family; see :mod:`.importing`).
"""
from __future__ import annotations

import math
import re

import numpy as np
import onnx
from onnx import helper, numpy_helper

from graphexec.core.ir.arguments import as_shape
from graphexec.core.ir.context import cpu
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol.symbol import Group, Symbol, Variable

from . import importers  # noqa: F401 - loads every op importer into IMPORTERS
from .checks import (MAX_RANK, check_model, guard_inference, read_model, sorted_model,
                     tensor_value)
from .errors import ConstantInputRequired, OnnxImportError, StaticShapeRequired
from .importing import IMPORTERS, node_error

__all__ = ["import_model", "IMPORTERS", "ConstantInputRequired", "StaticShapeRequired",
           "MAX_COMPUTED_BYTES"]

#: bytes of constants an import may compute itself (ConstantOfShape, Range, folded values,
#: Resize indices, ...) beyond the tensors the file holds; more is refused
MAX_COMPUTED_BYTES = 1 << 27


class _Ctx:
    """Value tables of one import: symbols, constants, params, shapes, dtypes, node names."""

    def __init__(self, model, constants: dict, input_shapes: dict):
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                          1)
        if len(graph.sparse_initializer):
            raise OnnxImportError("import_model: sparse initializers are not imported "
                                  f"({graph.sparse_initializer[0].values.name!r})")
        self.consts = {t.name: tensor_value(t, "initializer") for t in graph.initializer}
        self.consts.update((k, _constant_value(k, v)) for k, v in constants.items())
        self.budget = MAX_COMPUTED_BYTES
        self.graph_inputs = {vi.name for vi in graph.input} - set(self.consts)
        self.values: dict[str, Symbol] = {}
        self.arg_params: dict[str, np.ndarray] = {}
        self.aux_params: dict[str, np.ndarray] = {}
        self.used: set = set()
        self._names: dict = {}
        self.shapes, self.dtypes = _infer(model, constants, input_shapes)
        for vi in graph.input:
            if vi.name not in self.consts:
                if vi.type.tensor_type.elem_type == onnx.TensorProto.STRING:
                    raise OnnxImportError(f"import_model: graph input {vi.name!r} is a string "
                                          "tensor; graphexec has no string tensors")
                self.values[vi.name] = self.variable(vi.name)

    def variable(self, name: str) -> Symbol:
        self.used.add(name)
        return Variable(name)

    def sym(self, name: str) -> Symbol:
        """The symbol of value ``name``; a constant becomes a parameter variable."""
        if name not in self.values:
            if name not in self.consts:
                raise OnnxImportError(f"import_model: value {name!r} is used before it is "
                                      "produced (the graph is not topologically sorted)")
            self.values[name] = self.variable(name)
            self.arg_params[name] = self.consts[name]
        return self.values[name]

    def spend(self, node, nbytes: int, what: str) -> None:
        """Account for ``nbytes`` of a constant the import computes (``what``); an error
        naming the node when the import would exceed :data:`MAX_COMPUTED_BYTES`."""
        if nbytes > self.budget:
            raise node_error(node, f"{what} would take {nbytes} bytes, computed at import; "
                             f"an import computes at most {MAX_COMPUTED_BYTES} bytes of "
                             f"constants ({self.budget} left)")
        self.budget -= nbytes

    def const(self, node, index: int, what: str) -> np.ndarray | None:
        """The constant value of input ``index`` (None when absent). A value computed from
        constants only (``Shape`` of a static tensor, arithmetic on initializers) is
        evaluated with graphexec; one computed from graph inputs is an error."""
        if index >= len(node.input) or not node.input[index]:
            return None
        name = node.input[index]
        if name not in self.consts:
            self.consts[name] = self._fold(node, name, what)
        return self.consts[name]

    def _fold(self, node, name: str, what: str) -> np.ndarray:
        sym = self.values.get(name)
        args = [] if sym is None else sym.list_arguments()
        needed = sorted(a for a in args if a in self.graph_inputs)
        if needed:
            raise ConstantInputRequired(str(node_error(
                node, f"its {what} input {name!r} is computed from graph inputs {needed}; it "
                "must be a constant (an initializer, a Constant node, or given in "
                "import_model's constants)")), needed)
        if sym is None or sym.list_auxiliary_states() or not set(args) <= set(self.arg_params):
            raise node_error(node, f"its {what} input {name!r} must be a constant "
                              "(an initializer or a Constant node)")
        shapes = {a: self.arg_params[a].shape for a in args}
        _, inner, _ = sym.get_internals().infer_shape(**shapes)
        self.spend(node, 8 * sum(math.prod(s) for s in inner or ()),
                   f"computing its {what} input {name!r}")
        exe = sym.bind(cpu(), {a: np.array(self.arg_params[a]) for a in args},
                       grad_req="null")
        return np.array(exe.forward(is_train=False)[0])

    def shape(self, name: str) -> tuple | None:
        """The shape of value ``name`` (ints, symbolic names or None where unknown; None when
        not even the rank is known). Where ONNX shape inference leaves dims open, graphexec's
        own inference of the imported symbol may close them."""
        if name in self.consts:
            return self.consts[name].shape
        inferred = self.shapes.get(name)
        if inferred is not None and all(isinstance(d, int) for d in inferred):
            return inferred
        found = self._graphexec_shape(name) or inferred
        if found is not None and len(found) > MAX_RANK:
            raise OnnxImportError(f"import_model: value {name!r} has rank {len(found)}; at "
                                  f"most {MAX_RANK} is imported")
        return found

    def _graphexec_shape(self, name: str) -> tuple | None:
        sym = self.values.get(name)
        if sym is None:
            return None
        given = {}
        for arg in sym.list_arguments():
            shape = self.arg_params[arg].shape if arg in self.arg_params else \
                self.shapes.get(arg)
            if shape is None or not all(isinstance(d, int) for d in shape):
                return None
            given[arg] = shape
        try:
            _, out_shapes, _ = sym.infer_shape(**given)
        except GraphexecError:
            return None
        found = out_shapes[0] if out_shapes else None
        if found is not None:
            self.shapes[name] = tuple(found)
        return found and tuple(found)

    def static_shape(self, node, name: str, why: str) -> tuple:
        """The fully known shape of value ``name``; an error naming the node when a dim is
        unknown (``why`` says what needs it)."""
        shape = self.shape(name)
        if shape is None or not all(isinstance(d, int) for d in shape):
            raise StaticShapeRequired(str(node_error(
                node, f"{why} needs the static shape of {name!r}, but shape inference gives "
                f"{shape}; give the graph inputs fixed shapes (input_shapes)")))
        return tuple(shape)

    def rank(self, name: str) -> int | None:
        shape = self.shape(name)
        return None if shape is None else len(shape)

    def dtype(self, name: str) -> np.dtype | None:
        if name in self.consts:
            return self.consts[name].dtype
        return self.dtypes.get(name)

    def name(self, node) -> str:
        """A unique graphexec node name: the first output without ``_output``, else the
        node's own name. The same name on every call for one node."""
        if node.output[0] in self._names:
            return self._names[node.output[0]]
        base = node.output[0][:-len("_output")] if node.output[0].endswith("_output") else \
            (node.name or node.output[0])
        base = re.sub(r"[^\w.\-]", "_", base) or node.op_type.lower()
        name, k = base, 0
        while name in self.used or name in self.consts:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self._names[node.output[0]] = name
        return name


def _for_inference(model, constants: dict, input_shapes: dict):
    """A copy of ``model`` whose graph inputs have the given shapes and whose constant graph
    inputs are initializers, so that shape inference sees what the import will bind (the
    shapes the file declares for other values held for its own inputs: they are dropped)."""
    if not constants and not input_shapes:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.value_info[:]
    for vi in copy.graph.output:
        vi.ClearField("type")
    kept = [vi for vi in copy.graph.input if vi.name not in constants]
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    for vi in copy.graph.input:
        if vi.name in input_shapes and vi.type.HasField("tensor_type"):
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in input_shapes[vi.name]:
                dims.add().dim_value = int(d)
    copy.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), k)
                                  for k, v in constants.items())
    return copy


def _infer(model, constants: dict, input_shapes: dict) -> tuple[dict, dict]:
    """name -> shape (None for unknown dims) and name -> numpy dtype, from ONNX inference,
    run strictly as ONNX Runtime runs it when it loads a model: a type, an attribute or a
    shape that an operator's inference rejects (an axis past the rank, an input of the
    wrong type, shapes that do not broadcast) fails the import."""
    model = _for_inference(model, constants, input_shapes)
    propagate = guard_inference(model)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                  data_prop=propagate)
    except Exception as exc:  # noqa: BLE001 - InferenceError, ValidationError, ValueError
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        raise OnnxImportError("import_model: ONNX shape inference rejects the model (so "
                              "would ONNX Runtime): " + " ".join(lines)[:2000]) from None
    g = model.graph
    shapes, dtypes = {}, {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            shapes[vi.name] = tuple(_dim(d) for d in t.shape.dim)
        if t.elem_type:
            dtypes[vi.name] = _np_dtype(t.elem_type)
    return shapes, dtypes


def _dim(d):
    """A dim as an int, its symbolic name (equal names are equal sizes), or None."""
    if d.HasField("dim_value"):
        return d.dim_value
    return d.dim_param or None


def _np_dtype(elem_type: int):
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return None


def _constant_value(name: str, value) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise OnnxImportError(f"import_model: constants[{name!r}] is not an array ({exc})"
                              ) from None
    if arr.dtype.kind in "OSU":  # (ml_dtypes' bfloat16 and float8 types are kind 'V')
        raise OnnxImportError(f"import_model: constants[{name!r}] has dtype {arr.dtype}; "
                              "numbers are expected")
    return arr


def _check_supported(graph) -> None:
    bad = [f"{n.name or n.output[0]} ({n.op_type})" for n in graph.node
           if n.domain not in ("", "ai.onnx") or n.op_type not in IMPORTERS]
    if bad:
        raise OnnxImportError("import_model: these ONNX nodes have no graphexec equivalent:\n  "
                              + "\n  ".join(bad))


def import_model(path_or_model, constants: dict | None = None,
                 input_shapes: dict | None = None) -> tuple:
    """Read an ONNX model (a ``ModelProto`` or a file path) as ``(sym, arg_params,
    aux_params)``: a graphexec Symbol whose outputs are the graph outputs, and name -> numpy
    array dicts of its parameters.

    ``constants`` (graph input name -> array) fixes the values of graph inputs, which are then
    imported like initializers; ``input_shapes`` (graph input name -> shape) fixes dynamic
    dimensions for the importers that need static shapes. Raises :class:`OnnxImportError`
    listing every unsupported node, or naming the node whose attributes have no graphexec
    equivalent (:class:`ConstantInputRequired` when a node reads a value computed from graph
    inputs as an attribute)."""
    model = read_model(path_or_model)
    check_model(model)
    _check_supported(model.graph)
    model = sorted_model(model)
    shapes = {k: as_shape(v, f"import_model: input_shapes[{k!r}]")
              for k, v in _checked_dict(input_shapes, "input_shapes").items()}
    ctx = _Ctx(model, _checked_dict(constants, "constants"), shapes)
    for node in model.graph.node:
        for name, s in zip(node.output, _import_node(ctx, node)):
            if name:
                ctx.values[name] = s
    if not model.graph.output:
        raise OnnxImportError("import_model: the graph has no outputs")
    heads = [ctx.sym(o.name) for o in model.graph.output]
    sym = heads[0] if len(heads) == 1 else Group(heads)
    used = set(sym.list_arguments())  # parameters only read as attributes are left out
    return sym, {k: v for k, v in ctx.arg_params.items() if k in used}, ctx.aux_params



def _import_node(ctx: _Ctx, node) -> list:
    """The outputs of ``node``'s importer. Importers check the attributes they use; a
    mistake they did not foresee is still an error naming the node, never a bare
    exception."""
    try:
        return IMPORTERS[node.op_type](ctx, node)
    except GraphexecError:
        raise
    except (ArithmeticError, AttributeError, IndexError, KeyError, LookupError, TypeError,
            ValueError, RecursionError) as exc:
        raise node_error(node, f"its attributes or inputs cannot be imported: "
                         f"{type(exc).__name__}: {exc}") from None


def _checked_dict(value, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OnnxImportError(f"import_model: {what} must be a dict, got "
                              f"{type(value).__name__}")
    return value
