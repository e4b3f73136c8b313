"""A gateway that outlives D1 (issue 30, SPEC §18): with D1 failing (``gateway.d1_fault``: every
query, only writes, or every query after N rows written as the free plan's daily quota does;
scripts/runtime/d1fault.py) chat is served from the isolate's last configuration however old,
retried at most once a minute; a cold isolate answers 503 naming D1; admin writes answer 503
naming D1 and lose nothing; the admin API and the page say D1 is failing; rate limits and the
failed-auth lock fall back to memory; usage waits in memory and is written once when D1 is back.
And D1's budget on the warm hot path: a known caller within its limits makes no D1 query.

Time is the runtime's test clock (``advance_clock``); callers are named by ``CF-Connecting-IP``
from a range of this file's own, so no other file's windows meet these."""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from support.browser import login, watched_page
from support.runtime import Gateway

CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}
MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
# Past the snapshot's age (SPEC §2.3) and past a retry's minute (SPEC §18).
STALE_MS = MINUTE_MS + 1_000
# Past any usage flush interval the budget allows (SPEC §17, §18): each step lets a flush fall due.
FLUSH_DUE_MS = HOUR_MS + 1_000
# A known caller's pause between requests: within a rate window and a snapshot's age.
RETURNS_AFTER_MS = 15_000
# A statement of a configuration read: the whole snapshot, or the check that it is still current.
CONFIG_READ = re.compile(r"^SELECT\b.*\bFROM (providers|config_stamp)\b", re.IGNORECASE)
USAGE_WRITE = re.compile(r"^(INSERT|REPLACE|UPDATE)\b.*\busage", re.IGNORECASE)
_addresses = itertools.count(1)


def new_ip() -> str:
    return f"203.0.113.{next(_addresses)}"


def chat(gateway: Gateway, token: str | None = None, ip: str | None = None, **kw: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {token or gateway.api_token}", "cf-connecting-ip": ip or new_ip()}
    return httpx.post(f"{gateway.url}/v1/chat/completions", json=kw.pop("json", CHAT), headers=headers, timeout=30)


def next_window(gateway: Gateway) -> None:
    """Move the Worker's clock to the start of the next rate window."""
    gateway.advance_clock(MINUTE_MS - gateway.now_ms() % MINUTE_MS)


def assert_names_d1(answer: httpx.Response) -> None:
    """503 in the OpenAI envelope, code ``d1_unavailable``, a message naming D1."""
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["code"] == "d1_unavailable"
    assert "D1" in error["message"]


def config_reads(statements: list[str]) -> int:
    """How many D1 round trips in ``statements`` read the configuration: the trace prints a
    batch's statements as they are prepared, then ``batch``."""
    reads, pending = 0, False
    for statement in statements:
        if statement == "batch":
            reads, pending = reads + pending, False
        else:
            pending = pending or bool(CONFIG_READ.match(statement))
    return reads + pending


def fault_state(gateway: Gateway) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {gateway.admin_token}"}
    return httpx.get(f"{gateway.url}/api/dev/d1-fault", headers=headers, timeout=30).raise_for_status().json()


def wait_for(check, what: str) -> None:
    """``check()`` becomes true within a few seconds: work given to ``waitUntil`` runs after the
    answer was handed back."""
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)  # polling the runtime's state, not timing a behaviour


def usage_requests(admin: httpx.Client, since_ms: int) -> int:
    """The requests the usage report counts since ``since_ms`` (reading it flushes the serving
    isolate's book first)."""
    answer = admin.get("/usage", params={"by": "client", "from": since_ms})
    assert answer.status_code == 200, answer.text
    return answer.json()["totals"]["requests"]


@pytest.fixture
def provider(add_provider) -> dict[str, Any]:
    return add_provider()


@pytest.fixture
def warm(gateway: Gateway, provider) -> None:
    """The isolate holds a snapshot with the provider (one request read it)."""
    assert chat(gateway).status_code == 200


@pytest.fixture
def fresh_window(gateway: Gateway):
    next_window(gateway)
    yield
    next_window(gateway)


@pytest.fixture
def hour(gateway: Gateway) -> int:
    """The start of a fresh UTC hour on the Worker's clock: only this test's traffic is after it."""
    now = gateway.advance_clock(HOUR_MS - gateway.now_ms() % HOUR_MS + 1_000)
    return now - now % HOUR_MS


