"""Several keys per provider, end to end (SPEC §13, issue 10): keys on create and in ``Provider``, the
key admin endpoints, round-robin rotation, key-scoped cooldowns (a 401/429 cools the key and the same
request goes on with the next key; a platform fault cools the provider), ``keyId`` in the status, the
all-cooled 429 and "clear and verify", no key in any answer or log line, and the migration of a
database made by the single-key schema.

The fake upstream answers by the key it receives (``support.upstream.PerKey``, ``Recorded.key``).
Round-robin memory is per isolate and per provider; the local runtime is one isolate and every test
makes fresh providers, so tests do not see each other's rotation. Which key of a fresh provider goes
first is not part of the contract: tests find the key each request used from the upstream's records
and map it to its id through its hint (first 4 + ``...`` + last 4; the keys here differ in their last
four characters).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from support.d1 import d1_apply_migrations, d1_execute
from support.runtime import ROOT, Gateway
from support.upstream import FakeUpstream, Json, PerKey, Recorded

K1 = "sk-multi-key-first-0000-1111"
K2 = "sk-multi-key-second-0000-2222"
K3 = "sk-multi-key-third-0000-3333"
ADDED = "sk-multi-key-added-later-4444"
REPLACEMENT = "sk-multi-key-replacement-5555"
OTHER = "sk-other-provider-key-0000-6666"
UNUSED = "sk-multi-key-never-stored-7777"  # only ever in refused requests

HOUR_MS = 3_600_000


def ask(api: httpx.Client, model: str = "m") -> httpx.Response:
    return api.post("/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "x"}]})


def hint(key: str) -> str:
    """The masked hint the admin API shows for ``key`` (SPEC §7)."""
    return f"{key[:4]}...{key[-4:]}"


def key_id(provider: dict[str, Any], key: str) -> int:
    """The id of ``key`` in ``provider["keys"]``, found by its hint."""
    [found] = [k["id"] for k in provider["keys"] if k["hint"] == hint(key)]
    return found


def listed(admin: httpx.Client, provider_id: int) -> dict[str, Any]:
    """The provider as ``GET /providers`` lists it now."""
    [provider] = [p for p in admin.get("/providers").json()["providers"] if p["id"] == provider_id]
    return provider


def rate_limited(message: str = "Rate limit reached, slow down") -> Json:
    return Json({"error": {"message": message, "type": "rate_limit_error"}}, 429)


@pytest.fixture
def create(admin: httpx.Client, upstream: FakeUpstream) -> Callable[..., dict[str, Any]]:
    """Add a provider with ``api_keys`` (default: K1, K2, K3) pointing at the fake upstream,
    serving model ``m``; keyword arguments override the fields."""

    def create(name: str = "multi", keys: tuple[str, ...] = (K1, K2, K3), **fields: Any) -> dict[str, Any]:
        body = {"name": name, "base_url": upstream.base_url, "api_keys": list(keys), "models": ["m"], **fields}
        response = admin.post("/providers", json=body)
        assert response.status_code == 201, response.text
        return response.json()["provider"]

    return create


ALL_KEYS = [K1, K2, K3, ADDED, REPLACEMENT, OTHER, UNUSED]


def assert_no_key_in(texts: list[str], keys: list[str]) -> None:
    for text in texts:
        for key in keys:
            assert key not in text, f"a plaintext key in: {text[:300]}"


@pytest.fixture(autouse=True)
def answers(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Records every answer (headers and body) the test gets from the admin and API clients; after
    the test, none of them and no line of the runtime's log may hold a plaintext key."""
    seen: list[str] = []

    def record(response: httpx.Response) -> None:
        response.read()
        seen.append(f"{response.headers}\n{response.text}")

    for name in ("admin", "api"):
        if name in request.fixturenames:
            request.getfixturevalue(name).event_hooks["response"].append(record)
    yield seen
    assert_no_key_in(seen, ALL_KEYS)
    if "gateway" in request.fixturenames:
        assert_no_key_in(request.getfixturevalue("gateway").log().splitlines(), ALL_KEYS)


# --- keys in the admin API ----------------------------------------------------------------------


