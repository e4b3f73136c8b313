"""Unusable secrets (issue 8): with .dev.vars.example's placeholder admin token, a short API token
and no ENCRYPTION_KEY, the local runtime warns at start naming each, and the Worker serves neither
the admin API nor /v1 (503 naming the variable to set), even to a caller presenting the token.
Uses its own runtime, started with those secrets."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from support.runtime import Gateway

PLACEHOLDER = "change-me-admin-token"  # as in .dev.vars.example
SHORT = "short-api-tok"  # 13 characters


@pytest.fixture(scope="module")
def bad_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = Gateway.start(
        tmp_path_factory.mktemp("bad-secrets"),
        extra_env={"ADMIN_TOKEN": PLACEHOLDER, "API_TOKEN": SHORT, "ENCRYPTION_KEY": ""},
    )
    yield running
    running.stop()


def test_each_unusable_secret_is_named_at_start(bad_gateway):
    start = bad_gateway.log().split("Ready on")[0]
    warnings = [line for line in start.splitlines() if line.startswith("warning: ")]

    assert any(w.startswith("warning: ADMIN_TOKEN is a placeholder") for w in warnings), start
    assert any(w.startswith("warning: API_TOKEN is shorter than 16 characters") for w in warnings), start
    assert any(w.startswith("warning: ENCRYPTION_KEY is not set") for w in warnings), start


def test_the_admin_api_is_not_served_with_a_placeholder_token(bad_gateway):
    response = httpx.get(f"{bad_gateway.url}/api/admin/providers", headers={"authorization": f"Bearer {PLACEHOLDER}"})

    assert response.status_code == 503
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", "token_not_configured")
    assert error["message"].startswith("ADMIN_TOKEN is a placeholder")
    assert "wrangler secret put ADMIN_TOKEN" in error["message"]


def test_v1_is_not_served_with_a_short_token(bad_gateway):
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}

    response = httpx.post(
        f"{bad_gateway.url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {SHORT}"}
    )

    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "token_not_configured"
    assert error["message"].startswith("API_TOKEN is shorter than 16 characters")


def test_no_secret_is_shown(bad_gateway):
    httpx.get(f"{bad_gateway.url}/api/admin/settings", headers={"authorization": f"Bearer {PLACEHOLDER}"})

    assert PLACEHOLDER not in bad_gateway.log()
    assert SHORT not in bad_gateway.log()
