"""Usage and health end to end (SPEC §17, §18): traffic through several surfaces, clients and
providers (with a failover, a refusal, a cut stream, cached tokens and a request nothing served) is
counted exactly; a flush is one row per isolate and hour, at most once per ``usage_flush_minutes``,
never a write per request, and replaces the isolate's row of the hour: a write repeated, or one
that failed and was carried by the next, counts each request once; a restarted isolate loses at
most what it counted since its last flush; the old tables' usage survives the migration to parts;
the cron prunes parts older than 30 days."""

from __future__ import annotations

import json
import shutil
import time
from typing import Any

import httpx
import pytest

from support.d1 import d1_apply_migrations, d1_execute
from support.runtime import ROOT, Gateway
from support.upstream import UPSTREAM_KEY, Json, PerKey, Sse, chunk

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
FLUSH_MS = 10 * 60_000  # the setting usage_flush_minutes' default
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
    tail = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}},
    }
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
    return [s for s in gateway.d1_statements()[since:] if s.startswith("INSERT INTO usage_parts")]


def _wait_for(condition: Any) -> None:
    """Poll ``condition`` until it holds (a flush runs in waitUntil, after its answer was sent)."""
    deadline = time.monotonic() + 15
    while not condition():
        assert time.monotonic() < deadline, "the flush never came"
        time.sleep(0.05)


def _parts(gateway: Gateway, hour: int) -> list[dict[str, Any]]:
    sql = f"SELECT isolate, seq, buckets, events FROM usage_parts WHERE hour_ms = {hour} AND isolate != 'migrated'"
    return d1_execute(gateway.persist_to, sql)


def _stored_requests(gateway: Gateway) -> int:
    """The requests every stored part counts (a bucket's counts start at its sixth entry)."""
    rows = d1_execute(gateway.persist_to, "SELECT buckets FROM usage_parts")
    return sum(b[5] for row in rows for b in json.loads(row["buckets"]))


def test_flushes_rewrite_the_hour_in_one_row_so_the_totals_add_up_across_them(gateway, admin, api, add_provider, hour):
    add_provider(name="B", models=["m"])
    assert api.post("/chat/completions", json=BODY).status_code == 200
    usage(admin, "provider", hour)  # the book is written now: the next flush is due an interval later
    mark = len(gateway.d1_statements())

    for _ in range(10):
        assert api.post("/chat/completions", json=BODY).status_code == 200
    assert _upserts(gateway, mark) == []  # the interval has not passed: nothing written

    sent = 11
    for flush, more in enumerate((2, 4, 0), start=1):  # three flushes, each due at the request after an interval
        gateway.advance_clock(FLUSH_MS + 1_000)
        assert api.post("/chat/completions", json=BODY).status_code == 200
        sent += 1
        # One row: this isolate's hour, replaced by every request so far in it.
        _wait_for(lambda n=sent: [sum(b[5] for b in json.loads(p["buckets"])) for p in _parts(gateway, hour)] == [n])
        assert len(_upserts(gateway, mark)) == flush and "),(" not in _upserts(gateway, mark)[-1]
        for _ in range(more):  # counted in memory until the next flush
            assert api.post("/chat/completions", json=BODY).status_code == 200
        sent += more

    assert usage(admin, "provider", hour)["totals"]["requests"] == sent == 20
    assert len(_upserts(gateway, mark)) == 3  # the last flush held everything: the admin's read wrote nothing


