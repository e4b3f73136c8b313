"""Who gets in (SPEC §2.1): the API token in any of three headers, never the admin token."""

from __future__ import annotations

import httpx
import pytest

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
    assert response.json() == {"error": {"message": "Invalid API key", "type": "authentication_error"}}


def test_first_non_empty_header_wins(gateway, chat_url, add_provider):
    add_provider()
    headers = {"authorization": "Bearer", "x-api-key": gateway.api_token}

    assert httpx.post(chat_url, json=BODY, headers=headers).status_code == 200


def test_admin_token_is_not_an_api_token(gateway, chat_url, admin):
    response = httpx.post(chat_url, json=BODY, headers={"authorization": f"Bearer {gateway.admin_token}"})

    assert response.status_code == 401


def test_api_token_is_not_an_admin_token(gateway, admin):
    response = httpx.get(
        f"{gateway.url}/api/admin/providers", headers={"authorization": f"Bearer {gateway.api_token}"}
    )

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_admin_api_without_token_is_401(gateway, admin):
    assert httpx.get(f"{gateway.url}/api/admin/settings").status_code == 401
