"""Rescue of a cut stream (SPEC §16): when it is allowed, and the request each platform gets."""

from __future__ import annotations

import copy

import pytest

from gateway.core import rules
from gateway.core.rescue import (
    Method,
    Refusal,
    RescueLog,
    RescueRecord,
    Streamed,
    continue_instruction,
    eligibility,
    plan_rescue,
    prefill_of,
    request_refusal,
    rescue_enabled,
)
from gateway.core.sse import Fault

BODY = {
    "model": "deepseek-chat",
    "stream": True,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Tell me about rivers."},
    ],
    "temperature": 0.2,
}
PARTIAL = "Rivers carve valleys over millions of years, and the water slowly"


def streamed(text: str = PARTIAL, **flags) -> Streamed:
    s = Streamed(**flags)
    for word in text.split(" "):
        s.add_text(word + " ")
    return s


# --- Whether ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "client", "enabled"),
    [
        pytest.param(False, None, False, id="setting-off"),
        pytest.param(True, None, True, id="setting-on"),
        pytest.param(False, True, True, id="client-on-over-setting-off"),
        pytest.param(True, False, False, id="client-off-over-setting-on"),
        pytest.param(True, True, True, id="both-on"),
    ],
)
def test_the_client_switch_overrides_the_setting(setting, client, enabled):
    assert rescue_enabled(setting, client) is enabled


@pytest.mark.parametrize("fault", [Fault.CUT, Fault.TRUNCATED, Fault.STALLED, Fault.PROVIDER_ERROR])
def test_a_transport_fault_mid_text_is_rescued(fault):
    found = eligibility(True, BODY, streamed(), fault)

    assert found.allowed is True
    assert found.reason == fault.value


def test_a_partial_with_reasoning_is_rescued():
    assert eligibility(True, BODY, streamed(reasoning=True), Fault.CUT).allowed is True


def test_openrouters_error_finish_is_a_cut_not_an_end():
    assert eligibility(True, BODY, streamed(finish_reason="error"), Fault.PROVIDER_ERROR).allowed is True


@pytest.mark.parametrize(
    ("enabled", "body", "flags", "fault", "refusal"),
    [
        pytest.param(False, BODY, {}, Fault.CUT, Refusal.OFF, id="off"),
        pytest.param(True, {**BODY, "stream": False}, {}, Fault.CUT, Refusal.NOT_STREAMED, id="not-streamed"),
        pytest.param(True, {**BODY, "n": 2}, {}, Fault.CUT, Refusal.SEVERAL_CHOICES, id="several-choices"),
        pytest.param(True, {**BODY, "tool_choice": "required"}, {}, Fault.CUT, Refusal.FORCED_TOOL, id="tool-required"),
        # Mistral's spelling of "required": the same forced tool call.
        pytest.param(True, {**BODY, "tool_choice": "any"}, {}, Fault.CUT, Refusal.FORCED_TOOL, id="tool-any"),
        pytest.param(
            True,
            {**BODY, "tool_choice": {"type": "function", "function": {"name": "search"}}},
            {},
            Fault.CUT,
            Refusal.FORCED_TOOL,
            id="tool-named",
        ),
        pytest.param(
            True,
            {**BODY, "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "required"}}},
            {},
            Fault.CUT,
            Refusal.FORCED_TOOL,
            id="allowed-tools-required",
        ),
        pytest.param(
            True,
            {**BODY, "function_call": {"name": "search"}},
            {},
            Fault.CUT,
            Refusal.FORCED_TOOL,
            id="legacy-function",
        ),
        pytest.param(
            True,
            {**BODY, "response_format": {"type": "json_object"}},
            {},
            Fault.CUT,
            Refusal.STRUCTURED,
            id="json-object",
        ),
        pytest.param(
            True,
            {**BODY, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}},
            {},
            Fault.CUT,
            Refusal.STRUCTURED,
            id="json-schema",
        ),
        pytest.param(True, BODY, {"finish_reason": "length"}, Fault.TRUNCATED, Refusal.LENGTH, id="length-stop"),
        pytest.param(
            True,
            BODY,
            {"finish_reason": "content_filter"},
            Fault.TRUNCATED,
            Refusal.CONTENT_FILTER,
            id="content-filter",
        ),
        pytest.param(True, BODY, {"finish_reason": "stop"}, Fault.STALLED, Refusal.FINISHED, id="stop-then-stall"),
        pytest.param(True, BODY, {"tool_call": True}, Fault.CUT, Refusal.TOOL_CALL, id="tool-call-started"),
        pytest.param(True, BODY, {}, Fault.GATEWAY, Refusal.GATEWAY_FAULT, id="gateway-fault"),
    ],
)
def test_no_rescue(enabled, body, flags, fault, refusal):
    found = eligibility(enabled, body, streamed(**flags), fault)

    assert found.allowed is False
    assert found.reason == refusal


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({**BODY, "tools": [{"type": "function", "function": {"name": "search"}}]}, id="tools-auto"),
        pytest.param({**BODY, "tool_choice": "auto"}, id="tool-choice-auto"),
        pytest.param({**BODY, "tool_choice": "none"}, id="tool-choice-none"),
        pytest.param({**BODY, "response_format": {"type": "text"}}, id="text-format"),
        pytest.param({**BODY, "n": 1}, id="one-choice"),
    ],
)
def test_requests_that_do_not_force_a_shape_are_rescued(body):
    assert eligibility(True, body, streamed(), Fault.CUT).allowed is True


