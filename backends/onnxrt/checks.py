"""Reading and validating an ONNX file before any importer sees it: a model ONNX Runtime would
refuse does not import, and no file makes the import allocate more than its tensors hold.

- **Reading** (:func:`read_model`): a missing, empty, unreadable or non-protobuf file is an
  :class:`~.errors.OnnxImportError` naming it. External data is read only from regular files
  inside the model's folder, at offsets and lengths within the file, and exactly as many
  bytes as the tensor's dims and dtype declare.
- **Validation** (:func:`check_model`): IR version and opsets within what the installed
  ``onnx`` knows (ONNX Runtime refuses others), every node checked against its operator
  schema at the model's opset (input and output counts, attribute names and types, required
  attributes: what ONNX Runtime's graph resolution checks), nodes put in topological order
  as ONNX Runtime does, ranks at most :data:`MAX_RANK`.
- **Tensors** (:func:`tensor_value`): initializers and ``Constant`` values are converted only
  when their data holds exactly what their dims declare.
"""
from __future__ import annotations

import heapq
import math
import os
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper, numpy_helper

from graphexec.core.ir.arguments import open_regular_file

from .errors import OnnxImportError

__all__ = ["read_model", "check_model", "sorted_model", "guard_inference", "tensor_value",
           "MAX_RANK"]

