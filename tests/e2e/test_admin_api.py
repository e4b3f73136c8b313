"""The admin JSON API (SPEC §8.2): providers, settings, tokens."""

from __future__ import annotations

import shutil

import httpx
import pytest

from support.d1 import d1_apply_migrations, d1_execute
from support.runtime import ROOT, Gateway
from support.upstream import UPSTREAM_KEY


def test_provider_lifecycle_never_returns_the_key(admin, add_provider, upstream):
    created = add_provider(name="groq", platform="groq", models=["a", "b"], priority=5, timeout_ms=9000)

    assert created["key_hint"] == f"{UPSTREAM_KEY[:4]}...{UPSTREAM_KEY[-4:]}"
    assert created["key_error"] is False
    assert created["models"] == ["a", "b"]
    assert (created["priority"], created["timeout_ms"], created["enabled"]) == (5, 9000, True)
    listing = admin.get("/providers")
    assert UPSTREAM_KEY not in listing.text
    assert [p["name"] for p in listing.json()["providers"]] == ["groq"]

    updated = admin.put(f"/providers/{created['id']}", json={"priority": 7, "timeout_ms": None})
    assert updated.status_code == 200
    assert (updated.json()["provider"]["priority"], updated.json()["provider"]["timeout_ms"]) == (7, None)

    deleted = admin.delete(f"/providers/{created['id']}")
    assert deleted.json() == {"deleted": created["id"]}
    assert admin.get("/providers").json()["providers"] == []


def test_listing_is_in_priority_order(admin, add_provider):
    add_provider(name="late", priority=50)
    add_provider(name="early", priority=1)
    add_provider(name="tie-first-added", priority=50)

    names = [p["name"] for p in admin.get("/providers").json()["providers"]]

    assert names == ["early", "late", "tie-first-added"]


def test_edit_with_empty_key_keeps_the_old_key(api, admin, add_provider, upstream):
    provider = add_provider(models=["m"])

    admin.put(f"/providers/{provider['id']}", json={"api_key": "", "name": "renamed"}).raise_for_status()
    api.post("/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})

    assert upstream.requests[-1].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_edit_with_a_new_key_uses_it_at_once(api, admin, add_provider, upstream):
    provider = add_provider(models=["m"])
    api.post("/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})

    admin.put(f"/providers/{provider['id']}", json={"api_key": "sk-the-new-key-abcdefgh"}).raise_for_status()
    api.post("/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})

    assert upstream.requests[-1].headers["authorization"] == "Bearer sk-the-new-key-abcdefgh"


SECRET = "sk-must-not-be-echoed-123456"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"base_url": "http://x/v1", "api_key": "k", "models": ["m"]}, "name", id="missing-name"),
        pytest.param({"name": "n", "base_url": "ftp://x", "api_key": "k", "models": ["m"]}, "base_url", id="bad-url"),
        pytest.param({"name": "n", "base_url": "http://x", "api_key": "k", "models": []}, "models", id="no-models"),
        pytest.param({"name": "n", "base_url": "http://x", "api_key": "", "models": ["m"]}, "api_key", id="empty-key"),
        pytest.param(
            {"name": "n", "base_url": "http://x", "api_key": "k", "models": ["m"], "priority": "1"},
            "priority",
            id="priority-not-int",
        ),
        pytest.param(
            {"name": "n", "base_url": "http://x", "api_key": "k", "models": ["m"], "timeout_ms": 0},
            "timeout_ms",
            id="timeout-zero",
        ),
        pytest.param(
            {"name": "n", "base_url": "http://x", "api_key": "k", "models": ["m"], "colour": "red"},
            "colour",
            id="unknown-field",
        ),
        pytest.param(
            {"name": "n", "base_url": "http://user:sk-must-not-be-echoed-123456@x/v1", "api_key": "k", "models": ["m"]},
            "base_url",
            id="password-in-base-url",
        ),
        pytest.param(
            {"name": "evil\r\nX-Injected: 1", "base_url": "http://x", "api_key": "k", "models": ["m"]},
            "name",
            id="line-break-in-name",
        ),
    ],
)
def test_invalid_provider_is_400_naming_the_field(admin, body, field):
    if body.get("api_key") == "k":
        body = {**body, "api_key": SECRET}  # a real-looking key, which the answer must not echo

    response = admin.post("/providers", json=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["type"], error["code"]) == (field, "invalid_request_error", "invalid_request")
    assert SECRET not in response.text


