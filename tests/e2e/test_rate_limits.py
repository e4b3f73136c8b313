"""Rate limits and the failed-auth lock (SPEC §14), counted in the isolate and reported to D1 in
shares (``core/limits.py``): a client's rpm, the API token's ``default_client_rpm``, ``ip_rpm`` and
``auth_fail_limit``; 429 in each surface's shape with ``Retry-After``; ``X-RateLimit-*`` on a
limited client's answers; a new window after a minute on the runtime's test clock; the limits held
in memory when D1 cannot count.

Each test names its callers by a fresh ``CF-Connecting-IP`` (as Cloudflare's edge sets it), so
one test's windows never meet another's; a test that fills the API token's window moves the clock
past it when it ends."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from support.d1 import d1_execute
from support.runtime import Gateway

CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}
MINUTE_MS = 60_000
_addresses = itertools.count(1)


def new_ip() -> str:
    return f"198.51.100.{next(_addresses)}"


def post(gateway: Gateway, token: str, ip: str, path: str = "/v1/chat/completions", **kw: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}", "cf-connecting-ip": ip, **kw.pop("headers", {})}
    return httpx.post(f"{gateway.url}{path}", json=kw.pop("json", CHAT), headers=headers, timeout=30)


def make_client(admin: httpx.Client, **body: Any) -> tuple[dict[str, Any], str]:
    response = admin.post("/clients", json={"name": f"app-{new_ip()}", **body})
    assert response.status_code == 201, response.text
    return response.json()["client"], response.json()["token"]


def next_window(gateway: Gateway) -> None:
    """Move the Worker's clock to the start of the next window."""
    gateway.advance_clock(MINUTE_MS - gateway.now_ms() % MINUTE_MS)


@pytest.fixture
def provider(add_provider) -> dict[str, Any]:
    return add_provider()


@pytest.fixture
def fresh_window(gateway: Gateway) -> Iterator[None]:
    """A test that fills a window starts at the beginning of one (so it cannot end mid-test) and
    leaves the next one clean for whoever follows."""
    next_window(gateway)
    yield
    next_window(gateway)


# --- A named client's rpm --------------------------------------------------------------------


@pytest.mark.usefixtures("provider", "fresh_window")
def test_the_request_over_a_clients_rpm_is_refused_until_the_next_window(gateway, admin, upstream):
    client, token = make_client(admin, rpm=3)
    ip = new_ip()

    served = [post(gateway, token, ip) for _ in range(3)]
    refused = post(gateway, token, ip)

    assert [r.status_code for r in served] == [200, 200, 200]
    assert [r.headers["x-ratelimit-remaining"] for r in served] == ["2", "1", "0"]
    assert {r.headers["x-ratelimit-limit"] for r in served} == {"3"}
    assert 0 < int(served[0].headers["x-ratelimit-reset"]) <= 60
    assert refused.status_code == 429
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert client["name"] in refused.json()["error"]["message"]
    assert 0 < int(refused.headers["retry-after"]) <= 60
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert len(upstream.requests) == 3  # the refused request never reached a provider

    next_window(gateway)
    again = post(gateway, token, ip)
    assert again.status_code == 200
    assert again.headers["x-ratelimit-remaining"] == "2"


@pytest.mark.usefixtures("provider", "fresh_window")
def test_a_window_costs_a_d1_batch_per_half_limit_and_none_below_it(gateway, admin, upstream):
    _, token = make_client(admin, rpm=20)
    ip = new_ip()
    assert post(gateway, gateway.api_token, new_ip()).status_code == 200  # the snapshot is loaded
    before = gateway.d1_statements().count("batch")

    served = [post(gateway, token, ip) for _ in range(9)]
    quiet = gateway.d1_statements().count("batch") - before
    served += [post(gateway, token, ip) for _ in range(11)]
    refused = post(gateway, token, ip)
    batches = gateway.d1_statements().count("batch") - before

    assert [r.headers["x-ratelimit-remaining"] for r in served] == [str(n) for n in range(19, -1, -1)]
    assert refused.status_code == 429 and len(upstream.requests) == 21
    assert quiet == 0  # below half the limit: counted in the isolate only
    assert batches == 2  # at 10 and at 20


