"""The README and .dev.vars.example name every setting by both its names (issue 8): the env var
and the admin API / D1 key, in one table row each, so neither can drift from ``SETTINGS``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway.core.config import SETTINGS

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
