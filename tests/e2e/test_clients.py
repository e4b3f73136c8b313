"""Named client tokens (SPEC §14): created with a token shown once, accepted by the /v1 surfaces,
refused at once after revoke or disable, limited to their models; served without a usable API
token (the default client off); the security headers on every kind of answer; and a database made
by migrations 0001+0002 upgrades in place."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.d1 import d1_apply_migrations, d1_execute
from support.runtime import ROOT, Gateway
from support.surfaces import SURFACES
from support.upstream import UPSTREAM_KEY, FakeUpstream, Sse, chunk

CHAT = {"messages": [{"role": "user", "content": "x"}]}
MESSAGES = {"max_tokens": 16, "messages": [{"role": "user", "content": "x"}]}


def create(admin: httpx.Client, **body: Any) -> tuple[dict[str, Any], str]:
    response = admin.post("/clients", json={"name": "app", **body})
    assert response.status_code == 201, response.text
    answer = response.json()
    return answer["client"], answer["token"]


def chat(gateway: Gateway, token: str, model: str = "fake-model", **extra: Any) -> httpx.Response:
    body = {"model": model, **CHAT, **extra}
    return httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {token}"})


def messages(gateway: Gateway, token: str, model: str = "fake-model") -> httpx.Response:
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    return httpx.post(f"{gateway.url}/v1/messages", json={"model": model, **MESSAGES}, headers=headers)


# --- The admin API ---------------------------------------------------------------------------


def test_create_shows_the_token_once_and_lists_a_hint(gateway, admin):
    client, token = create(admin, rpm=30, models=["fake-model"])

    assert token.startswith("fk-") and len(token) >= 3 + 43  # 32 bytes, base64url
    assert set(client) == {"id", "name", "token_hint", "rpm", "models", "enabled", "stream_rescue", "created_at"}
    assert client | {"id": 0, "created_at": 0} == {
        "id": 0,
        "name": "app",
        "token_hint": f"{token[:4]}...{token[-4:]}",
        "rpm": 30,
        "models": ["fake-model"],
        "enabled": True,
        "stream_rescue": None,
        "created_at": 0,
    }
    listing = admin.get("/clients")
    assert listing.json() == {"clients": [client], "default_client": {"enabled": True}}
    assert token not in listing.text
    updated = admin.put(f"/clients/{client['id']}", json={"rpm": None})
    assert token not in updated.text and updated.json()["client"]["rpm"] is None
    stored = d1_execute(gateway.persist_to, "SELECT * FROM clients")
    assert token not in repr(stored)


def test_each_token_is_new(admin):
    _, first = create(admin, name="one")
    _, second = create(admin, name="two")

    assert first != second


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({}, "name", id="no-name"),
        pytest.param({"name": ""}, "name", id="empty-name"),
        pytest.param({"name": "a", "rpm": 0}, "rpm", id="rpm-zero"),
        pytest.param({"name": "a", "rpm": "10"}, "rpm", id="rpm-text"),
        pytest.param({"name": "a", "models": []}, "models", id="no-models"),
        pytest.param({"name": "a", "models": "m"}, "models", id="models-text"),
        pytest.param({"name": "a", "token": "fk-mine"}, "token", id="own-token"),
    ],
)
def test_create_validation_names_the_field(admin, body, field):
    response = admin.post("/clients", json=body)

    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["message"]


def test_update_validation_404_and_409(admin):
    client, _ = create(admin)
    create(admin, name="taken")

    assert admin.put(f"/clients/{client['id']}", json={"enabled": None}).status_code == 400
    assert admin.put(f"/clients/{client['id']}", json={"name": "taken"}).status_code == 409
    assert admin.post("/clients", json={"name": "taken"}).status_code == 409
    assert admin.put("/clients/999999", json={"rpm": 5}).status_code == 404
    assert admin.delete("/clients/999999").status_code == 404
    renamed = admin.put(f"/clients/{client['id']}", json={"name": "renamed", "models": ["a", "b"], "rpm": 7})
    assert renamed.json()["client"] | {"created_at": 0} == {
        "id": client["id"],
        "name": "renamed",
        "token_hint": client["token_hint"],
        "rpm": 7,
        "models": ["a", "b"],
        "enabled": True,
        "stream_rescue": None,
        "created_at": 0,
    }


# A client's own stream rescue switch (SPEC §16): true or false, null follows the setting.
@pytest.mark.parametrize(
    ("given", "stored"),
    [
        pytest.param({"stream_rescue": True}, True, id="on"),
        pytest.param({"stream_rescue": False}, False, id="off"),
        pytest.param({"stream_rescue": None}, None, id="null"),
        pytest.param({}, None, id="absent"),
    ],
)
def test_stream_rescue_is_stored_as_given(gateway, admin, given, stored):
    client, _ = create(admin, **given)

    assert client["stream_rescue"] is stored
    assert admin.get("/clients").json()["clients"][0]["stream_rescue"] is stored
    row = d1_execute(gateway.persist_to, "SELECT stream_rescue FROM clients")[0]
    assert row["stream_rescue"] == (None if stored is None else int(stored))


def test_stream_rescue_is_changed_and_null_follows_the_setting_again(admin):
    client, _ = create(admin, stream_rescue=False)
    path = f"/clients/{client['id']}"

    assert admin.put(path, json={"stream_rescue": True}).json()["client"]["stream_rescue"] is True
    assert admin.put(path, json={"rpm": 5}).json()["client"]["stream_rescue"] is True  # left as it was
    assert admin.put(path, json={"stream_rescue": None}).json()["client"]["stream_rescue"] is None
    assert admin.get("/clients").json()["clients"][0]["stream_rescue"] is None


@pytest.mark.parametrize(
    "value",
    [pytest.param("true", id="text"), pytest.param(1, id="number"), pytest.param(0, id="zero"),
     pytest.param([True], id="list")],
)  # fmt: skip
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_stream_rescue_is_a_strict_boolean(admin, method, value):
    client, _ = create(admin, stream_rescue=True)
    path = "/clients" if method == "POST" else f"/clients/{client['id']}"
    body = {"name": "other", "stream_rescue": value} if method == "POST" else {"stream_rescue": value}

    response = admin.request(method, path, json=body)

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["param"], error["type"]) == ("stream_rescue", "invalid_request_error")
    assert [c["stream_rescue"] for c in admin.get("/clients").json()["clients"]] == [True]


# --- The token on /v1 ------------------------------------------------------------------------


def test_a_client_token_works_on_chat_and_messages(gateway, admin, add_provider):
    add_provider()
    _, token = create(admin)

    assert chat(gateway, token).status_code == 200
    assert messages(gateway, token).status_code == 200
    models = httpx.get(f"{gateway.url}/v1/models", headers={"authorization": f"Bearer {token}"})
    assert models.status_code == 200


def test_revoke_is_honoured_at_once(gateway, admin, add_provider):
    add_provider()
    client, token = create(admin)
    assert chat(gateway, token).status_code == 200  # the snapshot now holds the client

    assert admin.delete(f"/clients/{client['id']}").json() == {"deleted": client["id"]}

    assert chat(gateway, token).status_code == 401
    assert messages(gateway, token).status_code == 401


def test_disable_is_honoured_at_once_and_enable_restores(gateway, admin, add_provider):
    add_provider()
    client, token = create(admin)
    assert chat(gateway, token).status_code == 200

    admin.put(f"/clients/{client['id']}", json={"enabled": False}).raise_for_status()
    assert chat(gateway, token).status_code == 401

    admin.put(f"/clients/{client['id']}", json={"enabled": True}).raise_for_status()
    assert chat(gateway, token).status_code == 200


def test_the_admin_token_is_refused_on_v1_and_a_client_token_on_admin(gateway, admin, add_provider):
    add_provider()
    _, token = create(admin)

    assert chat(gateway, gateway.admin_token).status_code == 401
    refused = httpx.get(f"{gateway.url}/api/admin/clients", headers={"authorization": f"Bearer {token}"})
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_admin_token"


def test_a_warm_client_request_makes_no_d1_query(gateway, admin, add_provider):
    add_provider()
    _, token = create(admin)
    chat(gateway, token).raise_for_status()  # fills the snapshot
    before = len(gateway.d1_statements())

    for _ in range(3):
        chat(gateway, token).raise_for_status()

    assert gateway.d1_statements()[before:] == []


# --- The model allow-list --------------------------------------------------------------------


def test_a_model_outside_the_list_is_403_in_each_shape(gateway, admin, add_provider, upstream):
    add_provider(name="p", models=["fake-model", "other-model"])
    _, token = create(admin, models=["fake-model"])

    refused = chat(gateway, token, "other-model")
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"
    anthropic = messages(gateway, token, "other-model")
    assert anthropic.status_code == 403
    assert anthropic.json()["type"] == "error" and anthropic.json()["error"]["type"] == "permission_error"
    assert upstream.requests == []
    assert chat(gateway, token, "fake-model").status_code == 200


def test_auto_uses_only_allowed_models(gateway, admin, add_provider, upstream):
    add_provider(name="first", models=["other-model"], priority=1)
    add_provider(name="second", models=["fake-model"], priority=2)
    _, token = create(admin, models=["fake-model"])

    served = [chat(gateway, token, "auto"), chat(gateway, token, None)]

    assert [r.headers["x-routed-via"] for r in served] == ["second/fake-model"] * 2
    assert {r.json["model"] for r in upstream.requests} == {"fake-model"}
    # The API token (the default client) is not limited.
    assert chat(gateway, gateway.api_token, "auto").headers["x-routed-via"] == "first/other-model"


def test_model_lists_show_only_allowed_models(gateway, admin, add_provider):
    add_provider(models=["fake-model", "other-model"])
    _, token = create(admin, models=["fake-model"])
    bearer = {"authorization": f"Bearer {token}"}

    listed = httpx.get(f"{gateway.url}/v1/models", headers=bearer).json()
    assert [m["id"] for m in listed["data"]] == ["auto", "fake-model"]
    assert httpx.get(f"{gateway.url}/v1/models/other-model", headers=bearer).status_code == 404
    tags = httpx.get(f"{gateway.url}/api/tags", headers=bearer).json()
    assert [m["name"] for m in tags["models"]] == ["fake-model"]
    gemini = httpx.get(f"{gateway.url}/v1beta/models", headers={"x-goog-api-key": token}).json()
    assert [m["name"] for m in gemini["models"]] == ["models/fake-model"]
    everything = httpx.get(f"{gateway.url}/v1/models", headers={"authorization": f"Bearer {gateway.api_token}"})
    assert [m["id"] for m in everything.json()["data"]] == ["auto", "fake-model", "other-model"]


# --- Without a usable API token: the default client is off (SPEC §14) ---------------------------

PLACEHOLDER_API_TOKEN = "change-me-api-token"  # as in .dev.vars.example


@pytest.fixture(
    scope="module",
    params=[pytest.param(PLACEHOLDER_API_TOKEN, id="placeholder"), pytest.param("", id="unset")],
)
def tokenless(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A runtime of its own whose API_TOKEN is the example's placeholder, or not set; the
    failed-auth lock is off unless a test turns it on (conftest's ``gateway`` says why)."""
    running = Gateway.start(
        tmp_path_factory.mktemp("no-api-token"),
        extra_env={"API_TOKEN": request.param, "AUTH_FAIL_LIMIT": "0"},
    )
    yield running
    running.stop()


