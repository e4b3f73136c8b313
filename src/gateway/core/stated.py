"""Limits an upstream states in its error answers: the caps of a 429 and the window of a
context-length error (SPEC §19: presets are lowered, never raised, by what a 429 states).

Rules:
- A limit is a positive int the answer states and whose window it names; nothing is inferred from
  an answer that states none, and a limit of 0 (Gemini's "limit: 0" for a model off the free
  tier) is no cap to count against.
- 429 sources, all read; where two state the same field the lower figure wins:
  1. headers whose name carries the window: ``x-ratelimit-limit-requests-day``,
     ``x-ratelimit-limit-tokens-minute`` (Cerebras), ``x-ratelimit-limit-req-minute`` (Mistral);
  2. Groq's bare headers, whose windows Groq documents: ``x-ratelimit-limit-requests`` is per day,
     ``x-ratelimit-limit-tokens`` per minute (console.groq.com/docs/rate-limits). OpenAI sends the
     same requests header per minute, so it counts only when ``platform`` is ``groq``;
  3. Gemini's ``google.rpc.QuotaFailure``: a violation's ``quotaId`` names the window
     (``…RequestsPerMinute…``, ``…RequestsPerDay…``, ``…InputTokens…PerMinute…``), its
     ``quotaValue`` the limit;
  4. OpenRouter's "Rate limit exceeded: free-models-per-min" / "free-models-per-day…", the limit in
     ``metadata.headers.X-RateLimit-Limit`` (or the response's own ``X-RateLimit-Limit``);
  5. prose: "on requests per minute (RPM): Limit 30" (Groq, OpenAI); Gemini's "Quota exceeded for
     metric: …_input_token_count, limit: N" is per minute (Gemini publishes its token limit per
     minute only), its "…_requests, limit: N" names no window (one metric serves both) and counts
     only through the QuotaFailure beside it.
- Tokens per day have no field here and are ignored.
- JSON is read wherever it sits: a body that is a JSON list (Gemini), or an error message that is
  itself JSON text (a client that wrapped the upstream's answer), at most ``_MAX_DEPTH`` levels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from gateway.core.modelfacts import NO_FACTS, Facts

__all__ = ["stated_caps", "stated_context"]

_MAX_DEPTH = 8

_NUMBER = r"(\d[\d,]*)"
_HEADER_WINDOWED = re.compile(r"x-ratelimit-limit-(requests|req|tokens)-(minute|day)")
_GROQ_HEADERS = {"x-ratelimit-limit-requests": "rpd", "x-ratelimit-limit-tokens": "tpm"}
_BARE_TOKENS_HEADER = "x-ratelimit-limit-tokens"
_PROSE_LIMIT = re.compile(
    r"\b(requests|tokens) per (minute|min|day)\b\s*(?:\([A-Z]{3}\))?\s*:\s*Limit\s+" + _NUMBER,
    re.IGNORECASE,
)
_GEMINI_TOKENS_PROSE = re.compile(r"Quota exceeded for metric: \S*_input_token_count, limit: " + _NUMBER)
_OPENROUTER_WINDOW = re.compile(r"free-models-per-(min|day)")

_CONTEXT = (
    re.compile(r"maximum context length is " + _NUMBER, re.IGNORECASE),  # OpenAI, OpenRouter, DeepSeek
    re.compile(r"too large for model with " + _NUMBER + r" maximum context length", re.IGNORECASE),
    re.compile(r"exceeds the maximum number of tokens allowed \(?" + _NUMBER, re.IGNORECASE),  # Gemini
    re.compile(r"exceeds model's maximum context length \(" + _NUMBER + r"\)", re.IGNORECASE),
    re.compile(r"maximum prompt length is " + _NUMBER, re.IGNORECASE),
    re.compile(r"exceeded model token limit: " + _NUMBER, re.IGNORECASE),
)


def _positive(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw if raw > 0 else None
    if isinstance(raw, str) and re.fullmatch(r"\s*\d[\d,]*\s*", raw):
        value = int(raw.replace(",", ""))
        return value if value > 0 else None
    return None


def _field(unit: str, window: str) -> str | None:
    """``rpm``/``rpd``/``tpm`` for a unit and a window; None for tokens per day."""
    if unit.lower().startswith("req"):
        return "rpm" if window.lower().startswith("min") else "rpd"
    return "tpm" if window.lower().startswith("min") else None


def _parsed(text: str, depth: int = 0) -> Iterator[Any]:
    """Every JSON value in ``text`` and, nested, in its strings that are JSON themselves."""
    stripped = text.strip()
    if depth > _MAX_DEPTH or not stripped.startswith(("{", "[")):
        return
    try:
        value = json.loads(stripped)
    except ValueError:
        return
    yield value
    for node in _walk(value, 0):
        if isinstance(node, str):
            yield from _parsed(node, depth + 1)


def _walk(node: Any, depth: int) -> Iterator[Any]:
    if depth > _MAX_DEPTH:
        return
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from _walk(child, depth + 1)


def _quota_field(quota_id: str) -> str | None:
    # Gemini's quotaIds: GenerateRequestsPerMinutePerProjectPerModel-FreeTier,
    # GenerateRequestsPerDayPerProjectPerModel-FreeTier,
    # GenerateContentInputTokensPerModelPerMinute-FreeTier.
    unit = "tokens" if "Tokens" in quota_id else "requests" if "Requests" in quota_id else None
    window = "minute" if "PerMinute" in quota_id else "day" if "PerDay" in quota_id else None
    return _field(unit, window) if unit and window else None


def _from_json(values: list[Any], headers: Mapping[str, str]) -> Iterator[tuple[str, int]]:
    for value in values:
        for node in _walk(value, 0):
            if not isinstance(node, dict):
                continue
            quota_id, limit = node.get("quotaId"), _positive(node.get("quotaValue"))
            if isinstance(quota_id, str) and limit is not None and (name := _quota_field(quota_id)):
                yield name, limit
            message = node.get("message")
            window = _OPENROUTER_WINDOW.search(message) if isinstance(message, str) else None
            if window:
                meta = node.get("metadata")
                sent = meta.get("headers") if isinstance(meta, dict) else None
                sent = {k.lower(): v for k, v in sent.items()} if isinstance(sent, dict) else {}
                limit = _positive(sent.get("x-ratelimit-limit", headers.get("x-ratelimit-limit")))
                if limit is not None:
                    yield ("rpm" if window.group(1) == "min" else "rpd"), limit


def _from_headers(headers: Mapping[str, str], platform: str | None) -> Iterator[tuple[str, int]]:
    for name, raw in headers.items():
        limit = _positive(raw)
        if limit is None:
            continue
        match = _HEADER_WINDOWED.fullmatch(name)
        field = _field(*match.groups()) if match else None
        if field is None and (name == _BARE_TOKENS_HEADER or platform == "groq"):
            field = _GROQ_HEADERS.get(name)
        if field is not None:
            yield field, limit


def _from_prose(body: str) -> Iterator[tuple[str, int]]:
    for match in _PROSE_LIMIT.finditer(body):
        field, limit = _field(match.group(1), match.group(2)), _positive(match.group(3))
        if field is not None and limit is not None:
            yield field, limit
    for match in _GEMINI_TOKENS_PROSE.finditer(body):
        if (limit := _positive(match.group(1))) is not None:
            yield "tpm", limit


def stated_caps(body: str, headers: Mapping[str, str], *, platform: str | None = None) -> Facts:
    """The caps a 429 states: only ``rpm``, ``rpd`` and ``tpm`` are ever set, each to the lowest
    positive figure stated for it; ``NO_FACTS`` when the answer states none.

    ``headers`` may have names in any case; ``platform`` is the provider's preset id, which
    decides what Groq's bare ``x-ratelimit-limit-requests`` means.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    found: dict[str, int] = {}
    stated = [
        *_from_headers(lowered, platform),
        *_from_json(list(_parsed(body)), lowered),
        *_from_prose(body),
    ]
    for name, limit in stated:
        found[name] = min(limit, found.get(name, limit))
    return Facts(**found) if found else NO_FACTS


def stated_context(body: str) -> int | None:
    """The context window a context-length error states, in tokens; None when it states none
    ("Please reduce the length of the messages" alone says nothing of the window)."""
    for pattern in _CONTEXT:
        for match in pattern.finditer(body):
            if (window := _positive(match.group(1))) is not None:
                return window
    return None
