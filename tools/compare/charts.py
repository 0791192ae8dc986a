"""The charts of the comparison report: the speed-up of each strategy over the baseline with
its 95% interval (bars around 1 on a log axis), and the latency samples (strip and box plots
on a shared axis). SVG text, inline in the report's page."""
from __future__ import annotations

import math

from .plot import esc

__all__ = ["latency_svg", "speedup_svg", "ms"]

_PLOT_W, _ROW_H, _LABEL_CH = 560, 30, 7.0

def ms(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def speedup_svg(rows: list[dict], result: dict) -> str:
    """Each strategy's speed-up over the baseline: its 95% interval as a bar, the estimate
    as a dot, on a log axis with 1 marked (right of it: faster)."""
    shown = [r for r in rows if r.get("speedup") is not None and not r.get("error")]
    if not shown:
        return '<p class="speedup">No speed-up measured.</p>'
    values = [v for r in shown for v in [r["speedup"], *(r.get("ci95") or [])]]
    axis = _RatioAxis(min(values + [1 / 1.1]), max(values + [1.1]))
    label_w = 12 + _LABEL_CH * max(len(r["strategy"]) for r in shown)
    width, height = label_w + _PLOT_W + 150, 40 + _ROW_H * len(shown)
    one = label_w + axis.at(1.0)
    out = [f'<figure class="speedup" data-metric="speedup"><figcaption>speed-up over '
           f'{esc(result.get("baseline", "NONE"))} with 95% intervals (log scale; right of 1: '
           f'faster)</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
           f'height="{height}" viewBox="0 0 {width:.0f} {height}" '
           f'font-family="system-ui, sans-serif" font-size="12">']
    for t in axis.ticks():
        x = label_w + axis.at(t)
        out.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 22}" stroke="#e3e3e3"/>'
                   f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" fill="#555">'
                   f'{t:g}</text>')
    out.append(f'<line x1="{one:.1f}" y1="4" x2="{one:.1f}" y2="{height - 22}" '
               f'stroke="#333" stroke-dasharray="4 3"/>')
    for k, row in enumerate(shown):
        out.append(_speedup_row(k, row, axis, label_w))
    out.append("</svg></figure>")
    return "".join(out)


class _RatioAxis:
    """Maps a ratio to x in [0, _PLOT_W] on a log scale over the data (a little margin)."""

    TICKS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50)

    def __init__(self, lo: float, hi: float):
        self.lo, self.hi = math.log(lo) - 0.05, math.log(hi) + 0.05

    def at(self, v: float) -> float:
        return _PLOT_W * (math.log(v) - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[float]:
        return [t for t in self.TICKS if self.lo <= math.log(t) <= self.hi]


def _speedup_row(k: int, row: dict, axis: _RatioAxis, label_w: float) -> str:
    y = 10 + k * _ROW_H + _ROW_H / 2
    colour = {"faster": "#2e8b3a", "slower": "#b3261e"}.get(row.get("verdict"), "#4a76a8")
    x = label_w + axis.at(row["speedup"])
    out = [f'<g class="speedup-row" data-strategy="{esc(row["strategy"])}" '
           f'data-verdict="{esc(row.get("verdict"))}"><text x="4" y="{y + 4:.1f}">'
           f'{esc(row["strategy"])}</text>']
    ci = row.get("ci95")
    if ci:
        x0, x1 = label_w + axis.at(ci[0]), label_w + axis.at(ci[1])
        out.append(f'<rect class="interval" x="{x0:.1f}" y="{y - 5:.1f}" '
                   f'width="{max(x1 - x0, 1):.1f}" height="10" fill="{colour}" '
                   f'fill-opacity="0.35" stroke="{colour}"/>')
    text = f"{row['speedup']:.2f}\u00d7 {row.get('verdict', '')}"
    out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>'
               f'<text x="{label_w + _PLOT_W + 10:.1f}" y="{y + 4:.1f}">{esc(text)}</text>'
               f'<title>{esc(row["strategy"])}: {esc(text)}'
               f'{esc(f", 95% interval {ci[0]:.3f}-{ci[1]:.3f}" if ci else "")}</title></g>')
    return "".join(out)


# -- latency plot ------------------------------------------------------------------------------


