"""The project's own code passes its linters and formatters, as STYLE asks: ruff (the pinned PyPI
``ruff``, configured in ``pyproject.toml``: its lint rules and its formatter) over the Python of
``src/``, ``tests/`` and ``scripts/``; Biome (the pinned npm ``@biomejs/biome``, configured by
``biome.json``: its recommended lint rules and its formatter) over the config page's script and
style, the Worker's own JavaScript modules, and the runtime's, benchmarks' and tests' ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"


@pytest.mark.parametrize("folder", ["public", "scripts", "src", "tests"])
def test_biome_lint_and_format_checks_pass(folder):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    found = subprocess.run(
        [str(BIN / "biome"), "ci", "--colors=off", "--error-on-warnings", folder],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )

    assert found.returncode == 0, found.stdout + found.stderr


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_passes(command):
    ruff = Path(sys.executable).parent / "ruff"
    found = subprocess.run(
        [str(ruff), *command, "--no-cache", "src", "tests", "scripts"], cwd=ROOT, capture_output=True, text=True
    )

    assert found.returncode == 0, found.stdout + found.stderr
