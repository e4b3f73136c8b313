"""Classification of a failed attempt (SPEC §4, §5.1), stated delays and redaction."""

from __future__ import annotations

import json
from email.utils import formatdate

import pytest

from gateway.core import rules
from gateway.core.attempt import Defect, Observed
from gateway.core.classify import FailureKind, classify, redact, scrub
from gateway.core.delay import ms_until_utc_midnight, parse_duration_ms, stated_delay_ms
from support.factories import T0

K = FailureKind
S, M, H = rules.SECOND_MS, rules.MINUTE_MS, rules.HOUR_MS
TRANSIENT = rules.TRANSIENT_COOLDOWN_MS
UNTIL_MIDNIGHT = ms_until_utc_midnight(T0)


def http(status: int, body: str = "", **headers: str) -> Observed:
    return Observed(status=status, headers={k.replace("_", "-"): v for k, v in headers.items()}, body=body)


def err(message: str, **extra: object) -> str:
    return json.dumps({"error": {"message": message, **extra}})


GEMINI_RETRY = json.dumps([{"error": {
    "code": 429, "message": "You exceeded your current quota, please check your plan.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "{}"}],
}}])  # fmt: skip

# (observed, kind, scope, source, cooldown_ms, ladder, retry_after_ms)
ROWS = [
    pytest.param(http(401, err("Invalid API Key")), K.AUTH, "key", "heuristic",
                 rules.AUTH_COOLDOWN_MS, False, None, id="401-invalid-key-5min"),
    pytest.param(http(402, err("Payment required")), K.OUT_OF_CREDITS, "key", "credit",
                 rules.CREDIT_COOLDOWN_MS, False, None, id="402-credit-24h"),
    pytest.param(http(403, err("tier")), K.FORBIDDEN, "key", "tier",
                 rules.TIER_COOLDOWN_MS, False, None, id="403-tier-24h"),
    pytest.param(http(429, retry_after="300"), K.RATE_LIMITED, "key", "authoritative",
                 300 * S, False, 300 * S, id="429-retry-after-seconds-authoritative"),
    pytest.param(http(429, retry_after=formatdate(T0 / 1000 + 120, usegmt=True)),
                 K.RATE_LIMITED, "key", "authoritative", 120 * S, False, 120 * S,
                 id="429-retry-after-http-date"),
    pytest.param(http(429, retry_after="99999999999"), K.RATE_LIMITED, "key",
                 "authoritative", rules.DAY_MS, False, rules.DAY_MS, id="429-capped-at-24h"),
    pytest.param(http(429, GEMINI_RETRY.replace("{}", "170s")), K.RATE_LIMITED, "key",
                 "authoritative", 170 * S, False, 170 * S, id="429-gemini-retryDelay-long"),
    pytest.param(http(429, err("Please try again in 7m12s.")), K.RATE_LIMITED, "key",
                 "authoritative", 432 * S, False, 432 * S, id="429-prose-7m12s"),
    pytest.param(http(429, err("Requests per day (RPD): Limit 1000. Please try again in 7m12s")),
                 K.RATE_LIMITED, "key", "authoritative", 432 * S, False, 432 * S,
                 id="429-daily-wording-with-long-delay-authoritative"),
    pytest.param(http(429, err("you have used up your daily free allocation of 10,000 neurons")),
                 K.DAILY_QUOTA, "key", "quota", UNTIL_MIDNIGHT, False, None,
                 id="429-daily-allocation-until-midnight"),
    pytest.param(http(429, err("Quota exceeded for this project")), K.DAILY_QUOTA, "key",
                 "quota", UNTIL_MIDNIGHT, False, None, id="429-quota-until-midnight"),
    pytest.param(http(429, GEMINI_RETRY.replace("{}", "17s")), K.RATE_LIMITED, "key",
                 "heuristic", 0, True, 17 * S, id="429-quota-wording-short-retryDelay-ladder"),
    pytest.param(http(429, err("Rate limited, please try again in 2.5s")), K.RATE_LIMITED,
                 "key", "heuristic", 0, True, 2500, id="429-prose-2.5s-ladder"),
    pytest.param(http(429, err("Too many requests, retry in 20 seconds")), K.RATE_LIMITED,
                 "key", "heuristic", 0, True, 20 * S, id="429-prose-20-seconds-ladder"),
    pytest.param(http(429, retry_after="90"), K.RATE_LIMITED, "key", "heuristic", 0, True,
                 90 * S, id="429-retry-after-90s-is-short"),
    pytest.param(http(429, retry_after="91"), K.RATE_LIMITED, "key", "authoritative",
                 91 * S, False, 91 * S, id="429-retry-after-91s-is-authoritative"),
    pytest.param(http(429, retry_after_ms="1500"), K.RATE_LIMITED, "key", "heuristic", 0,
                 True, 1500, id="429-retry-after-ms-header"),
    pytest.param(http(429, retry_after=formatdate(T0 / 1000 - 60, usegmt=True)),
                 K.RATE_LIMITED, "key", "heuristic", 0, True, 0, id="429-past-date-is-0"),
    pytest.param(http(429, retry_after="soon"), K.RATE_LIMITED, "key", "heuristic", 0,
                 True, None, id="429-unreadable-retry-after-ignored"),
    pytest.param(http(429, "429 Too Many Requests"), K.RATE_LIMITED, "key", "heuristic", 0,
                 True, None, id="429-plain-ladder"),
    pytest.param(http(429, err("tokens per minute (TPM): Limit 30000, Requested 33476")),
                 K.RATE_LIMITED, "key", "heuristic", 0, True, None,
                 id="429-per-minute-is-not-daily"),
    pytest.param(http(429, err("limit of 1000 requests in 24 hours reached")), K.RATE_LIMITED,
                 "key", "heuristic", 0, True, None, id="429-window-is-not-a-delay"),
    pytest.param(http(429, err("You exceeded your current quota", code="insufficient_quota")),
                 K.DAILY_QUOTA, "key", "quota", UNTIL_MIDNIGHT, False, None,
                 id="429-insufficient-quota-is-quota"),
    pytest.param(http(500), K.UPSTREAM_ERROR, "provider", "heuristic", TRANSIENT, False, None,
                 id="500-90s"),
    pytest.param(http(503, "<html>busy</html>"), K.UPSTREAM_ERROR, "provider", "heuristic",
                 TRANSIENT, False, None, id="503-90s"),
    pytest.param(http(408), K.TIMEOUT, "provider", "heuristic", TRANSIENT, False, None,
                 id="408-90s"),
    pytest.param(http(508, err("Request loop", type="invalid_request_error", code="loop_detected")),
                 K.LOOP_DETECTED, "provider", "loop", rules.DAY_MS, False, None,
                 id="508-loop-24h"),
    pytest.param(http(508), K.LOOP_DETECTED, "provider", "loop", rules.DAY_MS, False, None,
                 id="508-any-body-is-a-loop"),
    pytest.param(Observed(status=200, defect=Defect.ERROR_EVENT, body=err("loop", code=508)),
                 K.LOOP_DETECTED, "provider", "loop", rules.DAY_MS, False, None,
                 id="error-event-naming-508-loop"),
    pytest.param(http(302), K.UPSTREAM_ERROR, "provider", "heuristic", TRANSIENT, False, None,
                 id="unexpected-status-90s"),
    pytest.param(Observed(defect=Defect.NETWORK), K.NETWORK, "provider", "heuristic", TRANSIENT,
                 False, None, id="network-90s"),
    pytest.param(Observed(defect=Defect.TIMEOUT), K.TIMEOUT, "provider", "heuristic", TRANSIENT,
                 False, None, id="timeout-90s"),
    pytest.param(Observed(status=200, defect=Defect.EMPTY_STREAM), K.INVALID_STREAM, "provider",
                 "heuristic", TRANSIENT, False, None, id="empty-stream-90s"),
    pytest.param(Observed(status=200, defect=Defect.NOT_SSE), K.INVALID_STREAM, "provider",
                 "heuristic", TRANSIENT, False, None, id="not-sse-90s"),
    pytest.param(Observed(status=200, defect=Defect.ERROR_EVENT, body=err("boom")),
                 K.INVALID_STREAM, "provider", "heuristic", TRANSIENT, False, None,
                 id="error-event-90s"),
    pytest.param(Observed(status=200, defect=Defect.ERROR_EVENT, body=err("slow down", code=429)),
                 K.RATE_LIMITED, "key", "heuristic", 0, True, None,
                 id="error-event-naming-429-ladder"),
    pytest.param(Observed(status=200, defect=Defect.ERROR_EVENT, body=err("bad", code=400)),
                 K.INVALID_STREAM, "provider", "heuristic", TRANSIENT, False, None,
                 id="error-event-naming-400-is-still-the-provider"),
    pytest.param(Observed(defect=Defect.KEY_UNREADABLE), K.KEY_UNREADABLE, "none", None, 0,
                 False, None, id="key-unreadable-no-cooldown"),
    pytest.param(http(404, err("model not found")), K.MODEL_NOT_FOUND, "model", "model",
                 rules.MODEL_COOLDOWN_MS, False, None, id="404-model-strike"),
    pytest.param(http(410), K.MODEL_NOT_FOUND, "model", "model", rules.MODEL_COOLDOWN_MS, False,
                 None, id="410-gone-is-model-retired"),
    pytest.param(http(400, err("too long", code="context_length_exceeded")), K.CONTEXT_TOO_LARGE,
                 "none", None, 0, False, None, id="400-context_length_exceeded"),
    pytest.param(http(400, err("This model's maximum context length is 8192 tokens")),
                 K.CONTEXT_TOO_LARGE, "none", None, 0, False, None,
                 id="400-maximum-context-length"),
    pytest.param(http(413, err("prompt is too long: 250000 tokens > 200000 maximum")),
                 K.CONTEXT_TOO_LARGE, "none", None, 0, False, None, id="413-prompt-is-too-long"),
    pytest.param(http(400, err("messages: field required")), K.CALLER_ERROR, "none", None, 0,
                 False, None, id="400-caller"),
    pytest.param(http(422, err("temperature must be <= 2")), K.CALLER_ERROR, "none", None, 0,
                 False, None, id="422-caller"),
    pytest.param(http(400, err("Your request was rejected by the content policy")),
                 K.CALLER_ERROR, "none", None, 0, False, None, id="400-content-policy-caller"),
    pytest.param(http(413, "Request Entity Too Large"), K.CALLER_ERROR, "none", None, 0, False,
                 None, id="413-without-context-wording-caller"),
    pytest.param(http(409), K.CALLER_ERROR, "none", None, 0, False, None, id="409-caller"),
    pytest.param(http(400, err("API key not valid. Please pass a valid API key.")), K.AUTH,
                 "key", "heuristic", rules.AUTH_COOLDOWN_MS, False, None,
                 id="400-google-bad-key-is-auth"),
    pytest.param(http(400, err("The model `x` does not exist or you do not have access to it.")),
                 K.MODEL_NOT_FOUND, "model", "model", rules.MODEL_COOLDOWN_MS, False, None,
                 id="400-model-does-not-exist"),
    pytest.param(http(400, err("User location is not supported for the API use.")),
                 K.FORBIDDEN, "key", "tier", rules.TIER_COOLDOWN_MS, False, None,
                 id="400-region-is-tier"),
]  # fmt: skip


