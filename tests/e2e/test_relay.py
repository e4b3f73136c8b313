"""The pass-through relay (shell/stream.py) inside Pyodide, on JS streams: a complete answer is
passed as it came, a slow caller is not a stalled upstream, and a stall, a truncation or a failed
connection end with a ``stream_error`` event and no ``[DONE]`` (SPEC §2.6). Driven by
relay_check.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.runtime import NODE_BIN, ROOT

CHECK = Path(__file__).with_name("relay_check.py")


@pytest.fixture(scope="module")
def report() -> dict:
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["node", str(ROOT / "scripts" / "runtime" / "run-python.mjs"), str(CHECK)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _error_code(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("data: {") and '"stream_error"' in line:
            return json.loads(line[6:])["error"]["code"]
    return None


def test_a_complete_answer_passes_as_it_came(report):
    text = report["complete"]["text"]

    assert text.endswith("data: [DONE]\n\n")
    assert _error_code(text) is None
    assert all(f"w{i} " in text for i in range(12))


def test_a_caller_reading_slowly_gets_the_whole_answer_not_a_stall(report):
    text = report["slow_caller"]["text"]

    assert text.endswith("data: [DONE]\n\n")
    assert _error_code(text) is None


@pytest.mark.parametrize(
    ("scenario", "code"),
    [("stalled", "stream_stalled"), ("truncated", "stream_truncated"), ("failed", "stream_interrupted")],
)
def test_an_unfinished_answer_ends_with_a_stream_error_and_no_done(report, scenario, code):
    text = report[scenario]["text"]

    assert _error_code(text) == code
    assert "[DONE]" not in text


def test_a_stalled_upstream_is_cancelled(report):
    assert report["stalled"]["upstream_cancelled"]
