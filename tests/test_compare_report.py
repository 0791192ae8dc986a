"""Graph drawings (graph_svg) and the self-contained HTML report of ``graphexec compare``."""
from __future__ import annotations

import gzip
import json
import re
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import graphexec as gx
from graphexec.core.subgraph.plan import REASONS
from graphexec.tools.compare.plot import NATIVE, backend_colour, graph_svg, plot_model
from graphexec.tools.compare.report import html_report, write_report

DATA = Path(__file__).parent / "data" / "json"
SVG = "{http://www.w3.org/2000/svg}"
SHAPE = {"data": (1, 3, 224, 224)}


def _zoo(name: str):
    return gx.sym.load_json(gzip.open(DATA / f"zoo_{name}-symbol.json.gz", "rt").read())


@pytest.fixture(scope="module")
def resnet18():
    return _zoo("resnet18_v1")


@pytest.fixture(scope="module")
def plans(resnet18):
    """Real partition plans of the zoo ResNet-18 (fused leaves most nodes native, with
    reasons; onnxrt without elemwise_add makes one region per residual block)."""
    return {s: gx.partition(resnet18, s, input_shapes=SHAPE).to_dict()
            for s in ("fused", "onnxrt:exclude_ops=elemwise_add", "onnxrt")}


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == cls]


def _boxes(root: ET.Element) -> dict[str, tuple[float, float, float, float]]:
    """node name -> (x, y, width, height) of its box."""
    out = {}
    for g in _groups(root, "gx-node") + _groups(root, "gx-input"):
        r = g.find(f"{SVG}rect")
        out[g.get("data-node")] = tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))
    return out


# -- graph_svg ---------------------------------------------------------------------------------
def test_small_graph_escapes_names_and_hides_parameters():
    data = gx.sym.Variable("data")
    fc = gx.sym.FullyConnected(data, num_hidden=8, name='fc<1>&"x"')
    net = gx.sym.SoftmaxOutput(gx.sym.relu(fc, name="act"), name="softmax")
    root = _parse(graph_svg(net, title="mlp <test>"))
    assert [g.get("data-node") for g in _groups(root, "gx-node")] == \
        ['fc<1>&"x"', "act", "softmax"]
    assert {g.get("data-node") for g in _groups(root, "gx-input")} == {"data", "softmax_label"}
    everything = _parse(graph_svg(net, hide_weights=False))
    assert {g.get("data-node") for g in _groups(everything, "gx-input")} == \
        {"data", 'fc<1>&"x"_weight', 'fc<1>&"x"_bias', "softmax_label"}
    explicit = _parse(graph_svg(net, inputs=["data"]))
    assert [g.get("data-node") for g in _groups(explicit, "gx-input")] == ["data"]


def test_resnet18_layout_one_box_per_op_edges_downwards_no_overlap(resnet18):
    internals = resnet18.get_internals()
    shapes = dict(zip(internals.list_outputs(), internals.infer_shape(**SHAPE)[1]))
    root = _parse(graph_svg(resnet18, shapes=shapes))
    ig = resnet18._indexed()
    ops = [n for n in ig.nodes if n.op is not None]
    assert len(_groups(root, "gx-node")) == len(ops)
    boxes = _boxes(root)
    for n in ops:  # every edge points down: a node sits below each input it draws
        for e in n.inputs:
            if e.node.name in boxes:
                assert boxes[e.node.name][1] < boxes[n.name][1], (e.node.name, n.name)
    rects = sorted(boxes.values())
    for a, b in zip(rects, rects[1:]):
        same_row = a[1] == b[1]
        assert not (same_row and a[0] + a[2] > b[0]), (a, b)
    text = "".join(root.itertext())
    assert "1x64x112x112" in text and "1x1000" in text


