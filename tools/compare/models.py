"""Turn what a user names (a built-in model, an MXNet checkpoint, a symbol JSON, an ONNX file,
a Symbol) into a :class:`Model` ready to bind: the symbol, every parameter (loaded or
initialised), and the shapes and dtypes of its inputs.

>>> model = load_model("examples/lenet_small", shapes={"data": (2, 1, 16, 16)})
>>> exe = model.bind("NONE")          # or "onnxrt", "fused:cost_model=false", "onnxrt+fused"
>>> outputs = exe.forward(**make_inputs(model))

A name in :data:`~graphexec.tools.compare.zoo.ZOO` wins over a file of the same name (write
``./lenet`` for the file). A path ending in ``.onnx`` is an ONNX model, one ending in ``.json``
a symbol JSON (parameters initialised), ``P-NNNN.params`` the checkpoint ``P`` at that epoch,
and ``P`` with ``P-symbol.json`` beside it a checkpoint (the highest saved epoch by default).
"""
from __future__ import annotations

import json
import os
import re
import zlib
from typing import Any, Iterable, Mapping

import numpy as np

from graphexec.backends.onnxrt.api import import_model
from graphexec.backends.onnxrt.checks import read_model
from graphexec.core.ir.errors import GraphexecError
from graphexec.core.symbol.json_io import load
from graphexec.core.symbol.model import load_checkpoint, symbol_file
from graphexec.core.symbol.symbol import Symbol

from .inputs import make_inputs
from .model import Model, Shape
from .zoo import ZOO

__all__ = ["Model", "ModelLoadError", "load_model", "make_inputs", "parse_shapes",
           "init_param", "checkpoint_epochs"]



class ModelLoadError(GraphexecError, ValueError):
    """A model could not be found, read, or given shapes for all its inputs."""


# -- loading ------------------------------------------------------------------------------------
def load_model(spec: Any, shapes: Mapping[str, Iterable[int]] | None = None,
               epoch: int | None = None, seed: int = 0) -> Model:
    """Load ``spec`` (a zoo name, a checkpoint prefix or ``.params`` file, a symbol JSON, an
    ONNX file or a Symbol) as a :class:`Model`. ``shapes`` gives (or overrides) input shapes;
    ``epoch`` picks a checkpoint epoch; parameters missing from the source are initialised
    deterministically from ``seed`` (see :func:`init_param`)."""
    given = _normalise_shapes(shapes or {})
    if isinstance(spec, Symbol):
        _no_epoch(epoch, "a Symbol")
        return _from_symbol(spec.name or "symbol", "symbol", spec, given, seed)
    if not isinstance(spec, (str, os.PathLike)):
        raise ModelLoadError(f"load_model: expected a model name, a path or a Symbol, got "
                             f"{type(spec).__name__}")
    text = os.fspath(spec)
    checkpoint = None if text in ZOO else _checkpoint_of(text, epoch)
    if checkpoint:
        return _from_checkpoint(*checkpoint, given, seed)
    _no_epoch(epoch, repr(text))
    if text in ZOO:
        return _from_zoo(text, given, seed)
    if text.lower().endswith(".onnx"):
        return _from_onnx(_existing(text), given, seed)
    if text.lower().endswith(".json"):
        name = re.sub(r"(-symbol)?\.json$", "", os.path.basename(text), flags=re.I)
        return _from_symbol(name, "json", _read_json(_existing(text)), given, seed)
    if os.path.exists(text):
        raise ModelLoadError(f"{text!r} exists but is none of the model formats: a symbol JSON "
                             "(.json), an ONNX model (.onnx), a checkpoint prefix P (with "
                             "P-symbol.json and P-NNNN.params) or a P-NNNN.params file")
    raise ModelLoadError(f"no model {text!r}: not a built-in model ({', '.join(ZOO)}), not a "
                         f"file, and {symbol_file(text)!r} does not exist")


def checkpoint_epochs(prefix: str) -> list[int]:
    """The epochs saved as ``{prefix}-NNNN.params``, ascending."""
    folder = os.path.dirname(prefix) or "."
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"-(\d{4,})\.params")
    found = (pattern.fullmatch(f) for f in os.listdir(folder)) if os.path.isdir(folder) else ()
    return sorted(int(m.group(1)) for m in found if m)


