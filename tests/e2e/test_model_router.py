"""A router that knows its models, end to end (SPEC §19, docs/routing.md "A router that knows its
models"): a request is not sent where a model's stated facts say it cannot be served (context
window, vision, tools), free-tier caps per key are counted and lowered by a 429 that states its
limit, ``auto:fast`` and the ``routing_strategy`` setting order by measured speed, and a
conversation keeps to what served its last turn.

Each test makes its own providers (fresh ids: the isolate's speed memory, caps, sticky map and
learned windows are keyed by provider and key ids, so tests do not see each other's) against the
fake upstream, and reads what it received. Providers that share the fake are told apart by their
models or by their keys (``Recorded.key``).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest

from support.agents import CLAUDE_ARGS, Workspace, claude_env, explain, run_agent
from support.brain import ToolBrain, read_file_calls, tool_results
from support.runtime import Gateway
from support.upstream import FakeUpstream, Json, Recorded

K1 = "sk-router-first-key-0000-1111"
K2 = "sk-router-second-key-0000-2222"
KEY_A = "sk-router-provider-a-0000-aaaa"
KEY_B = "sk-router-provider-b-0000-bbbb"

MINUTE_MS = 60_000
# About 80 KB of conversation: some 20,000 tokens by the gateway's estimate (bytes / 4).
LONG_TEXT = "The quick brown fox jumps over the lazy dog. " * 1800
# A 1x1 PNG.
PIXEL = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
IMAGE_MESSAGE = {
    "role": "user",
    "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": PIXEL}},
    ],
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def send(api: httpx.Client, body: dict[str, Any], path: str = "/chat/completions", **headers: str) -> httpx.Response:
    """POST ``body`` as these exact bytes (so the test knows the size the gateway estimates from)."""
    raw = json.dumps(body).encode()
    return api.post(path, content=raw, headers={"content-type": "application/json", **headers})


def ask(api: httpx.Client, model: str = "auto", text: str = "hi", **extra: Any) -> httpx.Response:
    return send(api, {"model": model, "messages": [{"role": "user", "content": text}], **extra})


def estimate(body: dict[str, Any]) -> int:
    """The gateway's estimate of a request without max_tokens (docs/routing.md): its JSON's bytes / 4
    plus 1,000 for the answer."""
    return len(json.dumps(body).encode()) // 4 + 1000


@pytest.fixture
def create(admin: httpx.Client, upstream: FakeUpstream):
    """Add a provider named ``name`` at the fake upstream with ``models`` (ids or fact entries)
    and ``keys`` (default: the fake's key); keyword arguments override the fields."""

    def create(name: str, models: list[Any], keys: tuple[str, ...] | None = None, **fields: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "base_url": upstream.base_url, "models": models, **fields}
        if keys is not None:
            body["api_keys"] = list(keys)
        elif "api_key" not in body:
            body["api_key"] = "sk-fake-upstream-key-0123456789"
        made = admin.post("/providers", json=body)
        assert made.status_code == 201, made.text
        return made.json()["provider"]

    return create


@pytest.fixture
def fresh_minute(gateway: Gateway) -> int:
    """Move the Worker's clock to just past the start of a UTC minute: a test counting requests per
    minute has the whole minute, and no count of an earlier test's minute (epoch ms of the start)."""
    now = gateway.advance_clock(MINUTE_MS - gateway.now_ms() % MINUTE_MS + 500)
    return now - now % MINUTE_MS


# --- facts: a model that cannot serve is passed over before any fetch ------------------------------


def test_a_long_request_skips_the_small_context_model_without_a_fetch(api, create, upstream):
    create("small-p", [{"id": "small", "context": 8192}], priority=1)
    create("big-p", [{"id": "big", "context": 131072}], priority=2)
    body = {"model": "auto", "messages": [{"role": "user", "content": LONG_TEXT}]}

    response = send(api, body)

    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "hello from the fake upstream"
    assert [r.model for r in upstream.requests] == ["big"]  # one fetch, none to the small model
    assert response.headers["x-routed-via"] == "big-p/big"
    trail = response.headers["x-fallback-trail"]
    found = re.fullmatch(r"small-p/small: skipped: context 8192 < ~(\d+)", trail)
    assert found, trail
    assert int(found.group(1)) == estimate(body)  # ~21,000: 80 KB / 4 + 1,000 for the answer
    assert "x-fallback-attempts" not in response.headers  # nothing failed: no attempt was spent


def test_an_image_skips_the_model_without_vision(api, create, upstream):
    create("blind", [{"id": "text-only", "vision": False}], priority=1)
    create("eyes", [{"id": "seer", "vision": True}], priority=2)

    text = ask(api)
    response = send(api, {"model": "auto", "messages": [IMAGE_MESSAGE]})

    assert text.headers["x-routed-via"] == "blind/text-only"  # text alone: the first model serves
    assert response.status_code == 200, response.text
    assert response.headers["x-routed-via"] == "eyes/seer"
    assert response.headers["x-fallback-trail"] == "blind/text-only: skipped: no vision"
    assert "x-fallback-attempts" not in response.headers
    assert [r.model for r in upstream.requests] == ["text-only", "seer"]
    assert upstream.requests[-1].json["messages"][0]["content"][1]["image_url"]["url"] == PIXEL


def test_tools_skip_the_model_without_tools(api, create, upstream):
    create("plain", [{"id": "chatter", "tools": False}], priority=1)
    create("agentic", ["caller"], priority=2)  # unknown: it may call tools

    response = ask(api, text="Weather in Oslo?", tools=[WEATHER_TOOL])

    assert response.status_code == 200, response.text
    assert response.headers["x-routed-via"] == "agentic/caller"
    assert response.headers["x-fallback-trail"] == "plain/chatter: skipped: no tools"
    assert [r.model for r in upstream.requests] == ["caller"]
    assert upstream.requests[0].json["tools"] == [WEATHER_TOOL]


# --- no model can serve: 400 at once, naming why ---------------------------------------------------


def test_too_long_for_every_model_is_400_at_once_naming_the_window(api, create, upstream):
    create("small-p", [{"id": "small", "context": 8192}], priority=1)
    create("tiny-p", [{"id": "tiny", "context": 4096}], priority=2)
    body = {"model": "auto", "messages": [{"role": "user", "content": LONG_TEXT}]}

    response = send(api, body)

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "context_length_exceeded")
    assert "too long for every model" in error["message"]
    assert "the most any model known takes is 8192" in error["message"]
    assert f"~{estimate(body)} tokens" in error["message"]
    assert upstream.requests == []
    assert response.headers["x-fallback-trail"].startswith("small-p/small: skipped: context 8192 < ~")
    assert "x-fallback-attempts" not in response.headers