@pytest.mark.parametrize(("observed", "kind", "scope", "source", "cooldown_ms", "ladder", "retry_after_ms"), ROWS)
def test_classify(observed, kind, scope, source, cooldown_ms, ladder, retry_after_ms):
    failure = classify(observed, T0)

    assert (failure.kind, failure.scope, failure.source) == (kind, scope, source)
    assert (failure.cooldown_ms, failure.ladder) == (cooldown_ms, ladder)
    assert failure.retry_after_ms == retry_after_ms


def test_status_is_kept_and_reason_is_the_redacted_upstream_message():
    failure = classify(http(401, err("Incorrect API key provided: sk-abcdefghijklmnop")), T0)

    assert failure.status == 401
    assert failure.reason == "Incorrect API key provided: [redacted]"


def test_defect_reason_prefers_the_shell_detail():
    detail = "the key of provider 'groq' cannot be decrypted: bad tag"
    failure = classify(Observed(defect=Defect.KEY_UNREADABLE, detail=detail), T0)

    assert failure.reason == detail


@pytest.mark.parametrize(
    ("now_ms", "expected"),
    [
        pytest.param(T0 - T0 % rules.DAY_MS + rules.DAY_MS - 100, rules.QUOTA_MIN_COOLDOWN_MS,
                     id="23:59:59.900-floored-to-60s"),
        pytest.param(T0 - T0 % rules.DAY_MS + rules.DAY_MS - 2 * M, 2 * M, id="23:58-2min"),
        pytest.param(T0 - T0 % rules.DAY_MS + 12 * H, 12 * H, id="noon-12h"),
        pytest.param(T0 - T0 % rules.DAY_MS, rules.DAY_MS, id="midnight-a-full-day"),
    ],
)  # fmt: skip
def test_ms_until_utc_midnight(now_ms, expected):
    assert ms_until_utc_midnight(now_ms) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("17s", 17 * S, id="protobuf-seconds"),
        pytest.param("17", 17 * S, id="bare-seconds"),
        pytest.param("2.5s", 2500, id="fraction"),
        pytest.param("7m12s", 432 * S, id="minutes-seconds"),
        pytest.param("1h 2m", H + 2 * M, id="hours-minutes"),
        pytest.param("20 seconds", 20 * S, id="words"),
        pytest.param("500ms", 500, id="milliseconds"),
        pytest.param("soon", None, id="not-a-duration"),
        pytest.param("5 apples", None, id="unknown-unit"),
        pytest.param("nan", None, id="nan-is-not-a-number-here"),
    ],
)
def test_parse_duration_ms(text, expected):
    assert parse_duration_ms(text) == expected


