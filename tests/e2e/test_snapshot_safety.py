"""Deploy-snapshot rules the local runtime does not enforce (PLATFORM-NOTES §3.3, §4.4): no
randomness and no JS object at import time. Checked in Pyodide by snapshot_check.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.runtime import NODE_BIN, ROOT

CHECK = Path(__file__).with_name("snapshot_check.py")


def _check(src: Path) -> dict:
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["node", str(ROOT / "scripts" / "runtime" / "run-python.mjs"), str(CHECK), "--src", str(src)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_worker_module_imports_without_randomness_or_js_objects():
    report = _check(ROOT / "src")

    assert "entry" in report["modules"]
    assert "gateway.shell.crypto" in report["modules"]
    assert report["failures"] == []


def test_the_check_catches_both_violations(tmp_path):
    (tmp_path / "entropy.py").write_text("import os\nSALT = os.urandom(8)\n")
    (tmp_path / "jsvalue.py").write_text("import js\nHEADERS = js.Headers.new()\n")
    (tmp_path / "nested.py").write_text("import js\nCACHE = {'headers': [js.Headers.new()]}\n")
    (tmp_path / "allowed.py").write_text("import js\nfrom js import Object\n")

    failures = _check(tmp_path)["failures"]

    assert any(f.startswith("entropy: import failed") for f in failures)
    assert "jsvalue.HEADERS: a JS object at module level" in failures
    assert "nested.CACHE['headers'][0]: a JS object at module level" in failures
    assert not any(f.startswith("allowed") for f in failures)