@pytest.mark.usefixtures("provider", "fresh_window")
def test_requests_at_once_get_exactly_the_limit(gateway, admin):
    _, token = make_client(admin, rpm=20)
    ip = new_ip()

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = sorted(pool.map(lambda _: post(gateway, token, ip).status_code, range(30)))

    assert statuses == [200] * 20 + [429] * 10


@pytest.mark.usefixtures("provider", "fresh_window")
def test_the_count_is_reported_to_d1_so_every_isolate_shares_it(gateway, admin):
    client, token = make_client(admin, rpm=10)
    # Another isolate (the D1 trace's simulation of one, its own memory) counts 5 of this window:
    # half the limit, so it reports them.
    other = {"x-dev-isolate": str(1000 + client["id"])}
    elsewhere = [post(gateway, token, new_ip(), headers=other).status_code for _ in range(5)]

    served = [post(gateway, token, new_ip()) for _ in range(5)]  # the 5th reports: 10 in all
    refused = post(gateway, token, new_ip())

    rows = d1_execute(gateway.persist_to, f"SELECT count FROM rate_windows WHERE key = 'client:{client['id']}'")
    assert elsewhere == [200] * 5
    assert [r.status_code for r in served] == [200] * 5
    assert rows == [{"count": 10}]
    assert refused.status_code == 429  # alone this isolate would have served 10


@pytest.mark.usefixtures("provider", "fresh_window")
def test_a_clients_429_speaks_each_surfaces_error_shape(gateway, admin):
    _, token = make_client(admin, rpm=1)
    ip = new_ip()
    assert post(gateway, token, ip).status_code == 200

    anthropic = post(
        gateway,
        token,
        ip,
        "/v1/messages",
        json={"model": "fake-model", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]},
        headers={"anthropic-version": "2023-06-01"},
    )
    gemini = post(
        gateway, token, ip, "/v1beta/models/fake-model:generateContent", json={"contents": [{"parts": [{"text": "x"}]}]}
    )
    ollama = post(gateway, token, ip, "/api/chat", json={**CHAT, "stream": False})

    assert anthropic.status_code == 429
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["type"] == "rate_limit_error"
    assert gemini.status_code == 429
    assert gemini.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert ollama.status_code == 429 and "requests per minute" in ollama.json()["error"]
    for answer in (anthropic, gemini, ollama):
        assert int(answer.headers["retry-after"]) >= 1
        assert answer.headers["x-ratelimit-limit"] == "1"
        assert token not in answer.text


@pytest.mark.usefixtures("provider", "fresh_window")
def test_raising_a_clients_rpm_takes_effect_in_the_window(gateway, admin):
    client, token = make_client(admin, rpm=1)
    ip = new_ip()
    assert post(gateway, token, ip).status_code == 200
    assert post(gateway, token, ip).status_code == 429

    admin.put(f"/clients/{client['id']}", json={"rpm": 2}).raise_for_status()

    assert post(gateway, token, ip).status_code == 200


@pytest.mark.usefixtures("provider", "fresh_window")
def test_a_client_without_rpm_has_no_limit_and_no_headers(gateway, admin):
    _, token = make_client(admin)

    answers = [post(gateway, token, new_ip()) for _ in range(3)]

    assert [a.status_code for a in answers] == [200, 200, 200]
    assert all("x-ratelimit-limit" not in a.headers for a in answers)


# --- The default client and the IP -----------------------------------------------------------


@pytest.mark.usefixtures("provider", "fresh_window")
def test_default_client_rpm_limits_the_api_token_only(gateway, admin):
    admin.put("/settings", json={"DEFAULT_CLIENT_RPM": 2}).raise_for_status()
    _, named = make_client(admin)
    ip = new_ip()

    api = [post(gateway, gateway.api_token, ip).status_code for _ in range(3)]
    other = [post(gateway, named, ip).status_code for _ in range(3)]

    assert api == [200, 200, 429]
    assert other == [200, 200, 200]