def test_a_provider_created_with_several_keys_lists_their_hints_never_the_keys(admin, upstream):
    body = {"name": "multi", "base_url": upstream.base_url, "api_keys": [K1, K2, K3], "models": ["m"]}

    response = admin.post("/providers", json=body)

    assert response.status_code == 201, response.text
    provider = response.json()["provider"]
    assert [k["hint"] for k in provider["keys"]] == [hint(K1), hint(K2), hint(K3)]
    assert [(k["enabled"], k["key_error"]) for k in provider["keys"]] == [(True, False)] * 3
    ids = [k["id"] for k in provider["keys"]]
    assert all(isinstance(i, int) for i in ids) and len(set(ids)) == 3
    assert provider["key_hint"] == hint(K1)
    assert listed(admin, provider["id"])["keys"] == provider["keys"]


@pytest.mark.parametrize(
    ("keys", "params"),
    [
        pytest.param({"api_key": K1, "api_keys": [K2]}, {"api_key", "api_keys"}, id="both"),
        pytest.param({"api_keys": []}, {"api_keys"}, id="empty-list"),
        pytest.param({"api_keys": [K1, ""]}, {"api_keys", "api_keys.1"}, id="empty-key-in-list"),
        pytest.param({"api_keys": K1}, {"api_keys"}, id="not-a-list"),
        pytest.param({}, {"api_key", "api_keys"}, id="no-key"),
    ],
)
def test_invalid_keys_on_create_are_400_naming_the_field(admin, upstream, keys, params):
    body = {"name": "multi", "base_url": upstream.base_url, "models": ["m"], **keys}

    response = admin.post("/providers", json=body)

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] in params
    assert "Unknown field" not in error["message"]  # refused for what it holds: api_keys is a known field
    assert admin.get("/providers").json()["providers"] == []


# --- rotation and key-scoped cooldowns ----------------------------------------------------------


def test_a_429_on_one_key_is_served_by_the_next_key_in_the_same_request(api, create, upstream):
    provider = create()
    upstream.queue(rate_limited())  # whichever key goes first gets the 429

    response = ask(api)

    assert response.status_code == 200
    failed, served = upstream.keys_used()  # one client request, two upstream requests
    assert failed != served and {failed, served} <= {K1, K2, K3}
    assert response.headers["x-routed-via"] == "multi/m"
    assert response.headers["x-fallback-attempts"] == "1"
    assert response.headers["x-fallback-trail"] == f"multi#{key_id(provider, failed)}/m: rate_limited"
    assert "x-fallback-from" not in response.headers


def test_a_rate_limited_key_is_skipped_by_the_next_requests(api, admin, create, upstream):
    provider = create()
    upstream.queue(rate_limited())
    ask(api)
    [failed, _] = upstream.keys_used()

    later = [ask(api) for _ in range(3)]

    assert [r.headers["x-routed-via"] for r in later] == ["multi/m"] * 3
    assert all("x-fallback-attempts" not in r.headers for r in later)
    used_later = upstream.keys_used()[2:]
    assert len(used_later) == 3 and failed not in used_later  # no request tried it again
    assert set(used_later) == {K1, K2, K3} - {failed}  # the usable keys take turns
    [cooldown] = admin.get("/status").json()["cooldowns"]
    assert (cooldown["providerId"], cooldown["name"], cooldown["model"]) == (provider["id"], "multi", None)
    assert (cooldown["keyId"], cooldown["lastStatus"], cooldown["source"]) == (
        key_id(provider, failed),
        429,
        "heuristic",
    )


def test_healthy_keys_take_turns_round_robin(api, create, upstream):
    create()

    responses = [ask(api) for _ in range(6)]

    assert all(r.status_code == 200 and "x-fallback-attempts" not in r.headers for r in responses)
    used = upstream.keys_used()
    keys = [K1, K2, K3]
    start = keys.index(used[0])
    assert used == [keys[(start + i) % 3] for i in range(6)]  # k1, k2, k3, k1 … in the keys' order


