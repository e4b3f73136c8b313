"""What a failed attempt means: its class, whose fault it is, and the cooldown it asks for.

Rules (SPEC §4, §5.1; the numbers and the status table are in ``rules``):
- A transport defect (network, timeout, empty or non-SSE stream) follows ``rules.DEFECT_RULES``;
  an unreadable stored key made no upstream call and asks for no cooldown.
- The scope of a cooldown (SPEC §13): 401, 402, 403 and every 429 cool the key that got them;
  5xx, timeouts, network errors, bad streams and 508 the provider; 404/410 strike the model.
- 401/402/403/404/408/410/508 follow ``rules.STATUS_RULES``; 5xx and any status outside 4xx are
  ``rules.SERVER_ERROR_RULE``. A 508 is a request loop (``loop_detected``): the provider leads back
  to a gateway the request already passed, so it cools down for ``LOOP_COOLDOWN_MS`` (source
  ``loop``) and is never retried.
- 429 reads the answer, in this order (SPEC §5.1 says 429 wording, so OpenAI's
  ``insufficient_quota`` 429 counts as quota, not credit): a stated delay
  (``delay.stated_delay_ms``) longer than ``SHORT_RETRY_MAX_MS`` is authoritative (whatever the
  wording: Groq's per-day limit says "try again in 7m12s"); a shorter one is a short-retry hint
  that climbs the ladder; with no stated delay, daily/allocation/quota wording is a quota
  cooldown until the next 00:00 UTC (``daily_quota_exhausted``); anything else climbs the ladder.
- 400/413/422 are the caller's fault (returned as they are, no cooldown) unless the body says
  the provider, not the request, failed: context too long (another model may fit it, no
  cooldown), a bad API key (401 rule), no credit (402), an unknown model (404), no access (403).
  Google answers a bad key with 400 ``API_KEY_INVALID``; passing that to the caller would stop
  the loop on a provider fault.
- Any other 4xx is the caller's fault.
- A first SSE event carrying an error object is the provider's failure (SPEC §2.6): the status it
  names is used when that status means a provider failure, otherwise it is an invalid stream.

The reason kept for messages is ``redact``-ed: no key, no bearer token, at most 200 characters.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, cast

from gateway.core import rules
from gateway.core.attempt import Defect, Observed
from gateway.core.delay import ms_until_utc_midnight, stated_delay_ms

__all__ = ["Failure", "FailureKind", "Scope", "Source", "classify", "error_message", "redact", "scrub"]

Scope = Literal["key", "provider", "model", "none"]
Source = Literal["heuristic", "authoritative", "quota", "credit", "tier", "model", "loop"]


class FailureKind(StrEnum):
    """The class of a failed attempt; its value is the label in trails and messages (SPEC §4)."""

    AUTH = "auth"
    OUT_OF_CREDITS = "out_of_credits"
    FORBIDDEN = "forbidden"
    DAILY_QUOTA = "daily_quota_exhausted"
    RATE_LIMITED = "rate_limited"
    MODEL_NOT_FOUND = "model_not_found"
    CONTEXT_TOO_LARGE = "context_too_large"
    TIMEOUT = "timeout"
    UPSTREAM_ERROR = "upstream_error"
    NETWORK = "network"
    INVALID_STREAM = "invalid_stream"
    KEY_UNREADABLE = "key_unreadable"
    LOOP_DETECTED = "loop_detected"
    CALLER_ERROR = "caller_error"


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt, classified.

    ``cooldown_ms``: the cooldown asked for, in ms from the failure; 0 for none. Two cases leave
    the length to the ledger: ``ladder`` (a 429 on the transient ladder, ``cooldown_ms`` 0) and
    scope ``model`` (a 404 strike; ``cooldown_ms`` applies on the third strike).
    ``retry_after_ms``: the delay the upstream stated, if any (same-model retry, SPEC §4).
    ``reason``: the upstream's message or the defect's description, redacted.
    """

    kind: FailureKind
    scope: Scope
    source: Source | None
    cooldown_ms: int
    ladder: bool = False
    retry_after_ms: int | None = None
    status: int | None = None
    reason: str = ""


# --- Redaction -----------------------------------------------------------------------------