def _checkpoint_of(text: str, epoch: int | None) -> tuple[str, int] | None:
    """(prefix, epoch) when ``text`` names a checkpoint: ``P-NNNN.params`` or a prefix ``P``
    with ``P-symbol.json`` (then ``epoch``, by default the highest saved)."""
    named = re.fullmatch(r"(.*)-(\d{4,})\.params", text)
    if named and os.path.isfile(text):
        if epoch is not None and epoch != int(named.group(2)):
            raise ModelLoadError(f"epoch={epoch} given, but {text!r} holds epoch "
                                 f"{int(named.group(2))}")
        return named.group(1), int(named.group(2))
    if not os.path.isfile(symbol_file(text)):
        return None
    epochs = checkpoint_epochs(text)
    if epoch is None and not epochs:
        raise ModelLoadError(f"checkpoint {text!r}: {symbol_file(text)!r} exists but there is "
                             f"no {text}-NNNN.params file beside it")
    return text, epochs[-1] if epoch is None else epoch


def _from_zoo(name: str, given: dict[str, Shape], seed: int) -> Model:
    zoo = ZOO[name]
    shapes = {k: v for k, v in zoo.input_shapes.items() if k not in zoo.label_names}
    shapes.update(given)  # labels are inferred from the data shapes unless given
    inputs = [*zoo.input_shapes, *(k for k in given if k not in zoo.input_shapes)]
    dtypes = {k: np.dtype(zoo.dtype_of(k)) for k in inputs}
    return _complete(name, "zoo", zoo.build(), {}, {}, inputs, shapes, dtypes, seed,
                     list(zoo.label_names))


def _from_symbol(name: str, source: str, sym: Symbol, given: dict[str, Shape],
                 seed: int) -> Model:
    inputs = [a for a in sym.list_arguments() if a in given or _looks_like_input(a)]
    return _complete(name, source, sym, {}, {}, inputs, given, _float32(inputs), seed)


def _from_checkpoint(prefix: str, epoch: int, given: dict[str, Shape], seed: int) -> Model:
    try:
        sym, arg_params, aux_params = load_checkpoint(prefix, epoch)
    except (GraphexecError, OSError) as exc:
        raise ModelLoadError(f"cannot load checkpoint {prefix!r} (epoch {epoch}): {exc}") from exc
    arg_params = {k: v for k, v in arg_params.items() if k in sym.list_arguments()}
    aux_params = {k: v for k, v in aux_params.items() if k in sym.list_auxiliary_states()}
    inputs = [a for a in sym.list_arguments() if a not in arg_params]
    stored = [k for k in given if k in arg_params]
    if stored:
        raise ModelLoadError(f"checkpoint {prefix!r}: shapes given for {', '.join(stored)}, "
                             f"stored in the checkpoint as parameters; its inputs are "
                             f"{', '.join(inputs)}")
    return _complete(os.path.basename(prefix), "checkpoint", sym, arg_params, aux_params, inputs,
                     given, _float32(inputs), seed)


def _from_onnx(path: str, given: dict[str, Shape], seed: int) -> Model:
    try:
        proto = read_model(path)
    except GraphexecError as exc:
        raise ModelLoadError(f"cannot read ONNX model {path!r}: {exc}") from exc
    declared = _onnx_inputs(proto)
    unknown = [k for k in given if k not in declared]
    if unknown:
        raise ModelLoadError(f"ONNX model {path!r} has no input {', '.join(map(repr, unknown))}; "
                             f"its inputs are {', '.join(declared) or 'none'}")
    shapes = {k: dims for k, (dims, _) in declared.items() if _static(dims)}
    shapes.update(given)
    missing = [f"{k} ({', '.join(map(str, dims))})" for k, (dims, _) in declared.items()
               if k not in shapes]
    if missing:
        raise ModelLoadError(f"ONNX model {path!r}: inputs with dynamic dimensions need shapes: "
                             f"{'; '.join(missing)} (give shapes=... or --shape NAME=D1,D2,...)")
    try:
        sym, arg_params, aux_params = import_model(proto, input_shapes=shapes)
    except GraphexecError as exc:
        raise ModelLoadError(f"cannot import ONNX model {path!r}: {exc}") from exc
    inputs = [a for a in sym.list_arguments() if a not in arg_params]
    dtypes = {**_float32(inputs), **{k: declared[k][1] for k in inputs if k in declared}}
    shapes = {k: v for k, v in shapes.items() if k in inputs}
    name = os.path.splitext(os.path.basename(path))[0]
    return _complete(name, "onnx", sym, arg_params, aux_params, inputs, shapes, dtypes, seed)