def test_plan_colours_regions_and_reasons(plans, resnet18):
    plan = plans["fused"]
    root = _parse(graph_svg(resnet18, plan))
    decisions = {d["node"]: d for d in plan["nodes"]}
    nodes = _groups(root, "gx-node")
    assert len(nodes) == len(decisions)
    for g in nodes:
        d = decisions[g.get("data-node")]
        assert g.get("data-backend") == (d["backend"] or NATIVE)
        assert g.find(f"{SVG}rect").get("fill") == backend_colour(d["backend"])
        if d["region"] is None:
            sentence = REASONS.get(d["reason"], d["reason"])
            assert g.get("data-reason") == d["reason"]
            assert sentence in g.find(f"{SVG}title").text
            assert any(t.get("class") == "gx-reason" for t in g.iter(f"{SVG}text"))
    regions = _groups(root, "gx-region")
    assert sorted(int(g.get("data-region")) for g in regions) == \
        sorted(r["id"] for r in plan["regions"])
    legend = "".join(_groups(root, "gx-legend")[0].itertext())
    assert "fused" in legend and "native" in legend
    assert "min_size" in {d["reason"] for d in decisions.values()}


def test_fully_claimed_plan_has_no_reasons(plans, resnet18):
    root = _parse(graph_svg(resnet18, plans["onnxrt"]))
    assert {g.get("data-backend") for g in _groups(root, "gx-node")} == {"onnxrt"}
    assert not [g for g in _groups(root, "gx-node") if g.get("data-reason")]
    assert len(_groups(root, "gx-region")) == 1


def test_backend_colours_are_fixed_or_hashed():
    assert backend_colour("NONE") == backend_colour(None) == backend_colour(NATIVE)
    builtin = {backend_colour(b) for b in (NATIVE, "default", "onnxrt", "fused")}
    assert len(builtin) == 4
    assert backend_colour("my_plugin") == backend_colour("my_plugin")
    assert backend_colour("my_plugin") not in builtin
    assert backend_colour("my_plugin") != backend_colour("other_plugin")


def test_largest_zoo_graph_is_fast():
    densenet = _zoo("densenet121")  # 1034 nodes, 427 operators
    plan = gx.partition(densenet, "onnxrt:exclude_ops=Concat", input_shapes=SHAPE).to_dict()
    start = time.perf_counter()
    svg = graph_svg(densenet, plan, title="densenet121")
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"graph_svg took {elapsed:.2f} s"
    root = _parse(svg)
    assert len(_groups(root, "gx-node")) == 427
    assert len(_groups(root, "gx-region")) == len(plan["regions"]) > 50


def test_wide_layers_wrap_within_max_width(tmp_path):
    data = gx.sym.Variable("data")
    branches = [gx.sym.FullyConnected(gx.sym.relu(data, name=f"r{i}"), num_hidden=4,
                                      name=f"fc{i}") for i in range(40)]
    net = gx.sym.Concat(*branches, dim=1, name="cat")
    for hide in (True, False):
        root = _parse(graph_svg(net, hide_weights=hide, max_width=1200))
        assert float(root.get("width")) <= 1200 + 2 * 16
    path = plot_model(net, tmp_path / "wide.svg", title="wide")
    assert len(_groups(_parse(path.read_text()), "gx-node")) == 81