_BEARER = re.compile(r"\b(Bearer|Basic)\s+[^\s\"',;]+", re.IGNORECASE)
_QUERY_SECRET = re.compile(r"([?&](?:key|api[_-]?key|token|access_token|auth)=)[^&\s\"'#]+", re.IGNORECASE)
_PREFIXED_KEY = re.compile(r"\b(?:sk|gsk|csk|xai|nvapi|hf|pk|rk)[-_][A-Za-z0-9_\-]{8,}|\bAIza[0-9A-Za-z_\-]{10,}")
_LONG_RUN = re.compile(r"[A-Za-z0-9_\-]{" + str(rules.SECRET_SEGMENT_MIN_CHARS) + ",}")
_SEGMENT_SPLIT = re.compile(r"[-_]")
_REDACTED = "[redacted]"


def _mask_long_run(match: re.Match[str]) -> str:
    # A key is a long random run; a model id or a metric name is made of short or letter-only
    # words. So a run is masked when one of its -/_ segments is long and mixes letters and digits.
    for segment in _SEGMENT_SPLIT.split(match.group(0)):
        if len(segment) >= rules.SECRET_SEGMENT_MIN_CHARS and not segment.isalpha() and not segment.isdigit():
            return _REDACTED
    return match.group(0)


def scrub(text: str, secret: str) -> str:
    """``text`` without ``secret`` (a provider's key, whatever its format): some providers echo
    the key they were sent, and ``redact`` only recognises keys by their shape."""
    return text.replace(secret, _REDACTED) if secret and secret in text else text


def redact(text: str) -> str:
    """``text`` on one line, with bearer tokens, API keys, long random runs and ``key=``-like
    query parameters masked, cut to ``UPSTREAM_MESSAGE_MAX_CHARS`` characters (SPEC §4)."""
    text = " ".join(text[: rules.ERROR_TEXT_SCAN_CHARS].split())
    text = _BEARER.sub(lambda m: f"{m.group(1)} {_REDACTED}", text)
    text = _QUERY_SECRET.sub(lambda m: m.group(1) + _REDACTED, text)
    text = _PREFIXED_KEY.sub(_REDACTED, text)
    text = _LONG_RUN.sub(_mask_long_run, text)
    return text[: rules.UPSTREAM_MESSAGE_MAX_CHARS]


# --- Wording -------------------------------------------------------------------------------

_CONTEXT = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|prompt is too long"
    r"|context (?:length|window|size)",
    re.IGNORECASE,
)
_AUTH = re.compile(
    r"api[ _-]?key[ _](?:not[ _]valid|invalid|expired)|invalid[ _-]api[ _-]?key|incorrect api key",
    re.IGNORECASE,
)
_CREDIT = re.compile(
    r"insufficient[ _](?:quota|balance|credits?|funds)|payment required|out of credits"
    r"|credit balance",
    re.IGNORECASE,
)
_MODEL = re.compile(
    r"model[ _]not[ _]found|no such model|unknown model|no endpoints found"
    r"|model\b[^.\n]{0,80}\bdoes not exist",
    re.IGNORECASE,
)
_FORBIDDEN = re.compile(r"not allowed to access|(?:do|does) not have access|location is not supported", re.IGNORECASE)
_QUOTA = re.compile(r"\b(?:daily|per[ _-]day|allocation|quota)\b", re.IGNORECASE)
# Provider faults behind a 400/413/422, first match wins (an unknown model before "no access":
# OpenAI says "does not exist or you do not have access to it").
_PROVIDER_WORDING = ((_AUTH, 401), (_CREDIT, 402), (_MODEL, 404), (_FORBIDDEN, 403))
_WORDING_STATUSES = frozenset({400, 413, 422})
_CALLER_RULE: tuple[str, str, str | None, int] = ("caller_error", "none", None, 0)
_CONTEXT_RULE: tuple[str, str, str | None, int] = ("context_too_large", "none", None, 0)
_DEFECT_TEXT = {
    Defect.NETWORK: "network error",
    Defect.TIMEOUT: "no answer within the attempt timeout",
    Defect.NOT_SSE: "a stream was asked for but the answer is not text/event-stream",
    Defect.EMPTY_STREAM: "the stream closed with no data",
    Defect.ERROR_EVENT: "the first stream event is an error",
    Defect.KEY_UNREADABLE: "the stored API key cannot be decrypted; enter it again",
}


@dataclass(frozen=True, slots=True)
class _Answer:
    """An upstream error answer, read once: status, headers, JSON (or None), text, reason."""

    status: int
    observed: Observed
    parsed: Any
    text: str
    reason: str