def _onnx_inputs(proto) -> dict[str, tuple[tuple, np.dtype]]:
    """Graph input name -> (dims: ints, or the dimension's name / '?' where dynamic; dtype)."""
    from onnx import helper
    inits = {t.name for t in proto.graph.initializer}
    out = {}
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else
                     (d.dim_param or "?") for d in tt.shape.dim) if tt.HasField("shape") \
            else ("?",)
        out[vi.name] = (dims, np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)))
    return out


def _static(dims: tuple) -> bool:
    return all(isinstance(d, int) for d in dims)


def _complete(name: str, source: str, sym: Symbol, arg_params: dict, aux_params: dict,
              inputs: list[str], shapes: dict[str, Shape], dtypes: dict[str, np.dtype],
              seed: int, label_names: list[str] | None = None) -> Model:
    """Infer every shape, initialise the parameters the source lacks, build the Model."""
    args = sym.list_arguments()
    unknown = [k for k in shapes if k not in args]
    if unknown:
        raise ModelLoadError(f"{name}: shapes given for {', '.join(map(repr, unknown))}, which "
                             f"the model does not have; its arguments are {', '.join(args)}")
    known = {**{k: v.shape for k, v in {**arg_params, **aux_params}.items()}, **shapes}
    try:
        arg_shapes, _, aux_shapes = sym.infer_shape_partial(**known)
    except GraphexecError as exc:
        raise ModelLoadError(f"{name}: shapes do not fit the model (shapes given: "
                             f"{_show(shapes)}): {exc}") from exc
    arg_shape = dict(zip(args, arg_shapes))
    aux_shape = dict(zip(sym.list_auxiliary_states(), aux_shapes))
    labels = label_names if label_names is not None else _loss_labels(sym, inputs)
    missing = [k for k in inputs if not _decided(arg_shape[k])]
    # a label's shape follows from the data's, so name the data inputs when they are missing
    _require_shapes(name, [k for k in missing if k not in labels] or missing, "input(s)",
                    "give shapes=... or --shape NAME=D1,D2,...")
    _require_shapes(name, [k for k, s in {**arg_shape, **aux_shape}.items()
                           if k not in inputs and not _decided(s)], "argument(s)",
                    f"shapes given: {_show(shapes)}; give the shapes of the inputs among them")
    types = _param_dtypes(sym, {**dtypes, **{k: v.dtype for k, v in
                                             {**arg_params, **aux_params}.items()}})
    attrs = sym.attr_dict()
    args_out = {k: np.asarray(arg_params[k]) if k in arg_params else
                init_param(k, arg_shape[k], types.get(k), seed, attrs.get(k, {}))
                for k in args if k not in inputs}
    aux_out = {k: np.asarray(aux_params[k]) if k in aux_params else
               init_param(k, s, types.get(k), seed, attrs.get(k, {}))
               for k, s in aux_shape.items()}
    return Model(name, source, sym, args_out, aux_out,
                 {k: tuple(arg_shape[k]) for k in inputs}, {k: dtypes[k] for k in inputs},
                 [k for k in labels if k in inputs])


def _require_shapes(name: str, missing: list[str], what: str, hint: str) -> None:
    if missing:
        raise ModelLoadError(f"{name}: cannot decide the shape of {what} "
                             f"{', '.join(missing)}; {hint}")


def _decided(shape: tuple) -> bool:
    return bool(shape) and all(d > 0 for d in shape)


def _param_dtypes(sym: Symbol, known: dict[str, np.dtype]) -> dict[str, np.dtype]:
    args, _, aux = sym.infer_type_partial(**known)
    names = sym.list_arguments() + sym.list_auxiliary_states()
    return {k: np.dtype(t) for k, t in zip(names, list(args) + list(aux)) if t is not None}


def _looks_like_input(name: str) -> bool:
    return name in ("data", "label") or name.endswith("_label")


def _loss_labels(sym: Symbol, inputs: list[str]) -> list[str]:
    """Inputs read as the label (second input) of a loss head such as SoftmaxOutput."""
    ig = sym._indexed()
    return [e.node.name for n in ig.nodes if n.op is not None and "loss" in n.op.traits
            for e in n.inputs[1:2] if e.node.op is None and e.node.name in inputs]