# -- html_report -------------------------------------------------------------------------------
def _stats(median: float, n: int = 12) -> dict:
    samples = [median * (1 + 0.04 * ((k * 7) % 5 - 2)) for k in range(n)]
    s = sorted(samples)
    return {"median": median, "min": s[0], "max": s[-1], "q1": s[n // 4], "q3": s[3 * n // 4],
            "samples": samples}


def _row(strategy: str, plan: dict | None, forward: float, train: float | None,
         speed: tuple = (1.0, None, "baseline")) -> dict:
    claimed: dict[str, int] = {}
    for d in (plan or {}).get("nodes", []):
        if d["backend"]:
            claimed[d["backend"]] = claimed.get(d["backend"], 0) + 1
    return {"strategy": strategy, "error": None, "regions": len((plan or {}).get("regions", [])),
            "claimed": claimed, "total_ops": 68, "boundaries": 2 * len(claimed),
            "boundary_bytes": 802816 if claimed else 0, "bind_s": 0.12, "first_run_s": 0.3,
            "forward_ms": _stats(forward), "train_ms": _stats(train) if train else None,
            "planned_bytes": 48_000_000, "peak_rss_bytes": 310_000_000,
            "max_abs_diff": 2.4e-6, "max_rel_diff": 1.1e-7, "fallbacks": 0, "plan": plan,
            "speedup": speed[0], "ci95": speed[1], "verdict": speed[2],
            "noisy": speed[1] is not None and speed[1][1] / speed[1][0] > 1.1}


@pytest.fixture(scope="module")
def result(resnet18, plans):
    """A compare result assembled from real plans: the reference, three partitionings, a
    strategy that failed (with its real error) and an 'auto' strategy with its decisions."""
    try:
        gx.partition(resnet18, "no_such_backend")
    except gx.GraphexecError as exc:
        error = f"{type(exc).__name__}: {exc}"
    auto_plan = json.loads(json.dumps(plans["onnxrt:exclude_ops=elemwise_add"]))
    auto_plan["regions"][0].update(status="fallback", cause="running it failed: OSError: gone")
    auto = _row("auto", auto_plan, 21.0, None, (1.9, [1.7, 2.0], "faster"))
    rejected = plans["fused"]["regions"][0]  # a candidate 'auto' measured and left native
    auto["auto"] = {"decisions": [
        {"region": r["node"], "backend": r["backend"], "members": r["members"],
         "timings_ms": {"native": 4.0, r["backend"]: 1.5 + r["id"]}, "chosen": r["backend"]}
        for r in auto_plan["regions"]] + [
        {"region": rejected["node"], "backend": "fused", "members": rejected["members"],
         "timings_ms": {"native": 0.1, "fused": 6.0}, "chosen": "native"}]}
    return {"model": {"name": "resnet18_v1", "source": "zoo:resnet18_v1 <gluon>",
                      "inputs": {"data": [1, 3, 224, 224]}, "num_ops": 68,
                      "num_params": 11_699_112, "symbol_json": resnet18.tojson()},
            "train": True, "repeat": 12, "reference": "NONE", "baseline": "NONE",
            "rounds": 40, "calls_per_sample": {"forward": 1, "train": 1}, "min_effect": 0.03,
            "noisy": "the intervals of fused are wider than +-2% after 40 rounds",
            "strategies": [_row("NONE", None, 41.5, 120.0),
                           _row("fused", plans["fused"], 39.0, 117.0, (1.02, [0.9, 1.12], "same")),
                           _row("onnxrt", plans["onnxrt"], 19.7, None, (2.1, [2.0, 2.2], "faster")),
                           _row("onnxrt:exclude_ops=elemwise_add", plans[
                               "onnxrt:exclude_ops=elemwise_add"], 43.0, None,
                               (0.95, [0.93, 0.96], "slower")),
                           {"strategy": "no_such_backend", "error": error, "bind_s": 0.01},
                           auto]}


def _cls(e: ET.Element, name: str) -> bool:
    return name in (e.get("class") or "").split()


def test_report_lists_every_strategy_region_and_decision(result):
    page = html_report(result)
    root = ET.fromstring(page)  # the page is well-formed XML (polyglot HTML5)
    assert page.startswith("<!DOCTYPE html>")
    rows = [tr for tr in root.iter("tr") if _cls(tr, "strategy-row")]
    assert [tr.get("data-strategy") for tr in rows] == [r["strategy"] for r in result["strategies"]]
    failed = [tr for tr in rows if _cls(tr, "failed")]
    assert [tr.get("data-strategy") for tr in failed] == ["no_such_backend"]
    assert "UnknownBackendError" in "".join(failed[0].itertext())
    marked = [(tr.get("data-strategy"), td.text) for tr in rows for td in tr.iter("td")
              if _cls(td, "faster") or _cls(td, "slower")]   # only significant verdicts
    assert marked == [("onnxrt", "faster"), ("onnxrt:exclude_ops=elemwise_add", "slower"),
                      ("auto", "faster, noisy")]
    bars = {g.get("data-strategy"): g for g in root.iter(f"{SVG}g") if _cls(g, "speedup-row")}
    assert list(bars) == [r["strategy"] for r in result["strategies"] if r.get("speedup")]
    assert [g.get("data-verdict") for g in bars.values()] == [
        "baseline", "same", "faster", "slower", "faster"]
    assert all(len([r for r in g.iter(f"{SVG}rect") if _cls(r, "interval")]) == (k > 0)
               for k, g in enumerate(bars.values()))   # the baseline has no interval
    fell = [tr for tr in root.iter("tr") if _cls(tr, "fallback")]
    assert len(fell) == 1 and "OSError: gone" in "".join(fell[0].itertext())
    notes = "".join(t for li in root.iter("li") if li.get("data-strategy") for t in li.itertext())
    assert "fell back to native at run time" in notes
    panels = {p.get("data-strategy"): p for p in root.iter("section") if _cls(p, "panel")}
    assert list(panels) == [r["strategy"] for r in result["strategies"]]
    for row in result["strategies"]:
        regions = (row.get("plan") or {}).get("regions", [])
        panel = panels[row["strategy"]]
        listed = [tr.get("data-region") for tr in panel.iter("tr") if _cls(tr, "region-row")]
        drawn = [g.get("data-region") for g in panel.iter(f"{SVG}g") if _cls(g, "gx-region")]
        assert listed == drawn == [str(r["id"]) for r in regions]
        native = [tr.get("data-node") for tr in panel.iter("tr") if _cls(tr, "native-row")]
        assert native == [d["node"] for d in (row.get("plan") or {}).get("nodes", [])
                          if d["region"] is None]
    decisions = [tr for tr in root.iter("tr") if _cls(tr, "auto-row")]
    assert [tr.get("data-region") for tr in decisions] == \
        [d["region"] for d in result["strategies"][-1]["auto"]["decisions"]]
    chosen = [td.text for tr in decisions for td in tr.iter("td") if _cls(td, "best")]
    assert chosen == [f"{1.5 + k:.3g}" for k in range(len(decisions) - 1)] + ["0.1"]
    figures = [f.get("data-metric") for f in root.iter("figure")]
    assert figures == ["speedup", "forward_ms", "train_ms"]
    text = "".join(root.itertext())
    assert "zoo:resnet18_v1 <gluon>" in text and "11,699,112" in text
    assert "Interrupted" not in text
    assert "Interrupted" in html_report({**result, "interrupted": True})


def test_report_references_nothing_outside(result):
    page = html_report(result)
    without_namespace = page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in without_namespace and "https://" not in without_namespace
    assert not re.search(r"<script|@import|url\(", page)
    assert re.findall(r'(?:src|href)="([^"]*)"', page) == ["data:,"]


CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-quic"]


def test_report_renders_in_chromium(result, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed (apt-get install -y chromium; .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="the playwright package is not installed")
    path = write_report(result, tmp_path / "report.html")
    problems: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(f"{m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(path.as_uri())
            _check_tabs(page, result)
            page.click('label[for="gx-tab-1"]')
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            context.close()
    assert problems == []
    assert [u for u in requests if not u.startswith("data:")] == [path.as_uri()]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def _check_tabs(page, result: dict) -> None:
    """Each strategy's tab shows its panel alone, with every region drawn and listed."""
    rows = result["strategies"]
    for i, row in enumerate(rows):
        page.click(f'label[for="gx-tab-{i}"]')
        assert page.locator(f"#gx-panel-{i}").is_visible()
        assert not any(page.locator(f"#gx-panel-{j}").is_visible()
                       for j in range(len(rows)) if j != i)
        for reg in (row.get("plan") or {}).get("regions", []):
            sel = f'#gx-panel-{i} [data-region="{reg["id"]}"]'
            assert page.locator(f"{sel}.gx-region").is_visible(), (row["strategy"], reg["id"])
            assert page.locator(f"{sel}.region-row").is_visible(), (row["strategy"], reg["id"])
