"""What a deploy uploads (issue 39): the Worker's JavaScript modules ship beside its Python ones.

The relays' loops are ES modules of the Worker (src/**/*.mjs), imported from Python through the
SDK's doAnImport by their names in the bundle; only the local runtime would load them if wrangler
left them out. So wrangler itself (the pinned npm package, offline) bundles this project as a
deploy would, ``--dry-run --outdir``, and the bundle is read.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
SRC = ROOT / "src"
# A row of wrangler's upload table: │ name │ type │ size │
_ROW = re.compile(r"^│\s*(\S+)\s*│\s*(\w+)\s*│", re.M)
# How the Worker names the modules it imports (shell/jsmodules.py).
_LOADED = re.compile(r'jsmodules\.load\("([^"]+)"\)')


def test_a_deploy_uploads_every_javascript_module_as_an_es_module_by_the_name_python_imports(tmp_path):
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "WRANGLER_SEND_METRICS": "false",
        "CLOUDFLARE_CF_FETCH_ENABLED": "false",
    }
    built = subprocess.run(
        [str(BIN / "wrangler"), "deploy", "--dry-run", "--outdir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    uploaded = dict(_ROW.findall(built.stdout))
    ours = sorted(path.relative_to(SRC).as_posix() for path in SRC.rglob("*.mjs"))
    loaded = {name for path in SRC.rglob("*.py") for name in _LOADED.findall(path.read_text(encoding="utf-8"))}

    assert ours, "the Worker has JavaScript modules"
    assert {name: uploaded.get(name) for name in ours} == dict.fromkeys(ours, "esm")
    assert all((tmp_path / name).read_bytes() == (SRC / name).read_bytes() for name in ours)
    assert loaded and loaded <= set(ours)  # what Python imports is what ships