def test_header_delay_wins_over_the_body():
    body = json.loads(GEMINI_RETRY.replace("{}", "17s"))

    assert stated_delay_ms({"retry-after": "5"}, body, "", T0) == 5 * S
    assert stated_delay_ms({}, body, "", T0) == 17 * S


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("auth Bearer abc.def-123 x", "auth Bearer [redacted] x", id="bearer"),
        pytest.param("key sk-proj-abcdefgh12345678 bad", "key [redacted] bad", id="openai-key"),
        pytest.param("gsk_ABCDEFGH12345678abcd wrong", "[redacted] wrong", id="groq-key"),
        pytest.param("AIzaSyA1234567890abcdefghij nope", "[redacted] nope", id="google-key"),
        pytest.param("GET /v1?key=secret123&alt=sse", "GET /v1?key=[redacted]&alt=sse",
                     id="key-query-param"),
        pytest.param("token 0123456789abcdef0123456789abcdef end", "token [redacted] end",
                     id="hex-secret"),
        pytest.param("model meta-llama/Llama-3.3-70B-Instruct-Turbo is busy",
                     "model meta-llama/Llama-3.3-70B-Instruct-Turbo is busy", id="model-id-kept"),
        pytest.param("metric generate_content_free_tier_requests hit",
                     "metric generate_content_free_tier_requests hit", id="metric-name-kept"),
        pytest.param("line one\n\n  line two", "line one line two", id="one-line"),
    ],
)  # fmt: skip
def test_redact(text, expected):
    assert redact(text) == expected


