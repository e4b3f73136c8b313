"""OpenRouter upstream pinning (SPEC §15) through the local runtime, against a fake OpenRouter
(tests/support/openrouter.py): the first request scores the model's endpoints and pins it, later
ones keep the pin without fetching again, the caller's own ``provider`` wins, a 429 is retried in
place, three faults move the lock, the cron refreshes candidates without moving a live lock, an
idle lock is replaced, pinning off injects nothing, other providers never get a ``provider``, and
the pin is in D1. Time moves with the runtime's test clock; each test has a model of its own."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.d1 import d1_execute
from support.openrouter import FakeOpenRouter, endpoint
from support.upstream import UPSTREAM_KEY, Json

MINUTE_MS = 60_000
_models = itertools.count(1)
# "cache" caches and is cheap on input: it wins over "cheap", cheaper but without caching.
ENDPOINTS = [
    endpoint("cheap", prompt="0.0000002", completion="0.0000008", caching=False, throughput=60.0),
    endpoint("cache", prompt="0.0000003", completion="0.0000009", cache_read="0.00000003", throughput=50.0),
    endpoint("slow", prompt="0.0000003", completion="0.0000009", cache_read="0.00000003", throughput=5.0),
    endpoint("down", prompt="0.0000001", completion="0.0000001", status=-2),
]


@pytest.fixture(scope="module")
def openrouter_server() -> Iterator[FakeOpenRouter]:
    server = FakeOpenRouter().start()
    yield server
    server.stop()


@pytest.fixture
def model() -> str:
    """A model of its own per test: pins are per model and outlive providers, in D1 and in the
    isolate's memory."""
    return f"deepseek/deepseek-chat-{next(_models)}"


@pytest.fixture
def openrouter(openrouter_server: FakeOpenRouter, admin: httpx.Client, model: str) -> Iterator[FakeOpenRouter]:
    """The fake, reset, with the model's endpoints; the gateway pointed at it, with one OpenRouter
    provider serving the model."""
    openrouter_server.reset()
    openrouter_server.set_endpoints(model, ENDPOINTS)
    admin.put("/settings", json={"openrouter_origin": openrouter_server.origin}).raise_for_status()
    admin.post(
        "/providers",
        json={
            "name": "openrouter",
            "platform": "openrouter",
            "base_url": openrouter_server.base_url,
            "api_key": "sk-or-test-key-0000000000",
            "models": [model],
        },
    ).raise_for_status()
    return openrouter_server


def chat(api: httpx.Client, model: str, **extra: Any) -> httpx.Response:
    return api.post(
        "/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}
    )


def pins(admin: httpx.Client) -> dict[str, Any]:
    return {m["model"]: m for m in admin.get("/openrouter").raise_for_status().json()["models"]}


