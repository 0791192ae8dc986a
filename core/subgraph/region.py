"""Region nodes: the ``_subgraph_op`` operator that stands for a claimed region, carrying it as
an inner symbol (serialised in the JSON ``subgraphs`` field).

Its parameters come from the inner symbol: inputs are the inner variables (in the node's input
order), auxiliary states the inner auxiliary states, outputs the region outputs (named as in
the original graph, so ``list_outputs`` does not change). Shapes and dtypes are inferred by
running inference on the inner graph; the gradient differentiates the inner graph into a
backward region run by the same property.
"""
from __future__ import annotations

import json
from typing import Any

from ..ir.attrs import Params
from ..ir.errors import AttributeParseError
from ..ir.graph import Entry, Graph, IndexedGraph, Node
from ..ops.common import known, merge
from ..ops.registry import OpDef, ShapeConflict
from ..passes.gradient import gradient_pass
from ..passes.manager import apply_passes
from ..symbol.symbol import Symbol, entry_name

__all__ = ["REGION_OP", "RegionParams", "make_region_node", "region_input_names",
           "region_params", "link_regions"]


class RegionParams(Params):
    """Parameters of a region node (never shared between nodes: they hold the inner symbol).
    ``inner`` (the indexed inner graph) and ``signature`` (its structure, for caching inference
    across identical regions) are computed on first use."""

    @property
    def inner(self) -> IndexedGraph:
        return self.subgraph._indexed()

    @property
    def signature(self) -> tuple:
        sig = self.__dict__.get("_signature")
        if sig is None:
            ig = self.inner
            slot = {name: k for k, name in enumerate(self.input_names)}
            sig = self.__dict__["_signature"] = ("indexed", len(slot), tuple(
                (n.op.name if n.op else slot.get(n.name, n.name),
                 tuple(sorted(n.attrs.items())) if n.op else (),
                 tuple((ig.node_id[id(e.node)], e.index) for e in n.inputs)) for n in ig.nodes),
                tuple(ig.outputs))
        return sig

    @property
    def draws(self) -> bool:
        """Whether the inner graph draws random numbers (Dropout)."""
        draws = self.__dict__.get("_draws")
        if draws is None:
            draws = self.__dict__["_draws"] = any(
                n.op is not None and n.op.draws_random(n.params) for n in self.inner.nodes)
        return draws


def region_params(subgraph: Symbol, input_names: list[str], output_names: list[str],
                  aux_names: list[str] | None = None, backward: bool = False) -> Params:
    """Parameters of a region node; ``aux_names`` are derived from the inner symbol when not
    given. ``backward``: the node is a backward region; ``link``: see :func:`link_regions`."""
    if aux_names is None:
        aux_names = subgraph.list_auxiliary_states()
    return RegionParams(subgraph=subgraph, input_names=list(input_names),
                        aux_names=list(aux_names), output_names=list(output_names),
                        backward=backward, link=None)


def link_regions(sym: Symbol) -> Symbol:
    """``sym`` with a per-bind copy of every region node that draws random numbers, whose
    parameters carry a fresh ``link`` dict shared with its backward region: the forward run
    records the random state it started from there, and the backward region, which recomputes
    the forward part of the inner graph, replays it (the same Dropout masks). Nodes downstream
    are copied too; variables stay the same objects. ``sym`` itself when nothing draws."""
    ig = sym._indexed()
    if not any(n.op is REGION_OP and n.op.draws_random(n.params) for n in ig.nodes):
        return sym
    new: dict[int, Node] = {}

    def entry(e: Entry) -> Entry:
        return Entry(new.get(id(e.node), e.node), e.index, e.version)

    for node in ig.nodes:
        if node.op is None:
            continue
        inputs = [entry(e) for e in node.inputs]
        params = node.params
        if node.op is REGION_OP and params.draws:
            params = RegionParams(**{**vars(params), "link": {}})
        elif all(a.node is b.node for a, b in zip(inputs, node.inputs)):
            continue
        new[id(node)] = Node(node.op, node.name, node.attrs, params, inputs,
                             [new.get(id(c), c) for c in node.control_deps], node.subgraphs)
    return Symbol([entry(e) for e in sym.outputs])


