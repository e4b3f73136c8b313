"""``gateway.surfaces`` stays pure like the core (STYLE §3): the translators import only the
standard library, the core, the wire models, each other and ``gateway.errors``; no clock, no
randomness, no JS."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SURFACES = Path(__file__).resolve().parents[3] / "src" / "gateway" / "surfaces"
ALLOWED = ("gateway.core", "gateway.wire", "gateway.surfaces", "gateway.errors")
FORBIDDEN_STDLIB = {"time", "random", "secrets", "uuid", "os", "datetime"}


def _imported(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("<relative>" if node.level else node.module or "")
    return names


def _allowed(name: str) -> bool:
    if any(name == p or name.startswith(p + ".") for p in ALLOWED):
        return True
    top = name.split(".")[0]
    return top in sys.stdlib_module_names and top not in FORBIDDEN_STDLIB


@pytest.mark.parametrize("path", sorted(SURFACES.glob("*.py")), ids=lambda p: p.name)
def test_surfaces_import_nothing_impure(path):
    assert [name for name in _imported(path) if not _allowed(name)] == []


@pytest.mark.parametrize(
    ("name", "allowed"),
    [("json", True), ("gateway.errors", True), ("js", False), ("gateway.shell.http", False), ("time", False)],
)
def test_the_guard_itself(name, allowed):
    assert _allowed(name) is allowed
