"""``X-Fallback-Attempts`` and ``X-Fallback-Trail`` (SPEC §4)."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.classify import Failure, FailureKind
from gateway.core.trail import Pass, TrailEntry, attempts_header, header_safe, trail_header


def entry(provider: str, model: str, kind: FailureKind = FailureKind.RATE_LIMITED) -> TrailEntry:
    return TrailEntry(provider, model, Failure(kind, "provider", "heuristic", 0))


def test_no_failed_attempt_no_headers():
    assert attempts_header(()) is None
    assert trail_header(()) is None


def test_format():
    trail = (entry("a", "m1"), entry("b", "m2", FailureKind.TIMEOUT))

    assert attempts_header(trail) == "2"
    assert trail_header(trail) == "a/m1: rate_limited; b/m2: timeout"


def test_at_most_10_entries_then_more():
    trail = tuple(entry(f"p{i}", "m") for i in range(12))

    header = trail_header(trail)

    assert attempts_header(trail) == "12"
    assert header is not None
    assert header.endswith("; p9/m: rate_limited; +2 more")
    assert header.count("rate_limited") == rules.TRAIL_MAX_ENTRIES


def test_at_most_1024_chars_whole_entries_dropped():
    trail = tuple(entry(f"provider-{i}", "m" * 150) for i in range(8))

    header = trail_header(trail)

    assert header is not None and len(header) <= rules.TRAIL_MAX_CHARS
    shown = header.count("rate_limited")
    assert header.endswith(f"; +{8 - shown} more")
    assert shown == 5  # 175 chars each: five fit with "; +3 more", six do not


def test_one_giant_entry_becomes_a_count():
    assert trail_header((entry("p", "m" * 2000),)) == "+1 more"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("groq/llama-3.3: rate_limited", "groq/llama-3.3: rate_limited", id="ascii"),
        pytest.param("智谱/glm-4: auth", "%E6%99%BA%E8%B0%B1/glm-4: auth", id="non-ascii"),
        pytest.param("evil\r\nSet-Cookie: x", "evil%0D%0ASet-Cookie: x", id="control-chars"),
    ],
)
def test_header_values_are_ascii(text, expected):
    assert header_safe(text) == expected


def test_trail_encodes_non_ascii_names():
    header = trail_header((entry("智谱", "glm-4"),))

    assert header == "%E6%99%BA%E8%B0%B1/glm-4: rate_limited"
    assert header.isascii()


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        pytest.param("a;b", "m", "a%3Bb/m: rate_limited", id="semicolon-in-name"),
        pytest.param("p", "m;x", "p/m%3Bx: rate_limited", id="semicolon-in-model"),
        pytest.param("50%", "m", "50%25/m: rate_limited", id="percent-so-it-reads-back"),
    ],
)
def test_trail_escapes_its_separator_in_names(provider, model, expected):
    assert trail_header((entry(provider, model), entry("next", "m"))) == f"{expected}; next/m: rate_limited"


def test_a_key_is_named_when_the_provider_has_several():
    failure = Failure(FailureKind.AUTH, "key", "heuristic", 0)
    trail = (TrailEntry("groq;eu", "m", failure, 7), TrailEntry("b", "m", failure))

    assert trail[0].label == "groq;eu#7/m: auth"
    assert trail_header(trail) == "groq%3Beu#7/m: auth; b/m: auth"


def test_pairs_passed_over_follow_the_attempts_and_are_not_attempts():
    passed = (Pass("groq", "llama;8b", "context", "context 8192 < ~21000"), Pass("g2", "m", "cap", "at cap 30/min", 1))
    failed = (entry("p", "m"),)

    assert trail_header((), passed) == "groq/llama%3B8b: skipped: context 8192 < ~21000; g2/m: skipped: at cap 30/min"
    assert trail_header(failed, passed[:1]) == "p/m: rate_limited; groq/llama%3B8b: skipped: context 8192 < ~21000"
    assert attempts_header(failed) == "1"


def test_passes_are_dropped_before_attempts_when_the_trail_is_full():
    passed = tuple(Pass(f"p{n}", "m", "context", "context 4096 < ~21000") for n in range(12))

    text = trail_header((entry("big", "m", FailureKind.UPSTREAM_ERROR),), passed)

    assert text.startswith("big/m: upstream_error; p0/m: skipped")
    assert text.endswith("; +3 more")