def _params_from_node(attrs: dict, subgraphs: list) -> Params:
    """For the JSON loader: rebuild the parameters from the stored inner symbol (the stored
    names must be its inputs, in any order, and one name per output)."""
    sym = subgraphs[0]
    names = _names(attrs, "__input_names__") or sym.list_inputs()
    outs = _names(attrs, "__output_names__") or sym.list_outputs()
    if sorted(names) != sorted(sym.list_inputs()) or len(outs) != len(sym.list_outputs()):
        raise AttributeParseError(f"{REGION_OP.name}: __input_names__ {names} and "
                                  f"__output_names__ {outs} do not name the inner symbol's "
                                  f"inputs {sym.list_inputs()} and its "
                                  f"{len(sym.list_outputs())} outputs")
    return region_params(sym, names, outs)


def _names(attrs: dict, key: str) -> list[str] | None:
    """The JSON list of strings stored under ``key`` (None when absent)."""
    try:
        value = json.loads(attrs.get(key, "null"))
    except ValueError:
        value = False
    if value is not None and not (isinstance(value, list) and
                                  all(isinstance(v, str) for v in value)):
        raise AttributeParseError(f"{REGION_OP.name}: attribute {key}={attrs[key]!r} is not a "
                                  f"JSON list of names")
    return value


def _infer(kind: str):
    """Shape (dtype) rule: seed the inner variables with the node's inputs, run the inner
    inference pass, copy back inputs and outputs."""
    key = "shape" if kind == "shape" else "dtype"

    done = known if kind == "shape" else (lambda v: v is not None)

    cache: dict[tuple, tuple] = {}

    def rule(p, ins, outs):
        if all(map(done, ins)) and all(map(done, outs)):
            return
        key_ = (p.signature, tuple(ins), tuple(outs))
        hit = cache.get(key_)
        if hit is None:
            new_ins, new_outs = list(ins), list(outs)
            _infer_inner(p, new_ins, new_outs)
            if len(cache) > 4096:
                cache.clear()
            hit = cache[key_] = (new_ins, new_outs)
        for k, v in enumerate(hit[0]):
            _merge(ins, k, v, "in")
        for k, v in enumerate(hit[1]):
            _merge(outs, k, v, "out")

    def _infer_inner(p, ins, outs):
        # the outputs are seeded too (as MXNet's subgraph operators do): a value refined
        # outside the region (an init op's 0 dims) can decide shapes inside it
        inner = p.inner
        by_name = {inner.nodes[i].name: i for i in inner.input_nodes}
        seeds = {by_name[n]: v for n, v in zip(p.input_names, ins) if v is not None}
        g = Graph(p.subgraph.outputs, {f"{key}_inputs": seeds, f"{key}_outputs": list(outs)},
                  inner)
        g = apply_passes(g, ["infer_shape" if kind == "shape" else "infer_type"])
        values, rp = g.attrs[key], inner.row_ptr
        for k, n in enumerate(p.input_names):
            _merge(ins, k, values[rp[by_name[n]]], "in")
        for k, eid in enumerate(inner.outputs):
            _merge(outs, k, values[eid], "out")
    return rule


def _merge(lst: list, k: int, value: Any, side: str) -> None:
    """Merge an inner value into the node's: partially known shapes refine each other (a
    begin state ``_zeros(shape=(0, 48))`` outside the region is [?,48] until the inner
    graph says [2,48]); values that disagree are a conflict."""
    if value is None:
        return
    if lst[k] is None:  # (before comparing: numpy finds None equal to float64)
        lst[k] = value
        return
    if lst[k] == value:
        return
    if isinstance(value, tuple):  # dtypes have no partial values
        try:
            lst[k] = merge(lst[k], value)
            return
        except ValueError:
            pass
    raise ShapeConflict(side, k, lst[k], value)


def _gradient(g, node: Node, ograds: list[Entry]) -> list:
    """Differentiate the inner graph; the backward region reads the forward inputs and the
    output gradients and yields one gradient per (non-auxiliary) input. When the inner graph
    draws random numbers, the backward region also recomputes the forward outputs first, so
    that its forward part runs exactly as the forward region did (same order of draws)."""
    p = node.params
    inner = p.inner
    arg_ids = [i for i in inner.input_nodes if i not in inner.mutable_input_nodes]
    gg = gradient_pass(Graph(p.subgraph.outputs, {"grad_args": arg_ids}, inner))
    nfwd = len(p.subgraph.outputs) if p.draws else 0
    bsym = Symbol(gg.outputs[len(p.subgraph.outputs) - nfwd:])
    bnames = bsym.list_inputs()
    by_name = dict(zip(p.input_names, node.inputs))
    head = {v.name: ograds[i] for i, v in enumerate(gg.attrs["head_grad_nodes"]) if v is not None}
    inputs = [by_name[n] if n in by_name else head[n] for n in bnames]
    arg_names = [inner.nodes[i].name for i in arg_ids]
    params = region_params(bsym, bnames, p.output_names[:nfwd] +
                           [f"{n}_grad" for n in arg_names], backward=True)
    params.link = getattr(p, "link", None)
    attrs = dict(node.attrs)
    attrs["__input_names__"] = json.dumps(bnames)
    attrs["__output_names__"] = json.dumps(params.output_names)
    bnode = Node(node.op, f"{node.name}_backward", attrs, params, inputs, [node], [bsym])
    out = {n: Entry(bnode, nfwd + k) for k, n in enumerate(arg_names)}
    return [out.get(n) for n in p.input_names]