# --- The mechanism ----------------------------------------------------------------------------


def test_the_fault_fails_d1_at_execution_and_counts_rows_as_d1_does(gateway, admin):
    """scripts/runtime/d1fault.py itself: ``writes`` fails a write and lets reads through,
    ``quota:N`` counts D1's own rows written, ``all`` fails reads too, ``off`` ends it."""
    assert gateway.d1_fault("writes") == {"mode": "writes", "rows_left": None, "was": "off"}
    refused = admin.put("/settings", json={"stream_stall_ms": 30_000})
    read = admin.get("/providers")
    assert refused.status_code >= 500 and read.status_code == 200
    assert admin.get("/settings").json()["settings"]["stream_stall_ms"]["source"] != "d1"  # nothing written

    gateway.d1_fault("quota:100")
    admin.put("/settings", json={"stream_stall_ms": 30_000}).raise_for_status()
    rows_left = fault_state(gateway)["rows_left"]
    assert 0 < rows_left < 100

    gateway.d1_fault("all")
    assert admin.get("/events").status_code >= 500  # read from D1 itself, never from a snapshot
    assert gateway.d1_fault("off")["was"] == "all"
    assert admin.get("/events").status_code == 200


def test_the_control_route_takes_the_env_admin_token_and_known_modes(gateway):
    url = f"{gateway.url}/api/dev/d1-fault"
    admin = {"authorization": f"Bearer {gateway.admin_token}"}

    assert (
        httpx.post(url, json={"mode": "all"}, headers={"authorization": f"Bearer {gateway.api_token}"}).status_code
        == 401
    )
    assert httpx.post(url, json={"mode": "sometimes"}, headers=admin).status_code == 400
    assert httpx.post(url, json={"mode": "quota:-1"}, headers=admin).status_code == 400
    assert httpx.get(url, headers=admin).json()["mode"] == "off"


# --- Chat through a D1 failure ----------------------------------------------------------------


@pytest.mark.usefixtures("admin", "warm")
@pytest.mark.parametrize("mode", ["all", "writes"])
def test_chat_answers_from_a_stale_snapshot_while_d1_fails(gateway, upstream, mode):
    gateway.d1_fault(mode)
    gateway.advance_clock(STALE_MS)

    answers = [chat(gateway) for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 200], answers[0].text
    assert answers[0].json()["choices"][0]["message"]["content"] == "hello from the fake upstream"
    assert len(upstream.requests) == 4  # the warm-up and these three reached the provider


@pytest.mark.usefixtures("admin", "warm")
def test_the_configuration_is_retried_at_most_once_a_minute_while_d1_fails(gateway):
    gateway.d1_fault("all")
    gateway.advance_clock(STALE_MS)
    start = len(gateway.d1_statements())
    first_minute = []
    for _ in range(5):
        first_minute.append(chat(gateway).status_code)
        gateway.advance_clock(5_000)
    middle = len(gateway.d1_statements())
    gateway.advance_clock(STALE_MS)
    second_minute = [chat(gateway).status_code for _ in range(3)]
    end = len(gateway.d1_statements())
    gateway.d1_fault("off")
    gateway.advance_clock(STALE_MS)
    recovered = chat(gateway).status_code
    statements = gateway.d1_statements()

    assert first_minute == [200] * 5 and second_minute == [200] * 3 and recovered == 200
    assert config_reads(statements[start:middle]) == 1
    assert config_reads(statements[middle:end]) == 1
    assert config_reads(statements[end:]) == 1  # D1 answers: read again


def test_a_cold_isolate_with_no_snapshot_answers_503_naming_d1(tmp_path, upstream):
    """A runtime of its own whose D1 fails from its first request: nothing to serve from."""
    gateway = Gateway.start(tmp_path, extra_env={"LOCAL_RUNTIME_D1_FAULT": "all"})
    try:
        mode = fault_state(gateway)["mode"]
        answer = chat(gateway)
        models = httpx.get(f"{gateway.url}/v1/models", headers={"authorization": f"Bearer {gateway.api_token}"})
        status = httpx.get(
            f"{gateway.url}/api/admin/status", headers={"authorization": f"Bearer {gateway.admin_token}"}
        )
        log = gateway.log()
    finally:
        gateway.stop()

    assert mode == "all"
    assert_names_d1(answer)
    assert answer.json()["error"]["type"]  # the OpenAI envelope
    assert models.status_code != 500 and status.status_code != 500
    assert "unhandled" not in log
    assert gateway.api_token not in log and gateway.admin_token not in log


