"""The config page's house rules (STYLE "Admin page", SPEC §8.1), read from its files in public/:
index.html (markup without text), style.css, the ES modules (main.js, the entry, and one per panel
over core.js) and i18n.js (every string)."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")

PUBLIC = Path(__file__).resolve().parents[2] / "public"
HTML = (PUBLIC / "index.html").read_text(encoding="utf-8")
CSS = (PUBLIC / "style.css").read_text(encoding="utf-8")
# Every module of the page but the strings, as one text (each starts on a line of its own).
SCRIPT = "\n".join(path.read_text(encoding="utf-8") for path in sorted(PUBLIC.glob("*.js")) if path.name != "i18n.js")
STRINGS = (PUBLIC / "i18n.js").read_text(encoding="utf-8")
EVERYTHING = "\n".join((HTML, CSS, SCRIPT, STRINGS))

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
# The page in the order of the work (issue "the page guides"): its panels, the folds, field errors,
# units, Custom add's model list, the default client's note.
GUIDE_TEST_IDS = (
    "providers add-provider custom-add connect clients tokens usage openrouter-fold settings field-error "
    "setting-unit setting-group custom-fetch-models custom-model-search custom-models-list custom-model "
    "default-client"
).split()
# Every field a provider key is typed into: write-only (masked, never spell-checked or autofilled).
KEY_FIELDS = ("preset-key", "custom-key", "key-add-input", "edit-key")


@functools.cache
def _i18n() -> dict[str, dict[str, str]]:
    """I18N as Node reads the module (whatever its formatting: Biome may unquote or wrap)."""
    read = "import(process.argv[1]).then((m) => process.stdout.write(JSON.stringify(m.I18N)));"
    found = subprocess.run(["node", "-e", read, (PUBLIC / "i18n.js").as_uri()], capture_output=True, text=True,
                           check=True, env={**os.environ, "NODE_OPTIONS": "--experimental-default-type=module"})
    return json.loads(found.stdout)


def _const(name: str):
    """A JSON-literal constant of a module (``const NAME = [...]`` or ``{...}`` on one line or more,
    exported or not)."""
    found = re.search(rf"\n(?:export )?const {name} = (.*?);\n", SCRIPT, flags=re.DOTALL)
    assert found, name
    return found.group(1)


def _function(name: str) -> str:
    """The body of a top-level function of a module, exported or not (up to the next line that
    closes one), its whitespace runs made one space (the formatter may wrap any line)."""
    found = re.search(rf"\n(?:export )?(?:async )?function {name}\(.*?\n\}}\n", SCRIPT, flags=re.DOTALL)
    assert found, name
    return re.sub(r"\s+", " ", found.group(0))


def test_both_languages_have_the_same_keys():
    i18n = _i18n()

    assert set(i18n) == {"en", "zh"}
    assert set(i18n["en"]) == set(i18n["zh"])
    assert all(isinstance(v, str) and v for table in i18n.values() for v in table.values())


def test_the_script_takes_its_strings_from_i18n_js_only():
    assert re.search(r'^import \{ I18N \} from "\./i18n\.js";$', SCRIPT, flags=re.MULTILINE)
    assert "I18N" not in HTML
    code = re.sub(r"//[^\n]*", "", SCRIPT)  # a comment may show what a number looks like in Chinese
    assert not CJK.search(code) and not CJK.search(HTML) and not CJK.search(CSS)


def test_every_key_the_page_uses_exists():
    keys = set(_i18n()["en"])
    used = set(re.findall(r"""\bt\("([\w.]+)"\s*[,)]""", SCRIPT))
    used |= set(re.findall(r'data-i18n(?:-placeholder)?="([\w.]+)"', HTML))
    # Keys made of a prefix and a name: the settings' units and groups.
    used |= {f"unit.{unit}" for unit in re.findall(r':\s*"(\w+)"', _const("SETTING_UNITS"))}
    used |= {f"settings.group.{group}" for group in re.findall(r'\[\s*"(\w+)",\s*(?:\[|[A-Z_]+\])', _const("SETTING_GROUPS"))}

    assert len(used) > 150, "the patterns found the page's t(...) calls"
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
    """Collects the text of the document outside <script>, <style> and <title>, and every tag."""

    def __init__(self) -> None:
        super().__init__()
        self.skipping: list[str] = []
        self.text: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style", "title"):
            self.skipping.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.text.append(data.strip())


def _parsed() -> _Text:
    parser = _Text()
    parser.feed(HTML)
    return parser


def test_no_visible_text_is_written_in_the_markup():
    # Every visible string comes from I18N through t() (static elements name their key).
    assert _parsed().text == []


def test_the_markup_fits_the_policy_of_public_headers():
    # _headers: script-src 'self' and style-src 'self', so no inline script, style or style attribute,
    # and no on… handler; one module script and one stylesheet, both the page's own.
    tags = _parsed().tags
    assert [a.get("src") for t, a in tags if t == "script"] == ["/main.js"]
    assert [a.get("type") for t, a in tags if t == "script"] == ["module"]
    assert [a.get("href") for t, a in tags if t == "link" and a.get("rel") == "stylesheet"] == ["/style.css"]
    assert not [t for t, _ in tags if t == "style"]
    assert not [(t, a) for t, a in tags if "style" in a or any(name.startswith("on") for name in a)]
    assert re.search(r"<script\b[^>]*>\s*</script>", HTML)  # no inline code
    assert not re.search(r"\.style\b|\"style\"|setAttribute\(\"on", SCRIPT)


def test_the_page_opens_in_the_browsers_language_until_one_is_chosen():
    initial = _function("initialLang")
    assert "localStorage.getItem(LANG_STORAGE)" in initial
    assert 'navigator.language' in initial and '.startsWith("zh") ? "zh" : "en"' in initial
    assert "lang: initialLang()," in SCRIPT
    assert "localStorage.setItem(LANG_STORAGE, state.lang);" in _function("toggleLanguage")
    assert '"zh" ? "zh-CN" : "en"' in _function("applyI18n")


@pytest.mark.parametrize(
    "sink", ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"]
)
def test_no_markup_sink(sink):
    assert sink not in EVERYTHING


@pytest.mark.parametrize(
    "pattern",
    [
        r"<script[^>]*\bsrc=(?![\"']?/\w)",
        r"<link[^>]*\bhref=(?![\"']?(?:data:|/\w))",
        r"@import",
        r"url\(",
        r"<(?:img|iframe|object|embed|video|audio|source)\b[^>]*\bsrc=",
        r"""\bfetch\(\s*["'`]https?:""",
        r"""\bimport\b[^;]*?\bfrom\s*["'](?!\./)""",  # an import list may take several lines
    ],
)
def test_nothing_is_loaded_from_elsewhere(pattern):
    assert re.search(pattern, EVERYTHING, flags=re.IGNORECASE) is None


