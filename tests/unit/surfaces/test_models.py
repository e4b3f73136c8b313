"""Model lists (SPEC §12.1) in the OpenAI and Anthropic shapes, read back by the real SDKs."""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.surfaces.models import (
    anthropic_model,
    anthropic_models,
    gemini_model,
    gemini_models,
    openai_model,
    openai_models,
)

CREATED = 1755000000
CREATED_AT = "2025-01-01T00:00:00Z"
ENTRIES = [
    ("auto", "fllmapi"),
    ("llama-3.3-70b", "groq"),
    ("gemini-2.5-flash", "gemini"),
    ("llama-3.3-70b", "cerebras"),
]


@pytest.mark.parametrize(
    ("entries", "ids_owners"),
    [
        pytest.param(
            ENTRIES,
            [("auto", "fllmapi"), ("llama-3.3-70b", "groq"), ("gemini-2.5-flash", "gemini")],
            id="once-first-owner",
        ),
        pytest.param([("auto", "fllmapi")], [("auto", "fllmapi")], id="auto-only"),
        pytest.param([], [], id="empty"),
    ],
)
def test_openai_models(entries, ids_owners):
    body = openai_models(entries, CREATED)

    assert body["object"] == "list"
    assert [(m["id"], m["owned_by"]) for m in body["data"]] == ids_owners
    assert all(m["object"] == "model" and m["created"] == CREATED for m in body["data"])


def test_openai_model():
    assert openai_model(("gpt-4o", "openai"), CREATED) == {
        "id": "gpt-4o",
        "object": "model",
        "created": CREATED,
        "owned_by": "openai",
    }


@pytest.mark.parametrize(
    ("ids", "first", "last"),
    [
        pytest.param(["auto", "a", "b", "a"], "auto", "b", id="once-in-order"),
        pytest.param(["auto"], "auto", "auto", id="one"),
        pytest.param([], None, None, id="empty"),
    ],
)
def test_anthropic_models(ids, first, last):
    body = anthropic_models(ids, CREATED_AT)

    assert body["has_more"] is False
    assert (body["first_id"], body["last_id"]) == (first, last)
    assert [m["id"] for m in body["data"]] == list(dict.fromkeys(ids))


def test_anthropic_model():
    assert anthropic_model("claude-sonnet-4-5", CREATED_AT) == {
        "type": "model",
        "id": "claude-sonnet-4-5",
        "display_name": "claude-sonnet-4-5",
        "created_at": CREATED_AT,
        "lifecycle": "active",
    }


def _transport(routes, http=httpx):
    def handler(request):
        return http.Response(
            200, content=json.dumps(routes[request.url.path]), headers={"content-type": "application/json"}
        )

    return http.MockTransport(handler)


def test_openai_sdk_reads_them():
    openai = pytest.importorskip("openai")
    routes = {
        "/v1/models": openai_models(ENTRIES, CREATED),
        "/v1/models/groq-model": openai_model(("groq-model", "groq"), CREATED),
    }
    client = openai.OpenAI(
        api_key="t",
        base_url="http://gateway.test/v1",
        http_client=httpx.Client(transport=_transport(routes)),
        _strict_response_validation=True,
    )

    assert [m.id for m in client.models.list()] == ["auto", "llama-3.3-70b", "gemini-2.5-flash"]
    assert client.models.retrieve("groq-model").owned_by == "groq"


def test_anthropic_sdk_reads_them():
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")  # anthropic 2.x speaks httpx2 and refuses httpx objects
    routes = {
        "/v1/models": anthropic_models(["auto", "a", "b"], CREATED_AT),
        "/v1/models/a": anthropic_model("a", CREATED_AT),
    }
    client = anthropic.Anthropic(
        api_key="t",
        base_url="http://gateway.test",
        http_client=httpx2.Client(transport=_transport(routes, httpx2)),
        _strict_response_validation=True,
    )

    assert [m.id for m in client.models.list()] == ["auto", "a", "b"]  # has_more false: one page
    model = client.models.retrieve("a")
    assert model.display_name == "a" and model.created_at.year == 2025


def test_gemini_models() -> None:
    entry = gemini_model("llama-3.3-70b")
    assert entry["name"] == "models/llama-3.3-70b" and entry["displayName"] == "llama-3.3-70b"
    assert entry["supportedGenerationMethods"] == ["generateContent", "streamGenerateContent", "countTokens"]
    assert "inputTokenLimit" not in entry
    assert gemini_model("m", input_token_limit=8192, output_token_limit=1024)["inputTokenLimit"] == 8192
    assert [m["name"] for m in gemini_models(["auto", "b"])["models"]] == ["models/auto", "models/b"]
