"""The fallback loop end to end (SPEC §4, §5): each failure kind fails over to the next provider
and leaves the cooldown that /api/admin/status reports; exhaustion answers are honest."""

from __future__ import annotations

import email.utils
import time

import pytest

from support.upstream import UPSTREAM_KEY, Hang, Json, Reset

HOUR_MS = 3_600_000


def ask(api, model="m", **extra):
    return api.post("/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "x"}], **extra})


@pytest.fixture
def pair(add_provider):
    """Provider A (tried first) and B, both declaring model m."""
    return add_provider(name="A", priority=1, models=["m"], timeout_ms=1000), add_provider(
        name="B", priority=2, models=["m"]
    )


class RetryAt:
    """A 429 whose Retry-After is an HTTP-date ``seconds`` ahead of the Worker's clock."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    def step(self, gateway) -> Json:
        date = email.utils.formatdate(gateway.now_ms() / 1000 + self.seconds, usegmt=True)
        return Json({"error": {"message": "later"}}, 429, {"retry-after": date})


@pytest.mark.parametrize(
    ("step", "kind", "source", "status", "at_least_ms", "at_most_ms"),
    [
        pytest.param(
            Json({"error": {"message": "slow down"}}, 429), "rate_limited", "heuristic", 429, 85_000, 90_000, id="429"
        ),
        pytest.param(
            Json({"error": {"message": "later"}}, 429, {"retry-after": "300"}),
            "rate_limited",
            "authoritative",
            429,
            295_000,
            300_000,
            id="429-retry-after",
        ),
        pytest.param(RetryAt(600), "rate_limited", "authoritative", 429, 590_000, 601_000, id="429-http-date"),
        pytest.param(
            Json({"error": {"message": "You exceeded your daily quota"}}, 429),
            "daily_quota_exhausted",
            "quota",
            429,
            60_000,
            24 * HOUR_MS,
            id="429-daily-quota",
        ),
        pytest.param(
            Json({"error": {"message": "bad key"}}, 401), "auth", "heuristic", 401, 295_000, 300_000, id="401"
        ),
        pytest.param(
            Json({"error": {"message": "no credit"}}, 402),
            "out_of_credits",
            "credit",
            402,
            24 * HOUR_MS - 5_000,
            24 * HOUR_MS,
            id="402",
        ),
        pytest.param(
            Json({"error": {"message": "tier"}}, 403),
            "forbidden",
            "tier",
            403,
            24 * HOUR_MS - 5_000,
            24 * HOUR_MS,
            id="403",
        ),
        pytest.param(
            Json({"error": {"message": "boom"}}, 500), "upstream_error", "heuristic", 500, 85_000, 90_000, id="500"
        ),
        pytest.param(Reset(), "network", "heuristic", None, 85_000, 90_000, id="connection-reset"),
        # A step that holds a request is made per run (a factory): each run of the test needs its own.
        pytest.param(Hang, "timeout", "heuristic", None, 85_000, 90_000, id="timeout"),
    ],
)
def test_failure_fails_over_and_cools_the_provider(
    gateway, api, admin, pair, upstream, step, kind, source, status, at_least_ms, at_most_ms
):
    made = step.step(gateway) if isinstance(step, RetryAt) else step() if callable(step) else step
    upstream.queue(made)  # A gets it; B answers

    response = ask(api, model="auto")

    assert response.status_code == 200
    assert response.headers["x-routed-via"] == "B/m"
    assert response.headers["x-fallback-attempts"] == "1"
    assert response.headers["x-fallback-trail"] == f"A/m: {kind}"
    [cooldown] = admin.get("/status").json()["cooldowns"]
    assert (cooldown["name"], cooldown["model"], cooldown["source"], cooldown["lastStatus"]) == (
        "A",
        None,
        source,
        status,
    )
    assert at_least_ms <= cooldown["remainingMs"] <= at_most_ms


def test_a_cooled_provider_is_skipped_by_the_next_request(api, pair, upstream):
    upstream.queue(Json({"error": {"message": "boom"}}, 503))
    ask(api, model="auto")

    response = ask(api, model="auto")

    assert response.headers["x-routed-via"] == "B/m"
    assert "x-fallback-attempts" not in response.headers
    assert len(upstream.requests) == 3  # A, B, then B again


def test_every_candidate_cooling_is_429_with_retry_details(gateway, api, pair, upstream):
    upstream.queue(Json({}, 402), Json({}, 429, {"retry-after": "600"}))
    assert ask(api, model="auto").status_code == 429  # both fail: rate-limit exhaustion

    response = ask(api, model="auto")

    assert response.status_code == 429
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "rate_limit_exceeded")
    assert abs(error["retryAtMs"] - (gateway.now_ms() + 600_000)) < 10_000
    assert 595 <= int(response.headers["retry-after"]) <= 600
    sources = {c["name"]: c["source"] for c in error["cooldowns"]}
    assert sources == {"A": "credit", "B": "authoritative"}
    assert "A" in error["message"] and "B" in error["message"]


@pytest.mark.parametrize(
    ("steps", "status", "code"),
    [
        pytest.param([Json({}, 401), Json({}, 401)], 502, "provider_authentication_failed", id="all-auth"),
        pytest.param([Json({}, 429), Json({}, 402)], 429, "rate_limit_exceeded", id="all-rate-or-credit"),
        pytest.param([Json({}, 429), Json({}, 503)], 502, "upstream_failed", id="mixed"),
        pytest.param([Json({}, 500), Reset()], 502, "upstream_failed", id="5xx-and-network"),
    ],
)
def test_exhaustion_status(api, pair, upstream, steps, status, code):
    upstream.queue(*steps)

    response = ask(api, model="auto")

    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert response.headers["x-fallback-attempts"] == "2"
    assert "A/m" in response.json()["error"]["message"]


def test_all_models_not_found_is_404(api, add_provider, upstream):
    add_provider(name="A", models=["gone"])
    upstream.queue(Json({"error": {"message": "The model `gone` does not exist"}}, 404))

    response = ask(api, model="gone")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"


def test_breaker_stops_after_consecutive_failures(api, admin, pair, upstream):
    admin.put("/settings", json={"max_consecutive_upstream_fails": 1}).raise_for_status()
    upstream.queue(Json({}, 500))

    response = ask(api, model="auto")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "upstream_unhealthy"
    assert len(upstream.requests) == 1


def test_caller_error_is_returned_as_is_without_trying_others(api, admin, pair, upstream):
    body = {"error": {"message": "messages.0.content: invalid type", "type": "invalid_request_error"}}
    upstream.queue(Json(body, 400))

    response = ask(api, model="auto")

    assert response.status_code == 400
    assert response.json() == body
    assert len(upstream.requests) == 1
    assert admin.get("/status").json()["cooldowns"] == []


def test_context_too_long_moves_to_another_model_without_cooldown(api, admin, add_provider, upstream):
    add_provider(name="A", priority=1, models=["small", "big"])
    add_provider(name="B", priority=2, models=["small"])
    upstream.queue(
        Json({"error": {"message": "This model's maximum context length is 8192 tokens"}}, 400), model="small"
    )

    response = ask(api, model="auto")

    assert response.headers["x-routed-via"] == "A/big"
    assert [r.json["model"] for r in upstream.requests] == ["small", "big"]  # B/small was skipped
    assert admin.get("/status").json()["cooldowns"] == []


def test_explicit_model_degrades_to_another_with_fallback_from(api, add_provider, upstream):
    add_provider(name="A", priority=1, models=["wanted"])
    add_provider(name="B", priority=2, models=["other"])
    upstream.queue(Json({}, 401), model="wanted")

    response = ask(api, model="wanted")

    assert response.status_code == 200
    assert response.headers["x-routed-via"] == "B/other"
    assert response.headers["x-fallback-from"] == "wanted"
    assert upstream.requests[-1].json["model"] == "other"


def test_explicit_model_is_retried_once_on_the_same_provider_after_a_5xx(api, pair, upstream):
    upstream.queue(Json({}, 502))

    response = ask(api, model="m")

    assert response.headers["x-routed-via"] == "A/m"
    assert len(upstream.requests) == 2
    assert "x-fallback-from" not in response.headers


def test_short_retry_after_is_waited_for_on_the_same_model(api, pair, upstream):
    upstream.queue(Json({}, 429, {"retry-after": "1"}))

    response = ask(api, model="m")

    assert response.headers["x-routed-via"] == "A/m"
    assert len(upstream.requests) == 2


def test_upstream_error_text_is_redacted(api, pair, upstream):
    leak = "invalid key sk-abcdef0123456789abcdef0123456789 for Bearer sk-abcdef0123456789abcdef0123456789"
    upstream.queue(Json({"error": {"message": leak}}, 500), Json({"error": {"message": leak}}, 500))

    response = ask(api, model="auto")

    assert response.status_code == 502
    assert "sk-abcdef0123456789" not in response.text


def test_a_provider_key_echoed_by_the_upstream_never_reaches_the_caller(api, pair, upstream):
    upstream.queue(Json({"error": {"message": f"model not allowed for key {UPSTREAM_KEY}"}}, 400))

    response = ask(api, model="auto")

    assert response.status_code == 400  # the caller's error, passed through
    assert UPSTREAM_KEY not in response.text
    assert "[redacted]" in response.text


def test_editing_a_provider_clears_its_cooldown(api, admin, pair, upstream):
    upstream.queue(Json({}, 500))
    ask(api, model="auto")
    a_id = pair[0]["id"]

    admin.put(f"/providers/{a_id}", json={"priority": 1}).raise_for_status()

    assert admin.get("/status").json()["cooldowns"] == []
    assert ask(api, model="auto").headers["x-routed-via"] == "A/m"


def test_editing_a_provider_clears_its_speed_memory(api, admin, add_provider):
    provider = add_provider(name="A", models=["x", "y"])
    ask(api, model="y")  # y answers: known and reliable, it now goes before x, which has no data
    assert ask(api, model="auto").headers["x-routed-via"] == "A/y"

    admin.put(f"/providers/{provider['id']}", json={"priority": 1}).raise_for_status()

    assert ask(api, model="auto").headers["x-routed-via"] == "A/x"  # the configured order again


def test_recovered_primary_gets_traffic_back_before_its_cooldown_ends(gateway, api, admin, pair, upstream):
    upstream.queue(Json({}, 500))
    assert ask(api, model="auto").headers["x-routed-via"] == "B/m"  # A cools for 90 s
    [cooldown] = admin.get("/status").json()["cooldowns"]

    gateway.advance_clock(20_000)  # A has recovered (the fake answers it again) ...
    assert ask(api, model="auto").headers["x-routed-via"] == "B/m"  # ... but is not probed yet
    gateway.advance_clock(26_000)  # 26 s after recovering: over half its cooldown, A is probed
    response = ask(api, model="auto")

    assert response.headers["x-routed-via"] == "A/m"
    assert cooldown["remainingMs"] - 46_000 > 40_000  # its cooldown would have run 40+ s more
    assert admin.get("/status").json()["cooldowns"] == []


def test_failed_probe_defers_the_next_one_without_extending_the_cooldown(gateway, api, admin, pair, upstream):
    upstream.queue(Json({}, 500))
    ask(api, model="auto")
    until = admin.get("/status").json()["cooldowns"][0]["remainingMs"]
    gateway.advance_clock(46_000)
    upstream.queue(Json({}, 500))  # the probe of A fails

    first = ask(api, model="auto")
    second = ask(api, model="auto")  # within 30 s of the failed probe: A is not probed again

    assert first.headers["x-routed-via"] == second.headers["x-routed-via"] == "B/m"
    assert [r.json["model"] for r in upstream.requests].count("m") == 5  # A, B, A(probe), B, B
    [cooldown] = admin.get("/status").json()["cooldowns"]
    assert cooldown["remainingMs"] <= until - 46_000


def test_clear_cooldowns(api, admin, pair, upstream):
    upstream.queue(Json({}, 500))
    ask(api, model="auto")

    assert admin.post("/cooldowns/clear").json() == {"cleared": 1}
    assert admin.get("/status").json()["cooldowns"] == []
    assert ask(api, model="auto").headers["x-routed-via"] == "A/m"


def test_clear_and_verify_probes_and_recools_the_still_failing(api, admin, add_provider, upstream):
    add_provider(name="A", priority=1, models=["a"])
    add_provider(name="B", priority=2, models=["b"])
    upstream.queue(Json({}, 500), model="a")
    upstream.queue(Json({}, 500), model="b")
    ask(api, model="auto")
    upstream.queue(Json({"error": {"message": "still down"}}, 503), model="a")  # A's probe fails, B's works

    results = admin.post("/cooldowns/verify").json()["results"]

    by_name = {r["name"]: r for r in results}
    assert (by_name["A"]["ok"], by_name["A"]["status"]) == (False, 503)
    assert (by_name["B"]["ok"], by_name["B"]["status"]) == (True, 200)
    assert upstream.requests[-1].json["max_tokens"] == 1
    assert [c["name"] for c in admin.get("/status").json()["cooldowns"]] == ["A"]


def test_clear_and_verify_gives_each_probe_5_s(api, admin, add_provider, upstream):
    add_provider(name="A", models=["a"], timeout_ms=30_000)  # the probe does not use this timeout
    upstream.queue(Json({}, 500))
    ask(api, model="auto")
    upstream.queue(Hang())  # A's probe gets no answer

    started = time.monotonic()
    [result] = admin.post("/cooldowns/verify").json()["results"]
    waited_s = time.monotonic() - started

    assert (result["name"], result["ok"]) == ("A", False)
    assert 4.95 <= waited_s < 6.0  # SPEC §5.3: the probe timeout, then the answer at once
    assert [c["name"] for c in admin.get("/status").json()["cooldowns"]] == ["A"]


def test_status_reports_providers_and_config_age(admin, add_provider):
    add_provider()

    status = admin.get("/status").json()

    assert status["providers"] == 1
    assert status["config_age_ms"] >= 0
