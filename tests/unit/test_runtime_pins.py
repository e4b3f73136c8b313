"""The local runtime runs what production runs, pinned together (issue 18): workerd, the
Miniflare that drives it and wrangler's own are one release; the npm Pyodide of workerd's bundle
and of scripts/profile is the one workerd's dev release expects (scripts/runtime/pyodide_bundle.py
builds the bundle from it); and the bundle builder writes what workerd reads."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "runtime"))
import pyodide_bundle  # noqa: E402

LOCK = json.loads((ROOT / "package-lock.json").read_text())["packages"]
PINS = json.loads((ROOT / "package.json").read_text())["devDependencies"]


def _installed(name: str) -> str:
    return LOCK[f"node_modules/{name}"]["version"]


def test_workerd_miniflare_and_wrangler_are_one_release():
    workerd = PINS["workerd"]

    assert _installed("workerd") == workerd
    assert LOCK["node_modules/miniflare"]["dependencies"]["workerd"] == workerd
    assert LOCK["node_modules/wrangler"]["dependencies"]["workerd"] == workerd
    # wrangler's Miniflare is the one the runtimes drive (no second copy under wrangler).
    assert LOCK["node_modules/wrangler"]["dependencies"]["miniflare"] == PINS["miniflare"] == _installed("miniflare")
    assert "node_modules/wrangler/node_modules/miniflare" not in LOCK


def test_pyodide_is_the_one_workerd_expects():
    binary = ROOT / "node_modules" / "@cloudflare" / "workerd-linux-64" / "bin" / "workerd"
    if not binary.exists():
        pytest.skip("workerd is not installed (scripts/setup installs it)")

    assert PINS["pyodide"] == _installed("pyodide") == pyodide_bundle.dev_pyodide_version(binary)


def test_a_pyodide_that_workerd_does_not_expect_is_refused(tmp_path):
    package = tmp_path / "pyodide"
    package.mkdir()
    (package / "package.json").write_text('{"version": "314.0.7"}')
    workerd = tmp_path / "workerd"
    workerd.write_bytes(b"\0pythonWorkersDevPyodide\x00314.0.6\x00")

    with pytest.raises(SystemExit, match=r"workerd's dev Pyodide is 314\.0\.6, npm pyodide is 314\.0\.7"):
        pyodide_bundle.build(package, workerd, tmp_path / "out")


def test_pyodide_that_workerd_cannot_patch_is_refused():
    with pytest.raises(SystemExit, match="export default _createPyodideModule"):
        pyodide_bundle.patched_asm("Date.now(); crypto.getRandomValues(a); function loadLibData(){}")


def test_patches_import_what_workerd_provides_and_remove_eval():
    source = (
        "function loadLibData(){x} let t = Date.now(); eval(func); crypto.getRandomValues(buf);\n"
        "export default _createPyodideModule;"
    )

    patched = pyodide_bundle.patched_asm(source)

    assert "Date.now" not in patched and "monotonicDateNow()" in patched
    assert "eval(func)" not in patched
    assert "getRandomValues(Module, buf)" in patched
    assert patched.index('from "pyodide-internal:builtin_wrappers"') < patched.index("export default")


def _read_bundle(data: bytes) -> list[tuple[str, int, int, bytes]]:
    """A reader of exactly what modules.capnp says a Bundle is: one segment; the root a struct
    with one pointer to a composite list of Module (one data word: type, then the union's
    discriminant; pointers: name, the union's member, tsDeclaration, compileCache)."""
    segments, words = struct.unpack_from("<II", data)
    assert segments == 0 and len(data) == 8 + words * 8
    body = data[8:]

    def word(i: int) -> int:
        return struct.unpack_from("<Q", body, i * 8)[0]

    def target(at: int) -> int:
        offset = (word(at) & 0xFFFFFFFF) >> 2
        return at + 1 + (offset - (1 << 30) if offset & (1 << 29) else offset)

    root = word(0)
    assert root & 3 == 0 and (root >> 32) & 0xFFFF == 0 and root >> 48 == 1  # a struct: 0 data, 1 pointer
    list_at = target(1)
    assert word(1) & 3 == 1 and (word(1) >> 32) & 7 == 7  # a composite list
    tag = word(list_at)
    count, data_words, pointers = (tag & 0xFFFFFFFF) >> 2, (tag >> 32) & 0xFFFF, tag >> 48
    assert (data_words, pointers) == (1, 4)

    def blob(at: int) -> bytes:
        assert word(at) & 3 == 1 and (word(at) >> 32) & 7 == 2  # a byte list
        start, length = target(at), word(at) >> 35
        return body[start * 8 : start * 8 + length]

    modules = []
    for index in range(count):
        element = list_at + 1 + index * 5
        kind, member = struct.unpack_from("<HH", body, element * 8)
        modules.append((blob(element + 1)[:-1].decode(), kind, member, blob(element + 2)))
    return modules


def test_the_bundle_is_a_capnp_message_of_three_internal_modules():
    encoded = pyodide_bundle.encode_bundle(
        [("a:src", "src", b"export default 1;"), ("a:wasm", "wasm", b"\0asm"), ("a:data", "data", b"x" * 9)]
    )

    assert _read_bundle(encoded) == [
        ("a:src", 2, 0, b"export default 1;"),
        ("a:wasm", 2, 1, b"\0asm"),
        ("a:data", 2, 2, b"x" * 9),
    ]
