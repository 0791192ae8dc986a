"""MXNet's symbol JSON format: ``load``, ``load_json`` and ``to_json`` (byte-compatible with
the dmlc JSON writer MXNet 1.x uses, so files round-trip unchanged)."""
from __future__ import annotations

import json
from typing import Any

from .errors import GraphexecError, JSONFormatError
from .graph import Entry, IndexedGraph, Node
from .ops.registry import find_op
from .symbol import Symbol

__all__ = ["load", "load_json", "to_json", "MXNET_VERSION"]

MXNET_VERSION = 10901


def load(fname: str) -> Symbol:
    """Load a symbol from an MXNet ``-symbol.json`` file."""
    try:
        with open(fname) as f:
            text = f.read()
    except OSError as exc:
        raise JSONFormatError(f"cannot read symbol file {fname!r}: {exc.strerror}") from None
    return load_json(text, source=fname)


def load_json(json_str: str, source: str = "<string>") -> Symbol:
    """Load a symbol from MXNet JSON text (``nodes``/``arg_nodes``/``node_row_ptr``/``heads``)."""
    try:
        doc = json.loads(json_str)
    except json.JSONDecodeError as exc:
        raise JSONFormatError(f"{source}: not valid JSON: {exc}") from None
    return graph_from_doc(doc, source)


def graph_from_doc(doc: Any, source: str) -> Symbol:
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or "heads" not in doc:
        raise JSONFormatError(f"{source}: a symbol JSON needs 'nodes' (a list) and 'heads'")
    nodes: list[Node] = []
    for i, jn in enumerate(doc["nodes"]):
        nodes.append(_load_node(i, jn, nodes, source))
    heads = [_entry(h, nodes, source, "heads") for h in doc["heads"]]
    return Symbol(heads)


def _load_node(i: int, jn: Any, nodes: list[Node], source: str) -> Node:
    if not isinstance(jn, dict) or "op" not in jn or "name" not in jn:
        raise JSONFormatError(f"{source}: node {i} must be an object with 'op' and 'name'")
    name, op_name = jn["name"], jn["op"]
    where = f"{source}: node {i} ({name!r})"
    raw = jn.get("attrs", jn.get("attr", jn.get("param", {}))) or {}
    if not isinstance(raw, dict):
        raise JSONFormatError(f"{where}: 'attrs' must be an object of strings")
    attrs = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    inputs = [_entry(e, nodes, source, f"node {i} ({name!r}) inputs") for e in jn.get("inputs", [])]
    if op_name == "null":
        node = Node(None, name, attrs, None, inputs)
        return node
    op = find_op(op_name)
    if op is None:
        raise JSONFormatError(f"{where}: operator {op_name!r} is not registered")
    try:
        params = op.parse(attrs, name)
    except GraphexecError as exc:
        raise JSONFormatError(f"{where}: {exc}") from None
    expected = len(op.input_names(params))
    if len(inputs) != expected:
        raise JSONFormatError(f"{where}: {op.name} takes {expected} inputs "
                              f"({', '.join(op.input_names(params))}), the file gives {len(inputs)}")
    deps = [_node_ref(d, nodes, where) for d in jn.get("control_deps", [])]
    subgraphs = [graph_from_doc(sg, f"{where} subgraph") for sg in jn.get("subgraphs", [])]
    node = Node(op, name, attrs, params, inputs, deps, subgraphs)
    for k in op.aux_indices(params):
        if k < len(inputs) and inputs[k].node.op is None:
            inputs[k].node.version = max(inputs[k].node.version, inputs[k].version)
    return node


def _node_ref(ref: Any, nodes: list[Node], where: str) -> Node:
    if not isinstance(ref, int) or not 0 <= ref < len(nodes):
        raise JSONFormatError(f"{where}: reference {ref!r} is not an earlier node id "
                              f"(0..{len(nodes) - 1})")
    return nodes[ref]


def _entry(e: Any, nodes: list[Node], source: str, where: str) -> Entry:
    if not isinstance(e, list) or len(e) not in (2, 3):
        raise JSONFormatError(f"{source}: {where}: entry {e!r} must be [node_id, index, version]")
    node = _node_ref(e[0], nodes, f"{source}: {where}")
    index = e[1]
    if not isinstance(index, int) or not 0 <= index < node.num_outputs:
        raise JSONFormatError(f"{source}: {where}: node {node.name!r} has "
                              f"{node.num_outputs} outputs, entry asks for output {index!r}")
    return Entry(node, index, e[2] if len(e) == 3 else 0)


# -- writing ---------------------------------------------------------------------------
def to_json(sym: Symbol) -> str:
    """Serialise like MXNet 1.x (dmlc::JSONWriter, 2-space indent, ', ' separators)."""
    return _write(symbol_doc(sym), 0)


def symbol_doc(sym: Symbol) -> dict:
    """The JSON document of ``sym`` as Python data (keys in MXNet's order)."""
    ig = IndexedGraph(sym.outputs)
    nid = ig.node_id
    nodes = []
    for n in ig.nodes:
        jn: dict[str, Any] = {"op": n.op_name, "name": n.name}
        if n.attrs:
            jn["attrs"] = {k: n.attrs[k] for k in sorted(n.attrs)}
        jn["inputs"] = _Entries([[nid[id(e.node)], e.index, e.version] for e in n.inputs])
        if n.control_deps:
            jn["control_deps"] = [nid[id(d)] for d in n.control_deps]
        if n.subgraphs:
            jn["subgraphs"] = [symbol_doc(sg) for sg in n.subgraphs]
        nodes.append(jn)
    heads = [[nid[id(e.node)], e.index, e.version] for e in sym.outputs]
    return {"nodes": nodes, "arg_nodes": list(ig.input_nodes), "node_row_ptr": ig.row_ptr,
            "heads": _Entries(heads), "attrs": {"mxnet_version": _Pair(["int", MXNET_VERSION])}}


class _Entries(list):
    """A list of [node, index, version] triples: dmlc writes it on one line."""


class _Pair(list):
    """A heterogeneous pair written on one line."""


def _write(value: Any, depth: int) -> str:
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (_Entries, _Pair)):
        return "[" + ", ".join(_write(v, depth + 1) for v in value) + "]"
    if isinstance(value, list):
        multi = len(value) > 10 or any(isinstance(v, (dict, list)) for v in value)
        return _container("[", "]", [_write(v, depth + 1) for v in value], multi, depth)
    if isinstance(value, dict):
        items = [f"{_string(k)}: {_write(v, depth + 1)}" for k, v in value.items()]
        multi = len(value) > 1 or any(isinstance(v, dict) and not isinstance(v, _Pair)
                                      for v in value.values()) or "nodes" in value or "op" in value
        return _container("{", "}", items, multi, depth)
    raise TypeError(f"cannot write {type(value).__name__} to symbol JSON")


def _container(open_: str, close: str, items: list[str], multi: bool, depth: int) -> str:
    if not items:
        return open_ + close
    if not multi:
        return open_ + ", ".join(items) + close
    pad = "  " * (depth + 1)
    return open_ + "\n" + ", \n".join(pad + it for it in items) + "\n" + "  " * depth + close


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(s: str) -> str:
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in s) + '"'
