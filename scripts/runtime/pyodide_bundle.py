"""Builds workerd's dev Pyodide bundle from the npm ``pyodide`` package, offline.

    python scripts/runtime/pyodide_bundle.py --pyodide node_modules/pyodide \
        --workerd node_modules/@cloudflare/workerd-linux-64/bin/workerd --out .cache/pyodide-bundle

workerd runs a Python Worker on a Pyodide bundle: a serialised Cap'n Proto ``Bundle`` message
(workerd ``src/workerd/jsg/modules.capnp``) of three internal modules. For the release flags it
downloads Cloudflare's bundle and checks its hash; the experimental flag
``python_workers_development`` instead reads ``pyodide_dev.capnp.bin`` from
``--pyodide-bundle-disk-cache-dir`` unchecked (PLATFORM-NOTES §8). This script writes that file
from the stock npm files, text-patched as workerd's own build does (``src/pyodide/helpers.bzl``,
``_REPLACEMENTS_COMMON`` and ``_REPLACEMENTS_COMMON_314``, Apache-2.0), so the Python and the
standard library are exactly npm's. The output is the same bytes for the same inputs.

The dev release expects one exact Pyodide version, written in the workerd binary after the string
``pythonWorkersDevPyodide``; a mismatch is refused here, before workerd would refuse it at the
first request.
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
from pathlib import Path

BUNDLE_NAME = "pyodide_dev.capnp.bin"

# What the workerd binary's `pyodide-internal:builtin_wrappers` exports for the bundle to import
# (1.20261117.1: `reportUndefinedSymbolsPatched` is gone, so `reportUndefinedSymbols()` stays).
_PRELUDE = (
    "import { addEventListener, getRandomValues, location, monotonicDateNow, newWasmModule, "
    "patchedApplyFunc, patchedLoadLibData, wasmInstantiate, patched_PyEM_CountFuncParams } "
    'from "pyodide-internal:builtin_wrappers";\n'
)
_NO_EVAL = (
    "(() => {throw new Error('Internal Emscripten code tried to eval, this should not happen, "
    "please file a bug report with your requirements.txt file\\'s contents')})()"
)
# helpers.bzl's substitutions, in its order (each replaces every occurrence, as expand_template).
_REPLACEMENTS = (
    ("new WebAssembly.Module", "newWasmModule"),
    ("WebAssembly.instantiate", "wasmInstantiate"),
    ("Date.now", "monotonicDateNow"),
    ("crypto.getRandomValues(", "getRandomValues(Module, "),
    ("eval(func)", _NO_EVAL),
    ("eval(data)", _NO_EVAL),
    ("eval(UTF8ToString(ptr))", _NO_EVAL),
    (
        "function loadLibData(){",
        "function loadLibData(){ var libData = patchedLoadLibData(Module, libName, flags.rpath); "
        "return flags.loadAsync ? Promise.resolve(libData) : libData; } function dummiedOutOrigLoadLibData(){",
    ),
    ("getMemory(", "Module.getMemoryPatched(Module, libName, "),
    (
        "function _PyEM_CountFuncParams(func){",
        "function _PyEM_CountFuncParams(func){ return patched_PyEM_CountFuncParams(Module, func);",
    ),
    (
        "var tableBase=metadata.tableSize?wasmTable.length:0;",
        "var tableBase=metadata.tableSize?wasmTable.length:0;"
        "Module.snapshotDebug && console.log('loadWebAssemblyModule', libName, memoryBase, tableBase);",
    ),
    (
        "export default _createPyodideModule;",
        _PRELUDE + "export default _createPyodideModule; export { _createPyodideModule };",
    ),
)
# Patches the bundle cannot work without: each must match at least once.
_REQUIRED = ("Date.now", "crypto.getRandomValues(", "export default _createPyodideModule;", "function loadLibData(){")

# modules.capnp: `Module` has one data word (type: u16 at 0, the union's discriminant: u16 at 1)
# and four pointers (name, the union's member, tsDeclaration, compileCache).
_MODULE_TYPE_INTERNAL = 2
_UNION = {"src": 0, "wasm": 1, "data": 2}


def dev_pyodide_version(workerd: Path) -> str:
    """The Pyodide version the workerd binary's dev release expects (a string in the binary)."""
    found = re.search(rb"pythonWorkersDevPyodide\x00+(\d+\.\d+\.\d+)\x00", workerd.read_bytes())
    if found is None:
        raise SystemExit(f"error: {workerd} names no dev Pyodide version (pythonWorkersDevPyodide)")
    return found.group(1).decode()