@pytest.mark.usefixtures("warm")
def test_once_d1_answers_again_an_admin_write_is_seen_by_the_next_request(gateway, admin, provider):
    """The snapshot held through the failure gives way to the write D1 took (SPEC §2.3)."""
    gateway.d1_fault("all")
    gateway.advance_clock(STALE_MS)
    assert chat(gateway).status_code == 200  # D1 failed: the old snapshot is held
    gateway.d1_fault("off")

    renamed = admin.put(f"/providers/{provider['id']}", json={"name": "after"})
    limited = admin.put("/settings", json={"ip_rpm": 7})
    answer = chat(gateway)

    assert renamed.status_code == 200 and limited.status_code == 200
    assert admin.get("/settings").json()["settings"]["ip_rpm"]["value"] == 7
    assert answer.status_code == 200 and answer.headers["x-routed-via"] == "after/fake-model"


# --- The admin API --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["all", "writes"])
def test_admin_writes_answer_503_naming_d1_and_nothing_is_lost(gateway, admin, upstream, provider, mode):
    admin.put("/settings", json={"ip_rpm": 7}).raise_for_status()
    providers = admin.get("/providers").json()
    settings = admin.get("/settings").json()
    gateway.d1_fault(mode)

    refused = [
        admin.put("/settings", json={"ip_rpm": 9}),
        admin.post(
            "/providers",
            json={
                "name": "another",
                "base_url": upstream.base_url,
                "api_key": "sk-another-0123456789",
                "models": ["m"],
            },
        ),
        admin.put(f"/providers/{provider['id']}", json={"name": "renamed"}),
        admin.delete(f"/providers/{provider['id']}"),
        admin.post("/clients", json={"name": "app"}),
    ]
    gateway.d1_fault("off")
    gateway.advance_clock(STALE_MS)

    for answer in refused:
        assert_names_d1(answer)
    assert admin.get("/providers").json() == providers
    assert admin.get("/settings").json() == settings
    assert admin.get("/clients").json()["clients"] == []


@pytest.mark.usefixtures("warm")
def test_admin_status_says_d1_is_failing_since_when_and_why(gateway, admin):
    assert admin.get("/status").json()["d1"]["ok"] is True
    gateway.d1_fault("all")
    gateway.advance_clock(STALE_MS)
    failed_from = gateway.now_ms()

    assert chat(gateway).status_code == 200  # tries D1, serves the old snapshot
    failing = admin.get("/status")
    gateway.d1_fault("off")
    gateway.advance_clock(STALE_MS)
    assert chat(gateway).status_code == 200  # D1 read again
    healthy = admin.get("/status")

    assert failing.status_code == 200, failing.text
    d1 = failing.json()["d1"]
    assert set(d1) == {"ok", "failing_since", "error"}
    assert d1["ok"] is False
    assert failed_from <= d1["failing_since"] <= failed_from + 10_000
    assert isinstance(d1["error"], str) and d1["error"]
    assert gateway.admin_token not in d1["error"] and gateway.api_token not in d1["error"]
    assert set(healthy.json()["d1"]) == {"ok", "failing_since", "error"}
    assert healthy.json()["d1"]["ok"] is True


@pytest.mark.usefixtures("warm")
def test_the_config_page_shows_that_d1_is_failing(browser, gateway, admin):
    gateway.d1_fault("all")
    gateway.advance_clock(STALE_MS)
    assert chat(gateway).status_code == 200
    with watched_page(browser, gateway.url, locale="en-US") as page:
        login(page, gateway.admin_token)
        banner = page.locator("#d1-health")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("D1")

    gateway.d1_fault("off")
    gateway.advance_clock(STALE_MS)
    assert chat(gateway).status_code == 200
    with watched_page(browser, gateway.url, locale="en-US") as page:
        login(page, gateway.admin_token)
        expect(page.locator("#d1-health")).to_be_hidden()


# --- Limits in memory -----------------------------------------------------------------------


@pytest.mark.usefixtures("provider", "fresh_window")
def test_ip_rpm_falls_back_to_memory_while_d1_fails(gateway, admin):
    admin.put("/settings", json={"ip_rpm": 3}).raise_for_status()
    assert chat(gateway).status_code == 200  # the snapshot with the limit
    gateway.d1_fault("all")
    ip = new_ip()

    answers = [chat(gateway, ip=ip) for _ in range(4)]
    elsewhere = chat(gateway)

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert int(answers[3].headers["retry-after"]) >= 1
    assert elsewhere.status_code == 200


