"""Delays an upstream states, and the next UTC midnight (SPEC §5.1).

Sources of a stated delay, first found wins:
1. the ``retry-after-ms`` header (OpenAI), then ``Retry-After`` as delta-seconds or an HTTP-date
   (RFC 9110 §10.2.3; a date in the past means 0);
2. a key normalising to ``retrydelay``/``retryafter``/``retryafterseconds`` (seconds, or a
   protobuf duration such as Gemini's ``"17s"``) or ``retryafterms`` anywhere in a JSON body, at
   most ``RETRY_DELAY_MAX_DEPTH`` levels down;
3. prose behind a retry phrase: "try again in 7m12s", "retry after 20 seconds". A bare "in 24
   hours" does not count: error texts use it for a limit's window, not for a wait.
Every delay is capped at ``AUTHORITATIVE_COOLDOWN_MAX_MS``; a negative one is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

from gateway.core import rules

__all__ = ["ms_until_utc_midnight", "parse_duration_ms", "stated_delay_ms"]

_UNIT = r"(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)(?![a-z])"
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_COMPONENT = re.compile(r"(\d+(?:\.\d+)?)\s*" + _UNIT, re.IGNORECASE)
_PROSE_DELAY = re.compile(
    r"\b(?:try(?:ing)? again|retry|wait)\s+(?:(?:in|after|for)\s+)?"
    r"((?:\d+(?:\.\d+)?\s*" + _UNIT + r"\s*){1,4})",
    re.IGNORECASE,
)
_UNIT_MS = {"s": rules.SECOND_MS, "m": rules.MINUTE_MS, "h": rules.HOUR_MS}
_SECONDS_KEYS = frozenset({"retrydelay", "retryafter", "retryafterseconds"})
_MS_KEY = "retryafterms"


def _unit_ms(unit: str) -> int:
    unit = unit.lower()
    if unit == "ms" or unit.startswith("milli"):
        return 1
    return _UNIT_MS[unit[0]]


def parse_duration_ms(text: str) -> int | None:
    """Milliseconds in ``"7m12s"``, ``"2.5s"``, ``"20 seconds"``, ``"500ms"`` or a bare number
    of seconds (``"17"``); None when ``text`` is not one of those."""
    text = text.strip()
    if _NUMBER.fullmatch(text):
        return round(float(text) * rules.SECOND_MS)
    total, end = 0.0, 0
    for match in _COMPONENT.finditer(text):
        if text[end : match.start()].strip():
            return None
        total += float(match.group(1)) * _unit_ms(match.group(2))
        end = match.end()
    return round(total) if end and not text[end:].strip() else None


def _header_delay_ms(headers: Mapping[str, str], now_ms: int) -> int | None:
    raw_ms = headers.get("retry-after-ms", "").strip()
    if _NUMBER.fullmatch(raw_ms):
        return round(float(raw_ms))
    raw = headers.get("retry-after", "").strip()
    if not raw:
        return None
    if _NUMBER.fullmatch(raw):
        return round(float(raw) * rules.SECOND_MS)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" parses as naive; RFC 9110 dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0, round(when.timestamp() * rules.SECOND_MS) - now_ms)


def _value_ms(value: Any, seconds: bool) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return round(value * rules.SECOND_MS) if seconds else round(value)
    if isinstance(value, str):
        if seconds:
            return parse_duration_ms(value)
        value = value.strip()
        return round(float(value)) if _NUMBER.fullmatch(value) else None
    return None


def _body_delay_ms(node: Any, depth: int) -> int | None:
    if depth > rules.RETRY_DELAY_MAX_DEPTH:
        return None
    if isinstance(node, dict):
        for key, value in node.items():
            norm = key.lower().replace("_", "").replace("-", "") if isinstance(key, str) else ""
            if norm in _SECONDS_KEYS or norm == _MS_KEY:
                delay = _value_ms(value, seconds=norm != _MS_KEY)
                if delay is not None:
                    return delay
        children: Any = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        delay = _body_delay_ms(child, depth + 1)
        if delay is not None:
            return delay
    return None


def stated_delay_ms(headers: Mapping[str, str], parsed: Any, text: str, now_ms: int) -> int | None:
    """The delay the upstream asked for, in ms, or None when it stated none.

    ``headers`` have lower-case names; ``parsed`` is the JSON body (None when it is not JSON);
    ``text`` is the body text searched for prose.
    """
    delay = _header_delay_ms(headers, now_ms)
    if delay is None and parsed is not None:
        delay = _body_delay_ms(parsed, 0)
    if delay is None:
        match = _PROSE_DELAY.search(text)
        delay = parse_duration_ms(match.group(1)) if match else None
    if delay is None or delay < 0:
        return None
    return min(delay, rules.AUTHORITATIVE_COOLDOWN_MAX_MS)


def ms_until_utc_midnight(now_ms: int) -> int:
    """Milliseconds from ``now_ms`` (epoch ms) to the next 00:00 UTC, never less than
    ``QUOTA_MIN_COOLDOWN_MS``. Unix time has no leap seconds: every UTC day is ``DAY_MS`` long."""
    return max(rules.DAY_MS - now_ms % rules.DAY_MS, rules.QUOTA_MIN_COOLDOWN_MS)