def test_a_credential_in_base_url_is_refused_pointing_at_the_key_field(admin, add_provider):
    provider = add_provider()
    url = "https://me:sk-in-the-url-0123456789@api.example/v1"

    created = admin.post("/providers", json={"name": "n", "base_url": url, "api_key": "k", "models": ["m"]})
    updated = admin.put(f"/providers/{provider['id']}", json={"base_url": url})

    for response in (created, updated):
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["param"] == "base_url" and "api_key" in error["message"]
        assert "sk-in-the-url" not in response.text


@pytest.mark.parametrize("provider_id", ["999999999999999999999", "9007199254740993"])
def test_ids_beyond_what_d1_can_bind_are_404_not_500(admin, provider_id):
    assert admin.put(f"/providers/{provider_id}", json={"priority": 1}).status_code == 404
    assert admin.delete(f"/providers/{provider_id}").status_code == 404


def test_priority_out_of_range_is_400(admin):
    body = {"name": "n", "base_url": "http://x", "api_key": "k", "models": ["m"], "priority": 2**60}

    response = admin.post("/providers", json=body)

    assert (response.status_code, response.json()["error"]["param"]) == (400, "priority")


def test_duplicate_name_is_409(admin, add_provider):
    add_provider(name="same")

    response = admin.post("/providers", json={"name": "same", "base_url": "http://x", "api_key": "k", "models": ["m"]})

    assert response.status_code == 409
    assert response.json()["error"]["param"] == "name"


@pytest.mark.parametrize("name", ["GROQ", "groq", "gRoQ"])
def test_names_differing_only_in_case_are_the_same_name_409(admin, add_provider, name):
    add_provider(name="Groq")

    response = admin.post("/providers", json={"name": name, "base_url": "http://x", "api_key": "k", "models": ["m"]})

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("name", "conflict")
    assert [p["name"] for p in admin.get("/providers").json()["providers"]] == ["Groq"]


def test_a_rename_to_another_providers_name_in_other_case_is_409(admin, add_provider):
    add_provider(name="Groq")
    other = add_provider(name="other")

    response = admin.put(f"/providers/{other['id']}", json={"name": "groq"})

    assert response.status_code == 409
    assert response.json()["error"]["param"] == "name"


def test_a_provider_may_change_the_case_of_its_own_name(admin, add_provider):
    provider = add_provider(name="Groq")

    response = admin.put(f"/providers/{provider['id']}", json={"name": "GROQ", "priority": 5})

    assert response.status_code == 200
    assert response.json()["provider"]["name"] == "GROQ"


def test_names_already_differing_only_in_case_survive_the_upgrade(tmp_path):
    """A database that holds "Groq" and "groq" from before the rule (migrations up to 0006) is
    migrated without failing; both rows stay and can be edited, and the rule holds from then on."""
    migrations = tmp_path / "migrations-0006"
    migrations.mkdir()
    for path in sorted((ROOT / "migrations").glob("000[1-6]_*.sql")):
        shutil.copy(path, migrations)
    d1_apply_migrations(tmp_path / "state", migrations)
    d1_execute(tmp_path / "state", "".join(
        "INSERT INTO providers (name, base_url, models, created_at, updated_at) "
        f"VALUES ('{name}', 'http://x', '[\"m\"]', 1, 1);"
        for name in ("Groq", "groq")
    ))  # fmt: skip

    gateway = Gateway.start(tmp_path)
    try:
        headers = {"authorization": f"Bearer {gateway.admin_token}"}
        with httpx.Client(base_url=f"{gateway.url}/api/admin", headers=headers, timeout=30) as admin:
            listed = admin.get("/providers").json()["providers"]
            assert sorted(p["name"] for p in listed) == ["Groq", "groq"]
            second = next(p for p in listed if p["name"] == "groq")

            assert admin.put(f"/providers/{second['id']}", json={"priority": 7}).status_code == 200
            body = {"name": "GROQ", "base_url": "http://x", "api_key": "k", "models": ["m"]}
            assert admin.post("/providers", json=body).status_code == 409
            renamed = admin.put(f"/providers/{second['id']}", json={"name": "groq-2"})
            assert (renamed.status_code, renamed.json()["provider"]["name"]) == (200, "groq-2")
    finally:
        gateway.stop()


def test_unknown_provider_is_404(admin):
    assert admin.put("/providers/999999", json={"priority": 1}).status_code == 404
    assert admin.delete("/providers/999999").status_code == 404


def test_null_for_a_required_field_is_400(admin, add_provider):
    provider = add_provider()

    response = admin.put(f"/providers/{provider['id']}", json={"name": None})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "name"