def test_redact_cuts_to_200_chars_after_masking():
    text = "x " * 99 + "sk-abcdefghijklmnopqrstuvwxyz" + " tail" * 100

    redacted = redact(text)

    assert len(redacted) == rules.UPSTREAM_MESSAGE_MAX_CHARS
    assert "sk-" not in redacted and "abcdefgh" not in redacted


@pytest.mark.parametrize(
    ("observed", "status", "reason"),
    [
        pytest.param(Observed(status=200, defect=Defect.EMPTY_STREAM), None,
                     "the stream closed with no data", id="defect-has-no-status"),
        pytest.param(Observed(status=200, defect=Defect.ERROR_EVENT), None,
                     "the first stream event is an error", id="empty-error-event"),
        pytest.param(Observed(status=200, defect=Defect.ERROR_EVENT, body=err("slow", code=429)),
                     429, "slow", id="error-event-names-its-status"),
        pytest.param(http(502), 502, "HTTP 502", id="empty-body-says-the-status"),
        pytest.param(http(500, '[{"error": {"message": "gemini says no"}}]'), 500,
                     "gemini says no", id="message-from-a-listed-error"),
    ],
)  # fmt: skip
def test_status_and_reason(observed, status, reason):
    failure = classify(observed, T0)

    assert (failure.status, failure.reason) == (status, reason)


def test_scrub_removes_a_key_of_any_shape():
    assert scrub("bad key acct:tok.123 here", "acct:tok.123") == "bad key [redacted] here"
    assert scrub("nothing to hide", "acct:tok.123") == "nothing to hide"


# --- Cooldown scope (SPEC §13): what a key may cause cools the key, the platform the provider ---


@pytest.mark.parametrize(
    ("observed", "scope"),
    [
        pytest.param(http(401), "key", id="401"),
        pytest.param(http(402), "key", id="402"),
        pytest.param(http(403), "key", id="403"),
        pytest.param(http(400, err("API key not valid. API_KEY_INVALID")), "key", id="400-bad-key"),
        pytest.param(http(429), "key", id="429-ladder"),
        pytest.param(http(429, retry_after="600"), "key", id="429-authoritative"),
        pytest.param(http(429, err("daily quota exceeded")), "key", id="429-quota"),
        pytest.param(http(500), "provider", id="500"),
        pytest.param(http(503), "provider", id="503"),
        pytest.param(http(408), "provider", id="408"),
        pytest.param(http(508), "provider", id="508-loop"),
        pytest.param(Observed(defect=Defect.NETWORK), "provider", id="network"),
        pytest.param(Observed(defect=Defect.TIMEOUT), "provider", id="timeout"),
        pytest.param(Observed(status=200, defect=Defect.EMPTY_STREAM), "provider", id="empty-stream"),
        pytest.param(Observed(status=200, defect=Defect.NOT_SSE), "provider", id="not-sse"),
        pytest.param(http(404), "model", id="404"),
        pytest.param(http(410), "model", id="410"),
        pytest.param(Observed(defect=Defect.KEY_UNREADABLE), "none", id="key-unreadable"),
        pytest.param(http(400, err("bad field")), "none", id="caller-400"),
    ],
)  # fmt: skip
def test_cooldown_scope(observed, scope):
    assert classify(observed, T0).scope == scope
