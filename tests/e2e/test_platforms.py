"""The quick add's endpoints (SPEC §8.2, §8.3): the presets, and fetching a platform's model list
through the gateway (``GET {base_url}/models`` with the key as a Bearer token)."""

from __future__ import annotations

import httpx
import pytest

from support.runtime import free_port
from support.upstream import UPSTREAM_KEY, Json


def test_platforms_lists_the_presets(admin):
    platforms = admin.get("/platforms").json()["platforms"]

    by_id = {p["id"]: p for p in platforms}
    assert by_id["groq"]["base_url"] == "https://api.groq.com/openai/v1"
    assert by_id["groq"]["models_url"] == "https://api.groq.com/openai/v1/models"
    assert "llama-3.3-70b-versatile" in by_id["groq"]["default_models"]
    assert "{account_id}" in by_id["cloudflare"]["base_url"]
    assert set(platforms[0]) == {"id", "name", "base_url", "models_url", "default_models"}


@pytest.mark.parametrize(("method", "path"), [("GET", "/platforms"), ("POST", "/models/fetch")])
def test_platform_endpoints_need_the_admin_token(gateway, method, path):
    for token in (None, gateway.api_token):
        headers = {"authorization": f"Bearer {token}"} if token else {}
        response = httpx.request(method, f"{gateway.url}/api/admin{path}", headers=headers, json={})

        assert response.status_code == 401


def test_fetch_with_base_url_and_key(admin, upstream):
    upstream.serve_models(["zeta", "alpha", "mid", "alpha"])

    response = admin.post("/models/fetch", json={"base_url": upstream.base_url + "/", "api_key": UPSTREAM_KEY})

    assert response.status_code == 200
    assert response.json() == {"models": ["alpha", "mid", "zeta"], "facts": {}}  # the list states none
    [request] = upstream.model_list_requests
    assert request.path == "/v1/models"
    assert request.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_fetch_for_a_stored_provider_uses_its_stored_key(admin, add_provider, upstream):
    provider = add_provider(api_key="sk-stored-provider-key-12345")
    upstream.serve_models(["models/gemini-style", "plain"])

    response = admin.post("/models/fetch", json={"provider_id": provider["id"]})

    assert response.json() == {"models": ["gemini-style", "plain"], "facts": {}}
    assert upstream.model_list_requests[-1].headers["authorization"] == "Bearer sk-stored-provider-key-12345"


def test_fetch_answers_what_the_list_states_of_each_model(admin, upstream):
    listed = [
        # OpenRouter's shape
        {"id": "or/m", "context_length": 131072, "architecture": {"input_modalities": ["text", "image"]},
         "supported_parameters": ["tools", "response_format"]},
        {"id": "groq-m", "context_window": 8192},  # Groq's
        {"id": "mistral-m", "max_context_length": 32768, "capabilities": {"vision": False, "function_calling": True}},
        {"id": "bare"},
    ]  # fmt: skip
    upstream.serve_models(Json({"object": "list", "data": listed}))

    response = admin.post("/models/fetch", json={"base_url": upstream.base_url, "api_key": UPSTREAM_KEY})

    assert response.json() == {
        "models": ["bare", "groq-m", "mistral-m", "or/m"],
        "facts": {
            "or/m": {"context": 131072, "vision": True, "tools": True, "json": True},
            "groq-m": {"context": 8192},
            "mistral-m": {"context": 32768, "vision": False, "tools": True},
        },
    }


def test_fetch_for_an_unknown_provider_is_404(admin):
    response = admin.post("/models/fetch", json={"provider_id": 999_999})

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"api_key": "k"}, "base_url", id="no-base-url"),
        pytest.param({"base_url": "ftp://x", "api_key": "k"}, "base_url", id="bad-base-url"),
        pytest.param({"base_url": "http://x/v1"}, "api_key", id="no-key"),
        pytest.param({"base_url": "http://x/v1", "api_key": " "}, "api_key", id="blank-key"),
        pytest.param({"provider_id": "1"}, "provider_id", id="provider-id-not-int"),
        pytest.param({"provider_id": 1, "api_key": "k"}, "api_key", id="both-forms"),
        pytest.param([], "body", id="not-an-object"),
    ],
)
def test_bad_body_is_400_naming_the_field(admin, body, field):
    response = admin.post("/models/fetch", json=body)

    assert response.status_code == 400
    assert response.json()["error"]["param"] == field


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        pytest.param(Json({"error": {"message": f"Invalid API key {UPSTREAM_KEY}"}}, 401), "HTTP 401", id="401"),
        pytest.param(Json(f"<html>bad gateway for {UPSTREAM_KEY}</html>", 503), "HTTP 503", id="503-html"),
        pytest.param(Json({"models": ["not", "openai"]}), "not an OpenAI model list", id="not-a-list"),
        pytest.param(Json("not json at all"), "not an OpenAI model list", id="not-json"),
    ],
)
def test_platform_failure_is_a_502_without_the_key(admin, upstream, answer, said):
    upstream.serve_models(answer)

    response = admin.post("/models/fetch", json={"base_url": upstream.base_url, "api_key": UPSTREAM_KEY})

    assert response.status_code == 502
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("provider_error", "upstream_failed")
    assert said in error["message"]
    assert f"{upstream.base_url}/models" in error["message"]
    assert UPSTREAM_KEY not in response.text


def test_an_unusual_key_echoed_by_the_platform_is_masked(admin, upstream):
    key = "plainkey"  # too short and too plain for redact()'s shape rules
    upstream.serve_models(Json({"error": {"message": f"key {key} is not valid"}}, 401))

    response = admin.post("/models/fetch", json={"base_url": upstream.base_url, "api_key": key})

    assert response.status_code == 502
    assert key not in response.text


def test_unreachable_platform_is_a_502(admin):
    base_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there

    response = admin.post("/models/fetch", json={"base_url": base_url, "api_key": UPSTREAM_KEY})

    assert response.status_code == 502
    assert "could not be reached" in response.json()["error"]["message"]