def patched_asm(source: str) -> str:
    for old, _new in _REPLACEMENTS:
        if old in _REQUIRED and old not in source:
            raise SystemExit(f"error: pyodide.asm.mjs has no {old!r}: workerd's patches do not fit this Pyodide")
    for old, new in _REPLACEMENTS:
        source = source.replace(old, new)
    return source


def _words(data: bytes) -> int:
    return (len(data) + 7) // 8


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (_words(data) * 8 - len(data))


def encode_bundle(modules: list[tuple[str, str, bytes]]) -> bytes:
    """A one-segment Cap'n Proto message of ``Bundle { modules }``; each module is
    ``(name, member, bytes)`` with member ``src``, ``wasm`` or ``data``, of type ``internal``."""
    count = len(modules)
    element_words = 1 + 4
    # Layout: root pointer, Bundle's pointer, list tag, elements, then each module's two blobs.
    list_start = 2  # tag word
    blobs_start = list_start + 1 + count * element_words
    words: list[bytes] = []
    blobs: list[bytes] = []
    cursor = blobs_start

    def struct_ptr(offset: int, data_words: int, ptr_words: int) -> bytes:
        return struct.pack("<iHH", offset << 2, data_words, ptr_words)

    def byte_list_ptr(at: int, target: int, length: int) -> bytes:
        return struct.pack("<iI", ((target - at - 1) << 2) | 1, (length << 3) | 2)

    words.append(struct_ptr(0, 0, 1))  # root → Bundle at word 1
    words.append(struct.pack("<iI", ((list_start - 1 - 1) << 2) | 1, ((count * element_words) << 3) | 7))
    words.append(struct_ptr(count, 1, 4))  # composite list tag: element count, element size
    pointers: list[bytes] = []
    for index, (name, member, payload) in enumerate(modules):
        element = list_start + 1 + index * element_words
        words.append(struct.pack("<HHI", _MODULE_TYPE_INTERNAL, _UNION[member], 0))
        text = name.encode() + b"\0"
        pointers = [
            byte_list_ptr(element + 1, cursor, len(text)),
            byte_list_ptr(element + 2, cursor + _words(text), len(payload)),
            b"\0" * 8,
            b"\0" * 8,
        ]
        words.extend(pointers)
        blobs += [_pad(text), _pad(payload)]
        cursor += _words(text) + _words(payload)
    body = b"".join(words) + b"".join(blobs)
    return struct.pack("<II", 0, len(body) // 8) + body


def build(pyodide_dir: Path, workerd: Path, out_dir: Path) -> Path:
    """Write ``out_dir/pyodide_dev.capnp.bin`` (unless it is already this build's) and return it."""
    package = json.loads((pyodide_dir / "package.json").read_text())
    expected = dev_pyodide_version(workerd)
    if package["version"] != expected:
        raise SystemExit(
            f"error: workerd's dev Pyodide is {expected}, npm pyodide is {package['version']}: "
            "pin them together in package.json"
        )
    asm = patched_asm((pyodide_dir / "pyodide.asm.mjs").read_text())
    bundle = encode_bundle(
        [
            ("pyodideRuntime-internal:pyodide.asm", "src", asm.encode()),
            ("pyodideRuntime-internal:pyodide.asm.wasm", "wasm", (pyodide_dir / "pyodide.asm.wasm").read_bytes()),
            ("pyodideRuntime-internal:python_stdlib.zip", "data", (pyodide_dir / "python_stdlib.zip").read_bytes()),
        ]
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / BUNDLE_NAME
    if not target.exists() or target.read_bytes() != bundle:
        partial = target.with_suffix(".partial")
        partial.write_bytes(bundle)
        partial.replace(target)
    return target


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyodide", type=Path, required=True, help="the npm pyodide package's folder")
    parser.add_argument("--workerd", type=Path, required=True, help="the workerd binary that will load it")
    parser.add_argument("--out", type=Path, required=True, help="the bundle cache folder")
    args = parser.parse_args(argv)
    print(build(args.pyodide, args.workerd, args.out))


if __name__ == "__main__":
    main(sys.argv[1:])
