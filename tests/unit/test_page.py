"""The config page's house rules (STYLE "Admin page", SPEC §8.1), read from the page's text."""

from __future__ import annotations

import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")

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
# The OpenRouter pinning panel (SPEC §15): the panel, its state and refresh, a model, its pin, its candidates.
OPENROUTER_TEST_IDS = (
    "openrouter openrouter-state openrouter-refresh openrouter-meta openrouter-empty openrouter-model "
    "openrouter-model-id openrouter-lock openrouter-counts openrouter-candidates openrouter-candidate "
    "openrouter-pinned openrouter-cooling"
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


@pytest.mark.parametrize("test_id", TEST_IDS + KEY_TEST_IDS + OPENROUTER_TEST_IDS)
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


# --- OpenRouter pinning (SPEC §15) ------------------------------------------------------------


def test_the_origin_settings_are_the_text_ones():
    # Every other setting is an integer (a number field); an origin is text, and the page knows which.
    from gateway.core.config import SETTINGS

    found = re.search(r"const ORIGIN_KEYS = (\[.*?\]);", _script())
    assert found, "the page declares `const ORIGIN_KEYS = [...];`"
    assert set(json.loads(found.group(1))) == {s.key for s in SETTINGS if isinstance(s.default, str)}


def test_an_origin_gets_a_text_field_and_is_sent_as_text():
    render = _function("renderSettings")
    save = _function("saveSettings")

    text_field = re.search(r"ORIGIN_KEYS\.includes\(key\)\s*\?\s*(\{[^{}]*\})\s*:\s*(\{[^{}]*\})", render)
    assert text_field, "renderSettings picks the attributes of an origin's field with ORIGIN_KEYS"
    assert "type" not in text_field.group(1) and 'inputmode: "url"' in text_field.group(1)
    assert 'type: "number"' in text_field.group(2)
    # An origin is checked (with a message of its own) and sent as the text typed, never as a number.
    checked = r'ORIGIN_KEYS\.includes\(key\)\) \{\s*if \(!isOrigin\(text\)\) throw new Error\(t\("settings\.badOrigin"'
    assert re.search(checked, save)
    assert "body[key] = text;" in save
    # An emptied origin field restores the env or default value, as for the other settings.
    assert 'if (state.settings[key].source === "d1") body[key] = null;' in save


def test_the_panel_reads_every_field_of_the_admin_answer():
    # GET /api/admin/openrouter (SPEC §15): the panel shows each field it answers.
    script = _script()
    for name in ("data.pinning", "data.origin", "data.lock_idle_ms", "data.models", "pin.model", "pin.lock",
                 "lock.slug", "lock.until", "pin.failures", "pin.switches", "pin.refreshed_at", "pin.candidates",
                 "c.slug", "c.score", "c.prompt", "c.completion", "c.input_cache_read", "c.caching", "c.throughput",
                 "c.cooled_until"):
        assert name in script, name
    row = _function("candidateRow")
    for price in ("c.prompt", "c.completion", "c.input_cache_read"):
        assert f"pricePerMillion({price})" in row
    assert "maximumSignificantDigits: 3" in _function("significant")
    assert "1e6" in _function("pricePerMillion")
    assert 'class: locked ? "locked" : null' in row
    assert "tr.locked" in PAGE  # and the stylesheet highlights it


def test_the_panel_is_refreshed_by_its_button_and_shows_its_own_errors():
    script = _script()
    assert 'byId("openrouter-refresh").addEventListener("click", guarded("openrouter", reloadOpenRouter));' in script
    assert '"openrouter"' in re.search(r"const SECTIONS = \[(.*?)\];", script).group(1)
    assert 'id="openrouter-message"' in PAGE
    assert 'api("GET", "/openrouter")' in script
    assert "renderOpenRouter();" in _function("renderAll")
    # A panel without models says when they appear.
    assert 't("openrouter.empty")' in _function("renderOpenRouter")


def test_openrouter_texts():
    en, zh = _i18n()["en"], _i18n()["zh"]
    keys = {k for k in en if k.startswith("openrouter.")}
    for name in ("pinning", "lock_idle_ms", "origin"):
        keys |= {f"setting.openrouter_{name}", f"settingHelp.openrouter_{name}"}
    keys |= {"settings.badOrigin", "settings.on"}
    # Symbols and units read the same in both languages; every other text is translated.
    same = {"openrouter.col.rank", "openrouter.price", "openrouter.tps"}
    for key in keys - same:
        assert CJK.search(zh[key]), key
        assert not CJK.search(en[key]), key
    assert en["openrouter.price"] == zh["openrouter.price"] == "${n} / M"
    for table in (en, zh):
        assert "{n}" in table["openrouter.tps"] and "{slug}" in table["openrouter.lockedTo"]
        assert "{time}" in table["openrouter.until"] and "{time}" in table["openrouter.coolingUntil"]
        assert "OpenRouter" in table["openrouter.empty"]
        assert "{field}" in table["settings.badOrigin"] and "https://openrouter.ai" in table["settings.badOrigin"]
