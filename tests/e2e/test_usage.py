"""Usage and health end to end (SPEC §17): traffic through several surfaces, clients and providers
(with a failover, a refusal, a cut stream, cached tokens and a request nothing served) is counted
exactly; a flush is one D1 batch a minute, never a write per request; a restarted isolate loses at
most what it counted since its last flush; the cron prunes buckets older than 30 days."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from support.d1 import d1_execute
from support.runtime import Gateway
from support.upstream import UPSTREAM_KEY, Json, PerKey, Sse, chunk

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
# Provider A's key: the fake upstream refuses it with a 429 whose message echoes a key-like secret.
KEY_A = "sk-usage-provider-a-0123456789"
LEAKED = "sk-proj-abcdefghijklmnopqrstuvwx"
BODY = {"model": "m", "messages": [{"role": "user", "content": "count me"}]}


@pytest.fixture
def hour(gateway: Gateway) -> int:
    """The start of a fresh UTC hour on the Worker's clock: earlier tests' traffic is in earlier
    hours, so this test's buckets hold only its own."""
    now = gateway.advance_clock(HOUR_MS - gateway.now_ms() % HOUR_MS + 1_000)
    return now - now % HOUR_MS


@pytest.fixture
def pair(add_provider: Any, upstream: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A (tried first; its key is refused with a 429) and B, both serving m; B also an embedding
    model."""
    upstream.answer_always(PerKey({KEY_A: Json({"error": {"message": f"slow down, {LEAKED}"}}, 429)}))
    a = add_provider(name="A", priority=1, models=["m"], api_key=KEY_A)
    b = add_provider(name="B", priority=2, models=["m", "text-embedding-3-small"])
    return a, b


def usage(admin: httpx.Client, by: str, since: int) -> dict[str, Any]:
    answer = admin.get("/usage", params={"by": by, "from": since})
    assert answer.status_code == 200, answer.text
    return answer.json()


def groups(report: dict[str, Any], *fields: str) -> dict[str, tuple[Any, ...]]:
    return {g["group"]: tuple(_field(g, f) for f in fields) for g in report["groups"]}


def _field(counts: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        counts = counts[part]
    return counts


def stream_with_usage() -> Sse:
    tail = {"id": "c", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}}
    return Sse([chunk("m", "hel"), chunk("m", "lo", "stop"), tail])


def test_traffic_is_counted_exactly_per_provider_client_key_model_and_surface(
    gateway, admin, api, upstream, pair, hour
):
    a, b = pair
    made = admin.post("/clients", json={"name": "app"}).json()
    app = httpx.Client(base_url=f"{gateway.url}/v1", headers={"authorization": f"Bearer {made['token']}"}, timeout=30)
    cut_body = json.dumps({**BODY, "stream": True}).encode()

    # The API token: a failover from A's 429 to B, a stream with usage (cached tokens too), embeddings.
    assert api.post("/chat/completions", json=BODY).headers["x-fallback-attempts"] == "1"
    upstream.queue(stream_with_usage(), model="m")
    assert api.post("/chat/completions", json={**BODY, "stream": True}).text.endswith("data: [DONE]\n\n")
    embedded = api.post("/embeddings", json={"model": "text-embedding-3-small", "input": ["a b c", "d"]})
    embedding_tokens = embedded.json()["usage"]["prompt_tokens"]
    # The client: a stream cut midway (no usage: estimated), the Messages API, a refusal.
    upstream.queue(Sse([chunk("m", "hel"), chunk("m", "lo")], done=False, reset=True), model="m")
    cut = app.post("/chat/completions", content=cut_body, headers={"content-type": "application/json"})
    assert "stream_interrupted" in cut.text
    assert app.post("/messages", json={**BODY, "max_tokens": 8}).status_code == 200
    upstream.queue(Json({"error": {"message": "messages must alternate"}}, 400), model="m")
    assert app.post("/chat/completions", json=BODY).status_code == 400
    # Nothing serves: B fails twice (the model asked is retried once), A is cooling.
    upstream.queue(Json({"error": {"message": "boom"}}, 500), Json({"error": {"message": "boom"}}, 500), model="m")
    assert api.post("/chat/completions", json=BODY).status_code == 502

    by_provider = usage(admin, "provider", hour)
    fields = ("requests", "successes", "failovers", "errors", "streams_cut")
    assert groups(by_provider, *fields) == {
        "B": (6, 5, 1, {"caller_error": 1, "upstream_error": 2}, 1),
        "A": (0, 0, 0, {"rate_limited": 1}, 0),
        "(none)": (1, 0, 0, {}, 0),
    }
    b_counts = next(g for g in by_provider["groups"] if g["group"] == "B")
    # Reported: 3/5 (the failover), 7/2 with 4 cached (the stream), 3/5 (Messages), the embeddings.
    assert b_counts["tokens"] | {"estimated_output": None} == {
        "input": 3 + 7 + 3 + embedding_tokens,
        "output": 5 + 2 + 5,
        "cached_input": 4,
        "estimated_input": len(cut_body) // 4,  # the cut stream reported none
        "estimated_output": None,
    }
    assert b_counts["tokens"]["estimated_output"] >= 1
    assert b_counts["latency_ms"]["first_byte"]["p50"] is not None and b_counts["latency_ms"]["end"]["p95"] is not None
    assert (by_provider["totals"]["requests"], by_provider["totals"]["error_count"]) == (7, 4)
    assert {b["hour"] for b in by_provider["buckets"]} == {hour}

    assert groups(usage(admin, "client", hour), "requests", "successes") == {"(api token)": (4, 3), "app": (3, 2)}
    assert groups(usage(admin, "surface", hour), "requests") == {"chat": (5,), "anthropic": (1,), "embeddings": (1,)}
    assert groups(usage(admin, "model", hour), "requests") == {"m": (6,), "text-embedding-3-small": (1,)}
    assert groups(usage(admin, "key", hour), "requests", "error_count") == {
        f"B#{b['keys'][0]['id']}": (6, 3),
        f"A#{a['keys'][0]['id']}": (0, 1),
        "(none)": (1, 0),
    }

    events = [e for e in admin.get("/events").json()["events"] if e["time"] >= hour]
    assert [(e["provider"], e["client"], e["class"], e["status"]) for e in events] == [
        ("B", "(api token)", "upstream_error", 500),
        ("B", "(api token)", "upstream_error", 500),
        ("B", "app", "caller_error", 400),
        ("A", "(api token)", "rate_limited", 429),
    ]
    assert events[2]["message"] == "messages must alternate" and events[-1]["message"].startswith("slow down")
    assert all(LEAKED not in json.dumps(e) and KEY_A not in json.dumps(e) for e in events)


def _upserts(gateway: Gateway, since: int) -> list[str]:
    return [s for s in gateway.d1_statements()[since:] if s.startswith("INSERT INTO usage_buckets")]


def _wait_for(condition: Any) -> None:
    """Poll ``condition`` until it holds (a flush runs in waitUntil, after its answer was sent)."""
    deadline = time.monotonic() + 15
    while not condition():
        assert time.monotonic() < deadline, "the flush never came"
        time.sleep(0.05)


def test_a_flush_writes_a_minute_of_requests_in_one_batch_not_a_row_per_request(gateway, admin, api, add_provider, hour):
    add_provider(name="B", models=["m"])
    assert api.post("/chat/completions", json=BODY).status_code == 200
    usage(admin, "provider", hour)  # the book is written now: the next flush is due a minute later
    mark = len(gateway.d1_statements())

    for _ in range(10):
        assert api.post("/chat/completions", json=BODY).status_code == 200
    assert _upserts(gateway, mark) == []  # a minute has not passed: nothing written

    gateway.advance_clock(61_000)
    assert api.post("/chat/completions", json=BODY).status_code == 200
    _wait_for(lambda: _upserts(gateway, mark))

    # One statement, one row (B's bucket) for the 11 requests, written without an admin read.
    [upsert] = _upserts(gateway, mark)
    assert "batch" in gateway.d1_statements()[mark:]
    assert "),(" not in upsert
    [row] = d1_execute(gateway.persist_to, f"SELECT SUM(requests) AS n FROM usage_buckets WHERE hour_ms >= {hour}")
    assert row["n"] == 1 + 11


def test_a_restarted_isolate_loses_only_what_it_counted_since_its_last_flush(tmp_path, upstream):
    def start() -> Gateway:
        return Gateway.start(tmp_path, extra_env={"AUTH_FAIL_LIMIT": "0"})

    def ask(running: Gateway) -> None:
        answer = httpx.post(f"{running.url}/v1/chat/completions", json=BODY, timeout=30,
                            headers={"authorization": f"Bearer {running.api_token}"})
        assert answer.status_code == 200, answer.text

    def requests(running: Gateway) -> int:
        answer = httpx.get(f"{running.url}/api/admin/usage", params={"from": 0}, timeout=30,
                           headers={"authorization": f"Bearer {running.admin_token}"})
        return answer.json()["totals"]["requests"]

    first = start()
    try:
        body = {"name": "B", "base_url": upstream.base_url, "api_key": UPSTREAM_KEY, "models": ["m"]}
        httpx.post(f"{first.url}/api/admin/providers", json=body, timeout=30,
                   headers={"authorization": f"Bearer {first.admin_token}"}).raise_for_status()
        for _ in range(3):
            ask(first)
        assert requests(first) == 3  # read: written at once
        first.advance_clock(61_000)
        mark = len(first.d1_statements())
        ask(first)  # a minute after the last flush: written with its answer
        _wait_for(lambda: _upserts(first, mark))
        ask(first)  # counted in memory only
    finally:
        first.stop()

    again = start()
    try:
        assert requests(again) == 4  # the last request, unflushed, died with its isolate
    finally:
        again.stop()


def test_the_cron_prunes_buckets_and_events_older_than_30_days(gateway, admin):
    now = gateway.now_ms()
    old, recent = now - 31 * DAY_MS, now - 29 * DAY_MS
    for at in (old, recent):
        hour = at - at % HOUR_MS
        d1_execute(
            gateway.persist_to,
            "INSERT INTO usage_buckets (hour_ms, client_id, provider_id, key_id, model, surface, requests) "
            f"VALUES ({hour}, 0, 9, 0, 'pruned-{at == old}', 'chat', 1)",
        )
        d1_execute(
            gateway.persist_to,
            "INSERT INTO usage_events (at_ms, client_id, provider_id, key_id, model, surface, class, message) "
            f"VALUES ({at}, 0, 9, 0, 'pruned-{at == old}', 'chat', 'timeout', '')",
        )

    httpx.get(f"{gateway.url}/cdn-cgi/handler/scheduled", params={"cron": "0 */3 * * *"}).raise_for_status()

    kept = groups(usage(admin, "model", now - 32 * DAY_MS), "requests")
    assert "pruned-False" in kept and "pruned-True" not in kept
    models = {e["model"] for e in admin.get("/events").json()["events"]}
    assert "pruned-False" in models and "pruned-True" not in models


@pytest.mark.parametrize(
    ("params", "param"),
    [({"by": "colour"}, "by"), ({"from": "yesterday"}, "from"), ({"from": 2_000, "to": 1_000}, "from")],
)
def test_a_bad_usage_query_is_a_400_naming_the_parameter(admin, params, param):
    answer = admin.get("/usage", params=params)

    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param


def test_usage_and_events_are_for_the_admin_only(gateway, api):
    for path in ("/api/admin/usage", "/api/admin/events"):
        answer = httpx.get(f"{gateway.url}{path}", headers={"authorization": f"Bearer {gateway.api_token}"})
        assert answer.status_code == 401, path
