"""The deploy snapshot's rules, checked under CPython (PLATFORM-NOTES §3.3).

Production imports the Worker's top level once at deploy and snapshots the Wasm memory. While it
imports, randomness is banned (``os.urandom``, the ``random`` module's functions, ``secrets``,
``crypto.getRandomValues`` raise) and no JS object may be a module-level value: the snapshot
keeps imported JS modules and the attributes reached from them (``import js``,
``from js import Object``), never a value made by calling into JS (``js.Headers.new()``,
``to_js(...)``).

Here every Worker module is imported fresh, as a deploy does, with fake ``js``/``pyodide`` modules
whose attributes are ``JsObject`` markers, and with randomness banned; then each module's globals
are walked for markers. Third-party packages are imported first, with randomness allowed:
production grants their import-time entropy (the SDK's entropy import context). workerd enforces
the same rules itself when it takes the deploy snapshot (tests/e2e/test_snapshot_safety.py).
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import os
import random
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# Imported before randomness is banned: production grants their import-time entropy.
THIRD_PARTY = ("pydantic", "workers")
RANDOM_FUNCTIONS = (
    "random",
    "randint",
    "randrange",
    "choice",
    "choices",
    "shuffle",
    "sample",
    "uniform",
    "getrandbits",
    "randbytes",
    "gauss",
)
SECRETS_FUNCTIONS = ("token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits")


class JsObject:
    """A JS object, as the fake ``js`` hands it out: its attributes are JS objects too, and
    calling it, or its ``new``, makes a fresh one. Under the fake ``pyodide.ffi`` it is
    ``JsProxy``, as every JS object is in Pyodide."""

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> JsObject:
        if name.startswith("_"):  # Python's protocols (copy, pickle, inspect), not JS
            raise AttributeError(name)
        return JsObject(f"{self._path}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> JsObject:
        return JsObject(f"{self._path}()")

    def new(self, *args: object, **kwargs: object) -> JsObject:
        return JsObject(f"new {self._path}()")

    def __repr__(self) -> str:
        return f"<JS {self._path}>"


class JsException(Exception):  # noqa: N818 - named as pyodide.ffi names it
    """``pyodide.ffi.JsException``."""


class FetchResponse:
    """``pyodide.http.FetchResponse`` (a Python class: the SDK subclasses it)."""


async def pyfetch(url: str, **kwargs: object) -> FetchResponse:
    """``pyodide.http.pyfetch``."""
    raise NotImplementedError("no fetch under CPython")


def _js_module(name: str, **attrs: object) -> ModuleType:
    """A module standing for a JS module: its other attributes are ``JsObject``s."""
    module = ModuleType(name)
    module.__dict__.update(attrs)

    def attribute(attr: str) -> JsObject:
        if attr.startswith("_"):
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        return JsObject(f"{name}.{attr}")

    module.__getattr__ = attribute  # type: ignore[method-assign]  # PEP 562
    return module


def _python_module(name: str, **attrs: object) -> ModuleType:
    """A module of Pyodide's own Python, with what the Worker and the SDK take from it."""
    module = ModuleType(name)
    module.__dict__.update(attrs)
    return module


def fake_runtime() -> dict[str, ModuleType]:
    """What Pyodide and workerd provide that src/ and the ``workers`` SDK import at their top
    level (PLATFORM-NOTES §2.5). ``pyodide.ffi``'s functions (``to_js``, ``create_proxy``, ...)
    are ``JsObject``s as well: what they return is a JS object."""
    pyodide = _js_module("pyodide", __path__=[], __version__="0+cpython-fake")
    modules = {
        "js": _js_module("js"),
        "pyodide": pyodide,
        "pyodide.ffi": _js_module("pyodide.ffi", JsProxy=JsObject, JsBuffer=JsObject, JsException=JsException),
        "pyodide.http": _python_module("pyodide.http", FetchResponse=FetchResponse, pyfetch=pyfetch),
        "pyodide.webloop": _python_module("pyodide.webloop", PyodideTask=asyncio.Task),
        "_pyodide_entrypoint_helper": _js_module("_pyodide_entrypoint_helper"),
        "_cloudflare_compat_flags": _python_module("_cloudflare_compat_flags"),  # every flag off
    }
    for name in ("ffi", "http", "webloop"):
        setattr(pyodide, name, modules[f"pyodide.{name}"])
    return modules


