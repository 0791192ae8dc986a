"""Random inputs for a :class:`~.model.Model`: index-valued inputs
(SoftmaxOutput labels, Embedding / take / pick / one_hot indices, also through reshapes and
casts) get whole numbers in their valid range, the others uniform values."""
from __future__ import annotations

import numpy as np

from graphexec.core.ops.registry import get_op
from graphexec.core.passes.inference import run_inference

from .model import Model

__all__ = ["make_inputs"]


def make_inputs(model: Model, seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs for every input of ``model``: index-valued ones (labels of SoftmaxOutput,
    Embedding / take / pick / one_hot indices, also through reshapes and casts) are integers in
    their valid range, stored in the input's dtype; other float inputs are uniform in [-1, 1),
    other integer inputs in [0, 10) and boolean ones random."""
    bounds = _index_bounds(model)
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in model.input_shapes.items():
        dtype = np.dtype(model.input_dtypes[name])
        if name in bounds or dtype.kind in "iub":
            default = 2 if dtype.kind == "b" else 10
            out[name] = rng.integers(0, bounds.get(name, default), shape).astype(dtype)
        else:
            out[name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    return out


#: Ops that move index values without changing them (followed to the op that reads them).
_PASS_THROUGH = ("Reshape", "Flatten", "Cast", "_copy", "BlockGrad", "expand_dims", "squeeze",
                 "transpose", "SwapAxis", "SliceChannel", "slice_axis", "slice", "stack",
                 "Concat")


def _index_bounds(model: Model) -> dict[str, int]:
    """Input name -> exclusive upper bound of the indices it must hold."""
    sym = model.symbol
    ig = sym._indexed()
    known = {**model.input_shapes, **{k: v.shape for k, v in
                                      {**model.arg_params, **model.aux_params}.items()}}
    seeds = {i: tuple(known[ig.nodes[i].name]) for i in ig.input_nodes}
    shapes = run_inference(sym, seeds, {}).attrs["shape"]
    passing = {get_op(op).name for op in _PASS_THROUGH}
    consumers = ig.consumers()
    bounds: dict[str, int] = {}
    for name in model.input_shapes:
        start = next(i for i in ig.input_nodes if ig.nodes[i].name == name)
        found = _bounds_from(ig, shapes, consumers, passing, start)
        if found:
            bounds[name] = min(found)
    return bounds


def _bounds_from(ig, shapes, consumers, passing, start: int) -> list[int]:
    found, todo, seen = [], [start], {start}
    while todo:
        nid = todo.pop()
        for c in consumers[nid]:
            node = ig.nodes[c]
            for pos, e in enumerate(node.inputs):
                if ig.node_id[id(e.node)] != nid:
                    continue
                if node.op.name in passing and c not in seen:
                    seen.add(c)
                    todo.append(c)
                bound = _index_bound(node, pos, [shapes[i] for i in ig.node_inputs[c]])
                if bound:
                    found.append(bound)
    return found


def _index_bound(node, pos: int, in_shapes: list[tuple]) -> int | None:
    """The exclusive bound of input ``pos`` of ``node`` when it holds indices, else None."""
    op, p = node.op.name, node.params
    if op == "SoftmaxOutput" and pos == 1:
        return in_shapes[0][1 if p.multi_output else -1]
    if op == "Embedding" and pos == 0:
        return in_shapes[1][0]
    if op == "take" and pos == 1:
        return in_shapes[0][p.axis]
    if op == "pick" and pos == 1:
        return in_shapes[0][p.axis if p.axis is not None else -1]
    if op == "one_hot" and pos == 0:
        return p.depth
    return None


# -- shapes from the command line ---------------------------------------------------------------