def test_too_long_on_the_messages_api_is_anthropics_error_shape(api, create, upstream):
    create("small-p", [{"id": "small", "context": 8192}])

    response = send(
        api,
        {"model": "auto", "max_tokens": 256, "messages": [{"role": "user", "content": LONG_TEXT}]},
        path="/messages",
        **{"anthropic-version": "2023-06-01"},
    )

    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error", body
    assert body["error"]["type"] == "invalid_request_error"
    assert "the most any model known takes is 8192" in body["error"]["message"]
    assert upstream.requests == []


def test_an_image_when_no_model_has_vision_is_400_no_vision_model(api, create, upstream):
    create("blind", [{"id": "text-only", "vision": False}], priority=1)
    create("also-blind", [{"id": "reader", "vision": False}], priority=2)

    response = send(api, {"model": "auto", "messages": [IMAGE_MESSAGE]})

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "no_vision_model")
    assert "image" in error["message"]
    assert upstream.requests == []


def test_models_that_lack_different_things_give_no_capable_model_naming_each(api, create, upstream):
    create("small-eyes", [{"id": "sees", "vision": True, "context": 4096}], priority=1)
    create("big-blind", [{"id": "reads", "vision": False}], priority=2)

    response = send(api, {"model": "auto", "messages": [{**IMAGE_MESSAGE, "content": [*IMAGE_MESSAGE["content"],
                     {"type": "text", "text": LONG_TEXT}]}]})  # fmt: skip

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "no_capable_model"
    assert "small-eyes/sees: skipped: context 4096 <" in error["message"]
    assert "big-blind/reads: skipped: no vision" in error["message"]
    assert upstream.requests == []