def banned(*args: object, **kwargs: object) -> None:
    raise RuntimeError("randomness while the Worker is starting")


def ban_randomness(monkeypatch: pytest.MonkeyPatch, js: ModuleType) -> None:
    monkeypatch.setattr(os, "urandom", banned)
    for name in RANDOM_FUNCTIONS:
        monkeypatch.setattr(random, name, banned)
    for name in SECRETS_FUNCTIONS:
        monkeypatch.setattr(secrets, name, banned)
    crypto = JsObject("js.crypto")
    crypto.getRandomValues = banned  # type: ignore[attr-defined]
    js.crypto = crypto  # type: ignore[attr-defined]


def js_imports(source: str) -> set[str]:
    """Names a module binds by importing from JS (allowed in the snapshot: imported JS modules
    and attributes reached from them)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in ("js", "pyodide")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("js", "pyodide"):
            names |= {a.asname or a.name for a in node.names}
    return names


def js_inside(value: object, depth: int = 0) -> str | None:
    """Where a JS object sits in ``value`` (itself, or inside its containers and instance
    fields, a few levels down), or None."""
    if isinstance(value, JsObject):
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


@dataclass
class Report:
    modules: list[str]
    failures: list[str]


def _module_names(root: Path) -> list[tuple[str, Path]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        found.append((".".join(parts), path))
    return found


def _check(root: Path, monkeypatch: pytest.MonkeyPatch) -> Report:
    """Imports every module under ``root`` afresh and reports what breaks the rules."""
    names = _module_names(root)
    roots = {name.split(".")[0] for name, _ in names}
    for loaded in [n for n in sys.modules if n.split(".")[0] in roots]:
        monkeypatch.delitem(sys.modules, loaded)  # imported fresh; the originals come back after
    if str(root) not in sys.path:
        monkeypatch.syspath_prepend(str(root))
    report = Report([], [])
    for name, path in names:
        report.modules.append(name)
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            report.failures.append(f"{name}: import failed: {type(exc).__name__}: {exc}")
            continue
        allowed = js_imports(path.read_text())
        for attr, value in vars(module).items():
            if attr in allowed or isinstance(value, ModuleType):
                continue
            where = js_inside(value)
            if where is not None:
                report.failures.append(f"{name}.{attr}{where}: a JS object at module level")
    return report


@pytest.fixture
def deploy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], Report]]:
    """``check(root)`` under the deploy's rules. Afterwards sys.modules is as before: the fakes,
    the SDK and the modules imported fresh go, the originals they shadowed come back."""
    before = set(sys.modules)
    fakes = fake_runtime()
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, name, module)
    for name in THIRD_PARTY:
        importlib.import_module(name)
    ban_randomness(monkeypatch, fakes["js"])
    # The modules that took the fakes: the SDK and the checked ones. Other new modules (the
    # stdlib's, pydantic's lazily imported ones) stay: other tests may hold their classes.
    tied = {"workers"}

    def check(root: Path) -> Report:
        report = _check(root, monkeypatch)
        tied.update(name.split(".")[0] for name in report.modules)
        return report

    try:
        yield check
    finally:
        for name in set(sys.modules) - before:
            if name.split(".")[0] in tied:
                del sys.modules[name]


def test_every_worker_module_imports_without_randomness_or_js_objects(deploy):
    report = deploy(SRC)

    assert "entry" in report.modules
    assert "gateway.shell.crypto" in report.modules
    assert report.failures == []


def test_the_check_catches_both_violations(tmp_path, deploy):
    (tmp_path / "entropy.py").write_text("import os\nSALT = os.urandom(8)\n")
    (tmp_path / "jsvalue.py").write_text("import js\nHEADERS = js.Headers.new()\n")
    (tmp_path / "nested.py").write_text("import js\nCACHE = {'headers': [js.Headers.new()]}\n")
    (tmp_path / "allowed.py").write_text("import js\nfrom js import Object\n")

    failures = deploy(tmp_path).failures

    assert any(f.startswith("entropy: import failed") for f in failures)
    assert "jsvalue.HEADERS: a JS object at module level" in failures
    assert "nested.CACHE['headers'][0]: a JS object at module level" in failures
    assert not any(f.startswith("allowed") for f in failures)