def _failure(rule: tuple[str, str, str | None, int], status: int | None, reason: str) -> Failure:
    kind, scope, source, cooldown_ms = rule
    return Failure(
        FailureKind(kind),
        cast(Scope, scope),
        cast("Source | None", source),
        cooldown_ms,
        status=status,
        reason=reason,
    )


def _parse_json(text: str) -> Any:
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _error_object(parsed: Any) -> Any:
    if isinstance(parsed, list) and parsed:  # Gemini wraps its error in a list
        parsed = parsed[0]
    if isinstance(parsed, dict):
        error = parsed.get("error")
        return error if error is not None else parsed
    return None


def _message(parsed: Any) -> str | None:
    error = _error_object(parsed)
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        for key in ("message", "detail", "error"):
            value = error.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def error_message(text: str) -> str | None:
    """The message an upstream's error body states (OpenAI's ``error.message``, Gemini's listed
    error, a ``detail``), or None when it states none."""
    return _message(_parse_json(text))


def _embedded_status(parsed: Any) -> int | None:
    error = _error_object(parsed)
    if not isinstance(error, dict):
        return None
    for key in ("code", "status"):
        value = error.get(key)
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
            return value
    return None


def _rate_limited(answer: _Answer, now_ms: int) -> Failure:
    delay = stated_delay_ms(answer.observed.headers, answer.parsed, answer.text, now_ms)
    # Any stated delay outranks quota wording: Gemini's per-minute 429 says "quota" too.
    quota = delay is None and _QUOTA.search(answer.text) is not None
    source: Source
    if delay is not None and delay > rules.SHORT_RETRY_MAX_MS:
        source, cooldown_ms = "authoritative", delay
    elif quota:
        source, cooldown_ms = "quota", ms_until_utc_midnight(now_ms)
    else:
        source, cooldown_ms = "heuristic", 0
    return Failure(
        FailureKind.DAILY_QUOTA if quota else FailureKind.RATE_LIMITED,
        cast(Scope, rules.RATE_LIMIT_SCOPE),
        source,
        cooldown_ms,
        ladder=source == "heuristic",
        retry_after_ms=delay,
        status=429,
        reason=answer.reason,
    )


def _classify_status(answer: _Answer, now_ms: int) -> Failure:
    status = answer.status
    if status == 429:
        return _rate_limited(answer, now_ms)
    if status in _WORDING_STATUSES:
        if _CONTEXT.search(answer.text):
            return _failure(_CONTEXT_RULE, status, answer.reason)
        for pattern, as_status in _PROVIDER_WORDING:
            if pattern.search(answer.text):
                return _failure(rules.STATUS_RULES[as_status], status, answer.reason)
    rule = rules.STATUS_RULES.get(status)
    if rule is None:
        rule = _CALLER_RULE if 400 <= status < 500 else rules.SERVER_ERROR_RULE
    return _failure(rule, status, answer.reason)


def classify(observed: Observed, now_ms: int) -> Failure:
    """The meaning of ``observed`` (an attempt that did not deliver) at ``now_ms`` (epoch ms).

    ``Failure.status`` is the upstream's HTTP status, or the one an error event names; None for
    a transport defect (a 200 whose stream is broken is not a "200" failure). Never raises; an
    answer that fits no rule is an upstream error.
    """
    defect = observed.defect
    if defect is not None and defect is not Defect.ERROR_EVENT:
        reason = redact(observed.detail or _DEFECT_TEXT[defect])
        return _failure(rules.DEFECT_RULES[defect], None, reason)
    text = observed.body[: rules.ERROR_TEXT_SCAN_CHARS]
    parsed = _parse_json(text)
    if defect is not None:
        fallback = _DEFECT_TEXT[defect]
    else:
        fallback = f"HTTP {observed.status}" if observed.status else "no status"
    reason = redact(_message(parsed) or text or observed.detail or fallback)
    if defect is Defect.ERROR_EVENT:
        status = _embedded_status(parsed)
        if status is not None:
            failure = _classify_status(_Answer(status, observed, parsed, text, reason), now_ms)
            if failure.kind is not FailureKind.CALLER_ERROR:
                return failure
        return _failure(rules.DEFECT_RULES[defect], None, reason)
    if observed.status is None:
        return _failure(rules.SERVER_ERROR_RULE, None, reason)
    return _classify_status(_Answer(observed.status, observed, parsed, text, reason), now_ms)