@pytest.fixture
def tokenless_admin(tokenless: Gateway, upstream: FakeUpstream) -> Iterator[httpx.Client]:
    """Its admin API, with no client and one provider on the fake upstream."""
    headers = {"authorization": f"Bearer {tokenless.admin_token}"}
    with httpx.Client(base_url=f"{tokenless.url}/api/admin", headers=headers, timeout=30) as admin:
        for named in admin.get("/clients").raise_for_status().json()["clients"]:
            admin.delete(f"/clients/{named['id']}").raise_for_status()
        for provider in admin.get("/providers").raise_for_status().json()["providers"]:
            admin.delete(f"/providers/{provider['id']}").raise_for_status()
        admin.put("/settings", json={"auth_fail_limit": None}).raise_for_status()
        admin.post(
            "/providers",
            json={"name": "fake", "base_url": upstream.base_url, "api_key": UPSTREAM_KEY, "models": ["fake-model"]},
        ).raise_for_status()
        yield admin


def test_without_api_token_and_clients_v1_is_503_naming_both_ways_out(tokenless, tokenless_admin):
    response = chat(tokenless, PLACEHOLDER_API_TOKEN)

    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "token_not_configured"
    assert error["message"].startswith("API_TOKEN is ")
    assert "wrangler secret put API_TOKEN" in error["message"] and "create a named client" in error["message"]
    assert tokenless_admin.get("/clients").json() == {"clients": [], "default_client": {"enabled": False}}
    warnings = [
        line for line in tokenless.log().split("Ready on")[0].splitlines() if line.startswith("warning: API_TOKEN")
    ]
    assert len(warnings) == 1 and "default client is off" in warnings[0], warnings