def test_a_platform_error_cools_the_provider_not_the_key(api, admin, create, upstream):
    first = create(name="A", keys=(K1, K2), priority=1)
    create(name="B", keys=(OTHER,), priority=2)
    upstream.queue(Json({"error": {"message": "internal error", "type": "server_error"}}, 500))

    response = ask(api, model="auto")  # auto: no same-provider retry of a 5xx (SPEC §4)

    tried, served = upstream.keys_used()  # the other key of A was not tried
    assert tried in (K1, K2) and served == OTHER
    assert response.headers["x-routed-via"] == "B/m"
    assert response.headers["x-fallback-trail"] == f"A#{key_id(first, tried)}/m: upstream_error"
    [cooldown] = admin.get("/status").json()["cooldowns"]
    assert (cooldown["name"], cooldown["model"], cooldown["keyId"], cooldown["lastStatus"]) == ("A", None, None, 500)

    again = ask(api, model="auto")

    assert again.headers["x-routed-via"] == "B/m"
    assert "x-fallback-attempts" not in again.headers
    assert upstream.keys_used() == [tried, OTHER, OTHER]  # A's other key is cooling with its provider


def test_a_401_cools_only_that_key(api, admin, create, upstream):
    provider = create()
    upstream.queue(Json({"error": {"message": "Invalid API Key", "type": "invalid_request_error"}}, 401))

    response = ask(api)

    failed, served = upstream.keys_used()
    assert response.status_code == 200 and failed != served
    assert response.headers["x-fallback-trail"] == f"multi#{key_id(provider, failed)}/m: auth"
    [cooldown] = admin.get("/status").json()["cooldowns"]
    assert (cooldown["keyId"], cooldown["lastStatus"], cooldown["source"]) == (
        key_id(provider, failed),
        401,
        "heuristic",
    )
    assert 295_000 <= cooldown["remainingMs"] <= 300_000

    later = [ask(api) for _ in range(2)]

    assert [r.status_code for r in later] == [200, 200]
    assert set(upstream.keys_used()[2:]) == {K1, K2, K3} - {failed}


def test_all_keys_rate_limited_is_a_429_listing_each_key(gateway, api, create, upstream):
    provider = create(keys=(K1, K2))
    upstream.answer_always(Json({"error": {"message": "later"}}, 429, {"retry-after": "300"}))
    exhausted = ask(api)
    assert exhausted.status_code == 429
    assert exhausted.headers["x-fallback-attempts"] == "2"
    assert sorted(upstream.keys_used()) == sorted([K1, K2])  # both keys tried in the one request

    response = ask(api)  # every key cooling: the provider is cooling, nothing is sent

    assert response.status_code == 429
    assert len(upstream.requests) == 2
    error = response.json()["error"]
    assert error["code"] == "rate_limit_exceeded"
    assert sorted(c["keyId"] for c in error["cooldowns"]) == sorted(k["id"] for k in provider["keys"])
    assert {(c["name"], c["model"], c["source"]) for c in error["cooldowns"]} == {("multi", None, "authoritative")}
    assert abs(error["retryAtMs"] - (gateway.now_ms() + 300_000)) < 10_000
    assert 295 <= int(response.headers["retry-after"]) <= 300
    assert "multi" in error["message"]


# --- the key admin endpoints --------------------------------------------------------------------


def test_an_added_key_gets_traffic(api, admin, create, upstream):
    provider = create(keys=(K1,))

    response = admin.post(f"/providers/{provider['id']}/keys", json={"api_key": ADDED})

    assert response.status_code == 201, response.text
    key = response.json()["key"]
    assert isinstance(key["id"], int) and key["id"] not in [k["id"] for k in provider["keys"]]
    assert (key["hint"], key["enabled"]) == (hint(ADDED), True)
    assert [k["hint"] for k in listed(admin, provider["id"])["keys"]] == [hint(K1), hint(ADDED)]
    ask(api)
    ask(api)
    assert sorted(upstream.keys_used()) == sorted([K1, ADDED])