@pytest.mark.parametrize("test_id", TEST_IDS + KEY_TEST_IDS + OPENROUTER_TEST_IDS + GUIDE_TEST_IDS)
def test_browser_hook_exists(test_id):
    # In the markup, or as a string the script sets as data-testid (the browser tests use them all).
    assert f'data-testid="{test_id}"' in HTML or f'"{test_id}"' in SCRIPT


def test_the_panels_come_in_the_order_of_the_work():
    # providers -> connect a client -> clients -> usage -> settings (folded, closed).
    order = [a.get("data-testid") for _, a in _parsed().tags if a.get("data-testid") in
             ("providers", "add-provider", "connect", "clients", "usage", "settings")]
    assert order == ["providers", "add-provider", "connect", "clients", "usage", "settings"]
    assert re.search(r'<details id="settings-fold" class="card fold" data-testid="settings">', HTML)
    assert re.search(r'<details id="custom-fold"', HTML)  # no details is open in the markup
    assert " open" not in " ".join(re.findall(r"<details\b[^>]*>", HTML))


def _key_field(test_id: str) -> str:
    """The markup of a key field, or (for fields the script builds) the attributes given to el()."""
    found = re.search(rf'<(?:input|textarea)\b[^>]*data-testid="{test_id}"[^>]*>', HTML)
    if found:
        return found.group(0)
    found = re.search(rf'el\("(?:input|textarea)",\s*\{{(?:[^{{}}]|\{{[^{{}}]*\}})*"data-testid": "{test_id}"', SCRIPT)
    if found:
        return found.group(0)
    found = re.search(rf'\{{[^{{}}]*"data-testid": "{test_id}"[^{{}}]*\}}', SCRIPT)
    assert found, test_id
    return found.group(0)