def test_without_api_token_a_client_is_served_on_every_surface(tokenless, tokenless_admin):
    client, token = create(tokenless_admin)

    assert chat(tokenless, token).status_code == 200
    for surface in SURFACES:
        answer = httpx.post(
            f"{tokenless.url}{surface.path('fake-model', False)}",
            timeout=30,
            json=surface.body("fake-model", False),
            headers=surface.headers(token),
        )
        assert answer.status_code == 200, (surface, answer.text)
    models = httpx.get(f"{tokenless.url}/v1/models", headers={"authorization": f"Bearer {token}"})
    assert models.status_code == 200
    assert tokenless_admin.get("/clients").json() == {"clients": [client], "default_client": {"enabled": False}}


def test_without_api_token_its_value_is_a_wrong_token_and_counts(tokenless, tokenless_admin):
    _, token = create(tokenless_admin)
    tokenless_admin.put("/settings", json={"auth_fail_limit": 2}).raise_for_status()
    ip = {"cf-connecting-ip": "203.0.113.77"}

    refused = [
        httpx.post(
            f"{tokenless.url}/v1/chat/completions",
            json={"model": "fake-model", **CHAT},
            headers={"authorization": f"Bearer {wrong}", **ip},
        )
        for wrong in (PLACEHOLDER_API_TOKEN, "another-wrong-token-xx")
    ]
    locked = httpx.post(
        f"{tokenless.url}/v1/chat/completions",
        json={"model": "fake-model", **CHAT},
        headers={"authorization": f"Bearer {token}", **ip},
    )

    assert [r.status_code for r in refused] == [401, 401]
    assert refused[0].json()["error"]["code"] == "invalid_api_key"
    assert locked.status_code == 429  # the placeholder was one of the two failures
    assert messages(tokenless, PLACEHOLDER_API_TOKEN).status_code == 401