def test_a_disabled_key_gets_no_traffic_until_enabled_again(api, admin, create, upstream):
    provider = create()
    second = key_id(provider, K2)

    response = admin.put(f"/providers/{provider['id']}/keys/{second}", json={"enabled": False})

    assert response.status_code == 200, response.text
    states = {k["id"]: k["enabled"] for k in listed(admin, provider["id"])["keys"]}
    assert states == {key_id(provider, K1): True, second: False, key_id(provider, K3): True}
    for _ in range(4):
        ask(api)
    assert sorted(set(upstream.keys_used())) == sorted([K1, K3])

    admin.put(f"/providers/{provider['id']}/keys/{second}", json={"enabled": True}).raise_for_status()
    for _ in range(3):
        ask(api)
    assert K2 in upstream.keys_used()[4:]


def test_deleting_a_key_and_refusing_to_delete_the_last(api, admin, create, upstream):
    provider = create(keys=(K1, K2))

    deleted = admin.delete(f"/providers/{provider['id']}/keys/{key_id(provider, K1)}")

    assert deleted.status_code == 200, deleted.text
    after = listed(admin, provider["id"])
    assert ([k["hint"] for k in after["keys"]], after["key_hint"]) == ([hint(K2)], hint(K2))
    ask(api)
    ask(api)
    assert upstream.keys_used() == [K2, K2]

    last = admin.delete(f"/providers/{provider['id']}/keys/{key_id(provider, K2)}")

    assert last.status_code == 409, last.text
    assert [k["hint"] for k in listed(admin, provider["id"])["keys"]] == [hint(K2)]
    assert ask(api).status_code == 200
    assert upstream.keys_used()[-1] == K2


def test_editing_the_provider_with_api_key_replaces_all_its_keys(api, admin, create, upstream):
    provider = create()

    response = admin.put(f"/providers/{provider['id']}", json={"api_key": REPLACEMENT})

    assert response.status_code == 200, response.text
    edited = response.json()["provider"]
    assert ([k["hint"] for k in edited["keys"]], edited["key_hint"]) == ([hint(REPLACEMENT)], hint(REPLACEMENT))
    ask(api)
    ask(api)
    assert upstream.keys_used() == [REPLACEMENT, REPLACEMENT]
    gone = key_id(provider, K1)
    assert admin.put(f"/providers/{provider['id']}/keys/{gone}", json={"enabled": False}).status_code == 404


def test_unknown_keys_and_keys_of_another_provider_are_404(admin, create):
    first = create(name="A", keys=(K1, K2))
    other = create(name="B", keys=(OTHER,))
    foreign = key_id(other, OTHER)

    assert admin.put(f"/providers/{first['id']}/keys/999999", json={"enabled": False}).status_code == 404
    assert admin.delete(f"/providers/{first['id']}/keys/999999").status_code == 404
    assert admin.put(f"/providers/{first['id']}/keys/{foreign}", json={"enabled": False}).status_code == 404
    assert admin.delete(f"/providers/{first['id']}/keys/{foreign}").status_code == 404
    assert admin.post("/providers/999999/keys", json={"api_key": UNUSED}).status_code == 404
    assert listed(admin, other["id"])["keys"] == other["keys"]  # B's key untouched, still enabled
    assert listed(admin, first["id"])["keys"] == first["keys"]


@pytest.mark.parametrize(
    ("method", "body", "param"),
    [
        pytest.param("post", {"api_key": ""}, "api_key", id="add-empty-key"),
        pytest.param("post", {}, "api_key", id="add-no-key"),
        pytest.param("put", {"enabled": "no"}, "enabled", id="enabled-not-a-boolean"),
    ],
)
def test_invalid_key_writes_are_400_naming_the_field(admin, create, method, body, param):
    provider = create(keys=(K1, K2))
    path = f"/providers/{provider['id']}/keys" + (f"/{key_id(provider, K1)}" if method == "put" else "")

    response = admin.request(method.upper(), path, json=body)

    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
    assert listed(admin, provider["id"])["keys"] == provider["keys"]


# --- clear and verify ---------------------------------------------------------------------------


