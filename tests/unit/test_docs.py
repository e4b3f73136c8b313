"""The README and .dev.vars.example name every setting by both its names (issue 8): the env var
and the admin API / D1 key, in one table row each, so neither can drift from ``SETTINGS``; and
every wrangler command the README shows runs with ``WRANGLER_SEND_METRICS=false`` in effect, as
pasted (tests/e2e/test_quickstart.py runs the blocks offline)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway.core import rules
from gateway.core.config import SETTINGS
from support.readme import METRICS_OFF, inline_commands, metrics_left_on, wrangler_blocks

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.key)
def test_readme_table_row_has_both_names(setting):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    assert f"| `{setting.env}` | `{setting.key}` |" in readme


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.key)
def test_env_example_table_row_has_both_names(setting):
    example = (ROOT / ".dev.vars.example").read_text(encoding="utf-8")

    assert re.search(rf"^#\s+{setting.env}\s+{setting.key}\s", example, re.MULTILINE)
    assert re.search(rf"^{setting.env}=", example, re.MULTILINE)


@pytest.mark.parametrize(
    ("block", "left_on"),
    [
        pytest.param("npx wrangler whoami\n", ["npx wrangler whoami"], id="bare"),
        pytest.param(f"{METRICS_OFF} npx wrangler whoami\n", [], id="prefixed"),
        pytest.param(f"export {METRICS_OFF}\nnpx wrangler d1 list\nuv run pywrangler deploy\n", [], id="exported"),
        pytest.param(f"npx wrangler d1 list\nexport {METRICS_OFF}\n", ["npx wrangler d1 list"], id="exported-late"),
        pytest.param("export WRANGLER_SEND_METRICS=true\nnpx wrangler d1 list\n", ["npx wrangler d1 list"],
                     id="exported-true"),
        pytest.param("uv run pywrangler dev   # a comment\n", ["uv run pywrangler dev"], id="pywrangler"),
        pytest.param("npx wrangler d1 execute db \\\n  --remote\n", ["npx wrangler d1 execute db --remote"],
                     id="continued"),
        pytest.param("# npx wrangler login\nscripts/deploy\n", [], id="comment-only"),
    ],
)
def test_metrics_left_on_reads_a_block_as_bash_would(block, left_on):
    assert metrics_left_on(block) == left_on


DOCS = pytest.mark.parametrize("doc", ["README.md", "docs/deploy.md"])


@DOCS
def test_every_wrangler_block_turns_metrics_off(doc):
    blocks = wrangler_blocks((ROOT / doc).read_text(encoding="utf-8"))

    assert len(blocks) >= 3, f"{doc} lost its wrangler blocks (the README's: see tests/e2e/test_quickstart.py)"
    assert {i: metrics_left_on(b) for i, b in enumerate(blocks) if metrics_left_on(b)} == {}


@DOCS
def test_every_inline_wrangler_command_carries_the_setting(doc):
    commands = inline_commands((ROOT / doc).read_text(encoding="utf-8"))

    assert commands, f"{doc} shows no inline wrangler command: is the check still needed?"
    assert [c for c in commands if not c.startswith(f"{METRICS_OFF} ")] == []


def test_routing_doc_states_the_429_minimum_of_core_rules():
    routing = " ".join((ROOT / "docs" / "routing.md").read_text(encoding="utf-8").split())

    assert f"**A 429 cools for at least {rules.LADDER_MS[0] // 1000} s.**" in routing
    assert f"longer than {rules.SHORT_RETRY_MAX_MS // 1000} s is taken as it is" in routing