def test_a_request_larger_than_a_free_tiers_minute_is_never_sent_to_it(api, create, upstream):
    create("tight", [{"id": "small-tpm", "tpm": 6000}], priority=1)
    create("roomy", ["big"], priority=2)

    response = send(api, {"model": "auto", "messages": [{"role": "user", "content": LONG_TEXT}]})

    assert response.status_code == 200, response.text
    assert [r.model for r in upstream.requests] == ["big"]
    assert response.headers["x-fallback-trail"].startswith("tight/small-tpm: skipped: tpm 6000 < ~")


# --- free-tier caps ------------------------------------------------------------------------------


def hint(key: str) -> str:
    return f"{key[:4]}...{key[-4:]}"


def caps_of(admin: httpx.Client, provider_id: int) -> dict[str, list[dict[str, Any]]]:
    """Each key's ``caps`` (by the plain key) as ``GET /providers`` shows them now."""
    [provider] = [p for p in admin.get("/providers").json()["providers"] if p["id"] == provider_id]
    by_hint = {k["hint"]: k["caps"] for k in provider["keys"]}
    return {key: by_hint[hint(key)] for key in (K1, K2)}


def test_each_key_serves_up_to_its_cap_then_429_without_a_fetch(api, admin, create, upstream, fresh_minute):
    provider = create("capped", [{"id": "m", "rpm": 1}], keys=(K1, K2))

    first, second, third = ask(api, "m"), ask(api, "m"), ask(api, "m")

    assert (first.status_code, second.status_code) == (200, 200), (first.text, second.text)
    assert sorted(upstream.keys_used()) == sorted([K1, K2])  # one request per key, the third never sent
    assert third.status_code == 429, third.text
    error = third.json()["error"]
    assert "free-tier cap" in error["message"]
    assert "capped/m: at cap 1/min" in error["message"]
    assert 1 <= int(third.headers["retry-after"]) <= 60  # the minute's turn
    assert "at cap" in third.headers["x-fallback-trail"]
    assert third.headers["x-fallback-trail"] == "capped/m: skipped: at cap 1/min"
    shown = caps_of(admin, provider["id"])
    for key in (K1, K2):
        [cap] = shown[key]
        assert (cap["model"], cap["minute"], cap["day"], cap["rpm"]) == ("m", 1, 1, 1), shown


def test_a_providers_own_cap_holds_for_its_models_unless_a_models_entry_sets_one(api, admin, create, fresh_minute):
    provider = create("whole", ["m", {"id": "n", "rpm": 3}], caps={"rpm": 1})
    assert provider["caps"] == {"rpm": 1}
    assert provider["capabilities"]["m"]["sources"]["rpm"] == "provider"

    m = [ask(api, "m") for _ in range(2)]

    assert [r.headers["x-routed-via"] for r in m] == ["whole/m", "whole/n"]  # m at the provider's cap
    assert m[1].headers["x-fallback-trail"] == "whole/m: skipped: at cap 1/min"
    assert [ask(api, "n").status_code for _ in range(2)] == [200, 200]  # n's own 3 a minute
    assert ask(api, "n").status_code == 429
    cleared = admin.put(f"/providers/{provider['id']}", json={"caps": None})
    assert cleared.status_code == 200 and cleared.json()["provider"]["caps"] is None


