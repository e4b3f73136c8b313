"""Who gets in (SPEC §2.1): the API token in any of three headers, never the admin token."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest

from support.d1 import d1_execute
from support.runtime import Gateway

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}


@pytest.fixture
def chat_url(gateway) -> str:
    return f"{gateway.url}/v1/chat/completions"


@pytest.mark.parametrize(
    "header", ["authorization", "x-api-key", "x-goog-api-key"], ids=["bearer", "anthropic", "gemini"]
)
def test_api_token_accepted_in_each_header(gateway, chat_url, add_provider, header):
    add_provider()
    value = f"Bearer {gateway.api_token}" if header == "authorization" else gateway.api_token

    assert httpx.post(chat_url, json=BODY, headers={header: value}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"authorization": "Bearer wrong-token-0000000000"}, id="wrong"),
        pytest.param({"authorization": "Bearer"}, id="empty-bearer"),
        pytest.param({"authorization": "Basic dXNlcjpwYXNz"}, id="not-bearer"),
        pytest.param({"x-api-key": "wrong"}, id="wrong-x-api-key"),
    ],
)
def test_bad_credentials_are_401(chat_url, admin, headers):
    response = httpx.post(chat_url, json=BODY, headers=headers)

    assert response.status_code == 401
    # SPEC §2.1's body, plus the code OpenAI itself sends (the admin API's 401 has one too).
    assert response.json() == {
        "error": {"message": "Invalid API key", "type": "authentication_error", "code": "invalid_api_key"}
    }


def test_first_non_empty_header_wins(gateway, chat_url, add_provider):
    add_provider()
    headers = {"authorization": "Bearer", "x-api-key": gateway.api_token}

    assert httpx.post(chat_url, json=BODY, headers=headers).status_code == 200


def test_admin_token_is_not_an_api_token(gateway, chat_url, admin):
    response = httpx.post(chat_url, json=BODY, headers={"authorization": f"Bearer {gateway.admin_token}"})

    assert response.status_code == 401


def test_api_token_is_not_an_admin_token(gateway, admin):
    response = httpx.get(f"{gateway.url}/api/admin/providers", headers={"authorization": f"Bearer {gateway.api_token}"})

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_admin_api_without_token_is_401(gateway, admin):
    assert httpx.get(f"{gateway.url}/api/admin/settings").status_code == 401


# --- A token that is both (SPEC §2.1): neither door opens, however it was set -----------------

# The configuration snapshot's life (SPEC §2.3): past it, the next request re-reads D1.
CONFIG_TTL_MS = 60_000


def refused_at_both_doors(gateway: Gateway, token: str) -> tuple[int, int]:
    auth = {"authorization": f"Bearer {token}"}
    chat = httpx.post(f"{gateway.url}/v1/chat/completions", json=BODY, headers=auth)
    admin = httpx.get(f"{gateway.url}/api/admin/providers", headers=auth)
    return chat.status_code, admin.status_code


@pytest.fixture(scope="module")
def same_env_token() -> str:
    return f"both-{secrets.token_hex(16)}"


@pytest.fixture(scope="module")
def same_env_gateway(tmp_path_factory: pytest.TempPathFactory, same_env_token: str) -> Iterator[Gateway]:
    """Its own runtime, started with API_TOKEN and ADMIN_TOKEN set to one value."""
    running = Gateway.start(
        tmp_path_factory.mktemp("same-token-gateway"),
        extra_env={"API_TOKEN": same_env_token, "ADMIN_TOKEN": same_env_token},
    )
    yield running
    running.stop()


def test_a_token_set_as_both_in_env_opens_neither_door(same_env_gateway, same_env_token):
    assert refused_at_both_doors(same_env_gateway, same_env_token) == (401, 401)


@pytest.fixture
def same_d1_token(gateway: Gateway) -> Iterator[str]:
    """Both token rows written straight into D1 with one value (the admin API refuses that);
    afterwards the rows are dropped, so the session's env tokens apply again."""
    token = f"both-{secrets.token_hex(16)}"
    d1_execute(
        gateway.persist_to,
        f"INSERT OR REPLACE INTO settings (key, value) VALUES ('api_token', '{token}'), ('admin_token', '{token}')",
    )
    gateway.advance_clock(CONFIG_TTL_MS + 1_000)
    try:
        yield token
    finally:
        d1_execute(gateway.persist_to, "DELETE FROM settings WHERE key IN ('api_token', 'admin_token')")
        gateway.advance_clock(CONFIG_TTL_MS + 1_000)


def test_a_token_set_as_both_in_d1_opens_neither_door(gateway, same_d1_token):
    assert refused_at_both_doors(gateway, same_d1_token) == (401, 401)
    # The rows are in force: they replaced the session's env tokens.
    assert refused_at_both_doors(gateway, gateway.admin_token)[1] == 401