def test_verify_probes_each_cooling_key(api, admin, create, upstream):
    provider = create()
    upstream.queue(rate_limited(), rate_limited())
    assert ask(api).status_code == 200  # two keys got a 429, the third served
    still, recovered, _healthy = upstream.keys_used()
    cooling = sorted(c["keyId"] for c in admin.get("/status").json()["cooldowns"])
    assert cooling == sorted([key_id(provider, still), key_id(provider, recovered)])
    upstream.answer_always(PerKey({still: rate_limited("still limited")}))

    results = admin.post("/cooldowns/verify").json()["results"]

    by_key = {r["keyId"]: r for r in results}
    assert sorted(by_key) == cooling  # one probe per cooling key, none for the healthy one
    assert (by_key[key_id(provider, still)]["ok"], by_key[key_id(provider, still)]["status"]) == (False, 429)
    assert (by_key[key_id(provider, recovered)]["ok"], by_key[key_id(provider, recovered)]["status"]) == (True, 200)
    probes = upstream.requests[3:]
    assert sorted(r.key for r in probes) == sorted([still, recovered])
    assert all(r.json["max_tokens"] == 1 for r in probes)
    assert [c["keyId"] for c in admin.get("/status").json()["cooldowns"]] == [key_id(provider, still)]


def test_verify_probes_at_most_max_verify_probes_and_reports_the_rest_unprobed(api, admin, create, upstream):
    # A probe is a subrequest and a Workers request may make 50: past that, fetches fail like a
    # network fault and would cool healthy providers. The cap is rules.MAX_VERIFY_PROBES (40).
    cap, extra = 40, 2
    keys = tuple(f"sk-verify-cap-key-{n:04d}-{n:04d}" for n in range(cap + extra))
    provider = create(keys=keys)
    upstream.answer_always(Json({"error": {"message": "bad key", "type": "auth"}}, 401))
    for _ in range(len(keys)):  # each request cools the few keys it tried
        if len(admin.get("/status").json()["cooldowns"]) == len(keys):
            break
        assert ask(api).status_code == 502
    assert len(admin.get("/status").json()["cooldowns"]) == len(keys)
    upstream.reset()
    before = len(upstream.requests)

    results = admin.post("/cooldowns/verify").json()["results"]

    assert len(upstream.requests) - before == cap
    ids = [k["id"] for k in provider["keys"]]
    assert [r["keyId"] for r in results] == ids  # priority order: the provider's keys by id
    assert all(r["ok"] is True for r in results[:cap])
    for unprobed in results[cap:]:
        assert (unprobed["ok"], unprobed["status"]) == (None, None)
        assert unprobed["message"].startswith("not probed: ")
    assert admin.get("/status").json()["cooldowns"] == []  # nothing recorded for the unprobed


# --- secrecy ------------------------------------------------------------------------------------


def echo_key(request: Recorded) -> Json:
    """A 401 that quotes the key it got, as some platforms do."""
    return Json({"error": {"message": f"Incorrect API key provided: {request.key}", "type": "auth"}}, 401)


def test_no_key_in_any_answer_or_log_line(gateway, api, admin, create, upstream, answers):
    provider = create()
    upstream.answer_always(echo_key)
    failed = ask(api)  # every key refused, each refusal quoting the key
    assert failed.status_code == 502
    assert sorted(upstream.keys_used()) == sorted([K1, K2, K3])
    admin.get("/status")
    admin.post("/cooldowns/verify")
    added = admin.post(f"/providers/{provider['id']}/keys", json={"api_key": ADDED}).json()["key"]
    admin.put(f"/providers/{provider['id']}/keys/{added['id']}", json={"enabled": False})
    admin.get("/providers")
    admin.post(
        "/providers",
        json={"name": "x", "base_url": upstream.base_url, "models": ["m"], "api_key": UNUSED, "api_keys": [UNUSED]},
    )
    admin.put(f"/providers/{provider['id']}", json={"api_key": REPLACEMENT})
    admin.delete(f"/providers/{provider['id']}/keys/{listed(admin, provider['id'])['keys'][0]['id']}")  # the last
    upstream.answer_always(Json({}, 200))
    ask(api)

    assert len(answers) >= 12  # the recording works: the scan below is not vacuous
    assert_no_key_in(answers, ALL_KEYS)
    assert_no_key_in(gateway.log().splitlines(), ALL_KEYS)


# --- upgrading a database made by the single-key schema -----------------------------------------

