"""``gateway.core`` stays pure (STYLE §3): it imports only the standard library,
``gateway.core`` and ``gateway.wire``; it reads no wall clock and draws no randomness (the clock
is injected, and entropy is forbidden while a Worker starts: PLATFORM-NOTES §3.3); every public
module declares a complete ``__all__``."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[3] / "src" / "gateway" / "core"
ALLOWED_PACKAGES = ("gateway.core", "gateway.wire")
# Stdlib modules the core must not use: the clock comes from the caller, and no randomness.
FORBIDDEN_STDLIB = {"time", "random", "secrets", "uuid", "os"}
MODULES = sorted(p for p in CORE.glob("*.py"))


def _imported(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: only within the core package itself
                names.append("gateway.core" if node.level == 1 else "<outside gateway.core>")
            else:
                names.append(node.module or "")
    return names


def _allowed(name: str) -> bool:
    top = name.split(".")[0]
    if any(name == p or name.startswith(p + ".") for p in ALLOWED_PACKAGES):
        return True
    return top in sys.stdlib_module_names and top not in FORBIDDEN_STDLIB


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_core_imports_only_the_stdlib_and_core(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))

    offenders = [name for name in _imported(tree) if not _allowed(name)]

    assert offenders == []


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("json", True),
        ("gateway.core.rules", True),
        ("gateway.wire.headers", True),
        ("gateway.shell.http", False),
        ("gateway.errors", False),
        ("js", False),
        ("pyodide.ffi", False),
        ("workers", False),
        ("pydantic", False),
        ("time", False),
        ("random", False),
    ],
)
def test_the_guard_itself(name, allowed):
    assert _allowed(name) is allowed


# rules.py is a table of constants: every name in it is public by design.
PUBLIC = [p for p in MODULES if not p.name.startswith("_") and p.name != "rules.py"]


@pytest.mark.parametrize("path", PUBLIC, ids=lambda p: p.name)
def test_public_modules_declare_a_complete_all(path):
    module = importlib.import_module(f"gateway.core.{path.stem}")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    }

    exported = getattr(module, "__all__", None)

    assert exported is not None, f"{path.name} has no __all__"
    assert [name for name in exported if not hasattr(module, name)] == []
    assert sorted(defined - set(exported)) == []
