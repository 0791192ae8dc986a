"""Code generation: one numba kernel for a region and a signature (its structure, dtypes and
broadcast pattern; not its sizes, which the kernel takes as arguments).

Every value of the region is computed per element of one loop *domain* (the region's largest
shape). Inputs of smaller shapes are read with broadcasting; gradient outputs of smaller
shapes (the backward of broadcast operators) are written over the domain into a scratch
buffer and summed down by the runner. Dims that every operand treats alike are merged, so a
region of same-shaped arrays runs one flat loop, and a bias broadcast a loop over rows and
columns. float16 is loaded and stored through its bits and computed in float32 (as MXNet's
fused GPU kernels do); float64 is computed in float64 with libm.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.passes.inference import dtype_seeds, run_inference, shape_seeds

from graphexec.core.runtime.jit_cache import CACHE_OPTION, source_key
from .cost import FUSED_NS, NS_PER_BYTE
from .ops import FORWARD
from .ops_grad import BACKWARD

__all__ = ["FusedCodegenError", "Kernel", "Operand", "generate", "generate_inferred",
           "node_domain", "LOWERINGS", "REDUCING", "SUMS", "UNREAD"]

#: every operator the code generator covers
LOWERINGS = {**FORWARD, **BACKWARD}
#: operators whose outputs may be smaller than the domain (written over it, then summed)
REDUCING = frozenset(n for n in BACKWARD if n.startswith("_backward_broadcast_")) | {
    "zeros_like", "_backward_where"}
#: operators that sum (or pass on) such outputs without leaving their shape
SUMS = frozenset(("add_n", "_grad_add", "elemwise_add", "_copy"))
#: where's condition: an (n,) condition selects whole rows (it aligns to the left)
ROWS = {"where": 0, "_backward_where": 1}
#: inputs that only lend their shape (never read by the kernel)
UNREAD = {"_identity_with_attr_like_rhs": (1,), "zeros_like": (0,), "ones_like": (0,)}
_FORMAT = 1
_VMATH = hashlib.sha256((Path(__file__).parent / "vmath.py").read_bytes()).hexdigest()[:12]
_OPTIONS = CACHE_OPTION + ", error_model='numpy', fastmath={'contract'}, nogil=True"


class FusedCodegenError(GraphexecError, ValueError):
    """A region the code generator cannot turn into one kernel (the selector never claims
    such a region; one built by hand runs natively, with a warning)."""


@dataclass
class Operand:
    """One array argument of the kernel: region input ``index`` (``kind`` 'in'), region
    output ``index`` ('out') or a domain-sized scratch buffer for output ``index``
    ('scratch'); ``shape`` aligned to the domain; ``mask``: which merged dims it spans."""

    kind: str
    index: int
    shape: tuple
    dtype: np.dtype
    mask: tuple = ()


@dataclass
class Kernel:
    """A generated kernel: its ``source`` (a module defining ``kernel`` (parallel) and
    ``kernel_serial``), ``operands`` in argument order, the ``domain`` and its merged
    ``groups`` of dims, and per region output what the runner does after the kernel:
    ``('store',)``, ``('reduce', shape)`` or ``('zero',)``."""

    source: str
    operands: list[Operand]
    domain: tuple
    groups: list[list[int]]
    outputs: list[tuple]
    ops: list[str] = field(default_factory=list)
    #: estimated single-thread cost per element of the domain (see :mod:`.cost`)
    ns_per_element: float = 0.0
    #: the loop body (index expressions in place) and the constants' definitions, from
    #: which other targets build their kernels (:mod:`.cuda`)
    body: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    #: the operands' names in the body, in argument order
    names: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return source_key(self.source)


def _ctype(dtype: np.dtype) -> str:
    return "f8" if dtype == np.float64 else "f4"


@dataclass
class _Value:
    name: str
    dtype: np.dtype
    target: tuple | None = None  # a shape smaller than the domain: summed down at the end
    zero: bool = False


class Emit:
    """What a lowering sees for one node (see :mod:`.ops`)."""

    def __init__(self, program: "_Program", dtype: np.dtype, in_shapes: tuple = ()):
        self._p = program
        self.dtype = np.dtype(dtype)
        self.t = _ctype(self.dtype)
        #: the shapes of the node's inputs (for lowerings whose constants depend on them)
        self.in_shapes = in_shapes

    def k(self, value: float) -> str:
        """A constant: ``value`` cast to the node's dtype, then to its compute type."""
        return self._p.constant(float(self.dtype.type(value)), self.t)

    @property
    def one(self) -> str:
        return self.k(1.0)

    @property
    def zero(self) -> str:
        return self.k(0.0)

    def let(self, expr: str) -> str:
        return self._p.assign(expr)