def test_without_api_token_the_admin_api_still_needs_the_admin_token(tokenless, tokenless_admin):
    _, token = create(tokenless_admin)

    for wrong in (token, PLACEHOLDER_API_TOKEN):
        response = httpx.get(f"{tokenless.url}/api/admin/clients", headers={"authorization": f"Bearer {wrong}"})
        assert response.status_code == 401


def test_without_api_token_a_disabled_last_client_brings_the_503_back(tokenless, tokenless_admin):
    client, token = create(tokenless_admin)
    assert chat(tokenless, token).status_code == 200

    tokenless_admin.put(f"/clients/{client['id']}", json={"enabled": False}).raise_for_status()

    assert chat(tokenless, token).status_code == 503


# --- Security headers (SPEC §14) -------------------------------------------------------------


def test_security_headers_on_every_kind_of_answer(gateway, admin, add_provider, upstream):
    add_provider(models=["fake-model"])
    _, token = create(admin)

    answer = chat(gateway, token)
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert chat(gateway, "fk-wrong").headers["x-content-type-options"] == "nosniff"

    upstream.queue(Sse([chunk("fake-model", "a"), chunk("fake-model", None, "stop")]))
    body = {"model": "fake-model", **CHAT, "stream": True}
    with httpx.stream(
        "POST", f"{gateway.url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {token}"}
    ) as stream:
        stream.read()
    assert stream.status_code == 200
    assert stream.headers["x-content-type-options"] == "nosniff"

    for response in (admin.get("/clients"), httpx.get(f"{gateway.url}/api/admin/clients"), admin.get("/nowhere")):
        assert response.headers["x-content-type-options"] == "nosniff", response.url
        assert response.headers["cache-control"] == "no-store", response.url
        assert response.headers["referrer-policy"] == "no-referrer", response.url

    page = httpx.get(f"{gateway.url}/")
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