@pytest.mark.usefixtures("provider", "fresh_window")
def test_ip_rpm_limits_one_address_while_another_is_served(gateway, admin):
    admin.put("/settings", json={"ip_rpm": 2}).raise_for_status()
    crowded, quiet = new_ip(), new_ip()

    first = [post(gateway, gateway.api_token, crowded) for _ in range(3)]
    elsewhere = post(gateway, gateway.api_token, quiet)

    assert [r.status_code for r in first] == [200, 200, 429]
    assert "ip_rpm" in first[2].json()["error"]["message"]
    assert int(first[2].headers["retry-after"]) >= 1
    assert elsewhere.status_code == 200


@pytest.mark.usefixtures("provider", "fresh_window")
def test_wrong_tokens_count_against_ip_rpm(gateway, admin):
    admin.put("/settings", json={"ip_rpm": 2}).raise_for_status()
    ip = new_ip()

    wrong = post(gateway, "wrong-token-xxxxxxxxxxxx", ip)
    statuses = [post(gateway, gateway.api_token, ip).status_code for _ in range(2)]

    assert wrong.status_code == 401
    assert statuses == [200, 429]


def test_null_turns_a_limit_off(admin):
    admin.put("/settings", json={"auth_fail_limit": 5, "ip_rpm": 20}).raise_for_status()

    settings = admin.put("/settings", json={"auth_fail_limit": None, "IP_RPM": None}).json()["settings"]

    assert settings["auth_fail_limit"].items() >= {"value": 0, "source": "d1"}.items()
    assert settings["ip_rpm"].items() >= {"value": 0, "source": "d1"}.items()


# --- The failed-auth lock --------------------------------------------------------------------


@pytest.mark.usefixtures("provider", "fresh_window")
def test_failed_token_checks_lock_out_an_address_for_the_rest_of_the_minute(gateway, admin):
    admin.put("/settings", json={"auth_fail_limit": 3}).raise_for_status()
    guesser, neighbour = new_ip(), new_ip()

    guesses = [post(gateway, f"wrong-token-{n:04d}-xxxxxxxx", guesser).status_code for n in range(3)]
    with_the_token = post(gateway, gateway.api_token, guesser)
    admin_too = httpx.get(
        f"{gateway.url}/api/admin/settings",
        headers={"authorization": f"Bearer {gateway.admin_token}", "cf-connecting-ip": guesser},
    )
    served_elsewhere = post(gateway, gateway.api_token, neighbour)

    assert guesses == [401, 401, 401]
    assert with_the_token.status_code == 429
    assert with_the_token.json()["error"]["code"] == "too_many_failed_auth"
    assert 0 < int(with_the_token.headers["retry-after"]) <= 60
    assert admin_too.status_code == 429
    assert admin_too.headers["cache-control"] == "no-store"
    assert served_elsewhere.status_code == 200

    next_window(gateway)
    assert post(gateway, gateway.api_token, guesser).status_code == 200


@pytest.mark.usefixtures("provider", "fresh_window")
def test_only_presented_tokens_count_and_the_same_one_counts_once(gateway, admin):
    admin.put("/settings", json={"auth_fail_limit": 2}).raise_for_status()
    ip = new_ip()
    bare = {"cf-connecting-ip": ip}

    keyless = [httpx.get(f"{gateway.url}/api/tags", headers=bare).status_code for _ in range(3)]
    repeated = [post(gateway, "the-same-wrong-token-xx", ip).status_code for _ in range(3)]

    assert keyless == [401, 401, 401]
    assert repeated == [401, 401, 401]
    assert post(gateway, gateway.api_token, ip).status_code == 200  # not locked
    assert post(gateway, "another-wrong-token-xxx", ip).status_code == 401  # the second failure
    assert post(gateway, gateway.api_token, ip).status_code == 429