def _read_json(path: str) -> Symbol:
    try:
        return load(path)
    except (GraphexecError, OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot read symbol JSON {path!r}: {exc}") from exc


def _existing(path: str) -> str:
    if os.path.isdir(path):
        raise ModelLoadError(f"model file {path!r} is a folder, not a file")
    if not os.path.isfile(path):
        raise ModelLoadError(f"model file {path!r} does not exist" if not os.path.exists(path)
                             else f"model file {path!r} is not a regular file")
    return path


def _no_epoch(epoch: int | None, what: str) -> None:
    if epoch is not None:
        raise ModelLoadError(f"epoch={epoch} given, but {what} is not a checkpoint")


def _float32(names: Iterable[str]) -> dict[str, np.dtype]:
    return {k: np.dtype("float32") for k in names}


# -- parameters ---------------------------------------------------------------------------------
_ZEROS = ("bias", "beta", "moving_mean", "running_mean")
_ONES = ("gamma", "moving_var", "running_var")


def init_param(name: str, shape: Shape, dtype: Any = None, seed: int = 0,
               attrs: Mapping[str, str] | None = None) -> np.ndarray:
    """A deterministic initial value for parameter ``name``: the variable's ``__init__`` hint
    when it is zeros/ones, else by name as MXNet's initialisers do (biases, beta and moving
    means zero; gamma and moving variances one), else Glorot-uniform (Xavier, magnitude 3,
    fan average) drawn from a generator seeded by ``seed`` and the name, so one parameter's
    value does not depend on which others the model has."""
    dtype = np.dtype(dtype or "float32")
    kind = _init_kind(name, (attrs or {}).get("__init__"))
    if kind == "zeros":
        return np.zeros(shape, dtype)
    if kind == "ones":
        return np.ones(shape, dtype)
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan_out = shape[0] * receptive if shape else 1
    fan_in = shape[1] * receptive if len(shape) > 1 else fan_out
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    return rng.uniform(-bound, bound, shape).astype(dtype)


def _init_kind(name: str, hint: str | None) -> str:
    if hint:
        try:
            hint = json.loads(hint)[0]
        except (ValueError, TypeError, IndexError, KeyError):
            pass
        if hint in ("zeros", "zero", "ones", "one"):
            return "zeros" if hint.startswith("zero") else "ones"
    if name.endswith(_ZEROS):
        return "zeros"
    return "ones" if name.endswith(_ONES) else "glorot"


def parse_shapes(texts: Iterable[str]) -> dict[str, Shape]:
    """``['data=1,3,224,224', 'label=1']`` (or ``'data=1,3,224,224;label=1'``, parentheses
    allowed) -> ``{'data': (1, 3, 224, 224), 'label': (1,)}``."""
    shapes: dict[str, Shape] = {}
    for text in texts:
        for item in filter(None, (s.strip() for s in text.split(";"))):
            name, sep, dims = (part.strip() for part in item.partition("="))
            if not sep or not name:
                raise ModelLoadError(f"shape {item!r}: expected NAME=D1,D2,... such as "
                                     f"data=1,3,224,224")
            if name in shapes:
                raise ModelLoadError(f"shape for {name!r} given twice")
            shapes[name] = _parse_dims(name, dims.strip("()[] "))
    return shapes


def _parse_dims(name: str, text: str) -> Shape:
    parts = [d.strip() for d in text.split(",")]
    if parts and not parts[-1]:
        parts.pop()  # "1," is a one-element shape, as in Python
    if not parts or not all(d.isdigit() and int(d) > 0 for d in parts):
        raise ModelLoadError(f"shape for {name!r}: {text!r} is not a list of positive integers "
                             f"separated by commas (e.g. {name}=1,3,224,224)")
    return tuple(int(d) for d in parts)


def _normalise_shapes(shapes: Mapping[str, Any]) -> dict[str, Shape]:
    out = {}
    for name, dims in shapes.items():
        try:
            shape = tuple(int(d) for d in ((dims,) if np.isscalar(dims) else dims))
        except (TypeError, ValueError):
            shape = ()
        if not shape or any(d <= 0 for d in shape):
            raise ModelLoadError(f"shape for {name!r}: {dims!r} is not a tuple of positive "
                                 f"integers")
        out[name] = shape
    return out


def _show(shapes: Mapping[str, Shape]) -> str:
    return ", ".join(f"{k}={v}" for k, v in shapes.items()) or "none"