GROQ_RPM_429 = {
    "error": {
        "message": "Rate limit reached for model `m` in organization `org_01` service tier `on_demand` on requests "
        "per minute (RPM): Limit 1, Used 1, Requested 1. Please try again in 59.1s. Need more tokens? Upgrade to "
        "Dev Tier today at https://console.groq.com/settings/billing",
        "type": "requests",
        "code": "rate_limit_exceeded",
    }
}


def test_a_429_stating_its_limit_lowers_that_keys_cap(api, admin, create, upstream, fresh_minute):
    provider = create("groq-like", ["m"], keys=(K1, K2))
    upstream.queue(Json(GROQ_RPM_429, 429))  # whichever key goes first

    served = ask(api, "m")

    assert served.status_code == 200, served.text
    limited, sibling = upstream.keys_used()
    assert limited != sibling
    admin.post("/cooldowns/clear").raise_for_status()  # not the cooldown: the learned cap holds it back

    after = [ask(api, "m") for _ in range(3)]

    assert [r.status_code for r in after] == [200, 200, 200]
    assert upstream.keys_used()[2:] == [sibling] * 3  # round-robin would have sent one to the limited key
    assert all("x-fallback-attempts" not in r.headers for r in after)
    shown = caps_of(admin, provider["id"])
    [cap] = shown[limited]
    assert (cap["model"], cap["minute"], cap["rpm"]) == ("m", 1, 1), shown
    assert shown[sibling] == []  # no cap known for the sibling


# --- strategies ----------------------------------------------------------------------------------


def slow(request: Recorded) -> None:
    """The fake's default answer, a quarter second late: an upstream slower to its first byte."""
    time.sleep(0.25)  # the fake upstream's own latency, not a test's timing


def test_auto_fast_and_the_fastest_strategy_go_to_the_measured_faster_provider(api, admin, create, upstream):
    create("steady", ["slow-m"], priority=1)
    create("quick", ["fast-m"], priority=2)
    upstream.answer_always(slow, model="slow-m")
    assert ask(api, "auto:fast").headers["x-routed-via"] == "steady/slow-m"  # nothing measured: priority
    assert ask(api, "fast-m").headers["x-routed-via"] == "quick/fast-m"  # each served once, measured

    fast, plain = ask(api, "auto:fast"), ask(api, "auto")

    assert fast.status_code == 200, fast.text
    assert fast.headers["x-routed-via"] == "quick/fast-m"
    assert plain.headers["x-routed-via"] == "steady/slow-m"  # auto keeps the priority order
    assert admin.put("/settings", json={"routing_strategy": "fastest"}).status_code == 200
    assert ask(api, "auto").headers["x-routed-via"] == "quick/fast-m"
    assert [r.model for r in upstream.requests] == ["slow-m", "fast-m", "fast-m", "slow-m", "fast-m"]


# --- sticky conversations --------------------------------------------------------------------------


def turn(api: httpx.Client, n: int, first: str = "Plan a trip to Oslo", **headers: str) -> httpx.Response:
    """Turn ``n`` of a conversation opened by the user message ``first``: turn 1 holds no assistant
    message, each later turn the exchanges before it."""
    messages: list[dict[str, str]] = [{"role": "user", "content": first}]
    for i in range(2, n + 1):
        messages += [{"role": "assistant", "content": f"answer {i - 1}"}, {"role": "user", "content": f"and {i}?"}]
    return send(api, {"model": "auto", "messages": messages}, **headers)


@pytest.fixture
def a_and_b(create):
    """A (first by priority, key KEY_A) and B (KEY_B), both serving m."""
    return create("A", ["m"], priority=1, api_key=KEY_A), create("B", ["m"], priority=2, api_key=KEY_B)