@pytest.mark.usefixtures("provider", "fresh_window")
def test_the_failed_auth_lock_holds_in_memory_while_d1_fails(gateway, admin):
    admin.put("/settings", json={"auth_fail_limit": 3}).raise_for_status()
    assert chat(gateway).status_code == 200
    gateway.d1_fault("all")
    guesser = new_ip()

    guesses = [chat(gateway, token=f"wrong-token-{n:04d}-xxxxxxxx", ip=guesser).status_code for n in range(3)]
    with_the_token = chat(gateway, ip=guesser)
    elsewhere = chat(gateway)

    assert guesses == [401, 401, 401]
    assert with_the_token.status_code == 429
    assert with_the_token.json()["error"]["code"] == "too_many_failed_auth"
    assert elsewhere.status_code == 200


# --- Usage -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("warm")
def test_usage_is_written_when_d1_returns_and_counted_once(gateway, admin, hour):
    gateway.d1_fault("writes")
    start = len(gateway.d1_statements())
    made = 0
    for _ in range(3):
        made += sum(chat(gateway).status_code == 200 for _ in range(2))
        gateway.advance_clock(FLUSH_DUE_MS)  # the next request's flush is due, and fails
    made += chat(gateway).status_code == 200
    wait_for(
        lambda: sum(bool(USAGE_WRITE.match(s)) for s in gateway.d1_statements()[start:]) >= 2,
        "the isolate tried to write its usage while D1 refused writes",
    )
    gateway.d1_fault("off")
    gateway.advance_clock(FLUSH_DUE_MS)

    assert made == 7
    assert usage_requests(admin, hour) == made
    assert usage_requests(admin, hour) == made  # a second read flushes nothing again
    assert chat(gateway).status_code == 200
    assert usage_requests(admin, hour) == made + 1


@pytest.mark.usefixtures("warm")
def test_a_spent_quota_lets_its_rows_through_then_chat_goes_on(gateway, admin, hour):
    assert gateway.d1_fault("quota:1")["mode"] == "quota:1"
    made = chat(gateway).status_code == 200
    gateway.advance_clock(FLUSH_DUE_MS)  # the snapshot is old (read again: a read) and a flush is due
    made += chat(gateway).status_code == 200  # its flush writes the row the quota lets through
    wait_for(lambda: fault_state(gateway)["mode"] == "quota:0", "the usage flush spent the quota")

    gateway.advance_clock(STALE_MS)
    after = [chat(gateway) for _ in range(3)]
    status = admin.get("/status")
    gateway.d1_fault("off")
    gateway.advance_clock(FLUSH_DUE_MS)

    assert [a.status_code for a in after] == [200, 200, 200]
    assert status.json()["d1"]["ok"] is False
    assert usage_requests(admin, hour) == made + 3  # nothing lost, nothing twice


# --- D1 on the warm hot path ------------------------------------------------------------------


@pytest.mark.usefixtures("provider", "fresh_window")
@pytest.mark.parametrize("caller", ["api token", "named client"])
def test_a_warm_request_from_a_known_caller_within_its_limits_makes_no_d1_query(gateway, admin, caller):
    admin.put(
        "/settings", json={"ip_rpm": 1_000, "default_client_rpm": 1_000, "auth_fail_limit": 10}
    ).raise_for_status()
    token = gateway.api_token
    if caller == "named client":
        made = admin.post("/clients", json={"name": "app", "rpm": 1_000})
        assert made.status_code == 201, made.text
        token = made.json()["token"]
    ip = new_ip()
    assert admin.get("/usage").status_code == 200  # the isolate's usage written: no flush is due
    warm_up = [chat(gateway, token=token, ip=ip).status_code for _ in range(3)]
    # Back a little later, in the same window and snapshot: a caller is known for longer than that.
    gateway.advance_clock(RETURNS_AFTER_MS)
    before = len(gateway.d1_statements())

    answer = chat(gateway, token=token, ip=ip)

    assert warm_up == [200, 200, 200] and answer.status_code == 200
    assert "x-ratelimit-limit" in answer.headers
    assert gateway.d1_statements()[before:] == []