def test_a_write_repeated_or_failed_and_carried_by_the_next_counts_each_request_once(
    gateway, admin, api, add_provider, hour
):
    add_provider(name="B", models=["m"])
    for _ in range(3):
        assert api.post("/chat/completions", json=BODY).status_code == 200
    assert usage(admin, "provider", hour)["totals"]["requests"] == 3
    [part] = _parts(gateway, hour)
    # The same write again (a batch D1 committed but whose answer was lost, sent again).
    for seq in (part["seq"], part["seq"] + 1):
        d1_execute(
            gateway.persist_to,
            "INSERT INTO usage_parts (hour_ms, isolate, seq, buckets, events) VALUES "
            f"({hour}, '{part['isolate']}', {seq}, '{part['buckets']}', '{part['events']}') "
            "ON CONFLICT (hour_ms, isolate) DO UPDATE SET seq = excluded.seq, buckets = excluded.buckets, "
            "events = excluded.events WHERE excluded.seq > usage_parts.seq",
        )
    assert usage(admin, "provider", hour)["totals"]["requests"] == 3

    # D1 refuses the writes (the table is away): the isolate keeps counting, and writes it all once
    # D1 answers again.
    d1_execute(gateway.persist_to, "ALTER TABLE usage_parts RENAME TO usage_parts_away")
    try:
        for _ in range(2):
            gateway.advance_clock(FLUSH_MS + 1_000)
            assert api.post("/chat/completions", json=BODY).status_code == 200
            _wait_for(lambda: "usage not written" in gateway.log())
    finally:
        d1_execute(gateway.persist_to, "ALTER TABLE usage_parts_away RENAME TO usage_parts")
    gateway.advance_clock(FLUSH_MS + 1_000)
    assert api.post("/chat/completions", json=BODY).status_code == 200
    _wait_for(lambda: sum(b[5] for p in _parts(gateway, hour) for b in json.loads(p["buckets"])) == 6)

    assert usage(admin, "provider", hour)["totals"]["requests"] == 6


def test_the_flush_interval_is_the_setting(gateway, admin, api, add_provider, hour):
    add_provider(name="B", models=["m"])
    admin.put("/settings", json={"usage_flush_minutes": 1}).raise_for_status()
    try:
        assert api.post("/chat/completions", json=BODY).status_code == 200
        assert usage(admin, "provider", hour)["totals"]["requests"] == 1  # written: due again a minute later
        mark = len(gateway.d1_statements())
        gateway.advance_clock(61_000)
        assert api.post("/chat/completions", json=BODY).status_code == 200
        _wait_for(lambda: _upserts(gateway, mark))
    finally:
        admin.put("/settings", json={"usage_flush_minutes": None}).raise_for_status()


def test_a_restarted_isolate_loses_only_what_it_counted_since_its_last_flush(tmp_path, upstream):
    def start() -> Gateway:
        return Gateway.start(tmp_path, extra_env={"AUTH_FAIL_LIMIT": "0"})

    def ask(running: Gateway) -> None:
        answer = httpx.post(
            f"{running.url}/v1/chat/completions",
            json=BODY,
            timeout=30,
            headers={"authorization": f"Bearer {running.api_token}"},
        )
        assert answer.status_code == 200, answer.text

    def requests(running: Gateway) -> int:
        answer = httpx.get(
            f"{running.url}/api/admin/usage",
            params={"from": 0},
            timeout=30,
            headers={"authorization": f"Bearer {running.admin_token}"},
        )
        return answer.json()["totals"]["requests"]

    first = start()
    try:
        body = {"name": "B", "base_url": upstream.base_url, "api_key": UPSTREAM_KEY, "models": ["m"]}
        httpx.post(
            f"{first.url}/api/admin/providers",
            json=body,
            timeout=30,
            headers={"authorization": f"Bearer {first.admin_token}"},
        ).raise_for_status()
        for _ in range(3):
            ask(first)
        assert requests(first) == 3  # read: written at once
        first.advance_clock(FLUSH_MS + 1_000)
        ask(first)  # an interval after the last flush: written with its answer
        _wait_for(lambda: _stored_requests(first) == 4)  # committed, not only sent
        ask(first)  # counted in memory only
    finally:
        first.stop()

    again = start()
    try:
        assert requests(again) == 4  # the last request, unflushed, died with its isolate
    finally:
        again.stop()


def test_the_cron_prunes_parts_older_than_30_days(gateway, admin):
    now = gateway.now_ms()
    for at, name in ((now - 31 * DAY_MS, "pruned"), (now - 29 * DAY_MS, "kept")):
        bucket = json.dumps([[0, 9, 0, name, "chat", 1]])
        event = json.dumps([[at, 0, 9, 0, name, "chat", "timeout", None, ""]])
        d1_execute(
            gateway.persist_to,
            "INSERT INTO usage_parts (hour_ms, isolate, seq, buckets, events) "
            f"VALUES ({at - at % HOUR_MS}, '{name}', 1, '{bucket}', '{event}')",
        )

    httpx.get(f"{gateway.url}/cdn-cgi/handler/scheduled", params={"cron": "0 */3 * * *"}).raise_for_status()

    kept = groups(usage(admin, "model", now - 32 * DAY_MS), "requests")
    assert "kept" in kept and "pruned" not in kept
    isolates = {row["isolate"] for row in d1_execute(gateway.persist_to, "SELECT isolate FROM usage_parts")}
    assert "kept" in isolates and "pruned" not in isolates


