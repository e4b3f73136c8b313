"""The README and docs/ (issues 8 and 32).

The README and .dev.vars.example name every setting by both its names (issue 8): the env var and
the admin API / D1 key, in one table row each, so neither can drift from ``SETTINGS``; every
wrangler command the README and docs/ show runs with ``WRANGLER_SEND_METRICS=false`` in effect, as
pasted (tests/e2e/test_quickstart.py runs the README's blocks offline).

The README stays a user's page of at most ``README_MAX_LINES`` lines and links every file of docs/
(issue 32); every relative link of the README and docs/ leads to a file that exists and, with a
``#fragment``, to a heading there; the architecture map (docs/architecture.md) names every Python
module under ``src/`` once, and no other.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from gateway.core import rules
from gateway.core.settings import SETTINGS
from support.readme import METRICS_OFF, inline_commands, metrics_left_on, wrangler_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS_DIR = ROOT / "docs"
README_MAX_LINES = 300
# Every Markdown file the links test reads: the README and docs/.
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in DOCS_DIR.glob("*.md"))]


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
        pytest.param(
            "export WRANGLER_SEND_METRICS=true\nnpx wrangler d1 list\n", ["npx wrangler d1 list"], id="exported-true"
        ),
        pytest.param("uv run pywrangler dev   # a comment\n", ["uv run pywrangler dev"], id="pywrangler"),
        pytest.param(
            "npx wrangler d1 execute db \\\n  --remote\n", ["npx wrangler d1 execute db --remote"], id="continued"
        ),
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


@pytest.mark.parametrize("doc", PAGES)
def test_no_wrangler_command_of_any_page_sends_metrics(doc):
    # The blocks and inline commands of every page, not only the two above with their minimum counts.
    text = (ROOT / doc).read_text(encoding="utf-8")

    assert {i: metrics_left_on(b) for i, b in enumerate(wrangler_blocks(text)) if metrics_left_on(b)} == {}
    assert [c for c in inline_commands(text) if not c.startswith(f"{METRICS_OFF} ")] == []


def test_routing_doc_states_the_429_minimum_of_core_rules():
    routing = " ".join((ROOT / "docs" / "routing.md").read_text(encoding="utf-8").split())

    assert f"**A 429 cools for at least {rules.LADDER_MS[0] // 1000} s.**" in routing
    assert f"longer than {rules.SHORT_RETRY_MAX_MS // 1000} s is taken as it is" in routing


# --- The README for a user, the rest in docs/ (issue 32) --------------------------------------


_FENCE_LINE = re.compile(r"^\s*```")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def _prose(text: str) -> str:
    """``text`` without its fenced blocks and inline code spans: what renders as Markdown."""
    kept, fenced = [], False
    for line in text.splitlines():
        if _FENCE_LINE.match(line):
            fenced = not fenced
        elif not fenced:
            kept.append(line)
    return re.sub(r"`[^`]*`", "", "\n".join(kept))


def _links(text: str) -> list[str]:
    """The targets of the page's Markdown links and images, in order."""
    return _LINK.findall(_prose(text))


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation (backticks too) dropped,
    spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    """The anchors of a page's headings; a repeated heading's get -1, -2, … as on GitHub."""
    seen: Counter[str] = Counter()
    found = set()
    fenced = False
    for line in text.splitlines():
        if _FENCE_LINE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            base = _slug(match.group(1))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def test_readme_fits_a_user():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()

    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move reference to docs/"


def test_readme_links_every_doc():
    linked = {target.split("#")[0] for target in _links((ROOT / "README.md").read_text(encoding="utf-8"))}

    assert {f"docs/{p.name}" for p in DOCS_DIR.iterdir()} - linked == set()


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        pytest.param("The two commands", "the-two-commands", id="words"),
        pytest.param("One command: `scripts/deploy`", "one-command-scriptsdeploy", id="code"),
        pytest.param("Rescue of a cut stream (opt-in)", "rescue-of-a-cut-stream-opt-in", id="brackets"),
        pytest.param("The free plan's budget", "the-free-plans-budget", id="apostrophe"),
        pytest.param("Long answers and the free plan's 10 ms", "long-answers-and-the-free-plans-10-ms", id="digits"),
    ],
)
def test_slug_is_githubs(heading, anchor):
    assert _slug(heading) == anchor


def test_anchors_skip_code_and_number_repeats():
    page = "# Usage\n\n```sh\n# not a heading\n```\n## Usage\n"

    assert _anchors(page) == {"usage", "usage-1"}


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_leads_somewhere(page):
    path = ROOT / page
    broken = []
    for target in _links(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not this check's business
            continue
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in _anchors(linked.read_text(encoding="utf-8")):
            broken.append(f"{target}: no such heading in {linked.relative_to(ROOT)}")

    assert broken == []


def test_the_link_check_reads_links():
    # If _links stopped finding links, every page would pass the check above with nothing checked.
    assert "docs/deploy.md" in _links((ROOT / "README.md").read_text(encoding="utf-8"))


# --- The architecture map names every module of src/ once (Python and JavaScript) ---------------

ARCHITECTURE = DOCS_DIR / "architecture.md"
MAP_HEADING = "## The map of `src/`"
# A row of the map: the module's path inside src/ in the first cell.
_MAP_ROW = re.compile(r"^\| `([^`]+)` \|", re.M)


def _map_modules(doc: str) -> list[str]:
    """The modules the map names, in order: the first cell of each table row of its section."""
    assert f"\n{MAP_HEADING}\n" in doc, f"docs/architecture.md lost its heading {MAP_HEADING!r}"
    section = doc.split(f"\n{MAP_HEADING}\n", 1)[1].split("\n## ", 1)[0]
    return _MAP_ROW.findall(section)


def test_map_names_every_module_of_src_once():
    named = _map_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    modules = [*(ROOT / "src").rglob("*.py"), *(ROOT / "src").rglob("*.mjs")]
    tree = {path.relative_to(ROOT / "src").as_posix() for path in modules}

    assert sorted(tree - set(named)) == [], "modules missing from the map in docs/architecture.md"
    assert sorted(set(named) - tree) == [], "the map in docs/architecture.md names modules that do not exist"
    assert sorted(name for name, n in Counter(named).items() if n > 1) == [], "named twice in the map"


def test_map_modules_reads_the_first_cell_only():
    doc = (
        f"# A\n\n{MAP_HEADING}\n\n| module | its job |\n|---|---|\n| `entry.py` | calls `gateway/x.py` |\n"
        "\n## Beside\n\n| `other.py` | not in the map |\n"
    )

    assert _map_modules(doc) == ["entry.py"]
