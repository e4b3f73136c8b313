"""The config page's house rules (STYLE "Admin page", SPEC §8.1) that hold for every line of its
files in public/, whether or not a test drives it there: index.html (markup without text),
style.css, the ES modules (main.js, the entry, and one per panel over core.js) and i18n.js (every
string, read as Node imports it).

What the page does is tested in Chromium (tests/e2e/test_config_page.py, test_usage_page.py), not
here: a check of the script's text that a browser test can make is made there."""

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


@functools.cache
def _i18n() -> dict[str, dict[str, str]]:
    """I18N as Node reads the module (whatever its formatting: Biome may unquote or wrap)."""
    read = "import(process.argv[1]).then((m) => process.stdout.write(JSON.stringify(m.I18N)));"
    found = subprocess.run(
        ["node", "-e", read, (PUBLIC / "i18n.js").as_uri()],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NODE_OPTIONS": "--experimental-default-type=module"},
    )
    return json.loads(found.stdout)


def _const(name: str):
    """A JSON-literal constant of a module (``const NAME = [...]`` or ``{...}`` on one line or more,
    exported or not)."""
    found = re.search(rf"\n(?:export )?const {name} = (.*?);\n", SCRIPT, flags=re.DOTALL)
    assert found, name
    return found.group(1)


def test_both_languages_have_the_same_keys():
    i18n = _i18n()

    assert set(i18n) == {"en", "zh"}
    assert set(i18n["en"]) == set(i18n["zh"])
    assert all(isinstance(v, str) and v for table in i18n.values() for v in table.values())


def test_no_text_of_a_language_is_written_outside_i18n_js():
    # A Chinese word in the code or the markup would show in the English page too.
    code = re.sub(r"//[^\n]*", "", SCRIPT)  # a comment may show what a number looks like in Chinese
    assert not CJK.search(code) and not CJK.search(HTML) and not CJK.search(CSS)


def test_every_key_the_page_uses_exists():
    keys = set(_i18n()["en"])
    used = set(re.findall(r"""\bt\("([\w.]+)"\s*[,)]""", SCRIPT))
    used |= set(re.findall(r'data-i18n(?:-placeholder)?="([\w.]+)"', HTML))
    # Keys made of a prefix and a name: the settings' units and groups.
    used |= {f"unit.{unit}" for unit in re.findall(r':\s*"(\w+)"', _const("SETTING_UNITS"))}
    used |= {
        f"settings.group.{group}" for group in re.findall(r'\[\s*"(\w+)",\s*(?:\[|[A-Z_]+\])', _const("SETTING_GROUPS"))
    }

    assert len(used) > 150, "the patterns found the page's t(...) calls"
    assert used - keys == set()


def test_setting_and_source_labels_exist_for_every_known_value():
    keys = set(_i18n()["en"])
    from gateway.core.settings import SETTINGS

    for setting in SETTINGS:
        assert {f"setting.{setting.key}", f"settingHelp.{setting.key}"} <= keys
    for source in ("d1", "env", "default"):
        assert f"settingSource.{source}" in keys
    for source in ("heuristic", "authoritative", "quota", "credit", "tier", "model"):
        assert f"source.{source}" in keys


def test_every_choice_and_fact_source_has_a_label():
    # A choice setting is a select of its choices (settings.js), each labelled choice.<key>.<name>;
    # each model fact shows its source (modelfacts.js, SPEC §19) as factSource.<source>.
    from gateway.core.capabilities import FACT_FIELDS
    from gateway.core.settings import SETTINGS, ChoiceSetting

    keys = set(_i18n()["en"])
    choices = [s for s in SETTINGS if isinstance(s, ChoiceSetting)]
    assert choices, "the routing strategy is a choice"
    for setting in choices:
        assert {f"choice.{setting.key}.{name}" for name in setting.choices} <= keys
    assert {f"factSource.{source}" for source in ("admin", "provider", "listed", "preset", "learned")} <= keys
    assert {f"facts.{name}" for name in FACT_FIELDS} <= keys


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
    # and no on… handler; one module script and one stylesheet, both the page's own. The browser
    # refuses such a handler or style where it meets one, silently for the user, and the Chromium
    # tests see the refusal only on the paths they drive: this holds for every path. (No .style
    # either: the CSP would allow it, the house keeps every style in style.css.)
    tags = _parsed().tags
    assert [a.get("src") for t, a in tags if t == "script"] == ["/main.js"]
    assert [a.get("type") for t, a in tags if t == "script"] == ["module"]
    assert [a.get("href") for t, a in tags if t == "link" and a.get("rel") == "stylesheet"] == ["/style.css"]
    assert not [t for t, _ in tags if t == "style"]
    assert not [(t, a) for t, a in tags if "style" in a or any(name.startswith("on") for name in a)]
    assert re.search(r"<script\b[^>]*>\s*</script>", HTML)  # no inline code
    assert not re.search(r"\.style\b|\"style\"|setAttribute\(\"on", SCRIPT)


@pytest.mark.parametrize(
    "sink", ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"]
)
def test_no_markup_sink(sink):
    # STYLE "Admin page": text only; test_markup_in_names_and_upstream_messages_stays_text shows it
    # for the paths it drives, this for every path.
    assert sink not in EVERYTHING


def test_client_rpm_texts_say_it_is_enforced():
    for table in _i18n().values():
        assert "429" in table["clients.rpmHelp"]
        assert "{n}" in table["clients.rpmValue"]
    en, zh = _i18n()["en"], _i18n()["zh"]
    assert "not enforce" not in en["clients.rpmHelp"] and "尚未" not in zh["clients.rpmHelp"]
    assert "saved" not in en["clients.rpmValue"] and "保存" not in zh["clients.rpmValue"]


def test_the_default_clients_off_notes_name_the_api_token():
    for key in ("clients.defaultOff", "clients.defaultOffNone"):
        assert "API_TOKEN" in _i18n()["en"][key] and "API_TOKEN" in _i18n()["zh"][key]


# --- OpenRouter pinning (SPEC §15) ------------------------------------------------------------


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
