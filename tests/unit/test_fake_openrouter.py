"""The fake OpenRouter origin (tests/support/openrouter.py) itself: endpoints API and pinned chat."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from support.openrouter import FakeOpenRouter, endpoint
from support.upstream import Json, Sse, chunk

MODEL = "deepseek/deepseek-chat:free"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenRouter]:
    running = FakeOpenRouter().start()
    yield running
    running.stop()


@pytest.fixture
def fake(server: FakeOpenRouter) -> FakeOpenRouter:
    server.reset()
    return server


def chat(fake: FakeOpenRouter, slug: str | None, **extra: object) -> httpx.Response:
    body: dict[str, object] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **extra}
    if slug is not None:
        body["provider"] = {"order": [slug], "allow_fallbacks": False}
    return httpx.post(f"{fake.base_url}/chat/completions", json=body, headers={"authorization": "Bearer k"})


def test_urls(fake: FakeOpenRouter) -> None:
    assert fake.origin.startswith("http://127.0.0.1:")
    assert fake.base_url == fake.origin + "/api/v1"


def test_endpoint_helper_shape() -> None:
    entry = endpoint("deepinfra", throughput=None, overrides=[{"utc_start": 0, "utc_end": 60, "prompt": "0"}])
    assert entry["provider_name"] == "Deepinfra"
    assert entry["tag"] == "deepinfra"
    assert entry["throughput_last_30m"] is None
    assert entry["pricing"]["overrides"][0]["utc_end"] == 60
    assert "overrides" not in endpoint("x")["pricing"]
    assert endpoint("x", tag="x/fp8")["tag"] == "x/fp8"


def test_endpoints_answer_and_are_counted(fake: FakeOpenRouter) -> None:
    fake.set_endpoints(MODEL, [endpoint("deepinfra"), endpoint("chutes", prompt="0", completion="0")])
    plain = httpx.get(f"{fake.origin}/api/v1/models/{MODEL}/endpoints")
    encoded = httpx.get(f"{fake.origin}/api/v1/models/{quote(MODEL, safe='')}/endpoints")
    for answer in (plain, encoded):
        assert answer.status_code == 200
        data = answer.json()["data"]
        assert data["id"] == MODEL
        assert [e["tag"] for e in data["endpoints"]] == ["deepinfra", "chutes"]
    assert fake.endpoint_fetches(MODEL) == 2
    assert fake.endpoint_fetches("other/model") == 0
    assert [c.method for c in fake.requests] == ["GET", "GET"]
    assert fake.chat_requests() == []


def test_unknown_model_is_404(fake: FakeOpenRouter) -> None:
    answer = httpx.get(f"{fake.origin}/api/v1/models/nobody/knows/endpoints")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == 404
    assert fake.endpoint_fetches("nobody/knows") == 1


def test_failing_and_hanging_endpoints(fake: FakeOpenRouter) -> None:
    fake.set_endpoints(MODEL, [endpoint("deepinfra")])
    fake.fail_endpoints(503)
    assert httpx.get(f"{fake.origin}/api/v1/models/{MODEL}/endpoints").status_code == 503
    fake.fail_endpoints(None)
    assert httpx.get(f"{fake.origin}/api/v1/models/{MODEL}/endpoints").status_code == 200
    fake.hang_endpoints(True)
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{fake.origin}/api/v1/models/{MODEL}/endpoints", timeout=0.2)
    fake.hang_endpoints(False)
    assert httpx.get(f"{fake.origin}/api/v1/models/{MODEL}/endpoints").status_code == 200
    assert fake.endpoint_fetches(MODEL) == 4


def test_chat_default_names_the_slug(fake: FakeOpenRouter) -> None:
    pinned = chat(fake, "deepinfra")
    assert pinned.status_code == 200
    assert pinned.json()["choices"][0]["message"]["content"] == "served by deepinfra"
    assert pinned.json()["model"] == MODEL
    assert chat(fake, None).json()["choices"][0]["message"]["content"] == "served by unpinned"
    assert fake.pinned_slugs() == ["deepinfra", None]
    first = fake.chat_requests()[0]
    assert (first.method, first.path, first.key) == ("POST", "/api/v1/chat/completions", "k")
    assert first.json["provider"] == {"order": ["deepinfra"], "allow_fallbacks": False}


def test_queued_429_for_one_slug_only(fake: FakeOpenRouter) -> None:
    fake.queue_for("deepinfra", Json({"error": {"message": "rate limited", "code": 429}}, 429))
    assert chat(fake, "chutes").status_code == 200
    assert chat(fake, "deepinfra").status_code == 429
    assert chat(fake, "deepinfra").status_code == 200  # one step, one request
    fake.always_for("chutes", Json({"error": {"message": "down", "code": 500}}, 500, {"retry-after": "1"}))
    for _ in range(2):
        answer = chat(fake, "chutes")
        assert (answer.status_code, answer.headers["retry-after"]) == (500, "1")
    assert fake.pinned_slugs() == ["chutes", "deepinfra", "deepinfra", "chutes", "chutes"]


def sse_payloads(text: str) -> list[object]:
    data = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    return [d if d == "[DONE]" else json.loads(d) for d in data]


def test_stream_true_answers_sse(fake: FakeOpenRouter) -> None:
    answer = chat(fake, "chutes", stream=True)
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = sse_payloads(answer.text)
    assert events[-1] == "[DONE]"
    assert events[0]["choices"][0]["delta"]["content"] == "served by chutes"  # type: ignore[index]
    assert events[-2]["choices"][0]["finish_reason"] == "stop"  # type: ignore[index]
    fake.queue_for("chutes", Sse([chunk(MODEL, "scripted"), chunk(MODEL, None, "stop")]))
    scripted = sse_payloads(chat(fake, "chutes", stream=True).text)
    assert scripted[0]["choices"][0]["delta"]["content"] == "scripted"  # type: ignore[index]


def test_reset_forgets_everything(fake: FakeOpenRouter) -> None:
    fake.set_endpoints(MODEL, [endpoint("deepinfra")])
    fake.queue_for("deepinfra", Json({}, 500))
    httpx.get(f"{fake.origin}/api/v1/models/{MODEL}/endpoints")
    chat(fake, "deepinfra")
    fake.reset()
    assert (fake.requests, fake.pinned_slugs(), fake.endpoint_fetches(MODEL)) == ([], [], 0)
    assert httpx.get(f"{fake.origin}/api/v1/models/{MODEL}/endpoints").status_code == 404
    assert chat(fake, "deepinfra").status_code == 200
