"""The translated-stream relay (shell/translation.py) inside Pyodide, on JS streams: what ends a
translated stream and what does not (SPEC §12: never a truncated answer that looks complete,
never an error after a complete one). Driven by translated_relay_check.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.runtime import NODE_BIN, ROOT

CHECK = Path(__file__).with_name("translated_relay_check.py")


@pytest.fixture(scope="module")
def report() -> dict:
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["node", str(ROOT / "scripts" / "runtime" / "run-python.mjs"), str(CHECK)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ends(text: str) -> tuple[bool, bool]:
    return "event: message_stop" in text, "event: error" in text


def test_a_caller_reading_slowly_gets_the_whole_answer_not_a_stall(report):
    text = report["slow_caller"]["text"]

    assert _ends(text) == (True, False)
    assert all(f"w{i} " in text for i in range(12))


def test_done_ends_the_answer_even_if_the_upstream_keeps_its_connection_open(report):
    assert _ends(report["done_then_open"]["text"]) == (True, False)
    assert report["done_then_open"]["upstream_cancelled"]


def test_an_upstream_that_stops_sending_is_a_stall(report):
    text = report["stalled"]["text"]

    assert _ends(text) == (False, True)
    assert "no data from the upstream" in text