def test_rescue_off_wins_over_every_other_reason():
    found = eligibility(False, {**BODY, "tool_choice": "required"}, streamed(tool_call=True), Fault.GATEWAY)

    assert found.reason == Refusal.OFF


def test_streamed_text_is_what_was_added():
    s = Streamed()
    s.add_text("Hel")
    s.add_text("lo")

    assert s.text == "Hello"


# --- How ----------------------------------------------------------------------------------


DEEPSEEK_BETA = "https://api.deepseek.com/beta"


@pytest.mark.parametrize(
    ("platform", "base_url", "method", "sent_to"),
    [
        pytest.param("deepseek", "https://api.deepseek.com/v1", Method.PREFIX, DEEPSEEK_BETA, id="deepseek"),
        pytest.param("custom", "https://api.deepseek.com", Method.PREFIX, DEEPSEEK_BETA, id="deepseek-host"),
        pytest.param("mistral", "https://api.mistral.ai/v1", Method.PREFIX, None, id="mistral"),
        pytest.param("Mistral", "https://eu.proxy.example/v1", Method.PREFIX, None, id="mistral-id"),
        pytest.param("custom", "https://api.moonshot.cn/v1", Method.PARTIAL, None, id="moonshot-cn"),
        pytest.param("moonshot", "https://api.moonshot.ai/v1", Method.PARTIAL, None, id="moonshot"),
    ],
)
def test_prefill_platforms_get_a_flagged_trailing_assistant_message(platform, base_url, method, sent_to):
    original = copy.deepcopy(BODY)

    plan = plan_rescue(BODY, PARTIAL, platform, base_url)

    assert plan.method is method
    assert plan.base_url == (sent_to or base_url)
    assert plan.body["messages"][:-1] == original["messages"]
    assert plan.body["messages"][-1] == {"role": "assistant", "content": PARTIAL, method.value: True}
    assert {**plan.body, "messages": None} == {**original, "messages": None}
    assert original == BODY


@pytest.mark.parametrize(
    ("platform", "base_url"),
    [
        pytest.param("groq", "https://api.groq.com/openai/v1", id="groq"),
        pytest.param("openrouter", "https://openrouter.ai/api/v1", id="openrouter"),
        pytest.param("gemini", "https://generativelanguage.googleapis.com/v1beta/openai", id="gemini"),
        # DeepSeek's prefix lives under its own host's /beta: a key is never sent to another host.
        pytest.param("deepseek", "https://deepseek.proxy.example/v1", id="deepseek-id-elsewhere"),
    ],
)
def test_other_platforms_are_asked_to_continue(platform, base_url):
    original = copy.deepcopy(BODY)

    plan = plan_rescue(BODY, PARTIAL, platform, base_url)

    assert plan.method is Method.REASK
    assert plan.base_url == base_url
    assert plan.body["messages"][:-2] == original["messages"]
    assistant, user = plan.body["messages"][-2:]
    assert assistant == {"role": "assistant", "content": PARTIAL}
    assert user["role"] == "user"
    assert '"…of years, and the water slowly"' in user["content"]
    assert original == BODY


@pytest.mark.parametrize("platform", ["groq", "deepseek", "mistral"])
def test_no_system_message_is_added_or_removed(platform):
    base_url = "https://api.deepseek.com/v1" if platform == "deepseek" else "https://x.example/v1"

    plan = plan_rescue(BODY, PARTIAL, platform, base_url)

    assert [m for m in plan.body["messages"] if m["role"] == "system"] == [BODY["messages"][0]]


def test_a_request_without_a_system_message_gets_none():
    body = {**BODY, "messages": [{"role": "user", "content": "Hi"}]}

    plan = plan_rescue(body, PARTIAL, "groq", "https://api.groq.com/openai/v1")

    assert [m["role"] for m in plan.body["messages"]] == ["user", "assistant", "user"]


@pytest.mark.parametrize("partial", ["", "\n\n"], ids=["nothing", "whitespace"])
def test_nothing_sent_yet_is_the_original_request_again(partial):
    plan = plan_rescue(BODY, partial, "deepseek", "https://api.deepseek.com/v1")

    assert plan.method is Method.RETRY
    assert plan.body == BODY and plan.body is not BODY
    assert plan.base_url == "https://api.deepseek.com/v1"


def test_prefill_of_is_none_for_an_unknown_platform():
    assert prefill_of("cerebras", "https://api.cerebras.ai/v1") is None


