"""The package's import structure: the core is a stack of layers without cycles, backends plug
into the core (never the reverse, never into each other), the training harness is built on
the core alone, the tools sit on top.

The import graph is read from the source with ``ast`` (nothing is imported): every import
statement counts, at module level or inside a function, under ``if TYPE_CHECKING`` too.
Importing ``a.b.c`` from outside package ``a.b`` also runs ``a/b/__init__.py``, so it adds an
edge to each such package; the root package ``graphexec`` (the public facade, which imports
the whole stack) is left out of those implicit edges. A failure prints the offending chain.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "graphexec"
SKIP_DIRS = {"tests", "benchmarks", "examples", ".venv", ".git", "__pycache__", ".ci"}

#: the core's layers, bottom first: a module may import its own layer and the ones below
CORE_LAYERS = [
    ("ir", "hookspecs"),
    ("plugins",),
    ("ops",),
    ("symbol",),
    ("passes",),
    ("subgraph",),
    ("runtime",),
    ("startup",),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PKG, *parts])


def package_modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).parts
        if SKIP_DIRS.isdisjoint(rel) and not any(p.endswith(".egg-info") for p in rel):
            found[module_name(path)] = path
    return found


MODULES = package_modules()


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str) -> str | None:
    """The package module ``name`` names, or the module holding the name it imports."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str) -> set[str]:
    """Package modules that importing ``name`` runs, directly (with their packages)."""
    path = MODULES[name]
    is_package = path.name == "__init__.py"
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node)
            targets.update(f"{base}.{a.name}" for a in node.names)
    own_packages = _ancestors(name) | ({name} if is_package else set())
    edges = set()
    for target in targets:
        module = _known(target) if target.startswith(PKG) else None
        if module is None or module == name:
            continue
        edges.add(module)
        edges.update(p for p in _ancestors(module) if p not in own_packages and p != PKG)
    edges.discard(name)
    return edges


def _ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:k]) for k in range(1, len(parts))}


GRAPH = {name: imports_of(name) for name in MODULES}


def cycles(nodes: set[str]) -> list[list[str]]:
    """The import cycles among ``nodes`` (one chain per strongly connected component)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan, iterative over each node's edges
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v] & nodes):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_chain(sorted(component)[0], set(component)))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def _chain(start: str, component: set[str]) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``component``."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(GRAPH[v] & component):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                todo.append(w)
    return [start]


def _show(chains: list[list[str]]) -> str:
    return "\n".join(" -> ".join(c) for c in chains)


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _layer(name: str) -> int | None:
    for k, layer in enumerate(CORE_LAYERS):
        if any(_in(name, f"{PKG}.core.{part}") for part in layer):
            return k
    return None


BACKENDS = sorted({".".join(n.split(".")[:3]) for n in MODULES if _in(n, f"{PKG}.backends")
                   and n.count(".") >= 2})


def test_every_core_module_has_a_layer():
    core = [n for n in MODULES if _in(n, f"{PKG}.core") and n != f"{PKG}.core"]
    assert [n for n in core if _layer(n) is None] == []


def test_core_imports_no_backend_no_harness_and_no_tool():
    bad = [f"{a} -> {b}" for a in sorted(MODULES) if _in(a, f"{PKG}.core")
           for b in sorted(GRAPH[a])
           if _in(b, f"{PKG}.backends") or _in(b, f"{PKG}.tools") or _in(b, f"{PKG}.harness")
           or b == PKG]
    assert bad == [], "the core reaches up:\n" + "\n".join(bad)


def test_core_layers_import_downward_only():
    bad = [f"{a} (layer {_layer(a)}) -> {b} (layer {_layer(b)})"
           for a in sorted(MODULES) if _layer(a) is not None
           for b in sorted(GRAPH[a]) if _layer(b) is not None and _layer(b) > _layer(a)]
    assert bad == [], "imports against the layer order:\n" + "\n".join(bad)


def test_no_import_cycle_in_the_core():
    core = {n for n in MODULES if _in(n, f"{PKG}.core")}
    found = cycles(core)
    assert found == [], "import cycles in the core:\n" + _show(found)


def test_backends_depend_on_the_core_only():
    bad = [f"{a} -> {b}" for backend in BACKENDS for a in sorted(MODULES) if _in(a, backend)
           for b in sorted(GRAPH[a])
           if not (_in(b, backend) or _in(b, f"{PKG}.core") or b == f"{PKG}.backends")]
    assert bad == [], "a backend imports outside the core and itself:\n" + "\n".join(bad)


def test_harness_depends_on_the_core_only():
    bad = [f"{a} -> {b}" for a in sorted(MODULES) if _in(a, f"{PKG}.harness")
           for b in sorted(GRAPH[a]) if not (_in(b, f"{PKG}.harness") or _in(b, f"{PKG}.core"))]
    assert bad == [], "the harness imports outside the core and itself:\n" + "\n".join(bad)


def test_no_import_cycle_inside_a_backend_the_harness_or_the_tools():
    found = []
    for package in [*BACKENDS, f"{PKG}.harness", f"{PKG}.tools"]:
        found += cycles({n for n in MODULES if _in(n, package)})
    assert found == [], "import cycles:\n" + _show(found)


def test_the_checker_sees_cycles_and_upward_imports(monkeypatch):
    """The checks above can fail: a planted cycle and a planted upward import are found."""
    graph = {k: set(v) for k, v in GRAPH.items()}
    graph[f"{PKG}.core.ir.errors"].add(f"{PKG}.core.runtime.executor")
    monkeypatch.setitem(globals(), "GRAPH", graph)
    chains = cycles({n for n in MODULES if _in(n, f"{PKG}.core")})
    assert any(c[0] == c[-1] and f"{PKG}.core.ir.errors" in c for c in chains)
    assert _layer(f"{PKG}.core.runtime.executor") > _layer(f"{PKG}.core.ir.errors")
