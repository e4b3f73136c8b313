"""The config page's house rules (STYLE "Admin page", SPEC §8.1), read from the page's text."""

from __future__ import annotations

import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

# Loaded by path: the ``gateway.routes`` package imports the JS shell, which CPython lacks.
_PATH = Path(__file__).resolve().parents[2] / "src" / "gateway" / "routes" / "page_html.py"
_SPEC = importlib.util.spec_from_file_location("page_html", _PATH)
_MODULE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MODULE)
PAGE: str = _MODULE.PAGE

# The data-testid hooks issue 4 promises to browser tests.
TEST_IDS = (
    "login-token login-submit lang-toggle provider-row provider-edit provider-delete preset-platform preset-key "
    "preset-fetch-models preset-model-search preset-submit custom-name custom-platform custom-base-url custom-key "
    "custom-models custom-priority custom-timeout custom-submit token-api token-api-random token-api-save "
    "token-admin token-admin-save settings-save cooldown-bar cooldown-clear cooldown-verify"
).split()
# Several keys per provider (issue 10, SPEC §13): the key list of a provider row and its actions.
KEY_TEST_IDS = (
    "provider-keys provider-key key-hint key-state key-error key-cooling key-toggle key-delete key-add "
    "key-add-input key-add-submit key-add-cancel key-message preset-key-count custom-key-count cooldown-key"
).split()
# Every field a provider key is typed into: write-only (masked, never spell-checked or autofilled).
KEY_FIELDS = ("preset-key", "custom-key", "key-add-input", "edit-key")


def _i18n() -> dict[str, dict[str, str]]:
    found = re.search(r"const I18N = (\{.*?\n\});", PAGE, flags=re.DOTALL)
    assert found, "the page declares `const I18N = {...};` as JSON"
    return json.loads(found.group(1))


def _script() -> str:
    [script] = re.findall(r"<script>(.*?)</script>", PAGE, flags=re.DOTALL)
    return script


def test_both_languages_have_the_same_keys():
    i18n = _i18n()

    assert set(i18n) == {"en", "zh"}
    assert set(i18n["en"]) == set(i18n["zh"])
    assert all(isinstance(v, str) and v for table in i18n.values() for v in table.values())


def test_every_key_the_page_uses_exists():
    keys = set(_i18n()["en"])
    used = set(re.findall(r"""\bt\("([\w.]+)"\s*[,)]""", _script()))
    used |= set(re.findall(r'data-i18n(?:-placeholder)?="([\w.]+)"', PAGE))

    assert used, "the pattern found no t(...) call"
    assert used - keys == set()


def test_setting_and_source_labels_exist_for_every_known_value():
    keys = set(_i18n()["en"])
    from gateway.core.config import SETTINGS

    for setting in SETTINGS:
        assert {f"setting.{setting.key}", f"settingHelp.{setting.key}"} <= keys
    for source in ("d1", "env", "default"):
        assert f"settingSource.{source}" in keys
    for source in ("heuristic", "authoritative", "quota", "credit", "tier", "model"):
        assert f"source.{source}" in keys


class _Text(HTMLParser):
    """Collects the text of the document outside <script>, <style> and <title>."""

    def __init__(self) -> None:
        super().__init__()
        self.skipping: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("script", "style", "title"):
            self.skipping.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.text.append(data.strip())


def test_no_visible_text_is_written_in_the_markup():
    # Every visible string comes from I18N through t() (static elements name their key).
    parser = _Text()
    parser.feed(PAGE)

    assert parser.text == []


@pytest.mark.parametrize(
    "sink", ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"]
)
def test_no_markup_sink(sink):
    assert sink not in PAGE


@pytest.mark.parametrize(
    "pattern",
    [
        r"<script[^>]*\bsrc=",
        r"<link[^>]*\bhref=(?![\"']?data:)",
        r"@import",
        r"url\(",
        r"<(?:img|iframe|object|embed|video|audio|source)\b[^>]*\bsrc=",
        r"""\bfetch\(\s*["'`]https?:""",
    ],
)
def test_nothing_is_loaded_from_elsewhere(pattern):
    assert re.search(pattern, PAGE, flags=re.IGNORECASE) is None


def test_one_script_and_one_style():
    assert len(re.findall(r"<script\b", PAGE)) == 1
    assert len(re.findall(r"<style\b", PAGE)) == 1


@pytest.mark.parametrize("test_id", TEST_IDS + KEY_TEST_IDS)
def test_browser_hook_exists(test_id):
    # In the markup, or as a string the script sets as data-testid (the browser tests use them all).
    assert f'data-testid="{test_id}"' in PAGE or f'"{test_id}"' in _script()



def _key_field(test_id: str) -> str:
    """The markup of a key field, or (for fields the script builds) the attributes given to el()."""
    found = re.search(rf'<(?:input|textarea)\b[^>]*data-testid="{test_id}"[^>]*>', PAGE)
    if found:
        return found.group(0)
    found = re.search(rf'el\("(?:input|textarea)",\s*\{{(?:[^{{}}]|\{{[^{{}}]*\}})*"data-testid": "{test_id}"', _script())
    if found:
        return found.group(0)
    found = re.search(rf'\{{[^{{}}]*"data-testid": "{test_id}"[^{{}}]*\}}', _script())
    assert found, test_id
    return found.group(0)


@pytest.mark.parametrize("test_id", KEY_FIELDS)
def test_key_fields_are_write_only(test_id):
    markup = _key_field(test_id)

    assert re.search(r'type[=:]\s*"password"|class[=:]\s*"[^"]*\bsecret\b', markup), markup
    assert re.search(r'autocomplete[=:]\s*"(?:off|new-password)"', markup), markup
    if "secret" in markup:  # a textarea of keys, one per line: masked by CSS and never spell-checked
        assert re.search(r'spellcheck[=:]\s*"false"', markup), markup
        assert "textarea.secret { -webkit-text-security: disc;" in PAGE


def _function(name: str) -> str:
    """The body of a top-level function of the script (up to the next line that closes one)."""
    found = re.search(rf"\n(?:async )?function {name}\(.*?\n\}}\n", _script(), flags=re.DOTALL)
    assert found, name
    return found.group(0)


def test_the_rate_limits_are_the_settings_that_null_turns_off():
    # SPEC §14: for these the admin API's null stores 0 (off) instead of restoring env or default.
    from gateway.core.config import SETTINGS

    found = re.search(r"const LIMIT_KEYS = (\[.*?\]);", _script())
    assert found, "the page declares `const LIMIT_KEYS = [...];`"
    assert set(json.loads(found.group(1))) == {s.key for s in SETTINGS if s.null_is_off}


def test_the_page_never_sends_null_for_a_rate_limit():
    # No "Use default" button for them (it would turn the limit off), and an emptied field is refused.
    render = _function("renderSettings")
    save = _function("saveSettings")

    assert 'setting.source === "d1" && !LIMIT_KEYS.includes(key)' in render
    assert re.search(r'text === "" && LIMIT_KEYS\.includes\(key\)\) \{\s*throw new Error\(t\("settings\.limitEmpty"', save)


def test_client_rpm_texts_say_it_is_enforced():
    for table in _i18n().values():
        assert "429" in table["clients.rpmHelp"]
        assert "{n}" in table["clients.rpmValue"]
    en, zh = _i18n()["en"], _i18n()["zh"]
    assert "not enforce" not in en["clients.rpmHelp"] and "尚未" not in zh["clients.rpmHelp"]
    assert "saved" not in en["clients.rpmValue"] and "保存" not in zh["clients.rpmValue"]