@pytest.mark.parametrize("test_id", KEY_FIELDS)
def test_key_fields_are_write_only(test_id):
    markup = _key_field(test_id)

    assert re.search(r'type[=:]\s*"password"|class[=:]\s*"[^"]*\bsecret\b', markup), markup
    assert re.search(r'autocomplete[=:]\s*"(?:off|new-password)"', markup), markup
    if "secret" in markup:  # a textarea of keys, one per line: masked by CSS and never spell-checked
        assert re.search(r'spellcheck[=:]\s*"false"', markup), markup
        assert re.search(r"textarea\.secret \{\s*-webkit-text-security: disc;", CSS)


def test_the_rate_limits_are_the_settings_that_null_turns_off():
    # SPEC §14: for these the admin API's null stores 0 (off) instead of restoring env or default.
    from gateway.core.config import SETTINGS

    assert set(json.loads(_const("LIMIT_KEYS"))) == {s.key for s in SETTINGS if s.null_is_off}


def test_the_page_never_sends_null_for_a_rate_limit():
    # No "Use default" button for them (it would turn the limit off), and an emptied field is refused.
    row = _function("settingRow")
    save = _function("saveSettings")

    assert 'setting.source === "d1" && !LIMIT_KEYS.includes(key)' in row
    assert 'text === "" && LIMIT_KEYS.includes(key)) { throw invalid(`setting-${key}`, t("settings.limitEmpty"' in save


def test_every_duration_and_size_setting_has_a_unit_of_the_page():
    # Nothing in raw milliseconds or bytes: each *_ms / *_bytes setting is shown in s, min or MB.
    from gateway.core.config import SETTINGS

    units = dict(re.findall(r'(\w+): "(\w+)"', _const("SETTING_UNITS")))
    factors = dict(re.findall(r'(\w+): ([\d* ]+)', _const("FACTORS")))
    assert set(units) == {s.key for s in SETTINGS if s.key.endswith(("_ms", "_bytes"))}
    assert {u: eval(f, {}) for u, f in factors.items()} == {"s": 1000, "min": 60000, "MB": 1048576}  # noqa: S307
    assert set(units.values()) <= set(factors)
    for table in _i18n().values():
        for key in units:
            assert not re.search(r"\bms\b|bytes|毫秒|字节）", table[f"setting.{key}"]), table[f"setting.{key}"]
    save = _function("saveSettings")
    assert "Math.round(Number(text) * FACTORS[unit])" in save
    assert "value / FACTORS[unit]" in _function("shownSetting")


def test_a_400_names_its_field_and_the_error_is_shown_beside_it():
    api = _function("api")
    assert "failure.param" in api
    guarded = _function("guarded")
    assert "showFieldError(input, err.message, section)" in guarded
    assert 'note(section, "error", err.message)' in guarded  # a param with no field: the form's line
    shown = _function("showFieldError")
    assert '"aria-describedby"' in shown and '"aria-invalid", "true"' in shown and '"field-error"' in shown
    assert ".field-error" in CSS


def test_the_connect_panel_starts_on_auto():
    assert 'connect: { client: "claude", model: "auto",' in SCRIPT