# A database as the release before SPEC §13 (commit 92c2e0a, migration 0001 only) left it. These rows
# are what that release's admin API wrote, captured from it (its runtime, this ENCRYPTION_KEY):
# POST alpha, gone, beta (disabled), gamma; DELETE gone (so ids have a gap); PUT gamma {api_key,
# priority} (a key re-sealed by an edit); PUT /settings {routing_cooldown_ceiling_ms}; PUT /tokens
# {api_token}. Only base_url is rewritten, to this session's fake upstream.
OLD_ENCRYPTION_KEY = "5e5e5e5e5e5e5e5ec0ffeec0ffeec0ffeec0ffee0123456789abcdef00000000"
OLD_KEYS = {
    "alpha": "sk-old-alpha-key-0123456789-aaaa",
    "beta": "sk-old-beta-key-0123456789-bbbb",
    "gamma": "sk-old-gamma-key-0123456789-dddd",
}
OLD_API_TOKEN = "api-token-kept-in-the-old-database"
OLD_PROVIDERS = [
    {
        "id": 1,
        "name": "alpha",
        "platform": "custom",
        "base_url": "http://127.0.0.1:9/v1",
        "encrypted_key": "d779c6509ca5b9502525fe681a360f0efbed1a326ace218cc7c20dd6da0823b3",
        "iv": "90b7852c0c7ec2207ee2c7c74bdecd24",
        "auth_tag": "6a850be352ec5fb678f39ef323daa51f",
        "models": '["m", "m2"]',
        "priority": 1,
        "timeout_ms": 20000,
        "enabled": 1,
        "created_at": 1796077403489,
        "updated_at": 1796077403489,
    },
    {
        "id": 3,
        "name": "beta",
        "platform": "groq",
        "base_url": "http://127.0.0.1:9/v1",
        "encrypted_key": "1f3612d1525b59adcd10b6fc780d84f208923123118590312695ab8118a242",
        "iv": "9d65cc5b7abf8b9f4b130e4d3711a1eb",
        "auth_tag": "0c47d9ea73b52c7d1263c7c11fa5fba6",
        "models": '["m"]',
        "priority": 2,
        "timeout_ms": None,
        "enabled": 0,
        "created_at": 1796077403661,
        "updated_at": 1796077403661,
    },
    {
        "id": 4,
        "name": "gamma",
        "platform": "custom",
        "base_url": "http://127.0.0.1:9/v1",
        "encrypted_key": "985a3423629fb611afbdf8eab8b2ae8130084ae2618fd5c22fa00d07ad4c10a7",
        "iv": "e7639a83f12e2a6e9762d4daaa9348cf",
        "auth_tag": "feef564a71235a1e89eff921bdb89059",
        "models": '["g"]',
        "priority": 4,
        "timeout_ms": None,
        "enabled": 1,
        "created_at": 1796077403734,
        "updated_at": 1796077403868,
    },
]
OLD_SETTINGS = {
    "deployment_id": "39ae015f03a9bd0e",
    "routing_cooldown_ceiling_ms": "3600000",
    "api_token": OLD_API_TOKEN,
}


def _sql(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _inserts(table: str, rows: list[dict[str, Any]]) -> str:
    return "".join(
        f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(_sql(v) for v in row.values())});" for row in rows
    )


