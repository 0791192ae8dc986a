"""Self-contained SVG drawings of a graph, optionally coloured by a partition plan.

The layout is layered (Sugiyama style, no external tool): a node's layer is its longest path
from the inputs, edges spanning several layers pass through invisible dummy points, a few
barycenter sweeps order each layer to reduce crossings, and x positions follow the neighbours'
mean while keeping order and spacing. Layers wider than ``max_width`` wrap onto several rows.

>>> svg = graph_svg(net, exe.partition_plan.to_dict(), title="resnet18 / onnxrt")
>>> plot_model(net, "net.svg")
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Iterable

from graphexec.core.ir.graph import Entry
from graphexec.core.subgraph.plan import REASONS, node_labels
from graphexec.core.symbol.symbol import Symbol, entry_name

__all__ = ["graph_svg", "plot_model", "backend_colour", "NATIVE"]

#: the backend name a plan's unclaimed nodes (and every node without a plan) are drawn under
NATIVE = "native"
_PALETTE = {NATIVE: "#d9d9d9", "default": "#9ecae1", "onnxrt": "#fdae6b", "fused": "#a1d99b"}
_PARAM = re.compile(r"(weight|bias|gamma|beta|moving_mean|moving_var|running_mean|running_var)$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")

_CHAR_W = 6.0          # monospace advance at 10 px
_BOX_MIN, _BOX_MAX = 120, 250
_LINE_H, _PAD = 12, 6
_GAP_X, _GAP_Y, _MARGIN = 24, 34, 16
_SWEEPS = 4


def backend_colour(backend: str | None) -> str:
    """Fill colour of a backend, stable across plans: grey for native/NONE, fixed colours for
    the built-in backends, a colour hashed from the name for any other plugin."""
    if backend is None or backend.upper() == "NONE":
        backend = NATIVE
    if backend in _PALETTE:
        return _PALETTE[backend]
    hue = int(hashlib.md5(backend.encode()).hexdigest()[:6], 16) % 360
    return f"hsl({hue},65%,72%)"


def esc(text: object) -> str:
    """``text`` escaped for XML text and attribute values (control characters dropped)."""
    s = _CONTROL.sub("", str(text))
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class _Layout:
    """Items (shown nodes, then dummy points) with layers, rows and positions."""

    def __init__(self, is_op: list[bool], edges: list[tuple[int, int]], box_w: float,
                 max_width: float):
        self.width = [box_w] * len(is_op)
        self.layer = _layers(len(is_op), edges, is_op)
        self.preds: list[list[int]] = [[] for _ in is_op]
        self.succs: list[list[int]] = [[] for _ in is_op]
        self.chains = [self._chain(u, v) for u, v in edges]
        layers = self._order()
        self.rows = _wrap(layers, self.width, max_width)
        self.x = self._positions(max_width / 2)

    def _new(self, layer: int) -> int:
        self.width.append(0.0)
        self.layer.append(layer)
        self.preds.append([])
        self.succs.append([])
        return len(self.width) - 1

    def _chain(self, u: int, v: int) -> list[int]:
        chain = [u] + [self._new(k) for k in range(self.layer[u] + 1, self.layer[v])] + [v]
        for a, b in zip(chain, chain[1:]):
            self.succs[a].append(b)
            self.preds[b].append(a)
        return chain

    def _order(self) -> list[list[int]]:
        """Items by layer, each layer sorted by the mean position of the neighbours above
        (down sweeps) or below (up sweeps)."""
        layers: list[list[int]] = [[] for _ in range(max(self.layer, default=-1) + 1)]
        for i, k in enumerate(self.layer):
            layers[k].append(i)
        pos = {i: p for lay in layers for p, i in enumerate(lay)}
        for sweep in range(_SWEEPS):
            down = sweep % 2 == 0
            nbrs = self.preds if down else self.succs
            for lay in (layers[1:] if down else layers[-2::-1]):
                key = {i: (sum(pos[j] for j in nbrs[i]) / len(nbrs[i]) if nbrs[i] else pos[i])
                       for i in lay}
                lay.sort(key=lambda i: (key[i], pos[i]))
                pos.update((i, p) for p, i in enumerate(lay))
        return layers

    def _positions(self, half: float) -> list[float]:
        """x of every item: rows packed around 0, then moved towards the mean x of their
        predecessors (down sweeps) or successors (up sweeps), each row kept within
        [-half, half] so the drawing stays as wide as the widest row allows."""
        x = [0.0] * len(self.width)
        for row in self.rows:
            self._place(row, [0.0] * len(row), x, half)
        for sweep in range(_SWEEPS):
            nbrs = self.preds if sweep % 2 == 0 else self.succs
            for row in (self.rows if sweep % 2 == 0 else self.rows[::-1]):
                self._place(row, [sum(x[j] for j in nbrs[i]) / len(nbrs[i]) if nbrs[i] else x[i]
                                  for i in row], x, half)
        left = min((x[i] - self.width[i] / 2 for i in range(len(x))), default=0.0)
        return [xi - left + _MARGIN for xi in x]


    def _place(self, row: list[int], want: list[float], x: list[float], half: float) -> None:
        xs = _pack(want, [self.width[i] for i in row])
        left, right = xs[0] - self.width[row[0]] / 2, xs[-1] + self.width[row[-1]] / 2
        shift = max(-half - left, 0.0) + min(half - right, 0.0)
        for i, xi in zip(row, xs):
            x[i] = xi + shift


def _layers(n: int, edges: list[tuple[int, int]], is_op: list[bool]) -> list[int]:
    """Operators: longest path from the inputs (first operator layer 1). Shown variables sit
    just above their first consumer, so inputs read late do not drag long edges."""
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        preds[v].append(u)
        succs[u].append(v)
    layer = [0] * n
    for i in range(n):  # items come in topological order
        if is_op[i]:
            layer[i] = max((layer[p] + 1 for p in preds[i] if is_op[p]), default=1)
    for i in range(n):
        if not is_op[i]:
            layer[i] = min((layer[c] for c in succs[i]), default=1) - 1
    return layer


def _wrap(layers: list[list[int]], width: list[float], max_width: float) -> list[list[int]]:
    """Split layers whose packed width exceeds ``max_width`` into consecutive rows."""
    rows = []
    for lay in layers:
        row: list[int] = []
        used = 0.0
        for i in lay:
            w = width[i] + _GAP_X
            if row and used + w > max_width:
                rows.append(row)
                row, used = [], 0.0
            row.append(i)
            used += w
        rows.append(row)
    return rows


def _pack(want: list[float], widths: list[float]) -> list[float]:
    """Positions closest (least squares) to ``want`` that keep the order and the spacing:
    pool-adjacent-violators on the positions minus their cumulative offsets."""
    offsets, acc = [], 0.0
    for k, w in enumerate(widths):
        acc += 0.0 if k == 0 else (widths[k - 1] + w) / 2 + _GAP_X
        offsets.append(acc)
    blocks: list[list[float]] = []  # [sum, count]
    for w, o in zip(want, offsets):
        blocks.append([w - o, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted = [s / c for s, c in blocks for _ in range(int(c))]
    return [f + o for f, o in zip(fitted, offsets)]


def _is_param(name: str, aux: bool, inputs: set[str] | None) -> bool:
    if inputs is not None:
        return name not in inputs
    return aux or bool(_PARAM.search(name))


def _shape_text(node, shapes: dict | None) -> str:
    if not shapes:
        return ""
    names = [entry_name(Entry(node, k)) for k in range(node.num_visible_outputs)]
    found = [shapes[n] for n in [node.name] + names if n in shapes]
    if not found:
        return ""
    more = f" +{len(names) - 1}" if len(names) > 1 else ""
    return "x".join(str(d) for d in found[0]) + more


def _fit(text: str, chars: int, middle: bool = True) -> str:
    """``text`` shortened (in the middle, else at the end) to at most ``chars`` characters."""
    if len(text) <= chars:
        return text
    head = (chars - 1) // 2 if middle else chars - 1
    return text[:head] + "\u2026" + text[len(text) - (chars - 1 - head):]


def graph_svg(symbol: Symbol, plan: dict | None = None, shapes: dict | None = None,
              title: str = "", hide_weights: bool = True, inputs: Iterable[str] | None = None,
              max_width: float = 1600) -> str:
    """An SVG document drawing ``symbol`` top to bottom, one rounded box per node.

    ``plan`` (``PartitionPlan.to_dict()``) colours each operator by the backend that claimed
    it, outlines every region and annotates unclaimed nodes with their reason. ``shapes``
    ({entry or node name: shape}, e.g. from ``get_internals().infer_shape``) adds output
    shapes. Parameters (variables other than the data inputs: names ending in weight, bias,
    gamma, beta, moving_mean/var, or auxiliary states; or every variable not in ``inputs``
    when given) are hidden unless ``hide_weights`` is False. Layers wider than ``max_width``
    pixels wrap onto several rows."""
    ig = symbol._indexed()
    wanted = None if inputs is None else set(inputs)
    shown = [i for i, n in enumerate(ig.nodes) if n.op is not None or not hide_weights
             or not _is_param(n.name, i in ig.mutable_input_nodes, wanted)]
    index = {i: k for k, i in enumerate(shown)}
    nodes = [ig.nodes[i] for i in shown]
    edges = sorted({(index[ig.node_id[id(e.node)]], k) for k, n in enumerate(nodes)
                    for e in n.inputs if ig.node_id[id(e.node)] in index})
    by_label = {d["node"]: d for d in (plan or {}).get("nodes", [])}
    keys = dict(zip((id(n) for n in ig.nodes if n.op is not None),
                    node_labels([n for n in ig.nodes if n.op is not None])))
    decisions = [by_label.get(keys.get(id(n), n.name)) for n in nodes]  # by position
    labels = [_labels(n, d, shapes, plan is not None) for n, d in zip(nodes, decisions)]
    chars = max((max(len(lab[0]), len(lab[1]) + 4) for lab in labels), default=10)
    box_w = min(max(chars * _CHAR_W + 2 * _PAD, _BOX_MIN), _BOX_MAX)
    box_h = 2 * _PAD + _LINE_H * max((len(lab) for lab in labels), default=2)
    lay = _Layout([n.op is not None for n in nodes], edges, box_w, max_width)
    return _Drawing(lay, nodes, labels, decisions, plan, box_w, box_h, title).svg()


def _labels(node, decision: dict | None, shapes: dict | None, planned: bool) -> list[str]:
    """The text lines of a box: name, op (and shape), the reason of an unclaimed node."""
    shape = _shape_text(node, shapes)
    op = "input" if node.op is None else node.op.name
    lines = [node.name, f"{op}  {shape}" if shape else op]
    if planned and decision and decision.get("region") is None and decision.get("reason"):
        lines.append(REASONS.get(decision["reason"], decision["reason"]))
    return lines


class _Drawing:
    """Renders a :class:`_Layout` to SVG text."""

    def __init__(self, lay: _Layout, nodes: list, labels: list[list[str]], decisions: list,
                 plan: dict | None, box_w: float, box_h: float, title: str):
        self.lay, self.nodes, self.labels, self.decisions = lay, nodes, labels, decisions
        self.plan, self.box_w, self.box_h, self.title = plan, box_w, box_h, title
        self.chars = int((box_w - 2 * _PAD) / _CHAR_W)
        self.top = _MARGIN + (22 if title else 0) + 26   # title, legend
        self.y = [0.0] * len(lay.width)
        for r, row in enumerate(lay.rows):
            for i in row:
                self.y[i] = self.top + 18 + r * (box_h + _GAP_Y)

    def backend(self, k: int) -> str:
        d = self.decisions[k]
        return d["backend"] if d and d.get("backend") else NATIVE

    def svg(self) -> str:
        lay = self.lay
        width = max((x + w / 2 for x, w in zip(lay.x, lay.width)), default=0) + _MARGIN
        height = max(self.y, default=self.top) + self.box_h + _MARGIN
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gx-graph" width="{width:.0f}" '
                 f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
                 f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="10">',
                 '<rect width="100%" height="100%" fill="#ffffff"/>']
        if self.title:
            parts.append(f'<text x="{_MARGIN}" y="{_MARGIN + 12}" font-size="14" '
                         f'font-weight="bold">{esc(self.title)}</text>')
        regions, labels = self.regions()
        parts += self.legend() + regions + self.edges() + labels + self.boxes()
        parts.append("</svg>")
        return "\n".join(parts)

    def legend(self) -> list[str]:
        present = [NATIVE] if self.plan is None else sorted(
            {self.backend(k) for k, n in enumerate(self.nodes) if n.op is not None},
            key=lambda b: (b != NATIVE, b))
        out, x, y = ['<g class="gx-legend">'], _MARGIN, self.top - 18
        for b in present:
            label = "native (unclaimed)" if b == NATIVE and self.plan is not None else b
            out.append(f'<rect x="{x}" y="{y}" width="14" height="14" rx="3" '
                       f'fill="{backend_colour(b)}" stroke="#555"/>'
                       f'<text x="{x + 19}" y="{y + 11}" data-backend="{esc(b)}">'
                       f'{esc(label)}</text>')
            x += 30 + len(label) * _CHAR_W
        out.append("</g>")
        return out

    def regions(self) -> tuple[list[str], list[str]]:
        """Each region as the union of one band per row it occupies (joined down to its next
        row): stroked, then filled opaque (hiding inner strokes), then tinted as one group.
        Their labels come apart, to be drawn over the edges."""
        where = {n.name: k for k, n in enumerate(self.nodes)}
        row_of = {i: r for r, row in enumerate(self.lay.rows) for i in row}
        shapes, labels = [], ['<g class="gx-region-labels" font-size="9" fill="#333" '
                              'stroke="#ffffff" stroke-width="3" paint-order="stroke">']
        for reg in (self.plan or {}).get("regions", []):
            rows: dict[int, list[float]] = {}
            for k in (where[m] for m in reg["members"] if m in where):
                rows.setdefault(row_of[k], []).append(self.lay.x[k])
            if not rows:
                continue
            half, rects = self.box_w / 2 + 8, []
            for r in sorted(rows):
                y = self.y[self.lay.rows[r][0]]
                bottom = y + self.box_h + (_GAP_Y + 14 if r + 1 in rows else 6)
                rects.append((min(rows[r]) - half, y - 14, 2 * half + max(rows[r]) - min(rows[r]),
                              bottom - y + 14))
            shapes.append(self._region(reg, rects))
            labels.append(f'<text x="{rects[0][0] + 6:.1f}" y="{rects[0][1] + 10:.1f}" '
                          f'data-region="{esc(reg["id"])}">R{esc(reg["id"])} '
                          f'{esc(reg["backend"])}</text>')
        labels.append("</g>")
        return shapes, labels

    def _region(self, reg: dict, rects: list[tuple[float, ...]]) -> str:
        colour = backend_colour(reg["backend"])
        shapes = "".join(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="9"/>'
                         for x, y, w, h in rects)
        return (f'<g class="gx-region" data-region="{esc(reg["id"])}" '
                f'data-backend="{esc(reg["backend"])}"><title>region {esc(reg["id"])}: '
                f'{esc(reg["backend"])}, {len(reg["members"])} ops ({esc(reg["node"])})</title>'
                f'<g fill="none" stroke="{colour}" stroke-width="4">{shapes}</g>'
                f'<g fill="#ffffff">{shapes}</g><g fill="{colour}" opacity="0.25">{shapes}</g></g>')

    def edges(self) -> list[str]:
        lay, out = self.lay, ['<g class="gx-edges" fill="none" stroke="#666" stroke-width="1.2">']
        heads = []
        ports = self._ports()
        for c, chain in enumerate(lay.chains):
            u, v = chain[0], chain[-1]
            x, y = lay.x[u], self.y[u] + self.box_h
            d = [f"M{x:.1f},{y:.1f}"]
            for k in chain[1:-1]:
                d.append(_curve(x, y, lay.x[k], self.y[k]))
                x, y = lay.x[k], self.y[k] + self.box_h
                d.append(f"L{x:.1f},{y:.1f}")
            tx, ty = lay.x[v] + ports[c], self.y[v]
            d.append(_curve(x, y, tx, ty - 6))
            out.append(f'<path d="{"".join(d)}"/>')
            heads.append(f"M{tx - 4:.1f},{ty - 7:.1f}L{tx:.1f},{ty:.1f}L{tx + 4:.1f},{ty - 7:.1f}Z")
        out.append(f'</g><path class="gx-arrows" fill="#666" d="{"".join(heads)}"/>')
        return out

    def _ports(self) -> list[float]:
        """Offset of each edge's end along its target's top side, spread by source x."""
        lay, into = self.lay, {}
        for c, chain in enumerate(lay.chains):
            into.setdefault(chain[-1], []).append(c)
        ports = [0.0] * len(lay.chains)
        for cs in into.values():
            cs.sort(key=lambda c: lay.x[self.lay.chains[c][-2]])
            step = min(16.0, (self.box_w - 24) / max(len(cs) - 1, 1))
            for j, c in enumerate(cs):
                ports[c] = (j - (len(cs) - 1) / 2) * step
        return ports

    def boxes(self) -> list[str]:
        return [self._box(k, node) for k, node in enumerate(self.nodes)]

    def _box(self, k: int, node) -> str:
        x, y, w, h = self.lay.x[k] - self.box_w / 2, self.y[k], self.box_w, self.box_h
        attrs, fill, tip = self._identity(k, node)
        dashed = ' stroke-dasharray="4 2"' if node.op is None else ""
        return (f'<g {attrs} data-node="{esc(node.name)}"><title>{esc(chr(10).join(tip))}</title>'
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6" '
                f'fill="{fill}" stroke="#555"{dashed}/>{self._text(k, x, y)}</g>')

    def _identity(self, k: int, node) -> tuple[str, str, list[str]]:
        """The group's attributes, the fill colour and the tooltip lines of node ``k``."""
        lines = self.labels[k]
        if node.op is None:
            return 'class="gx-input"', "#ffffff", lines[:2]
        b, d = self.backend(k), self.decisions[k] or {}
        attrs, tip = f'class="gx-node" data-backend="{esc(b)}"', lines[:2]
        if d.get("region") is not None:
            attrs += f' data-region="{esc(d["region"])}"'
            tip.append(f"{b}, region {d['region']}")
        elif len(lines) > 2:
            attrs += f' data-reason="{esc(d["reason"])}"'
            tip.append(f"not claimed: {lines[2]}")
        return attrs, backend_colour(b), tip

    def _text(self, k: int, x: float, y: float) -> str:
        """Name (bold), op and shape with the region tag at the right, the reason (italic)."""
        lines, d = self.labels[k], self.decisions[k] or {}
        region = d.get("region") if self.nodes[k].op is not None else None
        base, tx = y + _PAD + 9, x + _PAD
        out = [f'<text x="{tx:.1f}" y="{base:.1f}" font-weight="bold">'
               f'{esc(_fit(lines[0], self.chars))}</text>',
               f'<text x="{tx:.1f}" y="{base + _LINE_H:.1f}" fill="#333">'
               f'{esc(_fit(lines[1], self.chars - (4 if region is not None else 0)))}</text>']
        if len(lines) > 2:
            out.append(f'<text class="gx-reason" x="{tx:.1f}" y="{base + 2 * _LINE_H:.1f}" '
                       f'font-size="9" font-style="italic" fill="#a0281e">'
                       f'{esc(_fit(lines[2], int(self.chars * 1.1), middle=False))}</text>')
        if region is not None:
            out.append(f'<text x="{x + self.box_w - _PAD:.1f}" y="{base + _LINE_H:.1f}" '
                       f'font-size="9" text-anchor="end" fill="#333">R{esc(region)}</text>')
        return "".join(out)


def _curve(x1: float, y1: float, x2: float, y2: float) -> str:
    """A cubic from (x1, y1) to (x2, y2) leaving and arriving vertically."""
    ym = (y1 + y2) / 2
    return f"C{x1:.1f},{ym:.1f} {x2:.1f},{ym:.1f} {x2:.1f},{y2:.1f}"


def plot_model(symbol: Symbol, path: str | Path, **kwargs) -> Path:
    """Write :func:`graph_svg` of ``symbol`` (keywords passed on) to ``path``; returns it."""
    path = Path(path)
    path.write_text(graph_svg(symbol, **kwargs), encoding="utf-8")
    return path
