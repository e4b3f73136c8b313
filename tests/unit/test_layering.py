"""The layering rules (STYLE §3): imports point down ``gateway.LAYERS`` and form no cycle, and only
``gateway.shell`` touches JS (``js``/``pyodide``).

The import graph is read from the source (``ast``): every import counts, those under
``TYPE_CHECKING`` and inside functions included. A module is in the layer of the longest name of
``LAYERS`` it falls under (``gateway.routes.chat`` under ``gateway.routes``); names sharing a layer
are independent. The checker is run on planted graphs and a planted tree too, so that it cannot
pass by checking nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

import gateway
from gateway import LAYERS

SRC = Path(__file__).resolve().parents[2] / "src"
JS_MODULES = {"js", "pyodide"}
Layers = tuple[tuple[str, ...], ...]
Graph = dict[str, set[str]]


# -- the checker ------------------------------------------------------------------------------------


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` (module ``name``) imports: ``import a.b`` gives
    ``a.b``; ``from a import b`` gives ``a.b`` when it is a module, else ``a``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up one level per dot after the first
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
    return (found & modules) - {name}


def import_graph(root: Path) -> Graph:
    """Each module under ``root`` → the modules under ``root`` it imports."""
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    return {name: _imports(path, name, set(paths)) for name, path in paths.items()}


def layer_of(module: str, layers: Layers) -> tuple[int, str] | None:
    """``module``'s layer (its index, top first) and the name of ``layers`` it falls under."""
    best: tuple[int, str] | None = None
    for index, layer in enumerate(layers):
        for unit in layer:
            if (module == unit or module.startswith(unit + ".")) and (best is None or len(unit) > len(best[1])):
                best = (index, unit)
    return best


def upward_imports(graph: Mapping[str, set[str]], layers: Layers) -> list[str]:
    """``importer -> imported`` for each import up the layers, or across one to a sibling."""
    wrong = []
    for importer, imported in sorted(graph.items()):
        here = layer_of(importer, layers)
        for target in sorted(imported):
            there = layer_of(target, layers)
            if here is None or there is None:
                continue  # unplaced modules are test_every_module_has_a_layer's
            if there[0] < here[0] or (there[0] == here[0] and there[1] != here[1]):
                wrong.append(f"{importer} -> {target}")
    return wrong


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles: each strongly connected set of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


GRAPH = import_graph(SRC)


# -- the code -------------------------------------------------------------------------------------


def test_every_module_has_a_layer():
    assert [m for m in sorted(GRAPH) if m != "gateway" and layer_of(m, LAYERS) is None] == []


def test_imports_point_down_the_layers():
    assert upward_imports(GRAPH, LAYERS) == []


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_the_layers_are_written_once_and_the_docstring_lists_them():
    # LAYERS is the data; the package docstring's list names the same layers in the same order.
    listed = re.findall(r"^- ((?:``[\w.]+``(?: \| )?)+)", gateway.__doc__ or "", re.MULTILINE)
    documented = [tuple(re.findall(r"``([\w.]+)``", line)) for line in listed]
    assert documented == [tuple(unit.removeprefix("gateway.") for unit in layer) for layer in LAYERS]


def test_the_graph_sees_the_code():
    # If the graph were read wrong it would hold nothing to check: these imports are known.
    assert "gateway.routes.chat" in GRAPH["entry"]
    assert {"gateway.isolate", "gateway.meter"} <= GRAPH["gateway.serving.routing"]
    assert "gateway.shell.rescue" in GRAPH["gateway.shell.translation"]
    assert sum(len(targets) for targets in GRAPH.values()) > 300


# -- the checker, on planted imports --------------------------------------------------------------

PLANTED_LAYERS: Layers = (("app.top",), ("app.middle", "app.side"), ("app.bottom",))


@pytest.mark.parametrize(
    ("importer", "imported", "flagged"),
    [
        ("app.top.handler", "app.bottom.rules", False),
        ("app.middle", "app.bottom.rules", False),
        ("app.top.handler", "app.top.other", False),
        ("app.bottom.rules", "app.top.handler", True),
        ("app.bottom.rules", "app.middle", True),
        ("app.middle", "app.side", True),  # siblings are independent
    ],
)
def test_the_checker_flags_an_upward_import(importer, imported, flagged):
    graph = {importer: {imported}, imported: set()}

    assert upward_imports(graph, PLANTED_LAYERS) == ([f"{importer} -> {imported}"] if flagged else [])


def test_the_checker_flags_an_upward_import_planted_in_the_real_graph():
    planted = {**GRAPH, "gateway.core.rules": GRAPH["gateway.core.rules"] | {"gateway.serving.routing"}}

    assert upward_imports(planted, LAYERS) == ["gateway.core.rules -> gateway.serving.routing"]


def test_the_checker_flags_a_cycle():
    graph = {"a.one": {"a.two"}, "a.two": {"a.three"}, "a.three": {"a.one"}, "a.four": {"a.one"}}

    assert cycles(graph) == [["a.one", "a.three", "a.two"]]


def test_the_checker_flags_a_cycle_planted_in_the_real_graph():
    planted = {**GRAPH, "gateway.core.hosts": GRAPH["gateway.core.hosts"] | {"gateway.core.hop"}}

    assert cycles(planted) == [["gateway.core.hop", "gateway.core.hosts"]]


def test_the_graph_reads_every_kind_of_import(tmp_path):
    # A planted tree: imports at the top, under TYPE_CHECKING, inside a function, relative, and
    # ``from package import module``; each upward one is found.
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "top.py").write_text("from app import bottom\n")
    (tmp_path / "app" / "side.py").write_text("")
    (tmp_path / "app" / "middle.py").write_text("X = 1\n")
    (tmp_path / "app" / "bottom.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from app.top import Thing\n"
        "def later():\n    import app.middle\n"
        "from . import side\n"
    )
    graph = import_graph(tmp_path)

    assert graph["app.top"] == {"app.bottom"}
    assert graph["app.bottom"] == {"app.top", "app.middle", "app.side"}
    assert upward_imports(graph, PLANTED_LAYERS) == [
        "app.bottom -> app.middle", "app.bottom -> app.side", "app.bottom -> app.top",
    ]  # fmt: skip


# -- JS stays in the shell ------------------------------------------------------------------------


def _top_level_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_only_the_shell_imports_js():
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "shell" not in path.relative_to(SRC).parts and _top_level_imports(path) & JS_MODULES
    ]

    assert offenders == []


def test_the_guard_sees_shell_modules():
    # If the shell stopped importing js, this guard would be checking nothing.
    assert any(_top_level_imports(p) & JS_MODULES for p in (SRC / "gateway" / "shell").glob("*.py"))
