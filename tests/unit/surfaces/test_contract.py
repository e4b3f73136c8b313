"""``gateway.surfaces.contract``: what every stream translator shares; here, the keep-alive sent
while a rescue request is in flight (SPEC §16). An SSE stream gets a comment (Anthropic its own
``ping``), which its readers skip; a stream that is not SSE gets nothing, since any byte would
break its parse, and neither does Gemini's SSE, whose SDK stops at anything but a ``data:`` event.
"""

from __future__ import annotations

import json

import pytest

from gateway.surfaces.anthropic_stream import AnthropicStream
from gateway.surfaces.contract import DecodedStream
from gateway.surfaces.gemini_stream import GeminiStream
from gateway.surfaces.ollama_stream import OllamaStream
from gateway.surfaces.responses_stream import ResponsesStream
from gateway.surfaces.whole_events import WholeEvents

TRANSLATORS = {
    "anthropic": lambda: AnthropicStream("m"),
    "responses": lambda: ResponsesStream("m"),
    "gemini-sse": lambda: GeminiStream("m", sse=True),
    "gemini-json": lambda: GeminiStream("m", sse=False),
    "ollama-chat": lambda: OllamaStream("m", "2026-01-01T00:00:00Z", "chat"),
    "ollama-generate": lambda: OllamaStream("m", "2026-01-01T00:00:00Z", "generate"),
    "chat-pass-through": WholeEvents,
}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("responses", b": keep-alive\n\n", id="responses"),
        pytest.param("chat-pass-through", b": keep-alive\n\n", id="chat"),
        # Google's SDK stops at anything but a ``data:`` event, a comment included.
        pytest.param("gemini-sse", b"", id="gemini-sse"),
        pytest.param("gemini-json", b"", id="gemini-json"),
        pytest.param("ollama-chat", b"", id="ollama-chat"),
        pytest.param("ollama-generate", b"", id="ollama-generate"),
    ],
)
def test_the_keep_alive_suits_the_streams_format(name, expected):
    assert TRANSLATORS[name]().keep_alive() == expected


def test_anthropics_keep_alive_is_its_own_ping():
    ping = AnthropicStream("m").keep_alive()
    event, data = ping.decode().removesuffix("\n\n").split("\n")

    assert event == "event: ping"
    assert json.loads(data.removeprefix("data: ")) == {"type": "ping"}


@pytest.mark.parametrize("name", TRANSLATORS)
def test_every_translator_has_the_relays_calls(name):
    translator = TRANSLATORS[name]()

    for member in ("media_type", "complete", "done", "usage", "feed", "end", "fail", "keep_alive"):
        assert hasattr(translator, member), member
    translator.feed(b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n')
    assert translator.fail("cut", code="stream_stalled")  # the relay names the code for every surface
    keep_alive = translator.keep_alive()
    if translator.media_type != "text/event-stream":
        assert keep_alive == b""  # any byte would break an NDJSON or JSON-array parse
    elif keep_alive:
        assert keep_alive.endswith(b"\n\n") and b"\n\n" not in keep_alive[:-2]  # one whole event


def test_a_decoded_stream_keeps_alive_by_its_media_type():
    class Sse(DecodedStream):
        media_type = "text/event-stream"

    class Ndjson(DecodedStream):
        media_type = "application/x-ndjson"

    assert Sse().keep_alive() == b": keep-alive\n\n"
    assert Ndjson().keep_alive() == b""
