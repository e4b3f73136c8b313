"""Model aliases (issue 9): the ``model_aliases`` setting, through the admin API, rewrites the model
of every surface before the chain is built; what the answer then says about it; what the admin
API refuses."""

from __future__ import annotations

import httpx
import pytest

from support.upstream import Sse, chunk

SMALL, BIG = "small-fast", "big-slow"
CLAUDE = {"claude-*haiku*": SMALL, "claude-*": "auto"}
HAIKU = "claude-3-5-haiku-latest"


@pytest.fixture
def aliased(admin, add_provider):
    """Two providers, the big one first, and the Claude Code aliases saved in D1."""
    add_provider(name="big", priority=1, models=[BIG])
    add_provider(name="small", priority=2, models=[SMALL])
    response = admin.put("/settings", json={"model_aliases": CLAUDE})
    assert response.status_code == 200, response.text
    return response.json()["settings"]["model_aliases"]


def messages(gateway, model: str, **extra) -> httpx.Response:
    body = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], **extra}
    headers = {"x-api-key": gateway.api_token, "anthropic-version": "2023-06-01"}
    return httpx.post(f"{gateway.url}/v1/messages", json=body, headers=headers, timeout=30)


def chat(api, model: str) -> httpx.Response:
    return api.post("/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "hi"}]})


def test_the_setting_is_shown_as_the_object_it_was_given(aliased, admin):
    assert aliased.items() >= {"value": CLAUDE, "source": "d1"}.items()
    assert list(admin.get("/settings").json()["settings"]["model_aliases"]["value"]) == list(CLAUDE)


def test_claude_haiku_on_messages_is_served_by_the_aliased_model(aliased, gateway, upstream):
    response = messages(gateway, HAIKU)

    assert response.status_code == 200, response.text
    assert response.headers["x-routed-via"] == f"small/{SMALL}"
    assert "x-fallback-from" not in response.headers  # the alias target is what was asked
    assert response.json()["model"] == SMALL
    assert [r.json["model"] for r in upstream.requests] == [SMALL]


def test_other_claude_models_go_to_auto(aliased, gateway, upstream):
    response = messages(gateway, "claude-sonnet-4-5")

    assert response.status_code == 200, response.text
    assert response.headers["x-routed-via"] == f"big/{BIG}"  # auto: priority order
    assert "x-fallback-from" not in response.headers


def test_a_streamed_message_follows_the_alias(aliased, gateway, upstream):
    upstream.queue(Sse([chunk(SMALL, "quick"), chunk(SMALL, finish_reason="stop")]))

    response = messages(gateway, HAIKU.upper(), stream=True)

    assert response.status_code == 200, response.text
    assert response.headers["x-routed-via"] == f"small/{SMALL}"
    assert "event: message_stop" in response.text
    assert upstream.requests[0].json["model"] == SMALL


def test_chat_completions_follows_the_alias_too(aliased, api, upstream):
    response = chat(api, HAIKU)

    assert response.status_code == 200, response.text
    assert response.headers["x-routed-via"] == f"small/{SMALL}"
    assert "x-fallback-from" not in response.headers
    assert upstream.requests[0].json["model"] == SMALL


def test_a_name_no_alias_matches_degrades_as_before(aliased, api):
    response = chat(api, "gpt-4o")

    assert response.headers["x-routed-via"] == f"big/{BIG}"
    assert response.headers["x-fallback-from"] == "gpt-4o"


def test_fallback_from_names_the_alias_target_when_another_model_served(admin, add_provider, api):
    add_provider(name="big", priority=1, models=[BIG])
    admin.put("/settings", json={"model_aliases": {"claude-*": "retired-model"}}).raise_for_status()

    response = chat(api, "claude-opus-4")

    assert response.headers["x-routed-via"] == f"big/{BIG}"
    assert response.headers["x-fallback-from"] == "retired-model"


def test_without_aliases_claude_names_degrade(admin, add_provider, gateway):
    add_provider(name="big", priority=1, models=[BIG])

    response = messages(gateway, HAIKU)

    assert response.headers["x-routed-via"] == f"big/{BIG}"
    assert response.headers["x-fallback-from"] == HAIKU


def test_null_drops_the_table(aliased, admin, api):
    dropped = admin.put("/settings", json={"MODEL_ALIASES": None}).json()["settings"]["model_aliases"]

    assert dropped == {"value": {}, "source": "default"}
    assert chat(api, HAIKU).headers["x-fallback-from"] == HAIKU


@pytest.mark.parametrize(
    ("value", "says"),
    [
        pytest.param(["claude-*", SMALL], "a JSON object", id="not-an-object"),
        pytest.param('{"claude-*": "auto"}', "a JSON object", id="json-text-is-not-an-object"),
        pytest.param(7, "a JSON object", id="a-number"),
        pytest.param({"claude-*": 3}, "must be a string", id="target-not-a-string"),
        pytest.param({"claude-*": ""}, "must not be empty", id="target-empty"),
        pytest.param({"": "auto"}, "pattern must not be empty", id="pattern-empty"),
        pytest.param({"x" * 201: "auto"}, "longer than 200", id="pattern-too-long"),
        pytest.param({f"m{i}-*": "auto" for i in range(101)}, "at most 100", id="too-many"),
    ],
)
def test_invalid_tables_are_400_naming_the_setting(admin, value, says):
    response = admin.put("/settings", json={"model_aliases": value})

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "model_aliases"
    assert "model_aliases" in error["message"] and says in error["message"]
    assert admin.get("/settings").json()["settings"]["model_aliases"]["source"] == "default"