class _Program:
    def __init__(self):
        self.constants: dict[tuple, str] = {}
        self.lines: list[str] = []
        self.count = 0

    def constant(self, value: float, t: str) -> str:
        key = (t, np.float64(value).tobytes())
        if key not in self.constants:
            self.constants[key] = f"K{len(self.constants)}"
        return self.constants[key]

    def is_zero(self, name: str) -> bool:
        """Whether ``name`` is a constant equal to zero."""
        return any(n == name and np.frombuffer(raw, np.float64)[0] == 0.0
                   for (_, raw), n in self.constants.items())

    def assign(self, expr: str, comment: str = "") -> str:
        name = f"v{self.count}"
        self.count += 1
        self.lines.append(f"{name} = {expr}" + (f"  # {comment}" if comment else ""))
        return name


def generate(symbol, input_names: list[str], shapes: list[tuple], dtypes: list) -> Kernel:
    """The kernel of the region ``symbol`` for inputs of these shapes and dtypes (in
    ``input_names`` order)."""
    ig = symbol._indexed()
    by_name = {ig.nodes[i].name: i for i in ig.input_nodes}
    g = run_inference(symbol, shape_seeds(ig, {by_name[n]: s for n, s in zip(input_names, shapes)},
                                          False),
                      dtype_seeds(ig, {by_name[n]: d for n, d in zip(input_names, dtypes)}))
    return generate_inferred(ig, input_names, g.attrs["shape"], g.attrs["dtype"])


def generate_inferred(ig, input_names: list[str], eshape: list, edtype: list) -> Kernel:
    """The kernel of the region whose indexed inner graph is ``ig``, given the shape and dtype
    of every inner entry (entry id order): for inner graphs that cannot infer them alone, such
    as backward operators cut off from their forward node (MXNET_USE_FUSION)."""
    needed = _needed(ig)
    domain = max((tuple(eshape[e]) for nid in needed for e in range(ig.row_ptr[nid],
                                                                       ig.row_ptr[nid + 1])),
                 key=lambda s: (math.prod(s), len(s)))
    return _Builder(ig, input_names, eshape, edtype, needed, domain).build()


def node_domain(op_name: str, shapes: list[tuple]) -> tuple:
    """The loop shape one node of ``op_name`` with inputs of these shapes needs: its inputs
    broadcast together, leaving out those only lending their shape (:data:`UNREAD`) and
    where's row condition (:data:`ROWS`). Backward operators whose outputs are smaller (the
    gradients of broadcast inputs) loop over their output gradient's shape."""
    skip = set(UNREAD.get(op_name, ()))
    if op_name in ROWS:
        skip.add(ROWS[op_name])
    kept = [tuple(s) for k, s in enumerate(shapes) if k not in skip] or [tuple(shapes[0])]
    return tuple(np.broadcast_shapes(*kept))


def _needed(ig) -> list[int]:
    """Node ids that the outputs read through data inputs, in topological order."""
    seen: set[int] = set()
    stack = [ig.entry_node(e)[0] for e in ig.outputs]
    while stack:
        nid = stack.pop()
        if nid not in seen:
            seen.add(nid)
            node = ig.nodes[nid]
            unread = UNREAD.get(node.op.name, ()) if node.op is not None else ()
            stack.extend(ig.node_id[id(e.node)] for k, e in enumerate(node.inputs)
                         if k not in unread)
    return sorted(seen)