def test_settings_report_value_and_source(gateway, admin):
    settings = admin.get("/settings").json()["settings"]
    assert settings["routing_cooldown_ceiling_ms"] == {
        "value": 86_400_000,
        "source": "default",
        "minimum": 60_000,
        "maximum": 86_400_000,
    }
    assert (settings["max_body_bytes"]["minimum"], settings["max_body_bytes"]["maximum"]) == (1, 100_000_000)
    assert "minimum" not in settings["model_aliases"]  # a table, not a number

    admin.put("/settings", json={"routing_cooldown_ceiling_ms": 3_600_000}).raise_for_status()
    assert (
        admin.get("/settings").json()["settings"]["routing_cooldown_ceiling_ms"].items()
        >= {
            "value": 3_600_000,
            "source": "d1",
        }.items()
    )

    admin.put("/settings", json={"routing_cooldown_ceiling_ms": None}).raise_for_status()
    assert admin.get("/settings").json()["settings"]["routing_cooldown_ceiling_ms"]["source"] == "default"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        pytest.param({"routing_cooldown_ceiling_ms": 5}, "an integer from 60000 to 86400000", id="ceiling-too-low"),
        pytest.param({"stream_stall_ms": -1}, "an integer from 250 to 600000", id="stall-negative"),
        pytest.param({"STREAM_STALL_MS": 600_001}, "an integer from 250 to 600000", id="stall-too-high-env-name"),
    ],
)
def test_settings_out_of_range_are_refused_with_the_range(admin, body, says):
    response = admin.put("/settings", json=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["type"]) == (next(iter(body)), "invalid_request_error")
    assert says in error["message"]
    assert admin.get("/settings").json()["settings"]["stream_stall_ms"]["source"] == "default"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        pytest.param({"ip_rpm": "5"}, "not a string", id="rpm-as-string"),
        pytest.param({"max_body_bytes": "4096"}, "not a string", id="body-limit-as-string"),
        pytest.param({"STREAM_STALL_MS": "5000"}, "not a string", id="env-name-as-string"),
        pytest.param({"default_client_rpm": 5.0}, "an integer from 0", id="whole-float"),
        pytest.param({"auth_fail_limit": True}, "an integer from 0", id="boolean"),
        pytest.param({"openrouter_pinning": "1"}, "not a string", id="switch-as-string"),
        pytest.param({"stream_rescue": True}, "an integer from 0 to 1", id="rescue-as-boolean"),
        pytest.param({"STREAM_RESCUE": 2}, "an integer from 0 to 1", id="rescue-beyond-on"),
        pytest.param({"usage_flush_minutes": 0}, "an integer from 1 to 60", id="usage-flush-never"),
        pytest.param({"USAGE_FLUSH_MINUTES": 61}, "an integer from 1 to 60", id="usage-flush-past-an-hour"),
        pytest.param({"max_body_bytes": 100_000_001}, "an integer from 1 to 100000000", id="body-limit-over-platform"),
        pytest.param({"max_body_bytes": 0}, "an integer from 1 to 100000000", id="body-limit-zero"),
        pytest.param({"ip_rpm": 2**53}, "an integer from 0 to 9007199254740991", id="beyond-exact-js-numbers"),
    ],
)
def test_settings_of_the_wrong_type_or_beyond_their_bounds_are_400(admin, body, says):
    before = admin.get("/settings").json()["settings"]

    response = admin.put("/settings", json=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["type"]) == (next(iter(body)), "invalid_request_error")
    assert says in error["message"]
    assert admin.get("/settings").json()["settings"] == before


def test_stream_rescue_is_an_opt_in_switch(admin):
    # SPEC §16: off unless turned on, 1 on and 0 off; null goes back to the default.
    assert admin.get("/settings").json()["settings"]["stream_rescue"] == {
        "value": 0,
        "source": "default",
        "minimum": 0,
        "maximum": 1,
    }

    on = admin.put("/settings", json={"STREAM_RESCUE": 1}).json()["settings"]["stream_rescue"]
    assert on.items() >= {"value": 1, "source": "d1"}.items()
    back = admin.put("/settings", json={"stream_rescue": None}).json()["settings"]["stream_rescue"]
    assert back.items() >= {"value": 0, "source": "default"}.items()


def test_the_body_limit_may_be_the_platforms(admin):
    response = admin.put("/settings", json={"max_body_bytes": 100_000_000})

    assert response.status_code == 200
    assert response.json()["settings"]["max_body_bytes"].items() >= {"value": 100_000_000, "source": "d1"}.items()


