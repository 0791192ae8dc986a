"""Whole-graph export of a graphexec symbol to an ONNX model (opset 17).

Shapes and dtypes come from graphexec's own inference; parameters (``arg_params`` /
``aux_params``) become initializers, the data inputs (``input_shapes``) the graph inputs.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from graphexec.core.ir.graph import Entry
from graphexec.core.ops.common import known
from graphexec.core.passes.inference import dtype_seeds, run_inference, shape_seeds
from graphexec.core.symbol.symbol import entry_name

from .converters import CONVERTERS, Builder, ConvertCall, onnx_dtype, supported_dtype
from .errors import OnnxExportError

__all__ = ["export_model", "unsupported_nodes"]


def unsupported_nodes(sym, shapes_of=None) -> list[str]:
    """``"<node> (<op>): <reason>"`` for every node no converter claims."""
    ig = sym._indexed()
    found = []
    for nid, node in enumerate(ig.nodes):
        if node.op is None:
            continue
        conv = CONVERTERS.get(node.op.name)
        if conv is None:
            found.append(f"{node.name} ({node.op.name}): no ONNX converter")
            continue
        ok = conv.supports(node, shapes_of(nid) if shapes_of else [None] * len(node.inputs))
        if ok is not True:
            found.append(f"{node.name} ({node.op.name}): {ok}")
    return found


def _infer(sym, params: dict, input_shapes: dict, input_dtypes: dict, output_shapes):
    ig = sym._indexed()
    by_name = {ig.nodes[i].name: i for i in ig.input_nodes}
    missing = [k for k in list(input_shapes) + list(params) if k not in by_name]
    if missing:
        raise OnnxExportError(f"export_model: {missing} are not inputs of the symbol; inputs "
                              f"are {sym.list_inputs()}")
    shapes = {by_name[k]: tuple(v.shape) for k, v in params.items()}
    shapes.update({by_name[k]: tuple(v) for k, v in input_shapes.items()})
    dtypes = {by_name[k]: np.dtype(v.dtype) for k, v in params.items()}
    dtypes.update({by_name[k]: np.dtype(input_dtypes.get(k, np.float32)) for k in input_shapes})
    g = run_inference(sym, shape_seeds(ig, shapes, True), dtype_seeds(ig, dtypes),
                      [None if s is None else tuple(s) for s in output_shapes or ()])
    shape, dtype = g.attrs["shape"], g.attrs["dtype"]
    undecided = [value_names(ig)[e] for e in range(ig.num_entries)
                 if not known(shape[e]) or dtype[e] is None]
    if undecided:
        raise OnnxExportError("export_model: cannot infer the shape or dtype of "
                              f"{undecided}; give the shapes of the data inputs")
    return ig, shape, dtype


def _convert_nodes(ig, names: list[str], shapes, dtypes) -> Builder:
    b = Builder()
    for nid, node in enumerate(ig.nodes):
        if node.op is None:
            continue
        ins = ig.node_inputs[nid]
        outs = list(range(ig.row_ptr[nid], ig.row_ptr[nid + 1]))
        call = ConvertCall(node, [names[e] for e in ins], [names[e] for e in outs],
                           [shapes[e] for e in ins], [dtypes[e] for e in ins],
                           [shapes[e] for e in outs], [dtypes[e] for e in outs], b)
        CONVERTERS[node.op.name].convert(call)
    return b


def value_names(ig) -> list[str]:
    """One ONNX value name per entry id, all distinct: ONNX Runtime rejects a graph that is
    not in single static assignment form, and an MXNet graph may hold several nodes of one
    name (Gluon reuses a block, as in i3d and slowfast). Variables keep their names (they are
    the graph inputs); a repeated ``<node>_<output>`` gets ``__2``, ``__3``..."""
    names = [""] * ig.num_entries
    taken = {ig.nodes[nid].name for nid in ig.input_nodes}
    for nid, node in enumerate(ig.nodes):
        for k in range(ig.row_ptr[nid + 1] - ig.row_ptr[nid]):
            name = base = entry_name(Entry(node, k))
            if node.op is not None:
                count = 1
                while name in taken:
                    count += 1
                    name = f"{base}__{count}"
                taken.add(name)
            names[ig.row_ptr[nid] + k] = name
    return names


def _value_info(name: str, shape, dtype) -> Any:
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), list(shape))


def export_model(sym, arg_params: dict, aux_params: dict, input_shapes: dict, path=None,
                 input_dtypes: dict | None = None, opset: int = 17,
                 output_shapes: list | None = None) -> onnx.ModelProto:
    """Export ``sym`` for inference (``is_train=False`` semantics) as an ONNX model.

    ``input_shapes``: data input name -> shape (the graph inputs); ``arg_params`` /
    ``aux_params``: name -> array (written as initializers); ``input_dtypes``: data input
    name -> dtype (float32 by default); ``output_shapes``: the shapes of the outputs where
    known beforehand (a region's, from the graph around it). Saved to ``path`` when given.
    Raises :class:`OnnxExportError` listing every node no converter supports."""
    params = {k: np.asarray(v) for k, v in {**(arg_params or {}), **(aux_params or {})}.items()}
    input_dtypes = dict(input_dtypes or {})
    ig, shapes, dtypes = _infer(sym, params, dict(input_shapes), input_dtypes, output_shapes)

    def shapes_of(nid):
        return [shapes[e] for e in ig.node_inputs[nid]]
    bad = unsupported_nodes(sym, shapes_of)
    names = value_names(ig)
    bad += [f"{names[e]}: dtype {dtypes[e]}" for e in range(ig.num_entries)
            if not supported_dtype(dtypes[e])]
    if bad:
        raise OnnxExportError("export_model: these nodes cannot be converted to ONNX:\n  "
                              + "\n  ".join(bad))
    b = _convert_nodes(ig, names, shapes, dtypes)
    graph = _assemble(sym, ig, b, names, params, input_shapes, shapes, dtypes)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="graphexec")
    model.ir_version = 8
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, str(path))
    return model


def _assemble(sym, ig, b: Builder, names: list[str], params, input_shapes, shapes, dtypes):
    used = {name for n in b.nodes for name in n.input}
    heads = _head_names(b, [names[e] for e in ig.outputs])
    used.update(names[e] for e in ig.outputs)
    inputs = []
    for nid in ig.input_nodes:
        name, eid = ig.nodes[nid].name, ig.row_ptr[nid]
        if name in params:
            if name in used:
                b.initializer(name, params[name].astype(dtypes[eid], copy=False))
        elif name in input_shapes or name in used:
            inputs.append(_value_info(name, shapes[eid], dtypes[eid]))
    outputs = [_value_info(name, shapes[eid], dtypes[eid]) for eid, name in zip(ig.outputs, heads)]
    return helper.make_graph(b.nodes, sym.name or "graphexec", inputs, outputs,
                             initializer=b.initializers)


def _head_names(b: Builder, heads: list[str]) -> list[str]:
    """The graph output names: an entry given as several outputs is copied by an Identity
    node for each repeat, as ONNX output names must be distinct."""
    seen: set[str] = set()
    out = []
    for name in heads:
        out.append(b.one("Identity", [name], hint=name) if name in seen else name)
        seen.add(name)
    return out
