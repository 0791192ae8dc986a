"""The self-contained HTML report of a comparison (``graphexec compare ... --report out.html``).

One page, no network: inline CSS and SVG, no script. It shows the model, the comparison table
(speed-ups over the baseline with their 95% intervals and verdicts: only a significant one is
highlighted; failed strategies with their error; notes on strategies that claimed nothing or
fell back), the speed-up intervals as bars around 1, latency strip/box plots on a shared axis,
the 'auto' strategy's per-region decisions, and every strategy's partitioned graph (one tab
each) with its regions (those that fell back to native at run time marked) and the reasons
nodes stayed native. The markup is also
well-formed XML, so tests (and tools) can parse it with ``xml.etree``.

>>> write_report(gx.compare("resnet18_v1", "NONE,onnxrt,fused"), "report.html")
"""
from __future__ import annotations

from pathlib import Path

from graphexec.core.ir.errors import GraphexecError
from graphexec.core.subgraph.plan import REASONS
from graphexec.core.symbol.json_io import load_json

from . import row_notes, sample_text
from .charts import latency_svg, ms, speedup_svg
from .plot import backend_colour, esc, graph_svg

__all__ = ["html_report", "write_report"]

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d1d1f; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0; }
dl.meta dt { color: #666; } dl.meta dd { margin: 0; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; vertical-align: top; }
table.cmp { font-size: 13px; } table.cmp td.num, .nowrap { white-space: nowrap; }
table.cmp td.err { max-width: 22em; } small { color: #555; } .scroll { overflow-x: auto; }
figure { margin: 8px 0; } figcaption { font-weight: bold; }
th { background: #f2f2f2; } td.text, th.text { text-align: left; }
td.best, td.faster { background: #c9f2c7; font-weight: bold; }
td.slower { background: #f8d0cc; font-weight: bold; }
tr.fallback td { background: #fdecea; }
.err { color: #a0281e; } tr.failed td { background: #fdecea; }
.chip { display: inline-block; width: 10px; height: 10px; border: 1px solid #555;
        border-radius: 2px; margin-right: 4px; }
.banner { background: #fff3cd; border: 1px solid #e0c060; padding: 6px 10px; }
.tabs > input { position: absolute; opacity: 0; }
.tabs > label { display: inline-block; padding: 5px 12px; border: 1px solid #bbb;
                border-bottom: none; border-radius: 6px 6px 0 0; background: #eee;
                cursor: pointer; margin-right: 2px; }
.tabs > input:focus-visible + label { outline: 2px solid #1967d2; }
.panel { display: none; border: 1px solid #bbb; padding: 10px 14px; }
.graph { overflow: auto; max-height: 80vh; border: 1px solid #ddd; margin: 8px 0; }
.graph svg { display: block; }
details > summary { cursor: pointer; }
ul.names { columns: 3; font: 12px monospace; margin: 4px 0; }
"""


def write_report(result: dict, path: str | Path) -> Path:
    """Write :func:`html_report` of ``result`` to ``path`` (UTF-8); returns the path."""
    path = Path(path)
    path.write_text(html_report(result), encoding="utf-8")
    return path


def html_report(result: dict) -> str:
    """The comparison ``result`` (as ``gx.compare`` returns it) as one self-contained HTML5
    page: header, comparison table, latency plots, 'auto' decisions and partitioned graphs."""
    model, rows = result["model"], result["strategies"]
    title = f"graphexec compare: {model['name']}"
    body = [f"<h1>{esc(title)}</h1>", _header(result)]
    if result.get("interrupted"):
        body.append('<p class="banner">Interrupted: only the strategies measured before '
                    'Ctrl-C are shown.</p>')
    if result.get("noisy"):
        body.append(f'<p class="banner noisy">{esc(result["noisy"])}</p>')
    body += ["<h2>Comparison</h2>", _table(rows), _notes(rows),
             "<h2>Speed-up</h2>", speedup_svg(rows, result),
             "<h2>Latency</h2>", latency_svg(rows, "forward_ms", "forward, ms")]
    if any(r.get("train_ms") for r in rows):
        body.append(latency_svg(rows, "train_ms", "training step (forward + backward), ms"))
    for row in rows:
        if row.get("auto"):
            body.append(_auto_table(row))
    body += ['<h2 id="graphs">Partitioned graphs</h2>', _graphs(result)]
    css = _CSS + "".join(
        f"#gx-tab-{i}:checked ~ #gx-panel-{i} {{ display: block; }}\n"
        f"#gx-tab-{i}:checked + label {{ background: #fff; font-weight: bold; }}\n"
        for i in range(len(rows)))
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"/>'
            '<meta name="viewport" content="width=device-width, initial-scale=1"/>'
            f'<link rel="icon" href="data:,"/><title>{esc(title)}</title>'
            f"<style>{css}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _header(result: dict) -> str:
    model = result["model"]
    inputs = ", ".join(f"{k} {tuple(v)}" for k, v in model.get("inputs", {}).items())
    items = [("source", model.get("source", "")), ("inputs", inputs),
             ("operators", model.get("num_ops")), ("parameters", _count(model.get("num_params"))),
             ("mode", "training (forward + backward)" if result.get("train") else "inference"),
             ("timing", _timing_text(result)),
             ("baseline", result.get("baseline", "NONE")),
             ("reference", result.get("reference", "NONE")),
             ("processes", "one per strategy" if result.get("isolate") else "one")]
    return '<dl class="meta">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(_text(v))}</dd>"
                                         for k, v in items) + "</dl>"


def _timing_text(result: dict) -> str:
    rounds = result.get("rounds")
    if rounds is None:
        return f"{result.get('repeat')} runs"
    return (f"{rounds} rounds in turn ({sample_text(result)}); 95% intervals, a "
            f"difference needs {result.get('min_effect', 0):.0%} at least")


_COLUMNS = ["strategy", "status", "regions", "claimed ops", "boundaries", "bind s",
            "first run s", "forward ms, q1\u2013q3", "speed-up, 95% interval", "verdict",
            "train ms, q1\u2013q3", "planned / peak RSS", "max diff abs / rel", "fallbacks"]


def _table(rows: list[dict]) -> str:
    """One row per strategy; only a significant verdict is highlighted."""
    head = "".join(f'<th class="{"text" if i < 2 else "num"}">{esc(c)}</th>'
                   for i, c in enumerate(_COLUMNS))
    out = [f'<div class="scroll"><table class="cmp"><thead><tr>{head}</tr></thead><tbody>']
    for i, row in enumerate(rows):
        out.append(_table_row(i, row))
    out.append("</tbody></table></div>")
    return "".join(out)


def _table_row(i: int, row: dict) -> str:
    error = row.get("error")
    status = f'<td class="text err">{esc(error)}</td>' if error else '<td class="text">ok</td>'
    claimed = ", ".join(f'<span class="chip" style="background:{backend_colour(b)}"></span>'
                        f"{esc(b)} {n}" for b, n in (row.get("claimed") or {}).items())
    if "total_ops" in row:
        claimed = f"{claimed or 'none'} / {row['total_ops']}"
    verdict = row.get("verdict")
    cls = "text faster" if verdict == "faster" else "text slower" if verdict == "slower" \
        else "text"
    verdict_text = (verdict or "") + (", noisy" if row.get("noisy") else "")
    cells = [_num(row.get("regions")), f'<td class="text nowrap">{claimed}</td>',
             _num(_boundaries(row)), _num(_fixed(row.get("bind_s"), 3)),
             _num(_fixed(row.get("first_run_s"), 3)),
             _latency_cell(row, "forward_ms"), _num(_speedup(row)),
             f'<td class="{cls}">{esc(_text(verdict_text))}</td>',
             _latency_cell(row, "train_ms"),
             _num(_pair(_bytes(row.get("planned_bytes")), _bytes(row.get("peak_rss_bytes")))),
             _num(_pair(_sci(row.get("max_abs_diff")), _sci(row.get("max_rel_diff")))),
             _num(row.get("fallbacks"))]
    cls = "strategy-row failed" if error else "strategy-row"
    return (f'<tr class="{cls}" id="gx-row-{i}" data-strategy="{esc(row["strategy"])}">'
            f'<td class="text"><b>{esc(row["strategy"])}</b></td>{status}{"".join(cells)}</tr>')


def _latency_cell(row: dict, key: str) -> str:
    stats = row.get(key)
    if not stats:
        return _num(None)
    return (f'<td class="num">{ms(stats["median"])}<br/>'
            f'<small>{ms(stats["q1"])}\u2013{ms(stats["q3"])}</small></td>')


def _speedup(row: dict) -> tuple[str, str] | str | None:
    if row.get("verdict") == "baseline":
        return "1\u00d7", "baseline"
    if row.get("speedup") is None:
        return None
    ci = row.get("ci95")
    return (f"{row['speedup']:.2f}\u00d7",
            f"{ci[0]:.2f}\u2013{ci[1]:.2f}" if ci else "too few rounds")


def _notes(rows: list[dict]) -> str:
    """What the table has no room for (see :func:`graphexec.tools.compare.row_notes`)."""
    items = [f'<li data-strategy="{esc(r["strategy"])}"><b>{esc(r["strategy"])}</b>: '
             f"{esc(note)}</li>" for r in rows for note in row_notes(r) if not r.get("error")]
    return f'<ul class="notes">{"".join(items)}</ul>' if items else ""


def _boundaries(row: dict) -> tuple[str, str] | None:
    if row.get("boundaries") is None:
        return None
    return str(row["boundaries"]), _text(_bytes(row.get("boundary_bytes")))


def _pair(a: str | None, b: str | None) -> tuple[str, str] | None:
    return None if a is None and b is None else (_text(a), _text(b))


def _num(value: object) -> str:
    """A numeric cell; a pair goes on two lines, the second one small."""
    if isinstance(value, tuple):
        return f'<td class="num">{esc(value[0])}<br/><small>{esc(value[1])}</small></td>'
    return f'<td class="num">{esc(_text(value))}</td>'


def _text(value: object) -> str:
    return "\u2014" if value is None or value == "" else str(value)


def _fixed(v: float | None, digits: int) -> str | None:
    return None if v is None else f"{v:.{digits}f}"


def _sci(v: float | None) -> str | None:
    return None if v is None else f"{v:.2e}"


def _bytes(n: int | None) -> str | None:
    if n is None:
        return None
    k, size = 0, float(n)
    while abs(size) >= 1024 and k < 3:
        size, k = size / 1024, k + 1
    return f"{n} B" if k == 0 else f"{size:.1f} {('KiB', 'MiB', 'GiB')[k - 1]}"


def _count(n: int | None) -> str | None:
    if n is None:
        return None
    return f"{n:,} ({n / 1e6:.2f} M)" if n >= 1e5 else f"{n:,}"


# -- auto decisions, graphs ---------------------------------------------------------------
def _auto_table(row: dict) -> str:
    decisions = row["auto"].get("decisions", [])
    backends = sorted({b for d in decisions for b in d.get("timings_ms", {})})
    head = "".join(f"<th>{esc(b)} ms</th>" for b in backends)
    out = [f'<h3>Per-region decisions of {esc(row["strategy"])}</h3><table class="auto">'
           f'<thead><tr><th class="text">region</th><th>ops</th><th class="text">chosen</th>'
           f'{head}<th>speed-up, 95% interval</th><th class="text">verdict</th></tr></thead>'
           f"<tbody>"]
    for d in decisions:
        times = d.get("timings_ms", {})
        cells = "".join(
            f'<td class="num{" best" if b == d.get("chosen") else ""}">'
            f'{ms(times[b]) if b in times else _text(None)}</td>' for b in backends)
        ci = d.get("ci95")
        speed = None if d.get("speedup") is None else (
            f"{d['speedup']:.2f}\u00d7", f"{ci[0]:.2f}\u2013{ci[1]:.2f}" if ci else "")
        members = esc(", ".join(d.get("members", [])))
        out.append(f'<tr class="auto-row" data-region="{esc(d["region"])}">'
                   f'<td class="text">{esc(d["region"])}</td><td title="{members}">'
                   f'{len(d.get("members", []))}</td><td class="text">{esc(d.get("chosen"))}'
                   f'</td>{cells}{_num(speed)}<td class="text">'
                   f'{esc(d.get("note") or d.get("verdict") or "")}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def _graphs(result: dict) -> str:
    """One tab per strategy: its graph coloured by its plan, its regions, its native nodes."""
    model = result["model"]
    symbol = load_json(model["symbol_json"])
    shapes = _shapes(symbol, model.get("inputs", {}))
    out = ['<div class="tabs">']
    rows = result["strategies"]
    for i, row in enumerate(rows):
        checked = ' checked="checked"' if i == 0 else ""
        out.append(f'<input type="radio" name="gx-tabs" id="gx-tab-{i}"{checked}/>'
                   f'<label for="gx-tab-{i}">{esc(row["strategy"])}</label>')
    for i, row in enumerate(rows):
        out.append(f'<section class="panel" id="gx-panel-{i}" '
                   f'data-strategy="{esc(row["strategy"])}">{_panel(row, symbol, shapes, model)}'
                   f"</section>")
    out.append("</div>")
    return "".join(out)


def _shapes(symbol, inputs: dict) -> dict:
    """The shape of every internal entry the model's input shapes decide ({} when shape
    inference rejects them: the graphs are then drawn without shapes)."""
    internals = symbol.get_internals()
    known = {k: tuple(v) for k, v in inputs.items() if k in set(symbol.list_arguments())}
    try:
        _, out_shapes, _ = internals.infer_shape_partial(**known)
    except GraphexecError:
        return {}
    return {name: shape for name, shape in zip(internals.list_outputs(), out_shapes)
            if shape and all(d > 0 for d in shape)}


def _panel(row: dict, symbol, shapes: dict, model: dict) -> str:
    """A strategy's error if it failed, else its graph coloured by its plan, the regions and
    the operators left native (a strategy without a plan runs everything natively)."""
    plan = row.get("plan")
    out = [f"<h3>{esc(row['strategy'])}</h3>"]
    if row.get("error"):
        out.append(f'<p class="err">Failed: {esc(row["error"])}</p>')
        if plan is None:
            return "".join(out)
    if plan is None:
        out.append("<p>No partitioning: every operator runs natively.</p>")
    else:
        out.append(f"<p>backends: {esc(', '.join(plan.get('backends', [])))}; "
                   f"{len(plan.get('regions', []))} regions; fallbacks: "
                   f"{plan.get('fallbacks', 0)}; host copies: {plan.get('host_copies', 0)}</p>")
        out += [f'<p class="err">skipped: {esc(s)}</p>' for s in plan.get("skipped", [])]
    svg = graph_svg(symbol, plan, shapes=shapes, title=f"{model['name']}: {row['strategy']}",
                    inputs=model.get("inputs") or None)
    out.append(f'<div class="graph">{svg}</div>')
    if plan is not None:
        out += [_regions_table(plan), _native_table(plan)]
    return "".join(out)


def _regions_table(plan: dict) -> str:
    out = ['<table class="regions"><thead><tr><th>region</th><th class="text">backend</th>'
           '<th class="text">node</th><th>ops</th><th class="text">members</th>'
           '<th class="text">inputs</th><th class="text">outputs</th>'
           '<th class="text">status</th></tr></thead><tbody>']
    for reg in plan.get("regions", []):
        chip = f'<span class="chip" style="background:{backend_colour(reg["backend"])}"></span>'
        fell = reg.get("status") == "fallback"
        status = f"fell back to native at run time: {reg.get('cause')}" if fell else "claimed"
        out.append(f'<tr class="region-row{" fallback" if fell else ""}" '
                   f'data-region="{esc(reg["id"])}">'
                   f'<td>{esc(reg["id"])}</td><td class="text">{chip}{esc(reg["backend"])}</td>'
                   f'<td class="text">{esc(reg["node"])}</td><td>{len(reg["members"])}</td>'
                   f'<td class="text">{_names(reg["members"])}</td>'
                   f'<td class="text">{_names(reg["inputs"])}</td>'
                   f'<td class="text">{_names(reg["outputs"])}</td>'
                   f'<td class="text">{esc(status)}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def _names(names: list[str]) -> str:
    """A short list inline, a long one folded in <details>."""
    if len(names) <= 3:
        return esc(", ".join(names))
    items = "".join(f"<li>{esc(n)}</li>" for n in names)
    return (f"<details><summary>{esc(names[0])} and {len(names) - 1} more</summary>"
            f'<ul class="names">{items}</ul></details>')


def _reason(code: str | None) -> str:
    return REASONS.get(code, code) if code else "no backend claimed it"


def _native_table(plan: dict) -> str:
    native = [d for d in plan.get("nodes", []) if d.get("region") is None]
    if not native:
        return "<p>Every operator is claimed by a region.</p>"
    rows = "".join(f'<tr class="native-row" data-node="{esc(d["node"])}"><td class="text">'
                   f'{esc(d["node"])}</td><td class="text">{esc(d["op"])}</td>'
                   f'<td class="text">{esc(_reason(d.get("reason")))}'
                   f"</td></tr>" for d in native)
    return (f"<details open=\"open\"><summary>{len(native)} operators left native</summary>"
            f'<table class="native"><thead><tr><th class="text">node</th><th class="text">op'
            f'</th><th class="text">reason</th></tr></thead><tbody>{rows}</tbody></table>'
            f"</details>")