@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        pytest.param("PUT", "/settings", b'{"ip_rpm": NaN}', id="settings-nan"),
        pytest.param("PUT", "/settings", b'{"ip_rpm": Infinity}', id="settings-infinity"),
        pytest.param("POST", "/providers",
                     b'{"name": "n", "base_url": "http://x", "api_key": "k", "models": ["m"], "priority": -Infinity}',
                     id="provider-minus-infinity"),
        pytest.param("POST", "/clients", b'{"name": "c", "rpm": NaN}', id="client-nan"),
    ],
)  # fmt: skip
def test_nan_and_infinity_in_an_admin_body_are_400(admin, method, path, content):
    response = admin.request(method, path, content=content, headers={"content-type": "application/json"})

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["type"]) == ("body", "invalid_request_error")
    assert "not a JSON value" in error["message"]


def test_settings_take_the_env_spelling_too(admin):
    response = admin.put("/settings", json={"STREAM_STALL_MS": 5000, "max_body_bytes": 4096})

    assert response.status_code == 200
    settings = response.json()["settings"]
    assert settings["stream_stall_ms"].items() >= {"value": 5000, "source": "d1"}.items()
    assert settings["max_body_bytes"].items() >= {"value": 4096, "source": "d1"}.items()

    admin.put("/settings", json={"STREAM_STALL_MS": None}).raise_for_status()
    assert admin.get("/settings").json()["settings"]["stream_stall_ms"]["source"] == "default"


def test_a_setting_named_twice_is_refused(admin):
    response = admin.put("/settings", json={"stream_stall_ms": 5000, "STREAM_STALL_MS": 6000})

    assert response.status_code == 400
    assert "given twice" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"no_such_setting": 1}, "no_such_setting", id="unknown"),
        pytest.param({"stream_stall_ms": "soon"}, "stream_stall_ms", id="not-a-number"),
        pytest.param({"max_consecutive_upstream_fails": -1}, "max_consecutive_upstream_fails", id="negative"),
        pytest.param({"api_token": "x" * 20}, "api_token", id="tokens-have-their-own-endpoint"),
    ],
)
def test_invalid_settings_are_400(admin, body, field):
    response = admin.put("/settings", json=body)

    assert response.status_code == 400
    assert response.json()["error"]["param"] == field


def test_an_unknown_setting_names_both_names_of_every_setting(admin):
    message = admin.put("/settings", json={"stall": 1}).json()["error"]["message"]

    assert "stream_stall_ms (STREAM_STALL_MS)" in message


def test_changing_tokens_switches_both_at_once(gateway, admin, add_provider):
    add_provider()
    chat = f"{gateway.url}/v1/chat/completions"
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}
    new_api, new_admin = "new-api-token-0123456789", "new-admin-token-0123456789"
    try:
        response = admin.put("/tokens", json={"api_token": new_api, "admin_token": new_admin})
        assert response.json() == {"api_token_hint": "new-...6789", "admin_token_hint": "new-...6789"}

        assert httpx.post(chat, json=body, headers={"authorization": f"Bearer {gateway.api_token}"}).status_code == 401
        assert httpx.post(chat, json=body, headers={"authorization": f"Bearer {new_api}"}).status_code == 200
        assert admin.get("/providers").status_code == 401  # the old admin token stopped working
        admin.headers["authorization"] = f"Bearer {new_admin}"
        assert admin.get("/providers").status_code == 200
    finally:
        # Back to the session's tokens (as D1 rows holding the same values).
        httpx.put(
            f"{gateway.url}/api/admin/tokens",
            json={"api_token": gateway.api_token, "admin_token": gateway.admin_token},
            headers={"authorization": f"Bearer {new_admin}"},
        )


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"api_token": "tiny-secret"}, id="too-short"),
        pytest.param({"api_token": "change-me-api-token-but-long"}, id="placeholder"),
        pytest.param({"api_token": "same-secret-0123456789", "admin_token": "same-secret-0123456789"}, id="equal"),
    ],
)
def test_bad_tokens_are_400_without_echoing_them(admin, body):
    response = admin.put("/tokens", json=body)

    assert response.status_code == 400
    assert body["api_token"] not in response.text


def test_an_api_token_equal_to_the_admin_token_is_refused(gateway, admin):
    response = admin.put("/tokens", json={"api_token": gateway.admin_token})

    assert response.status_code == 400


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_cors_preflight_allows_the_admin_methods_and_is_cached(gateway, method):
    response = httpx.options(
        f"{gateway.url}/api/admin/providers/1",
        headers={
            "origin": "https://admin.example",
            "access-control-request-method": method,
            "access-control-request-headers": "authorization, content-type",
        },
    )

    assert response.status_code == 204
    allowed = {m.strip() for m in response.headers["access-control-allow-methods"].split(",")}
    assert {"GET", "POST", "PUT", "DELETE"} <= allowed
    assert response.headers["access-control-max-age"] == "86400"  # a day: one preflight per page load, not per call
