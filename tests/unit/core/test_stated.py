"""Limits an upstream states in its error answers (SPEC §19): a 429's caps and a
context-length error's window.

Bodies are real answers pasted in public issues (organisation ids replaced), named per row; a
row marked "shape" keeps a real answer's wording with another figure."""

from __future__ import annotations

import json

import pytest

from gateway.core.modelfacts import NO_FACTS, Facts
from gateway.core.stated import stated_caps, stated_context


def err(message: str, **extra: object) -> str:
    return json.dumps({"error": {"message": message, **extra}})


# Groq, Aider-AI/aider#3265 and openinterpreter/openinterpreter#408.
GROQ_TPM = err(
    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_…` on tokens per "
    "minute (TPM): Limit 6000, Used 3513, Requested 3166. Please try again in 6.780999999s. Visit "
    "https://console.groq.com/docs/rate-limits for more information.",
    type="tokens", code="rate_limit_exceeded",
)  # fmt: skip
# Groq, continuedev/continue#10920: tokens per day, which has no field.
GROQ_TPD = (
    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_…` service tier "
    "`on_demand` on tokens per day (TPD): Limit 100000, Used 97050, Requested 3619. Please try again "
    "in 9m38.016s. Need more tokens%3F Upgrade to Dev Tier today at https://console.groq.com/settings/billing"
)
# Groq's requests-per-minute wording, as the brief quotes it.
GROQ_RPM = err(
    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_…` service tier "
    "`on_demand` on requests per minute (RPM): Limit 30, Used 30, Requested 1. Please try again in 2s.",
    type="requests", code="rate_limit_exceeded",
)  # fmt: skip
# OpenAI, openai/openai-agents-js#1022: Groq's format, per day.
OPENAI_RPD = (
    "Rate limit reached for gpt-4o-mini-realtime in organization org-… on requests per day (RPD): "
    "Limit 1000, Used 1000, Requested 1. Please try again in 1m26.4s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more."
)
# Groq, bklieger-groq/stockbot-on-groq#46 (2024): no window named.
GROQ_NO_WINDOW = (
    "Rate limit reached for model `llama3-70b-8192` in organization `org_…` on : Limit 500000, Used "
    "500370, Requested 252. Please try again in 1m47.5854s. Visit https://console.groq.com/docs/rate-limits "
    "for more information."
)
# Groq's header table (console.groq.com/docs/rate-limits, quoted in Pythagora-io/gpt-pilot#862).
GROQ_HEADERS = {"retry-after": "2", "x-ratelimit-limit-requests": "14400", "x-ratelimit-limit-tokens": "18000",
                "x-ratelimit-remaining-requests": "14370", "x-ratelimit-remaining-tokens": "17997"}  # fmt: skip


def gemini_quota(model: str, limit: str, violations: list[dict[str, object]]) -> str:
    """Gemini's 429 as the API returns it (the body of a public repository's test log)."""
    return json.dumps({"error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor "
        "your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: "
        f"generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: {limit}, model: {model}"
        "\nPlease retry in 23.427375969s.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": violations},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "23s"},
        ],
    }}, indent=2)  # fmt: skip


def violation(quota_id: str, value: str, metric: str = "requests") -> dict[str, object]:
    return {
        "quotaMetric": f"generativelanguage.googleapis.com/generate_content_free_tier_{metric}",
        "quotaId": quota_id,
        "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
        "quotaValue": value,
    }


PER_DAY = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
PER_MINUTE = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
INPUT_TOKENS = "GenerateContentInputTokensPerModelPerMinute-FreeTier"
GEMINI_PER_DAY = gemini_quota("gemini-2.5-flash", "20", [violation(PER_DAY, "20")])
# Gemini through a client that wrapped its answer in its own (continuedev/continue#9570): limit 0.
GEMINI_LIMIT_ZERO = json.dumps({"error": {"message": json.dumps({"error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details. For more information "
    "on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head "
    "to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: "
    "generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-3-pro\n* Quota "
    "exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, "
    "model: gemini-3-pro\nPlease retry in 45.578569677s.",
    "status": "RESOURCE_EXHAUSTED",
}}, indent=2)}})  # fmt: skip
# Gemini, google-gemini/gemini-cli#8437: a Python client's repr, quotaIds without quotaValue.
GEMINI_NO_VALUE = (
    "429 RESOURCE_EXHAUSTED. {'error': {'code': 429, 'message': 'You exceeded your current quota, please check "
    "your plan and billing details. For more information on this error, head to: "
    "https://ai.google.dev/gemini-api/docs/rate-limits.', 'status': 'RESOURCE_EXHAUSTED', 'details': [{'@type': "
    "'type.googleapis.com/google.rpc.QuotaFailure', 'violations': [{'quotaMetric': "
    "'generativelanguage.googleapis.com/generate_content_free_tier_input_token_count', 'quotaId': "
    "'GenerateContentInputTokensPerModelPerMinute-FreeTier', 'quotaDimensions': {'location': 'global', 'model': "
    "'gemini-2.5-flash-preview-image'}}, {'quotaMetric': "
    "'generativelanguage.googleapis.com/generate_content_free_tier_requests', 'quotaId': "
    "'GenerateRequestsPerMinutePerProjectPerModel-FreeTier', 'quotaDimensions': {'location': 'global', 'model': "
    "'gemini-2.5-flash-preview-image'}}]}]}}"
)
# OpenRouter (body of a public repository's test, user id replaced).
OPENROUTER_PER_MIN = json.dumps({"error": {
    "message": "Rate limit exceeded: free-models-per-min. ", "code": 429,
    "metadata": {"headers": {"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "0",
                             "X-RateLimit-Reset": "1759750012000"}}}, "user_id": "user_…"})  # fmt: skip
# OpenRouter, Gitlawb/openclaude#936 (as pasted, cut after X-RateLimit-Remaining).
OPENROUTER_PER_DAY = json.dumps({"error": {
    "message": "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day",
    "code": 429, "metadata": {"headers": {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0"}}}})  # fmt: skip
# OpenRouter, Gitlawb/openclaude#1549.
OPENROUTER_HIGH_BALANCE = (
    '{"error":{"message":"Rate limit exceeded: free-models-per-day-high-balance.",'
    '"type":"rate_limit_error","code":"429"}}'
)
# Cerebras, continuedev/continue#9800; headers from inference-docs.cerebras.ai/support/rate-limits.
CEREBRAS = '"Tokens per minute limit exceeded - too many tokens processed."'
CEREBRAS_HEADERS = {"x-ratelimit-limit-requests-day": "1000000000", "x-ratelimit-limit-tokens-minute": "1000000000",
                    "x-ratelimit-remaining-requests-day": "999997455",
                    "x-ratelimit-reset-requests-day": "33011.382867097855"}  # fmt: skip
# Mistral, cline/cline#9085 and pydantic/pydantic-ai#1885; headers from mistralai/client-ts#169.
MISTRAL = '{"object":"error","message":"Rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}'
MISTRAL_OLD = '{"message":"Requests rate limit exceeded"}'
MISTRAL_HEADERS = {"x-ratelimit-limit-tokens-minute": "5000000", "x-ratelimit-remaining-tokens-minute": "4999911",
                   "x-ratelimit-tokens-query-cost": "52", "x-ratelimit-limit-req-minute": "720",
                   "x-ratelimit-remaining-req-minute": "717"}  # fmt: skip

# (body, headers, platform, expected)
CAPS = [
    pytest.param(GROQ_TPM, {}, "groq", Facts(tpm=6000), id="groq-tpm"),
    pytest.param(GROQ_RPM, {}, "groq", Facts(rpm=30), id="groq-rpm"),
    pytest.param(GROQ_TPD, {}, "groq", NO_FACTS, id="groq-tpd-has-no-field"),
    pytest.param(OPENAI_RPD, {}, None, Facts(rpd=1000), id="openai-rpd-same-format"),
    pytest.param(GROQ_NO_WINDOW, {}, "groq", NO_FACTS, id="groq-2024-no-window-named"),
    pytest.param("", GROQ_HEADERS, "groq", Facts(rpd=14400, tpm=18000), id="groq-headers-requests-per-day"),
    pytest.param("", GROQ_HEADERS, None, Facts(tpm=18000), id="bare-requests-header-needs-groq"),
    pytest.param(GROQ_TPM, GROQ_HEADERS, "groq", Facts(rpd=14400, tpm=6000), id="groq-lower-of-body-and-header"),
    pytest.param(GEMINI_PER_DAY, {}, "gemini", Facts(rpd=20), id="gemini-quotafailure-per-day"),
    pytest.param(gemini_quota("gemini-2.5-flash", "10", [violation(PER_MINUTE, "10")]), {}, "gemini",
                 Facts(rpm=10), id="gemini-quotafailure-per-minute-shape"),
    pytest.param(gemini_quota("gemini-2.5-flash", "10", [
                     violation(INPUT_TOKENS, "250000", "input_token_count"), violation(PER_MINUTE, "10"),
                     violation(PER_DAY, "250")]), {}, "gemini",
                 Facts(rpm=10, rpd=250, tpm=250000), id="gemini-three-violations-shape"),
    pytest.param(gemini_quota("gemini-2.5-flash", "10", [violation(PER_DAY, "20"), violation(PER_DAY, "15")]),
                 {}, "gemini", Facts(rpd=15), id="gemini-lowest-of-two"),
    pytest.param(GEMINI_LIMIT_ZERO, {}, "gemini", NO_FACTS, id="gemini-limit-zero-wrapped"),
    pytest.param(GEMINI_NO_VALUE, {}, "gemini", NO_FACTS, id="gemini-quota-ids-without-values"),
    pytest.param(GEMINI_LIMIT_ZERO.replace("limit: 0, model: gemini-3-pro\\\\nPlease", "limit: 250000, model: "
                 "gemini-3-pro\\\\nPlease"), {}, "gemini", Facts(tpm=250000), id="gemini-prose-input-tokens-shape"),
    pytest.param(GEMINI_PER_DAY.replace(PER_DAY, "SomethingElse"), {}, "gemini", NO_FACTS,
                 id="gemini-prose-requests-names-no-window"),
    pytest.param(OPENROUTER_PER_MIN, {}, "openrouter", Facts(rpm=20), id="openrouter-per-min"),
    pytest.param(OPENROUTER_PER_DAY, {}, "openrouter", Facts(rpd=50), id="openrouter-per-day-not-the-1000"),
    pytest.param(OPENROUTER_HIGH_BALANCE, {}, "openrouter", NO_FACTS, id="openrouter-no-limit-stated"),
    pytest.param(OPENROUTER_HIGH_BALANCE, {"X-RateLimit-Limit": "1000"}, "openrouter", Facts(rpd=1000),
                 id="openrouter-limit-in-response-header"),
    pytest.param(err("Rate limit exceeded: free-models-per-min"), {"retry-after": "30"}, "openrouter", NO_FACTS,
                 id="openrouter-per-min-without-limit"),
    pytest.param(CEREBRAS, {}, "cerebras", NO_FACTS, id="cerebras-body-states-no-figure"),
    pytest.param(CEREBRAS, CEREBRAS_HEADERS, "cerebras", Facts(rpd=1000000000, tpm=1000000000),
                 id="cerebras-windowed-headers"),
    pytest.param("", {"X-RateLimit-Limit-Requests-Day": "14400"}, None, Facts(rpd=14400), id="header-name-case"),
    pytest.param(MISTRAL, {}, "mistral", NO_FACTS, id="mistral-states-no-figure"),
    pytest.param(MISTRAL_OLD, {}, "mistral", NO_FACTS, id="mistral-2025-states-no-figure"),
    pytest.param(MISTRAL, MISTRAL_HEADERS, "mistral", Facts(rpm=720, tpm=5000000), id="mistral-headers"),
    pytest.param("", {"x-ratelimit-limit-tokens-day": "1000000"}, None, NO_FACTS, id="tokens-per-day-ignored"),
    pytest.param("", {"x-ratelimit-limit-requests-day": "0", "x-ratelimit-limit-tokens-minute": "lots"}, None,
                 NO_FACTS, id="zero-and-words-ignored"),
    pytest.param("", {"x-ratelimit-limit-requests": "500"}, None, NO_FACTS, id="openai-style-bare-requests"),
    pytest.param("Too Many Requests", {}, None, NO_FACTS, id="plain-text"),
    pytest.param("", {}, None, NO_FACTS, id="empty"),
    pytest.param("{not json", {}, None, NO_FACTS, id="broken-json"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "headers", "platform", "expected"), CAPS)
def test_stated_caps(body, headers, platform, expected):
    assert stated_caps(body, headers, platform=platform) == expected


CONTEXTS = [
    pytest.param(err("This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 "
                     "tokens. Please reduce the length of the messages.", type="invalid_request_error",
                     param="messages", code="context_length_exceeded"), 8192,
                 id="openai-crewAI-examples-121"),
    pytest.param(err("This model's maximum context length is 8192 tokens, however you requested 8977 tokens (8977 in "
                     "your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
                     type="invalid_request_error", param=None, code=None), 8192,
                 id="openrouter-openrouter-examples-10"),
    pytest.param("This endpoint's maximum context length is 163,840 tokens. However, you requested about 170000 "
                 "tokens.", 163840, id="openrouter-endpoint-wording-shape"),
    pytest.param("ValueError: This model's maximum context length is 8192 tokens. However, you requested 8203 tokens "
                 "(7691 in the messages, 512 in the completion). Please reduce the length of the messages or "
                 "completion.", 8192, id="vllm-specreason-4"),
    pytest.param("Prompt contains 300000 tokens, too large for model with 131072 maximum context length", 131072,
                 id="mistral"),
    pytest.param("The input token count (1300000) exceeds the maximum number of tokens allowed (1048575).", 1048575,
                 id="gemini"),
    pytest.param(json.dumps({"error": {"code": 400, "message": "The input token count exceeds the maximum number of "
                 "tokens allowed 1048576.", "status": "INVALID_ARGUMENT"}}), 1048576, id="gemini-no-count"),
    pytest.param("400 Input length (265330) exceeds model's maximum context length (262144).", 262144,
                 id="input-length-wording"),
    pytest.param("This model's maximum prompt length is 131072 but the request contains 537812 tokens", 131072,
                 id="xai"),
    pytest.param("Your request exceeded model token limit: 262144 (requested: 300000)", 262144, id="kimi"),
    pytest.param(err("Please reduce the length of the messages or completion.", type="invalid_request_error",
                     code="context_length_exceeded"), None, id="groq-states-no-window"),
    pytest.param("This model's maximum context length is 0 tokens.", None, id="zero-window"),
    pytest.param("", None, id="empty"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "expected"), CONTEXTS)
def test_stated_context(body, expected):
    assert stated_context(body) == expected