def test_the_first_request_scores_and_pins_and_later_ones_keep_the_pin(api, admin, openrouter, gateway, model):
    answers = [chat(api, model) for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[0].json()["choices"][0]["message"]["content"] == "served by cache"
    assert openrouter.endpoint_fetches(model) == 1
    assert openrouter.pinned_slugs() == ["cache", "cache", "cache"]
    assert openrouter.chat_requests()[0].json["provider"] == {"order": ["cache"], "allow_fallbacks": False}
    pinned = pins(admin)[model]
    assert pinned["lock"]["slug"] == "cache"
    assert [c["slug"] for c in pinned["candidates"]] == ["cache", "cheap", "slow"]  # "down" never counts
    assert pinned["candidates"][0] | {"score": 0} == {
        "slug": "cache",
        "score": 0,
        "prompt": 3e-7,
        "completion": 9e-7,
        "input_cache_read": 3e-8,
        "caching": True,
        "throughput": 50.0,
        "cooled_until": None,
    }
    rows = d1_execute(gateway.persist_to, f"SELECT lock_slug FROM openrouter_pins WHERE model = '{model}'")
    assert rows == [{"lock_slug": "cache"}]


def test_the_rest_of_the_body_is_forwarded_as_sent(api, openrouter, model):
    chat(api, model, temperature=0.25, stream=False, user="u-1")

    forwarded = openrouter.chat_requests()[0].json
    assert forwarded["temperature"] == 0.25 and forwarded["user"] == "u-1"
    assert forwarded["messages"] == [{"role": "user", "content": "hi"}]


def test_a_callers_own_provider_wins(api, openrouter, model):
    own = {"order": ["cheap"], "allow_fallbacks": True}

    answer = chat(api, model, provider=own)

    assert answer.status_code == 200
    assert openrouter.chat_requests()[0].json["provider"] == own
    assert openrouter.endpoint_fetches(model) == 0


def test_a_streamed_request_is_pinned_too(api, openrouter, model):
    with api.stream(
        "POST",
        "/chat/completions",
        json={"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    ) as answer:
        text = answer.read().decode()

    assert "served by cache" in text
    assert openrouter.pinned_slugs() == ["cache"]


def test_a_429_is_retried_in_place(api, admin, openrouter, model):
    openrouter.queue_for("cache", Json({"error": {"message": "slow down"}}, status=429))

    answer = chat(api, model)

    assert answer.status_code == 200
    assert openrouter.pinned_slugs() == ["cache", "cache"]
    assert pins(admin)[model]["switches"] == 0


def test_three_faults_in_a_row_cool_the_endpoint_and_move_the_lock(api, admin, openrouter, model):
    openrouter.always_for("cache", Json({"error": {"message": "upstream exploded"}}, status=502))

    answers = [chat(api, model) for _ in range(4)]

    # Each fault is served at once unpinned (OpenRouter's own routing), the caller never notices;
    # the third moves the lock.
    assert [a.status_code for a in answers] == [200, 200, 200, 200]
    assert [a.json()["choices"][0]["message"]["content"] for a in answers] == [
        "served by unpinned",
        "served by unpinned",
        "served by unpinned",
        "served by cheap",
    ]
    assert openrouter.pinned_slugs() == ["cache", None, "cache", None, "cache", None, "cheap"]
    pinned = pins(admin)[model]
    assert pinned["lock"]["slug"] == "cheap" and pinned["switches"] == 1
    cooled = {c["slug"]: c["cooled_until"] for c in pinned["candidates"]}
    assert cooled["cache"] is not None and cooled["cheap"] is None


def test_a_slug_that_cannot_take_the_request_is_bypassed_not_blamed(api, admin, openrouter, model):
    refusal = {"error": {"message": "No endpoints found that support tool use.", "code": 404}}
    openrouter.queue_for("cache", Json(refusal, status=404))

    answer = chat(api, model)

    assert answer.status_code == 200
    assert openrouter.pinned_slugs() == ["cache", None]
    pinned = pins(admin)[model]
    assert (pinned["lock"]["slug"], pinned["failures"]) == ("cache", 0)
    assert chat(api, model).status_code == 200  # the model is not benched


def test_the_cron_refreshes_candidates_but_never_moves_a_live_lock(api, admin, openrouter, gateway, model):
    assert chat(api, model).status_code == 200  # pinned to "cache"
    faster = endpoint("fast", prompt="0.0000001", completion="0.0000002", cache_read="0.00000001", throughput=500.0)
    openrouter.set_endpoints(model, [*ENDPOINTS, faster])
    gateway.advance_clock(11 * MINUTE_MS)  # the candidates are stale; the lock (30 min idle) lives

    ran = httpx.get(f"{gateway.url}/cdn-cgi/handler/scheduled", params={"cron": "0 */3 * * *"})

    assert ran.status_code == 200
    assert openrouter.endpoint_fetches(model) == 2
    pinned = pins(admin)[model]
    assert pinned["candidates"][0]["slug"] == "fast"
    assert pinned["lock"]["slug"] == "cache"
    assert chat(api, model).status_code == 200
    assert openrouter.pinned_slugs()[-1] == "cache"


def test_the_cron_reuses_fresh_candidates(api, openrouter, gateway, model):
    assert chat(api, model).status_code == 200

    httpx.get(f"{gateway.url}/cdn-cgi/handler/scheduled", params={"cron": "0 */3 * * *"}).raise_for_status()

    assert openrouter.endpoint_fetches(model) == 1


def test_an_idle_lock_is_replaced_by_the_best_candidate(api, admin, openrouter, gateway, model):
    assert chat(api, model).status_code == 200
    faster = endpoint("fast", prompt="0.0000001", completion="0.0000002", cache_read="0.00000001", throughput=500.0)
    openrouter.set_endpoints(model, [*ENDPOINTS, faster])
    gateway.advance_clock(31 * MINUTE_MS)  # idle past openrouter_lock_idle_ms
    httpx.get(f"{gateway.url}/cdn-cgi/handler/scheduled", params={"cron": "0 */3 * * *"}).raise_for_status()

    assert chat(api, model).status_code == 200

    assert openrouter.pinned_slugs() == ["cache", "fast"]
    assert pins(admin)[model]["switches"] == 1


def test_pinning_off_injects_nothing(api, admin, openrouter, model):
    admin.put("/settings", json={"openrouter_pinning": 0}).raise_for_status()

    assert chat(api, model).status_code == 200

    assert "provider" not in openrouter.chat_requests()[0].json
    assert openrouter.endpoint_fetches(model) == 0


def test_when_the_endpoints_cannot_be_read_the_request_goes_unpinned(api, openrouter, model):
    openrouter.fail_endpoints(503)

    answers = [chat(api, model) for _ in range(2)]

    assert [a.status_code for a in answers] == [200, 200]
    assert openrouter.pinned_slugs() == [None, None]
    assert openrouter.endpoint_fetches(model) == 1  # not fetched again at once


def test_other_providers_never_get_a_provider_field(api, add_provider, upstream, openrouter, model):
    add_provider(name="plain", models=["fake-model"], api_key=UPSTREAM_KEY)

    answer = api.post("/chat/completions", json={"model": "fake-model", "messages": [{"role": "user", "content": "x"}]})

    assert answer.status_code == 200
    assert "provider" not in upstream.requests[-1].json


def test_a_bad_origin_is_refused(admin):
    answer = admin.put("/settings", json={"openrouter_origin": "https://openrouter.ai/api"})

    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "openrouter_origin"