def latency_svg(rows: list[dict], key: str, caption: str) -> str:
    """Strip and box plot of every strategy's samples on one axis (log when they span more
    than a factor 30): whiskers min-max, box q1-q3, median bar, samples as dots."""
    stats = [r.get(key) if not r.get("error") else None for r in rows]
    values = [v for s in stats if s for v in s["samples"] + [s["min"], s["max"]]]
    if not values:
        return f'<p class="latency">{esc(caption)}: nothing measured.</p>'
    lo, hi = min(values), max(values)
    log = lo > 0 and hi / lo > 30
    axis = _Axis(lo, hi, log)
    label_w = 12 + _LABEL_CH * max(len(r["strategy"]) for r in rows)
    width, height = label_w + _PLOT_W + 130, 40 + _ROW_H * len(rows)
    out = [f'<figure class="latency" data-metric="{esc(key)}"><figcaption>{esc(caption)}'
           f'{" (log scale)" if log else ""}</figcaption><svg xmlns="http://www.w3.org/2000/svg" '
           f'width="{width:.0f}" height="{height}" viewBox="0 0 {width:.0f} {height}" '
           f'font-family="system-ui, sans-serif" font-size="12">']
    for t in axis.ticks():
        x = label_w + axis.at(t)
        out.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 22}" stroke="#e3e3e3"/>'
                   f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" fill="#555">'
                   f'{ms(t)}</text>')
    for k, (row, s) in enumerate(zip(rows, stats)):
        out.append(_latency_row(k, row, s, axis, label_w))
    out.append("</svg></figure>")
    return "".join(out)


def _latency_row(k: int, row: dict, s: dict | None, axis: "_Axis", label_w: float) -> str:
    y = 10 + k * _ROW_H + _ROW_H / 2
    out = [f'<g class="latency-row" data-strategy="{esc(row["strategy"])}">'
           f'<text x="4" y="{y + 4:.1f}">{esc(row["strategy"])}</text>']
    if s is None:
        why = "failed" if row.get("error") else "not measured"
        out.append(f'<text x="{label_w + 4:.1f}" y="{y + 4:.1f}" fill="#a0281e">{why}</text></g>')
        return "".join(out)
    x = {q: label_w + axis.at(s[q]) for q in ("min", "q1", "median", "q3", "max")}
    out.append(f'<line x1="{x["min"]:.1f}" y1="{y:.1f}" x2="{x["max"]:.1f}" y2="{y:.1f}" '
               f'stroke="#888"/><rect x="{x["q1"]:.1f}" y="{y - 8:.1f}" '
               f'width="{max(x["q3"] - x["q1"], 1):.1f}" height="16" fill="#cfe0f5" '
               f'stroke="#4a76a8"/><line x1="{x["median"]:.1f}" y1="{y - 10:.1f}" '
               f'x2="{x["median"]:.1f}" y2="{y + 10:.1f}" stroke="#1d3f6e" stroke-width="2.5"/>')
    for j, v in enumerate(s["samples"]):
        jitter = ((j * 0.618034) % 1 - 0.5) * 12   # golden-ratio spread: stable, even
        out.append(f'<circle cx="{label_w + axis.at(v):.1f}" cy="{y + jitter:.1f}" r="2" '
                   f'fill="#d4572a" fill-opacity="0.6"/>')
    out.append(f'<text x="{label_w + _PLOT_W + 10:.1f}" y="{y + 4:.1f}">{ms(s["median"])} ms'
               f'</text><title>{esc(row["strategy"])}: median {ms(s["median"])} ms, '
               f'q1 {ms(s["q1"])}, q3 {ms(s["q3"])}, min {ms(s["min"])}, '
               f'max {ms(s["max"])}, {len(s["samples"])} runs</title></g>')
    return "".join(out)


class _Axis:
    """Maps milliseconds to x in [0, _PLOT_W]: linear from 0, or log10 over the data."""

    def __init__(self, lo: float, hi: float, log: bool):
        self.log = log
        if log:
            self.lo, self.hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        else:
            self.step = _nice(hi / 5) if hi > 0 else 1.0
            self.lo, self.hi = 0.0, self.step * math.ceil(hi / self.step) or self.step

    def at(self, v: float) -> float:
        if self.log:
            return _PLOT_W * (math.log10(v) - self.lo) / (self.hi - self.lo)
        return _PLOT_W * (v - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[float]:
        if self.log:
            return [m * 10.0 ** e for e in range(self.lo, self.hi + 1) for m in (1, 2, 5)
                    if m * 10.0 ** e <= 10.0 ** self.hi]
        return [self.step * i for i in range(int(round(self.hi / self.step)) + 1)]


def _nice(x: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at least ``x``."""
    base = 10.0 ** math.floor(math.log10(x))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= x)