def _aligned(shape: tuple, domain: tuple, rows: bool) -> tuple:
    """``shape`` padded to the domain's rank: on the left (numpy broadcasting) or, for
    where's (n,) condition, on the right (it selects whole rows)."""
    pad = (1,) * (len(domain) - len(shape))
    return tuple(shape) + pad if rows else pad + tuple(shape)


class _Builder:
    def __init__(self, ig, input_names, eshape, edtype, needed, domain):
        self.ig, self.eshape, self.edtype = ig, eshape, edtype
        self.needed, self.domain = needed, tuple(domain)
        self.slot = {name: k for k, name in enumerate(input_names)}
        self.p = _Program()
        self.values: dict[tuple[int, int], _Value] = {}
        self.loads: dict[tuple[int, bool], _Value] = {}
        self.operands: dict[str, Operand] = {}
        self.compute_ns = 0.0

    def build(self) -> Kernel:
        ops = []
        for nid in self.needed:
            node = self.ig.nodes[nid]
            if node.op is not None:
                self._node(nid, node)
                ops.append(node.op.name)
        outputs = [self._output(j, eid) for j, eid in enumerate(self.ig.outputs)]
        operands = sorted(self.operands.items(), key=lambda kv: ("aos".index(kv[0][0]),
                                                                 kv[1].index, kv[0]))
        groups, masks = _merge_dims(self.domain, [op.shape for _, op in operands])
        for (_, op), mask in zip(operands, masks):
            op.mask = mask
        body = self._body(operands)
        source = self._source(operands, groups, ops, body)
        ns = self.compute_ns + sum(op.dtype.itemsize for _, op in operands) * NS_PER_BYTE
        return Kernel(source, [op for _, op in operands], self.domain, groups, outputs, ops, ns,
                      body, self._constants(), [name for name, _ in operands])

    # -- values ------------------------------------------------------------------------
    def _entry_value(self, nid: int, index: int, rows: bool) -> _Value:
        node = self.ig.nodes[nid]
        if node.op is not None:
            return self.values[(nid, index)]
        key = (nid, rows)
        if key not in self.loads:
            eid = self.ig.row_ptr[nid]
            dtype = np.dtype(self.edtype[eid])
            k = self.slot[node.name]
            name = f"a{k}" + ("r" if rows else "")
            shape = _aligned(self.eshape[eid], self.domain, rows)
            if any(s not in (1, d) for s, d in zip(shape, self.domain)) or \
                    len(shape) != len(self.domain):
                raise FusedCodegenError(f"input {node.name!r} of shape {self.eshape[eid]} does "
                                        f"not broadcast to the region's domain {self.domain}")
            self.operands[name] = Operand("in", k, shape, dtype)
            load = f"{name}[@{name}@]"
            self.loads[key] = _Value(self.p.assign(f"h2f({load})" if dtype == np.float16
                                                   else load), dtype)
        return self.loads[key]

    def _node(self, nid: int, node) -> None:
        ig = self.ig
        rows = ROWS.get(node.op.name)
        unread = UNREAD.get(node.op.name, ())
        ins = [_Value("None", None) if k in unread else
               self._entry_value(ig.node_id[id(e.node)], e.index,
                                 k == rows and len(self._shape_of(e)) != len(self.domain))
               for k, e in enumerate(node.inputs)]
        first = ig.row_ptr[nid]
        count = ig.row_ptr[nid + 1] - first
        pending = [v for v in ins if v.target is not None]
        if pending and not (node.op.name in SUMS and len(pending) == len(ins)
                            and len({v.target for v in pending}) == 1):
            raise FusedCodegenError(f"{node.op.name} {node.name!r} reads a value summed over "
                                    f"broadcast axes; only sums may")
        lowering = LOWERINGS.get(node.op.name)
        if lowering is None:
            raise FusedCodegenError(f"{node.op.name} {node.name!r} has no fused lowering")
        e = Emit(self.p, self.edtype[first], tuple(self._shape_of(x) for x in node.inputs))
        self.compute_ns += FUSED_NS[(lowering.cost_of(node.params), e.t)]
        exprs = lowering.fn(e, node.params, *(v.name for v in ins))
        exprs = (exprs,) if isinstance(exprs, str) else tuple(exprs)
        for k in range(count):
            shape, dtype = tuple(self.eshape[first + k]), np.dtype(self.edtype[first + k])
            expr = exprs[k]
            zero = self.p.is_zero(expr) or (bool(pending) and all(v.zero for v in ins))
            name = expr if zero else self.p.assign(expr, node.op.name)
            target = None
            if shape != self.domain:
                if node.op.name not in REDUCING and not pending:
                    raise FusedCodegenError(f"{node.op.name} {node.name!r} has shape {shape}, "
                                            f"not the region's domain {self.domain}")
                target = shape
            self.values[(nid, k)] = _Value(name, dtype, target, zero)

    def _shape_of(self, entry) -> tuple:
        return tuple(self.eshape[self.ig.entry_id(entry.node, entry.index)])

    def _output(self, j: int, eid: int) -> tuple:
        nid, index = self.ig.entry_node(eid)
        v = self._entry_value(nid, index, False)
        if v.zero and v.target is not None:
            return ("zero",)
        if v.target is not None:
            name = f"s{j}"
            self.operands[name] = Operand("scratch", j, self.domain,
                                          np.dtype("float64" if v.dtype == np.float64
                                                   else "float32"))
            self.p.lines.append(f"{name}[@{name}@] = {v.name}")
            return ("reduce", v.target)
        name = f"o{j}"
        self.operands[name] = Operand("out", j, self.domain, v.dtype)
        value = f"f2h({v.name})" if v.dtype == np.float16 else v.name
        self.p.lines.append(f"{name}[@{name}@] = {value}")
        return ("store",)

    # -- source ------------------------------------------------------------------------
    def _body(self, operands) -> list[str]:
        body = list(self.p.lines)
        for name, op in operands:
            index = ", ".join(f"i{g}" for g, m in enumerate(op.mask) if m) or "0"
            body = [line.replace(f"@{name}@", index) for line in body]
        return body

    def _constants(self) -> list[str]:
        return [f"{name} = np.float{32 if t == 'f4' else 64}({_literal(value)})"
                for (t, value), name in self.p.constants.items()]

    def _source(self, operands, groups, ops, body) -> str:
        sizes = [f"n{g}" for g in range(len(groups))]
        args = ", ".join(sizes + [name for name, _ in operands])
        head = [f'"""graphexec fused kernel (generated; format {_FORMAT}, vmath {_VMATH}).',
                f"ops: {' '.join(ops)}",
                "operands: " + ", ".join(f"{n} {op.dtype} dims {op.mask}" for n, op in operands),
                '"""', "import numpy as np", "from numba import njit, prange",
                "from graphexec.backends.fused.vmath import *  # noqa: F401,F403", ""]
        out = head + self._constants()
        for fn, parallel in (("kernel", True), ("kernel_serial", False)):
            out += ["", "", f"@njit(parallel={parallel}, {_OPTIONS})", f"def {fn}({args}):"]
            for g in range(len(groups)):
                loop = "prange" if parallel and g == 0 else "range"
                out.append("    " * (g + 1) + f"for i{g} in {loop}(n{g}):")
            out += ["    " * (len(groups) + 1) + line for line in body]
        return "\n".join(out) + "\n"


def _literal(raw: bytes) -> str:
    value = float(np.frombuffer(raw, np.float64)[0])
    return repr(value) if math.isfinite(value) else f"float({str(value)!r})"


def _merge_dims(domain: tuple, shapes: list[tuple]) -> tuple[list[list[int]], list[tuple]]:
    """Merge neighbouring dims that every operand spans alike (all of it or broadcast);
    drop dims of size 1. Returns the groups of dims and each operand's spanned groups."""
    groups: list[list[int]] = []
    status: list[tuple] = []
    for d, size in enumerate(domain):
        if size == 1:
            continue
        spans = tuple(s[d] == size for s in shapes)
        if status and status[-1] == spans:
            groups[-1].append(d)
        else:
            groups.append([d])
            status.append(spans)
    if not groups:
        return [[]], [(True,) for _ in shapes]
    return groups, [tuple(st[k] for st in status) for k in range(len(shapes))]
