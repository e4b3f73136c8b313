"""Imports every Worker module the way a deploy does, inside Pyodide, and prints a JSON report.

Production imports the Worker's top level once at deploy and snapshots the Wasm memory, where
randomness is banned and no JS object may be a module-level value (PLATFORM-NOTES §3.3); the
local runtime enforces neither, so this check does. Third-party packages are imported first:
production grants their import-time entropy (the SDK's entropy import context).

Run by test_snapshot_safety.py through scripts/runtime/run-python.mjs; argv[1] is the folder
holding the Worker's modules.
"""

import ast
import importlib
import json
import os
import random
import sys
from pathlib import Path

import js
import pydantic  # noqa: F401 - granted import-time entropy in production
import workers  # noqa: F401
from pyodide.ffi import JsProxy, create_proxy

root = Path(sys.argv[1])
failures: list[str] = []


def banned(*args, **kwargs):
    raise RuntimeError("randomness while the Worker is starting")


os.urandom = banned
for name in ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample",
             "uniform", "getrandbits", "randbytes", "gauss"):
    setattr(random, name, banned)
js.crypto.getRandomValues = create_proxy(banned)


def js_imports(source: str) -> set[str]:
    """Names a module binds by importing from JS (allowed in the snapshot: imported JS modules
    and attributes reached from them)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in ("js", "pyodide")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("js", "pyodide"):
            names |= {a.asname or a.name for a in node.names}
    return names


def js_inside(value, depth: int = 0) -> str | None:
    """Where a JS object sits in ``value`` (itself, or inside its containers and instance
    fields, a few levels down), or None."""
    if isinstance(value, JsProxy):
        return ""
    if depth >= 4 or isinstance(value, (str, bytes, int, float, type)) or callable(value):
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = enumerate(value)
    elif hasattr(value, "__dict__") or hasattr(value, "__slots__"):
        names = list(getattr(value, "__dict__", {})) or list(getattr(value, "__slots__", ()))
        items = ((n, getattr(value, n, None)) for n in names)
    else:
        return None
    for key, item in items:
        where = js_inside(item, depth + 1)
        if where is not None:
            return f"[{key!r}]{where}"
    return None


modules = []
for path in sorted(root.rglob("*.py")):
    relative = path.relative_to(root).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    name = ".".join(parts)
    modules.append(name)
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        failures.append(f"{name}: import failed: {type(exc).__name__}: {exc}")
        continue
    allowed = js_imports(path.read_text())
    for attr, value in vars(module).items():
        if attr in allowed or isinstance(value, type(sys)):
            continue
        where = js_inside(value)
        if where is not None:
            failures.append(f"{name}.{attr}{where}: a JS object at module level")

print(json.dumps({"modules": modules, "failures": failures}))