# --- No token anywhere it should not be --------------------------------------------------------


def test_no_client_token_in_any_answer_or_log_line(gateway, admin, add_provider):
    add_provider(models=["fake-model", "other-model"])
    seen: list[str] = []
    hook = {"response": [lambda r: (r.read(), seen.append(f"{r.headers}\n{r.text}"))]}
    with httpx.Client(base_url=gateway.url, event_hooks=hook, timeout=30) as client:
        client.headers["authorization"] = f"Bearer {gateway.admin_token}"
        created = client.post("/api/admin/clients", json={"name": "secret", "models": ["fake-model"]}).json()
        token, client_id = created["token"], created["client"]["id"]
        seen.pop(0)  # the one answer that shows it
        client.get("/api/admin/clients")
        client.put(f"/api/admin/clients/{client_id}", json={"rpm": 3})
        client.headers["authorization"] = f"Bearer {token}"
        client.post("/v1/chat/completions", json={"model": "fake-model", **CHAT})
        client.post("/v1/chat/completions", json={"model": "other-model", **CHAT})
        client.get("/api/admin/clients")
        client.headers["authorization"] = f"Bearer {gateway.admin_token}"
        client.delete(f"/api/admin/clients/{client_id}")
        client.headers["authorization"] = f"Bearer {token}"
        client.post("/v1/chat/completions", json={"model": "fake-model", **CHAT})

    assert len(seen) == 7
    assert not [s for s in seen if token in s or token[3:] in s]
    assert token not in gateway.log() and token[3:] not in gateway.log()


# --- Upgrading a database made by 0001 + 0002 ------------------------------------------------


def test_a_database_of_0001_and_0002_upgrades_in_place(tmp_path, upstream):
    migrations = tmp_path / "migrations-0002"
    migrations.mkdir()
    for name in ("0001_init.sql", "0002_provider_keys.sql"):
        shutil.copy(ROOT / "migrations" / name, migrations)
    d1_apply_migrations(tmp_path / "state", migrations)
    d1_execute(tmp_path / "state", "INSERT INTO settings (key, value) VALUES ('max_body_bytes', '4096')")

    gateway = Gateway.start(tmp_path)
    try:
        applied = [m["name"] for m in d1_execute(gateway.persist_to, "SELECT name FROM d1_migrations ORDER BY id")]
        assert applied == sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))  # the rest applied
        admin = httpx.Client(
            base_url=f"{gateway.url}/api/admin", timeout=30, headers={"authorization": f"Bearer {gateway.admin_token}"}
        )
        with admin:
            assert (
                admin.get("/settings").json()["settings"]["max_body_bytes"].items()
                >= {"value": 4096, "source": "d1"}.items()
            )
            assert admin.get("/clients").json() == {"clients": [], "default_client": {"enabled": True}}
            admin.post(
                "/providers",
                json={
                    "name": "p",
                    "base_url": upstream.base_url,
                    "api_key": "sk-upgrade-key-0000",
                    "models": ["fake-model"],
                },
            ).raise_for_status()
            _, token = create(admin)
            assert chat(gateway, token).status_code == 200
    finally:
        gateway.stop()