def test_a_database_of_the_single_key_schema_upgrades_in_place(tmp_path, upstream):
    """The database is built as the previous release built it, then the runtime of this tree starts
    on it and migrates it in place (as ``wrangler d1 migrations apply`` does on a deployment).

    - Schema: ``migrations/0001_init.sql`` alone, applied by wrangler (``d1_apply_migrations`` with a
      migrations dir holding only that file), so wrangler records 0001 as applied and the runtime
      later applies only 0002 and after.
    - Rows: the ``OLD_*`` rows above, which the previous release's admin API wrote (captured from its
      runtime, see the comment there), inserted with ``wrangler d1 execute``; their keys are sealed
      with ``OLD_ENCRYPTION_KEY``, which the new runtime is given. Replaying captured rows rather than
      running the old code keeps the test independent of git history (CI clones shallow) and of the
      old code still running on today's toolchain; the SQL is the old release's own output.
    - Then: ``Gateway.start`` on the same persist dir; every provider keeps its fields, its key is
      moved into ``provider_keys`` as the same ciphertext (not re-encrypted), ``keys`` lists it,
      requests are served with it, settings and the D1 API token survive, and a key can be added.
    """
    migrations = tmp_path / "migrations-0001"
    migrations.mkdir()
    shutil.copy(ROOT / "migrations" / "0001_init.sql", migrations)
    d1_apply_migrations(tmp_path / "state", migrations)
    rows = [{**row, "base_url": upstream.base_url} for row in OLD_PROVIDERS]
    settings = [{"key": k, "value": v} for k, v in OLD_SETTINGS.items()]
    d1_execute(tmp_path / "state", _inserts("providers", rows) + _inserts("settings", settings))

    gateway = Gateway.start(tmp_path, extra_env={"ENCRYPTION_KEY": OLD_ENCRYPTION_KEY})
    try:
        _check_upgraded(gateway, upstream)
    finally:
        gateway.stop()


def _check_upgraded(gateway: Gateway, upstream: FakeUpstream) -> None:
    admin = httpx.Client(
        base_url=f"{gateway.url}/api/admin", timeout=30, headers={"authorization": f"Bearer {gateway.admin_token}"}
    )
    api = httpx.Client(base_url=f"{gateway.url}/v1", timeout=30, headers={"authorization": f"Bearer {OLD_API_TOKEN}"})
    seen: list[str] = []
    for client in (admin, api):
        client.event_hooks["response"].append(lambda r: (r.read(), seen.append(f"{r.headers}\n{r.text}")))
    with admin, api:
        migrated = [m["name"] for m in d1_execute(gateway.persist_to, "SELECT name FROM d1_migrations ORDER BY id")]
        assert migrated[0] == "0001_init.sql" and any(name.startswith("0002") for name in migrated), migrated

        providers = admin.get("/providers").json()["providers"]
        fields = ("id", "name", "platform", "base_url", "priority", "timeout_ms", "created_at", "updated_at")
        assert [{f: p[f] for f in fields} for p in providers] == [
            {f: row[f] for f in fields} | {"base_url": upstream.base_url} for row in OLD_PROVIDERS
        ]
        assert [(p["models"], p["enabled"]) for p in providers] == [
            (json.loads(row["models"]), bool(row["enabled"])) for row in OLD_PROVIDERS
        ]
        for p in providers:
            [key] = p["keys"]
            assert (key["hint"], key["enabled"], key["key_error"]) == (hint(OLD_KEYS[p["name"]]), True, False)
            assert (p["key_hint"], p["key_error"]) == (hint(OLD_KEYS[p["name"]]), False)

        stored = d1_execute(gateway.persist_to, "SELECT * FROM provider_keys ORDER BY provider_id")
        assert [k["provider_id"] for k in stored] == [row["id"] for row in OLD_PROVIDERS]
        for key, row in zip(stored, OLD_PROVIDERS):  # the same ciphertext, iv and tag: moved, not re-sealed
            assert {row["encrypted_key"], row["iv"], row["auth_tag"]} <= set(key.values()), key

        ceiling = admin.get("/settings").json()["settings"]["routing_cooldown_ceiling_ms"]
        assert ceiling.items() >= {"value": 3_600_000, "source": "d1"}.items()

        served = [ask(api, "m"), ask(api, "g")]  # with the D1 API token; beta is disabled
        assert [r.headers.get("x-routed-via") for r in served] == ["alpha/m", "gamma/g"]
        assert upstream.keys_used() == [OLD_KEYS["alpha"], OLD_KEYS["gamma"]]

        added = admin.post("/providers/1/keys", json={"api_key": ADDED})
        assert added.status_code == 201, added.text
        ask(api, "m")
        ask(api, "m")
        assert sorted(upstream.keys_used()[2:]) == sorted([OLD_KEYS["alpha"], ADDED])

    assert_no_key_in(seen, [*OLD_KEYS.values(), ADDED])
    assert_no_key_in(gateway.log().splitlines(), [*OLD_KEYS.values(), ADDED])
