"""MXNet's symbol JSON format: ``load``, ``load_json`` and ``to_json`` (byte-compatible with
the dmlc JSON writer MXNet 1.x uses, so files round-trip unchanged)."""
from __future__ import annotations

import difflib
import json
import os
from typing import Any

from ..ir.arguments import open_regular_file
from ..ir.errors import ArgumentTypeError, GraphexecError, JSONFormatError
from ..ir.graph import Entry, Node
from ..ops.registry import all_names, find_op, get_op
from .symbol import Symbol, symbol_method

__all__ = ["load", "load_json", "to_json", "tojson", "save", "MXNET_VERSION",
           "MAX_SUBGRAPH_DEPTH"]

MXNET_VERSION = 10901
_LEGACY_VERSION = 800      # what MXNet assumes for a file without "mxnet_version"
_AUX_INIT_VERSION = 904    # files older than 0.9.4 get initializers on auxiliary states
#: How deeply subgraphs (of subgraph nodes, control flow) may nest in a file.
MAX_SUBGRAPH_DEPTH = 32
#: Attribute names that older files wrote without the ``__x__`` underscores.
_HIDDEN_KEYS = frozenset({"ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage"})


def load(fname: str) -> Symbol:
    """Load a symbol from an MXNet ``-symbol.json`` file (UTF-8 text)."""
    if not isinstance(fname, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(f"load: expected a file name (str or path), got "
                                f"{type(fname).__name__}")
    with open_regular_file(fname, JSONFormatError, "symbol file") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONFormatError(f"{fname!r}: not a symbol JSON: not UTF-8 text ({exc})") from None
    return load_json(text, source=os.fsdecode(fname))


def load_json(json_str: str, source: str = "<string>") -> Symbol:
    """Load a symbol from MXNet JSON text (``nodes``/``arg_nodes``/``node_row_ptr``/``heads``)."""
    if not isinstance(json_str, (str, bytes, bytearray)):
        raise JSONFormatError(f"{source}: symbol JSON must be text (str or bytes), got "
                              f"{type(json_str).__name__}")
    try:
        # strict=False: MXNet writes control characters other than \n \r \t unescaped
        doc = json.loads(json_str, strict=False)
    except RecursionError:
        raise JSONFormatError(f"{source}: not a symbol JSON: its arrays and objects are nested "
                              f"too deeply to read") from None
    except ValueError as exc:  # JSONDecodeError, undecodable bytes, too many digits
        raise JSONFormatError(f"{source}: not valid JSON: {exc}") from None
    return graph_from_doc(doc, source)


def graph_from_doc(doc: Any, source: str, depth: int = 0, outer_version: int | None = None
                   ) -> Symbol:
    """The symbol of a parsed JSON document; ``depth``: how many subgraphs enclose it;
    ``outer_version``: the enclosing document's version (MXNet writes none in subgraphs)."""
    if not (isinstance(doc, dict) and isinstance(doc.get("nodes"), list)
            and isinstance(doc.get("heads"), list)):
        raise JSONFormatError(f"{source}: a symbol JSON needs 'nodes' (a list) and 'heads' "
                              f"(a list of [node_id, index, version] entries)")
    if depth > MAX_SUBGRAPH_DEPTH:
        raise JSONFormatError(f"{source}: subgraphs nested {depth} deep; at most "
                              f"{MAX_SUBGRAPH_DEPTH} levels are supported")
    version = _doc_version(doc) if outer_version is None or "attrs" in doc else outer_version
    if depth == 0:
        _check_known_ops(doc, source)
    nodes: list[Node] = []
    for i, jn in enumerate(doc["nodes"]):
        nodes.append(_load_node(i, jn, nodes, source, version, depth))
    heads = [_entry(h, nodes, source, "heads") for h in doc["heads"]]
    return Symbol(heads)


def _check_known_ops(doc: dict, source: str) -> None:
    """Every operator the document (and its subgraphs) names that is not registered, in one
    error: a model needing four missing operators says so at once."""
    missing: dict[str, list[str]] = {}
    stack = [doc]
    while stack:
        nodes = stack.pop().get("nodes")
        if not isinstance(nodes, list):
            continue  # a malformed document is reported by graph_from_doc
        for i, jn in enumerate(nodes):
            if not isinstance(jn, dict) or not isinstance(jn.get("op"), str):
                continue  # malformed nodes are reported by _load_node
            if jn["op"] != "null" and find_op(jn["op"]) is None:
                missing.setdefault(jn["op"], []).append(f"node {i} ({jn.get('name')!r})")
            subgraphs = jn.get("subgraphs")
            if isinstance(subgraphs, list):
                stack.extend(sg for sg in subgraphs if isinstance(sg, dict))
    if not missing:
        return
    parts = []
    for op, where in sorted(missing.items()):
        close = difflib.get_close_matches(op, all_names(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        parts.append(f"{op!r} ({', '.join(where[:3])}{', ...' if len(where) > 3 else ''}{hint})")
    error = JSONFormatError(f"{source}: {len(missing)} operator{'s are' if len(missing) > 1 else ' is'} "
                            f"not registered: {'; '.join(parts)}")
    error.unknown_ops = sorted(missing)
    raise error


def _doc_version(doc: dict) -> int:
    """The ``mxnet_version`` a document was written by (files before 0.9 have none)."""
    attrs = doc.get("attrs")
    tagged = attrs.get("mxnet_version") if isinstance(attrs, dict) else None
    if isinstance(tagged, list) and len(tagged) == 2 and isinstance(tagged[1], int):
        return tagged[1]
    return _LEGACY_VERSION


def _node_attrs(jn: dict, where: str, version: int) -> dict[str, str]:
    """Attributes of a node: 'attrs', or the legacy 'param' and 'attr' merged, with the
    upgrades MXNet applies to files from older versions (hidden keys gain underscores)."""
    attrs: dict[str, str] = {}
    for key in ("param", "attr", "attrs"):
        raw = jn.get(key) or {}
        if not isinstance(raw, dict):
            raise JSONFormatError(f"{where}: {key!r} must be an object of strings")
        attrs.update((str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in raw.items())
    if version < MXNET_VERSION:
        attrs = {f"__{k}__" if k in _HIDDEN_KEYS else k: v for k, v in attrs.items()}
    return attrs


def _load_node(i: int, jn: Any, nodes: list[Node], source: str, version: int,
               depth: int) -> Node:
    if not (isinstance(jn, dict) and isinstance(jn.get("op"), str)
            and isinstance(jn.get("name"), str)):
        raise JSONFormatError(f"{source}: node {i} must be an object with string 'op' and "
                              f"'name'")
    name, op_name = jn["name"], jn["op"]
    where = f"{source}: node {i} ({name!r})"
    attrs = _node_attrs(jn, where, version)
    if not isinstance(jn.get("inputs", []), list):
        raise JSONFormatError(f"{where}: 'inputs' must be a list of [node_id, index, version]")
    inputs = [_entry(e, nodes, source, f"node {i} ({name!r}) inputs") for e in jn.get("inputs", [])]
    if op_name == "null":
        if inputs:
            raise JSONFormatError(f"{where}: a variable (op 'null') takes no inputs, the file "
                                  f"gives {len(inputs)}")
        return Node(None, name, attrs, None, [])
    try:
        op = get_op(op_name)
    except GraphexecError as exc:
        raise JSONFormatError(f"{where}: {exc}") from None
    subgraphs = [graph_from_doc(sg, f"{where} subgraph", depth + 1, version)
                 for sg in _list(jn, "subgraphs", where, "symbol JSON documents")]
    try:
        params = op.parse(attrs, name)
        if op.subgraph_params is not None:
            if not subgraphs:
                raise JSONFormatError(f"{op.name} needs its inner symbol in 'subgraphs'")
            params = op.subgraph_params(attrs, subgraphs)
    except GraphexecError as exc:
        raise JSONFormatError(f"{where}: {exc}") from None
    expected = len(op.input_names(params))
    if len(inputs) != expected:
        raise JSONFormatError(f"{where}: {op.name} takes {expected} inputs "
                              f"({', '.join(op.input_names(params))}), the file gives {len(inputs)}")
    deps = [_node_ref(d, nodes, where) for d in _list(jn, "control_deps", where, "node ids")]
    node = Node(op, name, attrs, params, inputs, deps, subgraphs)
    for k in op.aux_indices(params):
        if k < len(inputs) and inputs[k].node.op is None:
            inputs[k].node.version = max(inputs[k].node.version, inputs[k].version)
    if version < _AUX_INIT_VERSION:
        _add_aux_initializers(node)
    return node


def _add_aux_initializers(node: Node) -> None:
    """Files before MXNet 0.9.4 lack ``__init__`` on auxiliary states; MXNet adds the one
    the operator gives its own auxiliary variables (BatchNorm: zero mean, unit variance)."""
    names = node.op.input_names(node.params)
    for k in node.op.aux_indices(node.params):
        var = node.inputs[k].node
        init = node.op.input_var_attrs.get(names[k], {}).get("__init__")
        if var.op is None and init is not None:
            var.attrs.setdefault("__init__", init)


def _list(jn: dict, key: str, where: str, what: str) -> list:
    value = jn.get(key, [])
    if not isinstance(value, list):
        raise JSONFormatError(f"{where}: {key!r} must be a list of {what}, got "
                              f"{type(value).__name__} {value!r:.40}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _node_ref(ref: Any, nodes: list[Node], where: str) -> Node:
    if not _is_int(ref) or not 0 <= ref < len(nodes):
        raise JSONFormatError(f"{where}: reference {ref!r} is not an earlier node id "
                              f"(0..{len(nodes) - 1})")
    return nodes[ref]


def _entry(e: Any, nodes: list[Node], source: str, where: str) -> Entry:
    if not isinstance(e, list) or len(e) not in (2, 3):
        raise JSONFormatError(f"{source}: {where}: entry {e!r} must be [node_id, index, version]")
    node = _node_ref(e[0], nodes, f"{source}: {where}")
    index = e[1]
    if not _is_int(index) or not 0 <= index < node.num_outputs:
        raise JSONFormatError(f"{source}: {where}: node {node.name!r} has "
                              f"{node.num_outputs} outputs, entry asks for output {index!r}")
    version = e[2] if len(e) == 3 else 0
    if not _is_int(version) or version < 0:
        raise JSONFormatError(f"{source}: {where}: entry {e!r}: the version must be an "
                              f"integer >= 0")
    return Entry(node, index, version)


# -- writing ---------------------------------------------------------------------------
@symbol_method
def tojson(self: Symbol) -> str:
    """MXNet's JSON format (byte-compatible with MXNet 1.x ``tojson``)."""
    return to_json(self)


@symbol_method
def save(self: Symbol, fname: str) -> None:
    """Write ``tojson()`` to ``fname``."""
    if not isinstance(fname, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(f"save: expected a file name (str or path), got "
                                f"{type(fname).__name__}")
    with open(fname, "w", encoding="utf-8") as f:
        f.write(to_json(self))


@symbol_method
def __reduce__(self: Symbol):
    """Pickle a Symbol as its JSON text."""
    return (load_json, (to_json(self),))


def to_json(sym: Symbol) -> str:
    """Serialise like MXNet 1.x (dmlc::JSONWriter, 2-space indent, ', ' separators)."""
    return _write(symbol_doc(sym), 0)


def symbol_doc(sym: Symbol, nested: bool = False) -> dict:
    """The JSON document of ``sym`` as Python data (keys in MXNet's order); ``nested``: a
    node's subgraph, which MXNet writes without the version ``attrs``."""
    ig = sym._indexed()
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
            jn["subgraphs"] = [symbol_doc(sg, nested=True) for sg in n.subgraphs]
        nodes.append(jn)
    heads = [[nid[id(e.node)], e.index, e.version] for e in sym.outputs]
    doc = {"nodes": nodes, "arg_nodes": list(ig.input_nodes), "node_row_ptr": ig.row_ptr,
           "heads": _Entries(heads)}
    if not nested:
        doc["attrs"] = {"mxnet_version": _Pair(["int", MXNET_VERSION])}
    return doc


class _Entries(list):
    """A list of [node, index, version] triples, each written on one line."""


class _Pair(list):
    """A heterogeneous pair written on one line."""


def _write(value: Any, depth: int) -> str:
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, _Pair):
        return "[" + ", ".join(_write(v, depth + 1) for v in value) + "]"
    if isinstance(value, _Entries):  # dmlc breaks arrays of more than 10 entries into lines
        return _container("[", "]", [_write(v, depth + 1) for v in value], len(value) > 10,
                          depth)
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