@pytest.mark.parametrize(
    ("partial", "quoted"),
    [
        pytest.param("Hello there", '"Hello there"', id="short-whole"),
        pytest.param("  Hello there", '"  Hello there"', id="leading-space-whole"),
        pytest.param("one two three four five six seven", '"…two three four five six seven"', id="last-words"),
        pytest.param("one two three four five six seven\n\n", '"…two three four five six seven\n\n"', id="newlines"),
    ],
)
def test_the_re_ask_quotes_the_last_words(partial, quoted):
    assert quoted in continue_instruction(partial)


def test_the_quote_is_bounded_for_text_without_spaces():
    partial = "今天天气很好" * 40

    instruction = continue_instruction(partial)
    quoted = instruction.split('"')[1]

    assert quoted == "…" + partial[-rules.RESCUE_QUOTE_MAX_CHARS :]


# --- Before the stream: what the request alone decides --------------------------------------


@pytest.mark.parametrize(
    ("enabled", "body", "refusal"),
    [
        pytest.param(False, BODY, Refusal.OFF, id="off"),
        pytest.param(True, {**BODY, "stream": False}, Refusal.NOT_STREAMED, id="not-streamed"),
        pytest.param(True, {k: v for k, v in BODY.items() if k != "stream"}, Refusal.NOT_STREAMED, id="no-stream"),
        pytest.param(True, {**BODY, "n": 3}, Refusal.SEVERAL_CHOICES, id="several-choices"),
        pytest.param(True, {**BODY, "tool_choice": "required"}, Refusal.FORCED_TOOL, id="tool-required"),
        pytest.param(True, {**BODY, "tool_choice": "any"}, Refusal.FORCED_TOOL, id="tool-any"),
        pytest.param(
            True,
            {**BODY, "tool_choice": {"type": "function", "function": {"name": "f"}}},
            Refusal.FORCED_TOOL,
            id="tool-named",
        ),
        pytest.param(
            True,
            {**BODY, "response_format": {"type": "json_schema", "json_schema": {}}},
            Refusal.STRUCTURED,
            id="json-schema",
        ),
        pytest.param(False, {**BODY, "stream": False, "tool_choice": "required"}, Refusal.OFF, id="off-first"),
        pytest.param(True, {**BODY, "n": 2, "tool_choice": "required"}, Refusal.SEVERAL_CHOICES, id="order"),
        pytest.param(
            True,
            {**BODY, "tool_choice": "required", "response_format": {"type": "json_object"}},
            Refusal.FORCED_TOOL,
            id="tool-before-json",
        ),
    ],
)
def test_the_request_alone_refuses_a_rescue(enabled, body, refusal):
    assert request_refusal(enabled, body) == refusal
    # The same refusal as once the stream broke, whatever it carried.
    assert eligibility(enabled, body, streamed(), Fault.CUT).reason == refusal


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(BODY, id="plain"),
        pytest.param({**BODY, "n": 1, "tool_choice": "auto", "response_format": {"type": "text"}}, id="unforced"),
    ],
)
def test_a_request_that_may_be_rescued_has_no_refusal(body):
    assert request_refusal(True, body) is None


def test_the_request_refusal_ignores_what_only_the_stream_can_tell():
    # Length, content filter, a tool call started, a gateway fault: none is known before the
    # stream, so none refuses the request itself.
    assert request_refusal(True, BODY) is None
    assert eligibility(True, BODY, streamed(finish_reason="length"), Fault.CUT).reason == Refusal.LENGTH


# --- Said: the admin status's record of rescues --------------------------------------------


def _record(n: int) -> RescueRecord:
    return RescueRecord(at_ms=n, request_id=f"req-{n}", cut="p1/m", fault="cut", outcome="rescued",
                        by="p2/m", method="prefix", wait_ms=10 * n)  # fmt: skip


def test_the_rescue_log_shows_the_newest_first():
    log = RescueLog()
    for n in range(3):
        log.add(_record(n))

    assert [r.at_ms for r in log.recent()] == [2, 1, 0]


def test_the_rescue_log_keeps_only_the_last_rescues():
    log = RescueLog()
    for n in range(rules.RESCUES_KEPT + 5):
        log.add(_record(n))

    recent = log.recent()
    assert len(recent) == rules.RESCUES_KEPT
    assert recent[0].at_ms == rules.RESCUES_KEPT + 4
    assert recent[-1].at_ms == 5


def test_an_empty_rescue_log_is_an_empty_list():
    assert RescueLog().recent() == []


def test_the_recent_list_is_a_copy():
    log = RescueLog()
    log.add(_record(1))
    log.recent().clear()

    assert len(log.recent()) == 1


def test_a_rescue_record_reads_as_json_with_every_field():
    record = RescueRecord(5, None, "p1/m", "stalled", "refused", reason=str(Refusal.TOOL_CALL))

    assert record.json() == {
        "at_ms": 5, "request_id": None, "cut": "p1/m", "fault": "stalled", "outcome": "refused",
        "reason": "a tool call had started", "by": None, "method": None, "trail": None, "wait_ms": None,
    }  # fmt: skip
