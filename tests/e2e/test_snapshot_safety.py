"""The deploy snapshot's rules (PLATFORM-NOTES §3.3, §4.4): no randomness and no JS object at import
time. workerd enforces them itself when it takes the snapshot a deploy takes; the Node runtime does
not, so snapshot_check.py checks them there, in Pyodide."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from support.runtime import NODE_BIN, ROOT, Gateway

CHECK = Path(__file__).with_name("snapshot_check.py")


def _check(src: Path) -> dict:
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["node", str(ROOT / "scripts" / "runtime" / "run-python.mjs"), str(CHECK), "--src", str(src)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_workerd_takes_the_deploy_snapshot_of_the_worker(tmp_path):
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    gateway = Gateway.start(tmp_path, extra_env={"LOCAL_RUNTIME_SNAPSHOT_DIR": str(snapshots)}, runtime="workerd")
    try:
        answer = httpx.get(f"{gateway.url}/v1/models", headers={"authorization": f"Bearer {gateway.api_token}"})
    finally:
        gateway.stop()

    assert answer.status_code == 200  # the Worker serves from the snapshot's isolate
    [snapshot] = snapshots.iterdir()
    assert snapshot.stat().st_size > 1_000_000  # the Wasm memory after the Worker's import


# The Pyodide check is the Node runtime's: on workerd, workerd itself refuses (the test above).
_PYODIDE_CHECK = pytest.mark.node_only("the Node runtime's own check of what workerd enforces itself")


@_PYODIDE_CHECK
def test_every_worker_module_imports_without_randomness_or_js_objects(runtime):
    report = _check(ROOT / "src")

    assert "entry" in report["modules"]
    assert "gateway.shell.crypto" in report["modules"]
    assert report["failures"] == []


@_PYODIDE_CHECK
def test_the_check_catches_both_violations(tmp_path, runtime):
    (tmp_path / "entropy.py").write_text("import os\nSALT = os.urandom(8)\n")
    (tmp_path / "jsvalue.py").write_text("import js\nHEADERS = js.Headers.new()\n")
    (tmp_path / "nested.py").write_text("import js\nCACHE = {'headers': [js.Headers.new()]}\n")
    (tmp_path / "allowed.py").write_text("import js\nfrom js import Object\n")

    failures = _check(tmp_path)["failures"]

    assert any(f.startswith("entropy: import failed") for f in failures)
    assert "jsvalue.HEADERS: a JS object at module level" in failures
    assert "nested.CACHE['headers'][0]: a JS object at module level" in failures
    assert not any(f.startswith("allowed") for f in failures)
