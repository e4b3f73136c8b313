"""The wrangler commands of a page (the README, docs/*.md), read as a user would paste them: every
fenced shell block that runs wrangler (or pywrangler, which runs it), and every inline code span
that is such a command.

Wrangler sends usage metrics to Cloudflare on every command unless ``WRANGLER_SEND_METRICS`` is
``false``. A command has it in effect when its block exported it on an earlier line
(``export WRANGLER_SEND_METRICS=false``) or the command itself starts with the assignment; an
inline span is pasted alone, so only the second form counts there.
"""

from __future__ import annotations

import re

__all__ = [
    "METRICS_OFF",
    "inline_commands",
    "logical_lines",
    "metrics_left_on",
    "wrangler_blocks",
]

METRICS_OFF = "WRANGLER_SEND_METRICS=false"
_EXPORT = re.compile(rf"^export\s+{METRICS_OFF}(\s|;|$)")
# A fence may be indented (a block inside a list item): its lines are read without the indent.
_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.M | re.S)
_SHELL = ("sh", "bash", "shell", "console")
# A command that runs wrangler: npx [--yes] wrangler …, uv run pywrangler … or wrangler ….
_RUNS_WRANGLER = re.compile(r"(npx\s+(--yes\s+)?wrangler|uv\s+run\s+pywrangler|wrangler)\s")
_ASSIGNMENT = re.compile(r"^WRANGLER_SEND_METRICS=\S*\s+")


def wrangler_blocks(readme: str) -> list[str]:
    """The fenced shell blocks that mention wrangler, in order."""
    return [
        re.sub(rf"(?m)^{indent}", "", code)
        for indent, lang, code in _FENCE.findall(readme)
        if lang in _SHELL and "wrangler" in code
    ]


def logical_lines(block: str) -> list[str]:
    """``block``'s commands: backslash continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", block)
    lines = []
    for line in joined.splitlines():
        code = re.sub(r"(^|\s)#.*$", "", line).strip()  # no '#' inside this README's quoted arguments
        if code:
            lines.append(code)
    return lines


def _runs_wrangler(command: str) -> bool:
    return bool(_RUNS_WRANGLER.match(_ASSIGNMENT.sub("", command) + " "))


def metrics_left_on(block: str) -> list[str]:
    """The commands of ``block`` that run wrangler without ``WRANGLER_SEND_METRICS=false`` in
    effect; empty when every one has it."""
    exported = False
    left_on = []
    for command in logical_lines(block):
        if _EXPORT.match(command):
            exported = True
        elif _runs_wrangler(command) and not (exported or command.startswith(METRICS_OFF + " ")):
            left_on.append(command)
    return left_on


def inline_commands(readme: str) -> list[str]:
    """The inline code spans outside fenced blocks that run wrangler (with or without the
    assignment in front); a span merely naming a subcommand (`wrangler tail`) is no command."""
    prose = _FENCE.sub("", readme)
    spans = (" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose))
    return [span for span in spans if re.match(r"(npx|uv run)\s", _ASSIGNMENT.sub("", span)) and _runs_wrangler(span)]
