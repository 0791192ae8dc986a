"""User-facing partitioning: ``Symbol.optimize_for``, ``gx.partition`` (the plan without
binding) and ``gx.validate_partition``."""
from __future__ import annotations

from typing import Any

from ..ir.context import Context, cpu
from ..ir.errors import ArgumentValueError, GraphexecError
from ..ir.graph import IndexedGraph
from ..plugins import notify
from ..symbol.symbol import Symbol, symbol_method
from .plan import PartitionPlan
from .select import apply_backends, resolve_backends

__all__ = ["optimize_for", "partition", "validate_partition", "PartitionError"]


class PartitionError(GraphexecError, ValueError):
    """A partitioned symbol is not a valid partition of the original."""


@symbol_method
def optimize_for(self: Symbol, backend: str, args: Any = None, aux: Any = None,
                 ctx: Context | None = None, **options: Any) -> Symbol:
    """MXNet's ``sym.optimize_for(backend, args, aux, ctx, **options)``: the symbol
    partitioned by ``backend`` ("name" or "a,b") with backend options; the arrays of
    ``args`` / ``aux`` (dicts by name, or lists in ``list_arguments`` /
    ``list_auxiliary_states`` order) give their shapes and dtypes to the selectors.

    ``dedup_subgraph=True`` (MXNet 1.9.1's option) is what graphexec's regions always do:
    a region takes each outer entry once however many of its nodes read it; MXNet's other
    form (one region input per reading edge) is not provided, so False is refused."""
    dedup = options.pop("dedup_subgraph", True)
    if dedup is not True:
        raise ArgumentValueError(f"optimize_for: dedup_subgraph={dedup!r}: graphexec's regions "
                                 f"always take each input entry once (MXNet's "
                                 f"dedup_subgraph=True); pass True or leave it out")
    given = {**_by_name(args, self.list_arguments()),
             **_by_name(aux, self.list_auxiliary_states())}
    return partition(self, backend, ctx=ctx,
                     input_shapes={k: tuple(v.shape) for k, v in given.items()},
                     input_dtypes={k: v.dtype for k, v in given.items()},
                     **options).symbol


def _by_name(arrays: Any, names: list[str]) -> dict:
    if arrays is None:
        return {}
    if isinstance(arrays, dict):
        return {k: v for k, v in arrays.items() if v is not None}
    return {k: v for k, v in zip(names, arrays) if v is not None}


def partition(sym: Symbol, backend: str, ctx: Context | None = None, need_grad: bool = False,
              input_shapes: dict | None = None, input_dtypes: dict | None = None,
              **options: Any) -> PartitionPlan:
    """Partition ``sym`` without binding; the returned plan has the partitioned ``symbol``.
    ``input_shapes`` / ``input_dtypes`` (by input name; dtypes default to float32) let
    shape-aware selectors (``onnxrt``) see the inferred graph.

    >>> plan = gx.partition(net, "default", op_names={"exp", "sin"})
    >>> print(plan.table())
    """
    names, opts = resolve_backends(backend)
    for name in names:  # keyword options go to every named backend (each takes its own)
        opts.setdefault(name, {}).update(options)
    shapes = dict(input_shapes or {})
    dtypes = {k: "float32" for k in shapes}
    dtypes.update(input_dtypes or {})
    part, plan = apply_backends(sym, names, ctx or cpu(), need_grad, opts, shapes, dtypes)
    plan.symbol = part
    notify("graphexec_partition_done", symbol=part, plan=plan)
    return plan


def validate_partition(original: Symbol, partitioned: Symbol) -> None:
    """Check that ``partitioned`` is a valid partition of ``original``: identical argument,
    auxiliary-state and output lists (content and order), every operator node of the original
    exactly once (outside or inside one region), every region convex (no original path
    leaves it and re-enters), and every node (and head) reading, through the region nodes,
    the very entries it reads in the original. Raises :class:`PartitionError` listing every
    problem."""
    problems = []
    for what in ("list_arguments", "list_auxiliary_states", "list_outputs"):
        a, b = getattr(original, what)(), getattr(partitioned, what)()
        if a != b:
            problems.append(f"{what}() differs: {a} vs {b}")
    ig = IndexedGraph(original.outputs)
    by_name = {n.name: i for i, n in enumerate(ig.nodes) if n.op is not None}
    seen: dict[str, str] = {}
    regions: list[set[int]] = []
    for node in IndexedGraph(partitioned.outputs).nodes:
        if node.op is None:
            continue
        if "subgraph" in node.op.traits:
            inner = {n.name for n in IndexedGraph(node.subgraphs[0].outputs).nodes
                     if n.op is not None}
            for name in inner:
                _count(seen, name, node.name, problems)
            regions.append({by_name[n] for n in inner if n in by_name})
        else:
            _count(seen, node.name, "outside", problems)
    missing = sorted(set(by_name) - set(seen))
    if missing:
        problems.append(f"operator nodes lost by the partition: {missing}")
    extra = sorted(set(seen) - set(by_name))
    if extra:
        problems.append(f"operator nodes not in the original: {extra}")
    consumers = ig.consumers()
    for members in regions:
        if _leaves_and_reenters(members, consumers):
            names = sorted(ig.nodes[m].name for m in members)
            problems.append(f"region {names} is not convex: a path leaves it and re-enters")
    if not problems:
        problems += _wiring_problems(original, partitioned)
    if problems:
        raise PartitionError("invalid partition:\n  " + "\n  ".join(problems))


def _origin(e, scope: dict | None) -> tuple[str, int]:
    """The original (producer name, output index) that entry ``e`` of a partitioned graph
    stands for; ``scope`` maps the inner variables of the region being read to the region
    node's input entries, each with its own scope."""
    while True:
        node = e.node
        if node.op is None:
            if scope is not None and node.name in scope:
                e, scope = scope[node.name]
                continue
            return node.name, 0
        if "subgraph" not in node.op.traits:
            return node.name, e.index
        scope = {n: (x, scope) for n, x in zip(node.params.input_names, node.inputs)}
        e = node.subgraphs[0].outputs[e.index]


def _wiring_problems(original: Symbol, partitioned: Symbol) -> list[str]:
    want = {n.name: [(e.node.name, e.index) for e in n.inputs]
            for n in IndexedGraph(original.outputs).nodes if n.op is not None}
    problems = []
    heads = [(e.node.name, e.index) for e in original.outputs]
    if [_origin(e, None) for e in partitioned.outputs] != heads:
        problems.append("the outputs are not the original outputs")
    stack = [(partitioned.outputs, None)]
    while stack:
        outputs, scope = stack.pop()
        for node in IndexedGraph(outputs).nodes:
            if node.op is None:
                continue
            if "subgraph" in node.op.traits:
                inner = {n: (x, scope) for n, x in zip(node.params.input_names, node.inputs)}
                stack.append((node.subgraphs[0].outputs, inner))
                continue
            got = [_origin(e, scope) for e in node.inputs]
            if got != want.get(node.name, got):
                problems.append(f"node {node.name!r} reads {got}, in the original "
                                f"{want[node.name]}")
    return problems


def _count(seen: dict, name: str, where: str, problems: list) -> None:
    if name in seen:
        problems.append(f"node {name!r} appears twice ({seen[name]} and {where})")
    seen[name] = where


def _leaves_and_reenters(members: set[int], consumers) -> bool:
    outside = [c for m in members for c in consumers[m] if c not in members]
    seen = set()
    while outside:
        n = outside.pop()
        if n in seen:
            continue
        seen.add(n)
        for c in consumers[n]:
            if c in members:
                return True
            outside.append(c)
    return False