def test_a_cooling_key_is_never_in_use():
    state = _function("keyState")
    assert re.search(r'!k\.enabled \? \["chip off", "keys\.disabled"\] : resting \? \["chip warn", "keys\.cooling"\]', state)
    assert "if (k.key_error) return null;" in state  # an unreadable key is not "in use" either
    assert "keyState(k, until || providerRests(p))" in SCRIPT  # nor one whose provider rests


def test_client_rpm_texts_say_it_is_enforced():
    for table in _i18n().values():
        assert "429" in table["clients.rpmHelp"]
        assert "{n}" in table["clients.rpmValue"]
    en, zh = _i18n()["en"], _i18n()["zh"]
    assert "not enforce" not in en["clients.rpmHelp"] and "尚未" not in zh["clients.rpmHelp"]
    assert "saved" not in en["clients.rpmValue"] and "保存" not in zh["clients.rpmValue"]


def test_the_default_clients_note_follows_the_answer():
    assert "state.defaultClient = data.default_client || null;" in _function("loadClients")
    render = _function("renderClients")
    assert "t(defaultClientNote(defaultClient))" in render
    for key in ("clients.defaultOff", "clients.defaultOffNone"):
        assert "API_TOKEN" in _i18n()["en"][key] and "API_TOKEN" in _i18n()["zh"][key]


# --- OpenRouter pinning (SPEC §15) ------------------------------------------------------------


def test_the_origin_settings_are_the_text_ones():
    # Every other setting is a number (a number field); an origin is text, and the page knows which.
    from gateway.core.config import SETTINGS

    assert set(json.loads(_const("ORIGIN_KEYS"))) == {s.key for s in SETTINGS if isinstance(s.default, str)}


def test_an_origin_gets_a_text_field_and_is_sent_as_text():
    row = _function("settingRow")
    save = _function("saveSettings")

    text_field = re.search(r"ORIGIN_KEYS\.includes\(key\)\s*\?\s*(\{[^{}]*\})\s*:\s*(\{[^{}]*\})", row)
    assert text_field, "settingRow picks the attributes of an origin's field with ORIGIN_KEYS"
    assert "type" not in text_field.group(1) and 'inputmode: "url"' in text_field.group(1)
    assert 'type: "number"' in text_field.group(2)
    # An origin is checked (with a message of its own) and sent as the text typed, never as a number.
    assert 'ORIGIN_KEYS.includes(key)) { if (!isOrigin(text)) throw invalid(`setting-${key}`, t("settings.badOrigin"' in save
    assert "body[key] = text;" in save
    # An emptied origin field restores the env or default value, as for the other settings.
    assert 'if (state.settings[key].source === "d1") body[key] = null;' in save


def test_the_panel_reads_every_field_of_the_admin_answer():
    # GET /api/admin/openrouter (SPEC §15): the panel shows each field it answers.
    for name in ("data.pinning", "data.origin", "data.lock_idle_ms", "data.models", "pin.model", "pin.lock",
                 "lock.slug", "lock.until", "pin.failures", "pin.switches", "pin.refreshed_at", "pin.candidates",
                 "c.slug", "c.score", "c.prompt", "c.completion", "c.input_cache_read", "c.caching", "c.throughput",
                 "c.cooled_until"):
        assert name in SCRIPT, name
    row = _function("candidateRow")
    for price in ("c.prompt", "c.completion", "c.input_cache_read"):
        assert f"pricePerMillion({price})" in row
    assert "maximumSignificantDigits: 3" in _function("significant")
    assert "1e6" in _function("pricePerMillion")
    assert 'class: locked ? "locked" : null' in row
    assert "tr.locked" in CSS  # and the stylesheet highlights it


def test_the_panel_is_refreshed_by_its_button_and_shows_its_own_errors():
    assert 'byId("openrouter-refresh").addEventListener("click", guarded("openrouter", reloadOpenRouter));' in SCRIPT
    assert '"openrouter"' in _const("SECTIONS")
    assert 'id="openrouter-message"' in HTML
    assert 'api("GET", "/openrouter")' in SCRIPT
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
