"""Streaming chat: the upstream SSE bytes pass through untouched, as they come (SPEC §2.6)."""

from __future__ import annotations

import threading

import openai

from support.upstream import Sse, chunk


def test_openai_sdk_streams_the_upstream_answer(gateway, add_provider, upstream):
    add_provider(name="streamer", models=["s-model"])
    upstream.queue(Sse([chunk("s-model", "Hel"), chunk("s-model", "lo"), chunk("s-model", None, "stop")]))
    client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.api_token, max_retries=0)

    stream = client.chat.completions.create(model="s-model", messages=[{"role": "user", "content": "hi"}], stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream)

    assert text == "Hello"
    assert upstream.requests[-1].json["stream"] is True


def test_stream_bytes_and_fresh_headers(api, add_provider, upstream):
    add_provider(name="streamer", models=["s-model"])
    events = [chunk("s-model", "a"), chunk("s-model", None, "stop")]
    upstream.queue(Sse(events))
    body = {"model": "s-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}

    with api.stream("POST", "/chat/completions", json=body) as response:
        raw = b"".join(response.iter_raw())

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-routed-via"] == "streamer/s-model"
    assert "content-encoding" not in response.headers
    assert raw.endswith(b"data: [DONE]\n\n")
    assert raw.count(b"data: ") == 3


def test_first_chunk_arrives_before_the_upstream_finishes(api, add_provider, upstream):
    add_provider(models=["s-model"])
    release = threading.Event()
    upstream.queue(Sse([chunk("s-model", "first"), chunk("s-model", "second", "stop")], gates={1: release}))
    body = {"model": "s-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}

    try:
        with api.stream("POST", "/chat/completions", json=body) as response:
            lines = response.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            # The upstream is still holding its second event: this chunk was not buffered.
            assert '"first"' in first
            assert not release.is_set()
            release.set()
            rest = [line for line in lines if line.startswith("data: ")]
    finally:
        release.set()

    assert '"second"' in rest[0]
    assert rest[-1] == "data: [DONE]"