def test_a_conversation_sticks_to_what_served_its_last_turn(api, admin, a_and_b, upstream):
    session = {"x-session-id": "s1"}
    upstream.queue(Json({"error": {"message": "boom"}}, 500))  # A fails turn 1 (and cools): B serves it
    assert turn(api, 1, **session).headers["x-routed-via"] == "B/m"
    admin.post("/cooldowns/clear").raise_for_status()

    second = turn(api, 2, **session)

    assert second.headers["x-routed-via"] == "B/m"  # A is first by priority and ready again
    assert "x-fallback-trail" not in second.headers
    assert upstream.keys_used() == [KEY_A, KEY_B, KEY_B]  # turn 2: one fetch, to B
    assert ask(api).headers["x-routed-via"] == "A/m"  # another request: priority as ever

    # B cools on turn 3 (a long Retry-After): A serves it, and the conversation follows A.
    upstream.queue(Json({"error": {"message": "slow down"}}, 429, {"retry-after": "3600"}))
    third = turn(api, 3, **session)
    assert third.headers["x-routed-via"] == "A/m"
    assert third.headers["x-fallback-trail"] == "B/m: rate_limited"
    assert turn(api, 4, **session).headers["x-routed-via"] == "A/m"
    admin.post("/cooldowns/clear").raise_for_status()  # B is ready again: turn 5 still follows A

    fifth = turn(api, 5, **session)

    assert fifth.headers["x-routed-via"] == "A/m"
    assert upstream.keys_used()[4:] == [KEY_B, KEY_A, KEY_A, KEY_A]


def test_without_a_session_id_the_first_user_message_names_the_conversation(api, admin, a_and_b, upstream):
    upstream.queue(Json({"error": {"message": "boom"}}, 500))
    assert turn(api, 1, first="Explain monads").headers["x-routed-via"] == "B/m"
    admin.post("/cooldowns/clear").raise_for_status()

    same = turn(api, 2, first="Explain monads")
    other = turn(api, 2, first="Explain functors")  # another conversation, never served

    assert same.headers["x-routed-via"] == "B/m"
    assert other.headers["x-routed-via"] == "A/m"
    assert upstream.keys_used() == [KEY_A, KEY_B, KEY_B, KEY_A]


# --- a real agent behind a small-context model -----------------------------------------------------


def test_claude_code_completes_a_tool_turn_past_a_small_context_model(
    gateway, admin, create, upstream, tmp_path, fresh_minute
):
    """Claude Code's requests (its system prompt and tools alone are tens of thousands of tokens)
    never reach a 4,096-token model first in the chain: it is passed over before any fetch, so no
    attempt fails and nothing cools."""
    workspace = Workspace(tmp_path)
    create("tiny-p", [{"id": "tiny", "context": 4096}], priority=1)
    create("big-p", ["fake-model"], priority=2)
    brain = ToolBrain(read_file_calls(str(workspace.note)))
    upstream.answer_always(brain)

    done = run_agent(CLAUDE_ARGS, workspace, claude_env(gateway.url, gateway.api_token, "auto"))

    assert done.returncode == 0, explain(done, brain)
    result = json.loads(done.stdout)
    assert result["is_error"] is False, explain(done, brain)
    assert workspace.secret in result["result"], explain(done, brain)
    assert any(workspace.secret in r for r in tool_results(upstream.requests)), explain(done, brain)
    assert len(upstream.requests) >= 2  # the tool call's turn and the answer's
    assert {r.model for r in upstream.requests} == {"fake-model"}  # never a request for tiny
    # No failed attempt anywhere: no cooldown, no failure event, no failover in the usage.
    assert admin.get("/status").json()["cooldowns"] == []
    events = admin.get("/events").json()["events"]
    assert [e for e in events if e["time"] >= fresh_minute] == []
    report = admin.get("/usage", params={"by": "provider", "from": fresh_minute}).json()
    groups = {g["group"]: g for g in report["groups"]}
    assert "tiny-p" not in groups
    served = groups["big-p"]
    assert (served["requests"], served["successes"], served["failovers"]) == (len(upstream.requests),) * 2 + (0,)
    assert served["errors"] == {}