@pytest.mark.usefixtures("fresh_window")
def test_wrong_admin_tokens_count_towards_the_lock(gateway, admin):
    admin.put("/settings", json={"auth_fail_limit": 2}).raise_for_status()
    ip = new_ip()

    wrong = [
        httpx.get(
            f"{gateway.url}/api/admin/status", headers={"authorization": f"Bearer nope-{n}", "cf-connecting-ip": ip}
        )
        for n in range(3)
    ]

    assert [r.status_code for r in wrong] == [401, 401, 429]


@pytest.mark.usefixtures("fresh_window")
def test_a_locked_address_is_refused_before_its_admin_token_is_compared(gateway, admin):
    admin.put("/settings", json={"auth_fail_limit": 2}).raise_for_status()
    ip = new_ip()

    def ask(token: str) -> httpx.Response:
        return httpx.get(
            f"{gateway.url}/api/admin/status", headers={"authorization": f"Bearer {token}", "cf-connecting-ip": ip}
        )

    assert [ask("nope-a").status_code, ask("nope-b").status_code] == [401, 401]  # now locked
    # A wrong token it already sent (it counts once, so the check of the count would let it be
    # compared): a 401 now would tell a guesser the token was compared.
    again = ask("nope-a")

    assert again.status_code == 429
    assert again.json()["error"]["code"] == "too_many_failed_auth"


# --- Cost and failure ------------------------------------------------------------------------


@pytest.mark.usefixtures("provider", "fresh_window")
def test_a_caller_below_half_its_limits_makes_no_d1_query(gateway, admin):
    _, token = make_client(admin, rpm=60)
    admin.put("/settings", json={"auth_fail_limit": 10, "ip_rpm": 20}).raise_for_status()
    ip = new_ip()
    assert post(gateway, token, ip).status_code == 200  # the snapshot is loaded
    before = len(gateway.d1_statements())

    assert all(post(gateway, token, ip).status_code == 200 for _ in range(5))

    assert gateway.d1_statements()[before:] == []


@pytest.mark.usefixtures("provider", "fresh_window")
def test_when_d1_cannot_count_the_limits_hold_in_memory(gateway, admin):
    """SPEC §14: a failing D1 (here its writes: the reports are upserts) leaves each isolate its own
    count; the failed-auth lock too."""
    _, token = make_client(admin, rpm=2)
    admin.put("/settings", json={"auth_fail_limit": 1}).raise_for_status()
    gateway.d1_fault("writes")
    ip, guesser = new_ip(), new_ip()

    served = [post(gateway, token, ip).status_code for _ in range(3)]
    wrong = post(gateway, "wrong-token-xxxxxxxxxxxx", guesser).status_code
    locked = post(gateway, gateway.api_token, guesser).status_code

    assert served == [200, 200, 429]
    assert (wrong, locked) == (401, 429)
    assert "rate limits counted in this isolate only" in gateway.log()


# --- The default ------------------------------------------------------------------------------


def test_by_default_ten_failed_checks_lock_an_address(tmp_path):
    """A runtime of its own, with no limit set anywhere: the default lock is on."""
    gateway = Gateway.start(tmp_path)
    try:
        next_window(gateway)  # ten checks split across two windows would lock nothing
        ip = new_ip()
        url = f"{gateway.url}/v1/models"
        statuses = [
            httpx.get(
                url, headers={"authorization": f"Bearer wrong-{n:02d}-xxxxxxxxxxxx", "cf-connecting-ip": ip}
            ).status_code
            for n in range(10)
        ]
        locked = httpx.get(url, headers={"authorization": f"Bearer {gateway.api_token}", "cf-connecting-ip": ip})
        other = httpx.get(url, headers={"authorization": f"Bearer {gateway.api_token}", "cf-connecting-ip": new_ip()})
        log = gateway.log()
    finally:
        gateway.stop()

    assert statuses == [401] * 10
    assert locked.status_code == 429
    assert other.status_code == 200
    assert gateway.api_token not in log and gateway.admin_token not in log