def test_events_are_the_newest_across_isolates_and_hours_of_the_last_week(gateway, admin, hour):
    def part(isolate: str, at_hour: int, *times: int) -> None:
        events = json.dumps([[t, 0, 9, 0, f"{isolate}@{t - hour}", "chat", "timeout", 504, "slow"] for t in times])
        d1_execute(
            gateway.persist_to,
            "INSERT INTO usage_parts (hour_ms, isolate, seq, buckets, events) "
            f"VALUES ({at_hour}, '{isolate}', 1, '[]', '{events}')",
        )

    part("x", hour, hour + 10, hour + 30)
    part("y", hour, hour + 20, hour + 40)
    part("y", hour + HOUR_MS, hour + HOUR_MS + 5)
    part("z", hour - 8 * DAY_MS, hour - 8 * DAY_MS)  # older than a week: never read

    listed = admin.get("/events", params={"limit": 4}).json()["events"]

    assert [e["model"] for e in listed] == [f"y@{HOUR_MS + 5}", "y@40", "x@30", "y@20"]
    assert listed[0] == {
        "time": hour + HOUR_MS + 5,
        "client": "(api token)",
        "client_id": 0,
        "provider": "#9",
        "provider_id": 9,
        "key": None,
        "key_id": 0,
        "model": f"y@{HOUR_MS + 5}",
        "surface": "chat",
        "class": "timeout",
        "status": 504,
        "message": "slow",
    }
    assert all(not e["model"].startswith("z@") for e in admin.get("/events").json()["events"])


def test_the_old_tables_usage_and_events_survive_the_migration_to_parts(tmp_path):
    """A database as 0006 to 0008 left it, with buckets and events the previous release wrote; this
    tree's runtime migrates it (0010) and shows the same counts."""
    migrations = tmp_path / "migrations-0008"
    migrations.mkdir()
    for path in sorted((ROOT / "migrations").glob("*.sql")):
        if path.name < "0010":
            shutil.copy(path, migrations)
    d1_apply_migrations(tmp_path / "state", migrations)
    then = int(time.time() * 1000) - 2 * DAY_MS
    hour = then - then % HOUR_MS
    d1_execute(
        tmp_path / "state",
        "INSERT INTO usage_buckets (hour_ms, client_id, provider_id, key_id, model, surface, requests, successes, "
        f"tokens_in, err_timeout, fb_3, end_19) VALUES ({hour}, 0, 9, 0, 'old-m', 'chat', 5, 4, 120, 1, 4, 4), "
        f"({hour}, 0, 9, 0, 'old-m', 'anthropic', 2, 2, 30, 0, 2, 0), "
        f"({hour - HOUR_MS}, 0, 8, 0, 'old-n', 'chat', 1, 1, 0, 0, 0, 0)",
    )
    d1_execute(
        tmp_path / "state",
        "INSERT INTO usage_events (at_ms, client_id, provider_id, key_id, model, surface, class, status, message) "
        f"VALUES ({then}, 0, 9, 0, 'old-m', 'chat', 'timeout', NULL, 'took too long')",
    )

    gateway = Gateway.start(tmp_path)
    try:
        admin = httpx.Client(
            base_url=f"{gateway.url}/api/admin", timeout=30, headers={"authorization": f"Bearer {gateway.admin_token}"}
        )
        with admin:
            report = usage(admin, "model", hour - HOUR_MS)
            assert groups(report, "requests", "successes", "tokens.input", "errors") == {
                "old-m": (7, 6, 150, {"timeout": 1}),
                "old-n": (1, 1, 0, {}),
            }
            old_m = next(g for g in report["groups"] if g["group"] == "old-m")
            assert old_m["latency_ms"]["end"]["p50"] == 60_000  # the open last bin kept its samples
            assert {b["hour"] for b in report["buckets"]} == {hour - HOUR_MS, hour}
            [event] = admin.get("/events").json()["events"]
            assert (event["time"], event["model"], event["class"], event["status"], event["message"]) == (
                then,
                "old-m",
                "timeout",
                None,
                "took too long",
            )
    finally:
        gateway.stop()


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
