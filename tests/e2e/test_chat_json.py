"""Non-streaming chat through the gateway with the official openai SDK (SPEC §2)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from support.upstream import Json, completion


@pytest.fixture
def client(gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.api_token, max_retries=0)


def test_openai_sdk_gets_the_upstream_answer(client, add_provider, upstream):
    add_provider(name="groq-like", models=["llama-3.3-70b"])
    upstream.queue(Json(completion("llama-3.3-70b", "the answer is 42")))

    raw = client.chat.completions.with_raw_response.create(
        model="llama-3.3-70b", messages=[{"role": "user", "content": "question"}]
    )

    answer = raw.parse()
    assert answer.choices[0].message.content == "the answer is 42"
    assert raw.headers["x-routed-via"] == "groq-like/llama-3.3-70b"
    assert "x-fallback-from" not in raw.headers
    sent = upstream.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-fake-upstream-key-0123456789"


def test_body_is_forwarded_untouched_including_provider_fields(api, add_provider, upstream):
    add_provider(models=["m1"])
    body = b'{"model":"m1","messages":[{"role":"user","content":"hi"}],"top_k":7,"temperature":0.25}'

    response = api.post("/chat/completions", content=body, headers={"content-type": "application/json"})

    assert response.status_code == 200
    assert upstream.requests[-1].body == body


def test_auto_picks_the_first_provider_by_priority_and_its_first_model(api, add_provider, upstream):
    add_provider(name="second", priority=20, models=["b1"])
    add_provider(name="first", priority=10, models=["a1", "a2"])

    response = api.post("/chat/completions", json={"model": "auto", "messages": [{"role": "user", "content": "x"}]})

    assert response.status_code == 200
    assert response.headers["x-routed-via"] == "first/a1"
    assert upstream.requests[-1].json["model"] == "a1"


def test_disabled_providers_do_not_serve(api, add_provider, upstream):
    add_provider(name="off", priority=1, models=["m"], enabled=False)
    add_provider(name="on", priority=2, models=["m"])

    response = api.post("/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})

    assert response.headers["x-routed-via"] == "on/m"


def test_no_provider_configured_is_503(api, admin):
    response = api.post("/chat/completions", json={"model": "auto", "messages": [{"role": "user", "content": "x"}]})

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "no_providers_configured"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"messages": []}, "messages", id="empty-messages"),
        pytest.param({"model": "m"}, "messages", id="missing-messages"),
        pytest.param({"model": 3, "messages": [{"role": "user"}]}, "model", id="model-not-string"),
        pytest.param({"messages": [{"role": "user"}], "stream": "yes"}, "stream", id="stream-not-bool"),
        pytest.param({"messages": ["hi"]}, "messages.0", id="message-not-object"),
    ],
)
def test_invalid_body_is_400_naming_the_field(api, admin, body, field):
    response = api.post("/chat/completions", json=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == field
    assert field in error["message"]


@pytest.mark.parametrize("content", [b"{not json", b"", b"[1, 2]"], ids=["broken-json", "empty", "not-an-object"])
def test_unparseable_body_is_400(api, admin, content):
    response = api.post("/chat/completions", content=content, headers={"content-type": "application/json"})

    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])  # 1e999: Python's inf
def test_nan_and_infinity_are_not_json_so_400_before_any_upstream_call(api, add_provider, upstream, constant):
    add_provider()
    content = b'{"model": "fake-model", "temperature": %s, "messages": [{"role": "user", "content": "x"}]}' % (
        constant.encode()
    )

    response = api.post("/chat/completions", content=content, headers={"content-type": "application/json"})

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", "body")
    assert constant.lstrip("-") in error["message"]
    assert upstream.requests == []


def test_body_over_the_limit_is_413_before_any_upstream_call(api, add_provider, upstream):
    add_provider()
    big = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "x" * (1024 * 1024)}]})

    response = api.post("/chat/completions", content=big, headers={"content-type": "application/json"})

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert upstream.requests == []


def test_body_limit_follows_the_setting(api, admin, add_provider, upstream):
    add_provider()
    admin.put("/settings", json={"max_body_bytes": 100}).raise_for_status()
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "y" * 200}]}

    # Chunked upload: no Content-Length, so the limit is checked on the bytes read.
    response = api.post(
        "/chat/completions", content=iter([json.dumps(body).encode()]), headers={"content-type": "application/json"}
    )

    assert response.status_code == 413
    assert upstream.requests == []


def test_upstream_failure_is_502_in_openai_format(api, add_provider, upstream):
    add_provider(name="down", base_url="http://127.0.0.1:9/v1")

    response = api.post(
        "/chat/completions", json={"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}
    )

    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "provider_error"
    assert "down/fake-model" in error["message"]


def test_cors_preflight_and_headers(gateway):
    response = httpx.options(
        f"{gateway.url}/v1/chat/completions",
        headers={"origin": "https://app.example", "access-control-request-method": "POST"},
    )

    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "*"
    assert "authorization" in response.headers["access-control-allow-headers"]


def test_cors_preflight_allows_the_headers_a_browser_sdk_asks_for(gateway):
    asked = "authorization, content-type, x-stainless-os, openai-beta"

    response = httpx.options(
        f"{gateway.url}/v1/chat/completions",
        headers={
            "origin": "https://app.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": asked,
        },
    )

    assert response.headers["access-control-allow-headers"] == asked
