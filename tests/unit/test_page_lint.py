"""The config page's script and style pass Biome (the pinned npm ``@biomejs/biome``, configured by
``biome.json``: its recommended lint rules and its formatter), as STYLE "Admin page" asks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"


def test_the_page_passes_biome_lint_and_format_checks():
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    found = subprocess.run(
        [str(BIN / "biome"), "ci", "--colors=off", "--error-on-warnings", "public"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )

    assert found.returncode == 0, found.stdout + found.stderr