#: registered by ``core/startup.py``; its kernel is ``core/runtime/regions.py``'s
REGION_OP = OpDef(
    "_subgraph_op", params={}, inputs=lambda p: p.input_names, aux=lambda p: p.aux_names,
    outputs=lambda p: p.output_names, infer_shape=_infer("shape"), infer_type=_infer("dtype"),
    gradient=_gradient, traits=("subgraph",), random=lambda p: p.draws,
    doc="A region claimed by a subgraph backend; runs through the backend's property.")
REGION_OP.subgraph_params = _params_from_node


def region_input_names(ins: list[Entry]) -> list[str]:
    """Names of the inner variables standing for a region's inputs ``ins``: a variable's own
    name, else the entry's (``<node>_output``), made unique with trailing underscores."""
    names: list[str] = []
    used: set[str] = set()
    for e in ins:
        name = e.node.name if e.node.op is None else entry_name(e)
        while name in used:
            name += "_"
        used.add(name)
        names.append(name)
    return names


def make_region_node(ig: IndexedGraph, members: list[int], ins: list[Entry],
                     outs: list[tuple[int, int]], prop, backend: str, prop_index: int,
                     region_id: int, options: dict | None, outer) -> tuple[Node, list[str]]:
    """Copy the member nodes into an inner symbol whose variables stand for ``ins`` and whose
    outputs are ``outs``; return the region node (inputs mapped through ``outer``)."""
    member_set = set(members)
    names = region_input_names(ins)
    var_of: dict[tuple[int, int], Entry] = {}
    for e, name in zip(ins, names):
        attrs = dict(e.node.attrs) if e.node.op is None else {}
        var_of[(ig.node_id[id(e.node)], e.index)] = Entry(Node(None, name, attrs))
    copies: dict[int, Node] = {}
    slot = {key: k for k, key in enumerate(var_of)}
    position = {nid: k for k, nid in enumerate(members)}
    structure = []  # the region's shape, without names: identical regions share inference
    for nid in members:
        node = ig.nodes[nid]
        inputs, refs = [], []
        for e in node.inputs:
            p = ig.node_id[id(e.node)]
            if p in member_set:
                inputs.append(Entry(copies[p], e.index, e.version))
                refs.append((position[p], e.index))
            else:
                v = var_of[(p, e.index)]
                inputs.append(Entry(v.node, 0, e.version))
                v.node.version = max(v.node.version, e.version)
                refs.append((-1, slot[(p, e.index)]))
        copies[nid] = Node(node.op, node.name, dict(node.attrs), node.params, inputs, [],
                           node.subgraphs)
        structure.append((node.op.name, tuple(sorted(node.attrs.items())), tuple(refs)))
    inner = Symbol([Entry(copies[n], i) for n, i in outs])
    out_names = [entry_name(Entry(ig.nodes[n], i)) for n, i in outs]
    spec = prop.create_subgraph_node(inner, region_id, backend)
    attrs = dict(spec.get("attrs", {}))
    attrs.update({"__backend__": backend, "__property__": str(prop_index),
                  "__input_names__": json.dumps(names), "__output_names__": json.dumps(out_names),
                  "__options__": json.dumps(_jsonable(options or {}), sort_keys=True)})
    aux = [var_of[(ig.node_id[id(n.inputs[k].node)], n.inputs[k].index)].node.name
           for n in (ig.nodes[m] for m in members) if n.op.has_aux
           for k in n.op.aux_indices(n.params)
           if (ig.node_id[id(n.inputs[k].node)], n.inputs[k].index) in var_of]
    params = region_params(inner, names, out_names, aux)
    params.__dict__["_signature"] = (
        tuple(tuple(sorted(v.node.attrs.items())) for v in var_of.values()), tuple(structure),
        tuple((position[n], i) for n, i in outs))
    node = Node(REGION_OP, spec["name"], attrs, params, [outer(e) for e in ins], [], [inner])
    return node, names


def _jsonable(value: Any) -> Any:
    """Options as JSON data (sets become sorted lists, other objects their str)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
