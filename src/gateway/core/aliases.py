"""Model aliases: the model a request names, rewritten before its chain is built (issue 9).

Rules:
- The setting ``model_aliases`` is a JSON object, pattern → target, read in its own order; the
  first pattern that matches the requested model wins, and its target is what the request asks for
  from then on (a model id, or ``auto`` for any model).
- A pattern matches the whole model name, case-insensitively; ``*`` stands for any run of
  characters (none included). There is no other wildcard and no escape: ``?``, ``[`` and ``.``
  are themselves.
- ``auto`` (any case, or ``auto:<strategy>``, SPEC §19), an absent or an empty model is never
  rewritten: it is the gateway's own name for "any model", not a client's model id, so ``*``
  means every named model. A model that no pattern matches is left as it is (and then degrades
  as SPEC §3 says).
- The target is what the caller asked for: ``X-Fallback-From`` names the target when another
  model served, never the name before the alias (the rewrite was the user's own configuration).
- Limits that keep one lookup cheap and the settings row small: ``MAX_ALIASES`` entries, patterns
  and targets of at most ``MAX_PATTERN_CHARS`` / ``MAX_TARGET_CHARS`` characters, no control
  characters (a target goes into headers).

Matching never backtracks: a pattern is split at its ``*`` once, when the snapshot is built, and a
name is matched by prefix, suffix and left-to-right ``str.find`` of the pieces between, so a
pattern full of ``*`` costs one pass over the name whatever the name is.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.core.strategy import is_auto

__all__ = [
    "MAX_ALIASES",
    "MAX_PATTERN_CHARS",
    "MAX_TARGET_CHARS",
    "NO_ALIASES",
    "Alias",
    "Aliases",
    "alias_problem",
    "compile_aliases",
    "resolve_alias",
]

MAX_ALIASES = 100
MAX_PATTERN_CHARS = 200
MAX_TARGET_CHARS = 200

WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class Alias:
    """One entry: ``pattern`` and ``target`` as the user wrote them; ``pieces``: the casefolded
    pattern split at ``*`` (one piece: no wildcard, an exact match)."""

    pattern: str
    target: str
    pieces: tuple[str, ...]

    def matches(self, folded_name: str) -> bool:
        """Whether the casefolded ``folded_name`` matches the whole pattern."""
        pieces = self.pieces
        if len(pieces) == 1:
            return folded_name == pieces[0]
        first, last = pieces[0], pieces[-1]
        end = len(folded_name) - len(last)
        if end < len(first) or not folded_name.startswith(first) or not folded_name.endswith(last):
            return False
        # Leftmost placement of each middle piece is always safe with only `*`: a later placement
        # leaves less room for the pieces after it, never more.
        position = len(first)
        for piece in pieces[1:-1]:
            found = folded_name.find(piece, position, end)
            if found < 0:
                return False
            position = found + len(piece)
        return True


@dataclass(frozen=True, slots=True)
class Aliases:
    """The compiled table, in the user's order; empty: no alias."""

    entries: tuple[Alias, ...] = ()

    def as_json(self) -> dict[str, str]:
        """The table as the admin API shows it (pattern → target, in order)."""
        return {alias.pattern: alias.target for alias in self.entries}

    def __bool__(self) -> bool:
        return bool(self.entries)


NO_ALIASES = Aliases()


def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) == "Cc" for c in text)


def alias_problem(value: object) -> str | None:
    """None when ``value`` is a valid alias table, else what is wrong with it, in words that
    follow "Invalid value for 'model_aliases': " (the admin API's 400)."""
    if not isinstance(value, Mapping):
        return 'a JSON object of pattern → model id or "auto" is expected'
    if len(value) > MAX_ALIASES:
        return f"at most {MAX_ALIASES} aliases are allowed, not {len(value)}"
    for pattern, target in value.items():
        if not isinstance(pattern, str) or not pattern.strip():
            return "a pattern must not be empty"
        if len(pattern) > MAX_PATTERN_CHARS:
            return f"the pattern '{pattern[:40]}…' is longer than {MAX_PATTERN_CHARS} characters"
        if _has_control(pattern):
            return f"the pattern {pattern!r} holds a control character"
        if not isinstance(target, str):
            return f"the target of '{pattern}' must be a string (a model id or \"auto\")"
        if not target.strip():
            return f"the target of '{pattern}' must not be empty"
        if len(target) > MAX_TARGET_CHARS:
            return f"the target of '{pattern}' is longer than {MAX_TARGET_CHARS} characters"
        if _has_control(target):
            return f"the target of '{pattern}' holds a control character"
    return None


def compile_aliases(value: Mapping[str, str]) -> Aliases:
    """The table for a ``value`` that ``alias_problem`` accepted. Patterns and targets are
    stripped of surrounding blanks (model names never start or end with one)."""
    entries = []
    for pattern, target in value.items():
        pattern, target = pattern.strip(), target.strip()
        entries.append(Alias(pattern, target, tuple(pattern.casefold().split(WILDCARD))))
    return Aliases(tuple(entries))


def resolve_alias(aliases: Aliases, model: str | None) -> str | None:
    """The target of the first alias whose pattern matches ``model``, or None when none does or
    ``model`` is ``auto``, absent or empty (never rewritten)."""
    if not aliases.entries or is_auto(model):
        return None
    folded = model.casefold()  # type: ignore[union-attr]  # is_auto is true for None
    for alias in aliases.entries:
        if alias.matches(folded):
            return alias.target
    return None
