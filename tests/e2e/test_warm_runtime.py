"""A warm runtime keeps serving streams. After a few hundred requests V8 has optimized the hot
code, and a stream's first JS callback into Python then runs through its deoptimizer: a
``TransformStream`` whose ``start`` was a Python proxy crashed Node 22 there ("unreachable code")
and took the whole runtime down on the first stream after 500 answers (found on the Node runtime,
since removed; the relays keep native callbacks, shell/translation.py, and workerd's V8 is
guarded here the same way)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.runtime import Gateway
from support.upstream import FakeUpstream, Json, Sse, chunk, completion

WARM_REQUESTS = 600


@pytest.fixture
def warm(tmp_path: Path, upstream: FakeUpstream) -> Iterator[httpx.Client]:
    """A runtime of its own (the shared one is warmed by whatever ran before), with a provider,
    after ``WARM_REQUESTS`` non-streamed answers."""
    gateway = Gateway.start(tmp_path)
    try:
        admin = {"authorization": f"Bearer {gateway.admin_token}"}
        httpx.post(
            f"{gateway.url}/api/admin/providers",
            headers=admin,
            json={
                "name": "warm",
                "base_url": upstream.base_url,
                "api_key": "sk-warm-key-0123456789",
                "models": ["m"],
            },
        ).raise_for_status()
        headers = {"authorization": f"Bearer {gateway.api_token}", "x-api-key": gateway.api_token}
        with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:
            upstream.answer_always(Json(completion("m")))
            for _ in range(WARM_REQUESTS):
                client.post("/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
            yield client
    finally:
        gateway.stop()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"], ids=["pass-through", "translated"])
def test_streams_are_served_after_hundreds_of_answers(warm, upstream, path):
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}], "stream": True}
    texts = []
    for _ in range(3):
        upstream.queue(Sse([chunk("m", "warm"), chunk("m", " hello", "stop")]))
        response = warm.post(path, json=body)
        texts.append((response.status_code, response.text))

    assert all(status == 200 and "warm" in text and " hello" in text for status, text in texts)
