"""Both stream relays inside Pyodide, on JS streams (driven by relay_check.py): what ends a
relayed stream and what does not (SPEC §2.6, §12: never a truncated answer that looks complete,
never an error after a complete one, a slow caller is not a stalled upstream).

- The pass-through relay (shell/stream.py) passes a complete answer as it came; a stall, a
  truncation or a failed connection end with their ``stream_error`` event and no ``[DONE]``.
- The translated relay (shell/translation.py, Anthropic here) ends with ``message_stop`` or the
  surface's error event.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.runtime import NODE_BIN, ROOT

CHECK = Path(__file__).with_name("relay_check.py")
# The relays run in the Node runtime's Pyodide against scripted JS streams (run-python.mjs), an
# in-process harness with no workerd counterpart; on workerd the same relays are driven end to end
# (test_chat_sse.py, test_stream_integrity.py, test_surfaces.py).
pytestmark = [pytest.mark.usefixtures("runtime"),
              pytest.mark.node_only("an in-process harness of the relays in Node's Pyodide (run-python.mjs)")]


@pytest.fixture(scope="module")
def report() -> dict:
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["node", str(ROOT / "scripts" / "runtime" / "run-python.mjs"), str(CHECK)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- The pass-through relay --------------------------------------------------------------------


def _error_code(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("data: {") and '"stream_error"' in line:
            return json.loads(line[6:])["error"]["code"]
    return None


def test_a_complete_answer_passes_as_it_came(report):
    text = report["pass_through"]["complete"]["text"]

    assert text.endswith("data: [DONE]\n\n")
    assert _error_code(text) is None
    assert all(f"w{i} " in text for i in range(12))


def test_a_caller_reading_slowly_gets_the_whole_answer_not_a_stall(report):
    text = report["pass_through"]["slow_caller"]["text"]

    assert text.endswith("data: [DONE]\n\n")
    assert _error_code(text) is None


@pytest.mark.parametrize(
    ("scenario", "code"),
    [
        ("stalled", "stream_stalled"),
        ("truncated", "stream_truncated"),
        ("failed", "stream_interrupted"),
        ("relay_failed", "stream_interrupted"),  # the relay itself failed: the caller is told so
    ],
)
def test_an_unfinished_answer_ends_with_a_stream_error_and_no_done(report, scenario, code):
    text = report["pass_through"][scenario]["text"]

    assert _error_code(text) == code
    assert "[DONE]" not in text


def test_a_stalled_upstream_is_cancelled(report):
    assert report["pass_through"]["stalled"]["upstream_cancelled"]


# --- The translated relay ----------------------------------------------------------------------


def _ends(text: str) -> tuple[bool, bool]:
    return "event: message_stop" in text, "event: error" in text


def test_a_caller_reading_a_translated_stream_slowly_gets_the_whole_answer_not_a_stall(report):
    text = report["translated"]["slow_caller"]["text"]

    assert _ends(text) == (True, False)
    assert all(f"w{i} " in text for i in range(12))


def test_done_ends_the_answer_even_if_the_upstream_keeps_its_connection_open(report):
    assert _ends(report["translated"]["done_then_open"]["text"]) == (True, False)
    assert report["translated"]["done_then_open"]["upstream_cancelled"]


def test_an_upstream_that_stops_sending_is_a_stall(report):
    text = report["translated"]["stalled"]["text"]

    assert _ends(text) == (False, True)
    assert "no data from the upstream" in text