#: the largest tensor rank imported (MXNet's limit; numpy's is 64)
MAX_RANK = 32
_DEFAULT_DOMAINS = ("", "ai.onnx")
_RESIZE_MODES = {"nearest", "linear", "cubic"}
#: the values ONNX defines for string attributes: (op type or "*", attribute) -> values
_ENUMS = {
    ("*", "auto_pad"): {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"},
    ("Resize", "mode"): _RESIZE_MODES, ("Upsample", "mode"): _RESIZE_MODES | {"bilinear"},
    ("Resize", "coordinate_transformation_mode"): {
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"},
    ("Resize", "nearest_mode"): {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
    ("Resize", "keep_aspect_ratio_policy"): {"stretch", "not_larger", "not_smaller"},
    ("Pad", "mode"): {"constant", "reflect", "edge", "wrap"},
    ("DepthToSpace", "mode"): {"DCR", "CRD"},
    ("*", "reduction"): {"none", "sum", "mean"},
    ("Gelu", "approximate"): {"none", "tanh"},
    ("Cast", "round_mode"): {"up", "down", "nearest"},
}


def read_model(path_or_model) -> onnx.ModelProto:
    """The model of ``path_or_model`` (a ModelProto, or the path of a ``.onnx`` file), with
    its external data read in."""
    if isinstance(path_or_model, onnx.ModelProto):
        _load_external(path_or_model, None, "the model")
        return path_or_model
    if not isinstance(path_or_model, (str, bytes, os.PathLike)):
        raise OnnxImportError("import_model: expected an onnx.ModelProto or a path, got "
                              f"{type(path_or_model).__name__}")
    path = os.fsdecode(path_or_model)
    with open_regular_file(path, OnnxImportError, "") as f:
        data = f.read()
    if not data:
        raise OnnxImportError(f"import_model: {path!r} is empty, not an ONNX model")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise OnnxImportError(f"import_model: {path!r} is not an ONNX model (protobuf "
                              f"decoding failed: {exc})") from None
    _load_external(model, Path(path).resolve().parent, repr(path))
    return model


def _load_external(model: onnx.ModelProto, folder: Path | None, what: str) -> None:
    for tensor in _all_tensors(model.graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        if folder is None:
            raise OnnxImportError(f"import_model: tensor {tensor.name!r} of {what} keeps its "
                                  f"data in an external file; give import_model the model's "
                                  f"path, so that the file is looked for beside it")
        tensor.raw_data = _external_bytes(tensor, folder)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]


def _all_tensors(graph):
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            for sub in [attr.g] * attr.HasField("g") + list(attr.graphs):
                yield from _all_tensors(sub)


def _external_bytes(tensor, folder: Path) -> bytes:
    info = {e.key: e.value for e in tensor.external_data}
    where = f"import_model: external data of tensor {tensor.name!r}"
    location = info.get("location", "")
    target = (folder / location).resolve()
    if not location or os.path.isabs(location) or folder not in target.parents:
        raise OnnxImportError(f"{where}: location {location!r} is not a file inside the "
                              f"model's folder {str(folder)!r}")
    want = _declared_bytes(tensor, where)
    try:
        offset, length = int(info.get("offset", 0)), info.get("length")
        length = None if length is None else int(length)
    except ValueError:
        raise OnnxImportError(f"{where}: offset {info.get('offset')!r} and length "
                              f"{info.get('length')!r} must be integers") from None
    if not target.is_file():  # never a FIFO or a device, which could block or never end
        raise OnnxImportError(f"{where}: {location!r} is not a regular file in the model's "
                              f"folder")
    try:
        with open(target, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if offset < 0 or offset > size:
                raise OnnxImportError(f"{where}: offset {offset} is outside {location!r} "
                                      f"({size} bytes)")
            length = size - offset if length is None else length
            if length != want or offset + length > size:
                raise OnnxImportError(f"{where}: {location!r} offers {length} bytes at offset "
                                      f"{offset} (file of {size} bytes); dims "
                                      f"{list(tensor.dims)} declare {want}")
            f.seek(offset)
            return f.read(length)
    except OSError as exc:
        raise OnnxImportError(f"{where}: cannot read {location!r}: {exc.strerror}") from None


def _declared_bytes(tensor, where: str) -> int:
    dtype = _np_dtype(tensor.data_type, where)
    if any(d < 0 for d in tensor.dims):
        raise OnnxImportError(f"{where}: negative dims {list(tensor.dims)}")
    return math.prod(tensor.dims) * dtype.itemsize


def _np_dtype(data_type: int, where: str) -> np.dtype:
    if data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        name = TensorProto.DataType.Name(data_type) if data_type in \
            TensorProto.DataType.values() else data_type
        raise OnnxImportError(f"{where}: data type {name} is not imported (graphexec has no "
                              f"string tensors)")
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(data_type))
    except (KeyError, TypeError, ValueError):
        raise OnnxImportError(f"{where}: unknown tensor data type {data_type}") from None


def tensor_value(tensor, what: str) -> np.ndarray:
    """The array of ``tensor`` (an initializer or a Constant's value, named by ``what``)
    when its data holds what its dims declare."""
    where = f"import_model: {what} {tensor.name!r}"
    _np_dtype(tensor.data_type, where)
    if any(d < 0 for d in tensor.dims) or len(tensor.dims) > MAX_RANK:
        raise OnnxImportError(f"{where}: dims {list(tensor.dims)} are not a shape of at most "
                              f"{MAX_RANK} non-negative sizes")
    if tensor.data_location == TensorProto.EXTERNAL:
        raise OnnxImportError(f"{where}: its data is in an external file that was not read")
    try:
        value = numpy_helper.to_array(tensor)
    except Exception as exc:  # noqa: BLE001 - onnx raises ValueError, TypeError, ...
        raise OnnxImportError(f"{where}: its data does not hold the {math.prod(tensor.dims)} "
                              f"elements its dims {list(tensor.dims)} declare ({exc})") from None
    if value.dtype == object:
        raise OnnxImportError(f"{where}: string tensors are not imported")
    return value


def check_model(model: onnx.ModelProto) -> None:
    """Raise :class:`OnnxImportError` when ONNX Runtime would refuse ``model``'s structure
    (``model`` must be topologically sorted: see :func:`sorted_model`)."""
    if not 3 <= model.ir_version <= onnx.IR_VERSION:
        raise OnnxImportError(f"import_model: IR version {model.ir_version}; this onnx reads "
                              f"3 to {onnx.IR_VERSION}")
    opsets = {}
    for o in model.opset_import:
        domain = "" if o.domain in _DEFAULT_DOMAINS else o.domain
        if domain in opsets:
            raise OnnxImportError(f"import_model: opset of domain {o.domain!r} imported twice")
        opsets[domain] = o.version
    newest = onnx.defs.onnx_opset_version()
    if not 1 <= opsets.get("", 0) <= newest:
        raise OnnxImportError(f"import_model: default-domain opset {opsets.get('')}; "
                              f"supported opsets are 1 to {newest}")
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version, ctx.opset_imports = model.ir_version, opsets
    scope = onnx.checker.C.LexicalScopeContext()
    for k, node in enumerate(model.graph.node):
        try:
            onnx.checker.C.check_node(node.SerializeToString(), ctx, scope)
        except onnx.checker.C.ValidationError as exc:
            label = node.name or (node.output[0] if node.output else f"#{k}")
            raise OnnxImportError(f"import_model: node {label!r} ({node.op_type}): "
                                  f"{str(exc).splitlines()[0]}") from None
        _check_enums(node)
    _check_ranks(model.graph)


def _check_enums(node) -> None:
    """String attributes hold one of the values ONNX defines (ONNX Runtime's kernels refuse
    others, and an importer must not read an unknown one as a default)."""
    for attr in node.attribute:
        allowed = _ENUMS.get((node.op_type, attr.name), _ENUMS.get(("*", attr.name)))
        if allowed is not None and attr.type == onnx.AttributeProto.STRING and \
                attr.s.decode(errors="replace") not in allowed:
            raise OnnxImportError(f"import_model: node {node.name or node.output[0]!r} "
                                  f"({node.op_type}): attribute {attr.name}={attr.s!r} is not "
                                  f"one of {sorted(allowed)}")


def _check_ranks(graph) -> None:
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        t = vi.type.tensor_type
        if t.HasField("shape") and len(t.shape.dim) > MAX_RANK:
            raise OnnxImportError(f"import_model: value {vi.name!r} has rank "
                                  f"{len(t.shape.dim)}; at most {MAX_RANK} is imported")


def sorted_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its nodes in topological order (ONNX Runtime sorts them too; ties keep
    the file's order); the model itself when they are; an error naming a value that no
    node, input or initializer provides, or a cycle."""
    nodes = model.graph.node
    known = {vi.name for vi in model.graph.input} | {t.name for t in model.graph.initializer}
    producer = {out: k for k, n in enumerate(nodes) for out in n.output if out}
    waits = [0] * len(nodes)
    readers: dict[int, list[int]] = {}
    for k, node in enumerate(nodes):
        for name in {i for i in node.input if i and i not in known}:
            if name not in producer:
                raise OnnxImportError(f"import_model: node {node.name or node.op_type!r} "
                                      f"({node.op_type}) reads {name!r}, which no node, "
                                      f"input or initializer provides")
            waits[k] += 1
            readers.setdefault(producer[name], []).append(k)
    ready = [k for k, w in enumerate(waits) if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for r in readers.get(k, ()):
            waits[r] -= 1
            if waits[r] == 0:
                heapq.heappush(ready, r)
    if len(order) < len(nodes):
        stuck = nodes[next(k for k, w in enumerate(waits) if w)]
        raise OnnxImportError(f"import_model: node {stuck.name or stuck.op_type!r} "
                              f"({stuck.op_type}) is on a cycle of nodes reading each other")
    if order == list(range(len(nodes))):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(nodes[k] for k in order)
    return copy


def guard_inference(model: onnx.ModelProto) -> bool:
    """Check, node by node and before ONNX's inference function of the node runs, the
    attributes that some ``onnx`` releases use to index their input shapes unchecked
    (GatherND's batch_dims, a normalisation axis, Split's num_outputs, convolution and
    pooling geometry): out-of-range values crash the process or corrupt memory there. Input
    ranks come from ONNX's own per-node inference, run in the file's order (which
    :func:`sorted_model` made topological); its errors are the model's.

    Returns whether ONNX's data propagation (``infer_shapes(data_prop=True)``) may run: it
    allocates some 150 bytes per element of every 1-D value that Squeeze, Concat, Gather,
    Slice, Cast, Size... read, whether or not the value is known, so one long vector would
    take all memory; with a vector longer than :data:`DATA_PROP_LENGTH` it must not."""
    graph, opset = model.graph, _default_opset(model)
    types = {vi.name: vi.type for vi in graph.input}
    data = {}
    for t in graph.initializer:
        types[t.name] = helper.make_tensor_type_proto(t.data_type, list(t.dims))
        if math.prod(t.dims) <= _DATA_ELEMENTS:
            data[t.name] = t
    for node in graph.node:
        ranks = [_rank(types.get(name)) for name in node.input]
        guard = _GUARDS.get(node.op_type)
        if guard is not None:
            problem = guard(node, ranks, {a.name: helper.get_attribute_value(a)
                                          for a in node.attribute}, opset)
            if problem:
                raise OnnxImportError(f"import_model: node {node.name or node.output[0]!r} "
                                      f"({node.op_type}): {problem}")
        types.update(_node_types(node, types, data, model))
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            data[node.output[0]] = node.attribute[0].t
    return all(_length(t) <= DATA_PROP_LENGTH for t in types.values())


_DATA_ELEMENTS = 1024
#: the longest 1-D value with which ONNX's data propagation runs (see guard_inference)
DATA_PROP_LENGTH = 1 << 16


def _length(t) -> int:
    """The length of a 1-D value (0 for any other rank or an unknown length)."""
    if _rank(t) != 1:
        return 0
    dim = t.tensor_type.shape.dim[0]
    return dim.dim_value if dim.HasField("dim_value") else 0


def _default_opset(model) -> int:
    return next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), 0)


def _rank(t) -> int | None:
    if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return len(t.tensor_type.shape.dim)


def _node_types(node, types: dict, data: dict, model) -> dict:
    schema = onnx.defs.get_schema(node.op_type, _default_opset(model))
    try:
        return onnx.shape_inference.infer_node_outputs(
            schema, node, {n: types[n] for n in node.input if n in types},
            {n: data[n] for n in node.input if n in data}, None, list(model.opset_import),
            model.ir_version)
    except Exception as exc:  # noqa: BLE001 - InferenceError, ValidationError, ValueError
        lines = " ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
        raise OnnxImportError(f"import_model: node {node.name or node.output[0]!r} "
                              f"({node.op_type}): ONNX shape inference rejects it (so would "
                              f"ONNX Runtime): {lines[:1000]}") from None


def _axis_in(name: str, index: int = 0, default: int = -1):
    def guard(node, ranks, attrs, opset):
        rank, axis = ranks[index] if len(ranks) > index else None, attrs.get(name, default)
        if rank is not None and not -rank <= axis < rank:
            return f"{name} {axis} is outside [-{rank}, {rank}) for an input of rank {rank}"
        return None
    return guard


def _gather_nd(node, ranks, attrs, opset):
    batch = attrs.get("batch_dims", 0)
    known = [r for r in ranks[:2] if r is not None]
    if batch < 0 or (known and batch >= min(known)):
        return f"batch_dims {batch} must be >= 0 and below the ranks of data and indices"
    return None


def _split(node, ranks, attrs, opset):
    count = attrs.get("num_outputs")
    if count is not None and count != len(node.output):
        return f"num_outputs {count} does not match its {len(node.output)} outputs"
    return None


def _window(node, ranks, attrs, opset):
    """Convolution and pooling: the weight's rank equals the data's, and per-axis
    attributes hold one value per spatial axis (pads two)."""
    data = ranks[0] if ranks else None
    if node.op_type in ("Conv", "ConvTranspose") and len(ranks) > 1 and \
            None not in ranks[:2] and ranks[0] != ranks[1]:
        return f"data of rank {ranks[0]} and weight of rank {ranks[1]} differ in rank"
    if data is None:
        return None
    nd = data - 2
    if nd < 1:
        return f"data of rank {data}: (N, C, spatial...) is needed"
    for name, want in (("kernel_shape", nd), ("strides", nd), ("dilations", nd),
                       ("pads", 2 * nd), ("output_padding", nd)):
        if name in attrs and len(attrs[name]) != want:
            return f"{name} {list(attrs[name])} must hold {want} values for {nd} spatial axes"
    return None


def _gemm(node, ranks, attrs, opset):
    if any(r is not None and r != 2 for r in ranks[:2]):
        return f"A and B must be matrices, their ranks are {ranks[:2]}"
    return None


_GUARDS = {"GatherND": _gather_nd, "LayerNormalization": _axis_in("axis"),
           "RMSNormalization": _axis_in("axis"), "Split": _split, "Gemm": _gemm,
           **dict.fromkeys(("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"),
                           _window)}
