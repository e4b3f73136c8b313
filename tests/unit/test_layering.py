"""The layering rule of STYLE §3: only ``gateway.shell`` touches JS (``js``/``pyodide``)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
JS_MODULES = {"js", "pyodide"}


def _imports(path: Path) -> set[str]:
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
        if "shell" not in path.relative_to(SRC).parts and _imports(path) & JS_MODULES
    ]

    assert offenders == []


def test_the_guard_sees_shell_modules():
    # If the shell stopped importing js, this guard would be checking nothing.
    assert any(_imports(p) & JS_MODULES for p in (SRC / "gateway" / "shell").glob("*.py"))
