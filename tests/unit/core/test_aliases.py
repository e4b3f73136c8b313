"""Model aliases (``core/aliases.py``, issue 9): which target a requested model resolves to, and
which tables the admin API refuses."""

from __future__ import annotations

import pytest

from gateway.core.aliases import (
    MAX_ALIASES,
    MAX_PATTERN_CHARS,
    MAX_TARGET_CHARS,
    NO_ALIASES,
    alias_problem,
    compile_aliases,
    resolve_alias,
)

CLAUDE = {"claude-*haiku*": "llama-3.1-8b-instant", "claude-*": "auto"}


@pytest.mark.parametrize(
    ("table", "model", "target"),
    [
        pytest.param(CLAUDE, "claude-3-5-haiku-latest", "llama-3.1-8b-instant", id="first-match-wins"),
        pytest.param(CLAUDE, "claude-haiku-4-5-20251001", "llama-3.1-8b-instant", id="star-matches-empty-run"),
        pytest.param(CLAUDE, "claude-sonnet-4-5", "auto", id="second-pattern"),
        pytest.param(CLAUDE, "CLAUDE-3-5-HAIKU-LATEST", "llama-3.1-8b-instant", id="case-insensitive"),
        pytest.param(CLAUDE, "gpt-4o", None, id="no-match"),
        pytest.param(CLAUDE, "my-claude-sonnet", None, id="whole-name-not-substring"),
        pytest.param(CLAUDE, "claude", None, id="prefix-needs-its-dash"),
        pytest.param(
            {"claude-*": "auto", "claude-*haiku*": "small"}, "claude-3-5-haiku", "auto", id="object-order-decides"
        ),
        pytest.param({"gpt-4o": "llama"}, "gpt-4o", "llama", id="exact-pattern"),
        pytest.param({"gpt-4o": "llama"}, "gpt-4o-mini", None, id="exact-pattern-is-whole-name"),
        pytest.param({"*": "llama"}, "anything/at:all", "llama", id="star-alone-matches-any-name"),
        pytest.param({"*": "llama"}, "auto", None, id="auto-never-rewritten"),
        pytest.param({"*": "llama"}, "AUTO", None, id="auto-any-case"),
        pytest.param({"*": "llama"}, None, None, id="absent-model"),
        pytest.param({"*": "llama"}, "", None, id="empty-model"),
        pytest.param({"*-mini": "small"}, "gpt-4o-mini", "small", id="suffix"),
        pytest.param({"*-mini": "small"}, "gpt-4o-mini-2024", None, id="suffix-is-anchored"),
        pytest.param({"a*b*c": "x"}, "abc", "x", id="pieces-adjacent"),
        pytest.param({"a*b*c": "x"}, "a-c-b", None, id="pieces-in-order"),
        pytest.param({"ab*ba": "x"}, "aba", None, id="prefix-and-suffix-may-not-overlap"),
        pytest.param({"ab*ba": "x"}, "abba", "x", id="prefix-and-suffix-touch"),
        pytest.param({"a**b": "x"}, "ab", "x", id="double-star"),
        pytest.param({"gemini-2.?-flash": "x"}, "gemini-2.5-flash", None, id="question-mark-is-literal"),
        pytest.param({"gemini-2.?-flash": "x"}, "gemini-2.?-flash", "x", id="question-mark-matches-itself"),
        pytest.param({"gpt-4o.": "x"}, "gpt-4oX", None, id="dot-is-literal"),
        pytest.param({" claude-* ": " auto "}, "claude-x", "auto", id="blanks-around-are-dropped"),
        pytest.param({"straße-*": "x"}, "STRASSE-1", "x", id="casefold"),
        pytest.param({}, "claude-x", None, id="empty-table"),
    ],
)
def test_resolve_alias(table, model, target):
    assert resolve_alias(compile_aliases(table), model) == target


def test_no_aliases_resolves_nothing():
    assert resolve_alias(NO_ALIASES, "claude-3-5-haiku-latest") is None
    assert not NO_ALIASES


def test_a_pattern_full_of_stars_against_a_long_name_is_cheap():
    # A backtracking matcher would take exponential time here; pieces and str.find do one pass.
    aliases = compile_aliases({"*a" * 99 + "*b": "x"})

    assert resolve_alias(aliases, "a" * 100_000) is None
    assert resolve_alias(aliases, "a" * 100_000 + "b") == "x"


def test_the_table_keeps_the_users_order_and_spelling():
    aliases = compile_aliases({"Claude-*Haiku*": "Small-Model", "claude-*": "auto"})

    assert aliases.as_json() == {"Claude-*Haiku*": "Small-Model", "claude-*": "auto"}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        pytest.param(["claude-*", "auto"], "a JSON object", id="not-an-object"),
        pytest.param("claude-*=auto", "a JSON object", id="a-string"),
        pytest.param({"claude-*": 5}, "must be a string", id="target-not-a-string"),
        pytest.param({"claude-*": None}, "must be a string", id="target-null"),
        pytest.param({"claude-*": {"model": "x"}}, "must be a string", id="target-an-object"),
        pytest.param({"claude-*": "  "}, "must not be empty", id="target-blank"),
        pytest.param({"": "auto"}, "pattern must not be empty", id="pattern-empty"),
        pytest.param({"   ": "auto"}, "pattern must not be empty", id="pattern-blank"),
        pytest.param({"x" * (MAX_PATTERN_CHARS + 1): "auto"}, f"longer than {MAX_PATTERN_CHARS}", id="pattern-long"),
        pytest.param({"x": "y" * (MAX_TARGET_CHARS + 1)}, f"longer than {MAX_TARGET_CHARS}", id="target-long"),
        pytest.param({f"m{i}": "auto" for i in range(MAX_ALIASES + 1)}, f"at most {MAX_ALIASES}", id="too-many"),
        pytest.param({"claude\n*": "auto"}, "control character", id="pattern-control"),
        pytest.param({"claude-*": "auto\r\nX-Evil: 1"}, "control character", id="target-control"),
    ],
)
def test_alias_problem_refuses(value, says):
    problem = alias_problem(value)

    assert problem is not None and says in problem


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({}, id="empty"),
        pytest.param(CLAUDE, id="claude"),
        pytest.param({f"m{i}": "auto" for i in range(MAX_ALIASES)}, id="at-the-cap"),
        pytest.param({"x" * MAX_PATTERN_CHARS: "y" * MAX_TARGET_CHARS}, id="at-the-lengths"),
    ],
)
def test_alias_problem_accepts(value):
    assert alias_problem(value) is None
