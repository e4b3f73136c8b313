"""Rescue of a stream cut mid-answer (SPEC §16), end to end: a scripted upstream cuts a stream; with
rescue on the answer is finished by the next candidate, the whole text once, and said; a refused
seam or a second cut ends with the surface's error; with rescue off nothing changed."""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time

import httpx
import pytest

from support.runtime import logged
from support.surfaces import Anthropic, Gemini, OllamaChat, Responses, Surface
from support.upstream import Sse, chunk, delta_chunk

STREAM = {"model": "m", "messages": [{"role": "user", "content": "Tell me about the fox."}], "stream": True}
CUT = {"done": False, "reset": True}


@pytest.fixture
def pair(add_provider):
    return add_provider(name="A", priority=1, models=["m"]), add_provider(name="B", priority=2, models=["m"])


@pytest.fixture
def rescue_on(admin):
    admin.put("/settings", json={"stream_rescue": 1}).raise_for_status()
    yield
    admin.put("/settings", json={"stream_rescue": None}).raise_for_status()


def read(api, body=STREAM) -> tuple[httpx.Response, list[str], list[str]]:
    """The answer, its data events, and its comment lines."""
    with api.stream("POST", "/chat/completions", json=body) as response:
        lines = list(response.iter_lines())
    data = [line[6:] for line in lines if line.startswith("data: ")]
    comments = [line for line in lines if line.startswith(":")]
    return response, data, comments


def text_of(events: list[str]) -> str:
    out = []
    for event in events:
        if event == "[DONE]":
            continue
        parsed = json.loads(event)
        for choice in parsed.get("choices") or []:
            out.append((choice.get("delta") or {}).get("content") or "")
    return "".join(out)


def cut_after(*pieces: str) -> Sse:
    return Sse([chunk("m", piece) for piece in pieces], **CUT)


def finishing(*pieces: str) -> Sse:
    return Sse([*(chunk("m", piece) for piece in pieces), chunk("m", None, "stop")])


def test_rescue_off_a_cut_ends_with_the_stream_error_as_before(api, pair, upstream):
    upstream.queue(cut_after("The quick brown", " fox"))

    _response, events, comments = read(api)

    assert text_of(events[:-1]) == "The quick brown fox"
    assert json.loads(events[-1])["error"]["code"] == "stream_interrupted"
    assert comments == []
    assert len(upstream.requests) == 1


def test_a_cut_stream_is_finished_by_the_next_provider_and_said(gateway, api, admin, pair, upstream, rescue_on):
    upstream.queue(cut_after("The quick brown", " fox"), finishing(" jumps over", " the lazy dog."))

    response, events, comments = read(api)

    assert response.headers["x-routed-via"] == "A/m"
    assert text_of(events) == "The quick brown fox jumps over the lazy dog."
    assert events[-1] == "[DONE]"
    assert not any('"error"' in e for e in events)
    assert ": keep-alive" in comments
    rescued = [json.loads(e) for e in events[2:-1]]
    assert rescued and all(c["x_rescued_from"] == "A/m" for c in rescued)
    assert rescued[-1]["choices"][0]["finish_reason"] == "stop"
    # Re-ask: the partial as an assistant turn, then a user turn quoting its last words.
    sent = upstream.requests[-1].json
    assert sent["messages"][:1] == STREAM["messages"]
    assert sent["messages"][1] == {"role": "assistant", "content": "The quick brown fox"}
    assert sent["messages"][2]["role"] == "user"
    assert '"The quick brown fox"' in sent["messages"][2]["content"]
    assert all(m["role"] != "system" for m in sent["messages"])
    request_id = response.headers["x-request-id"]
    status = admin.get("/status").json()["rescues"][0]
    assert (
        status["request_id"],
        status["cut"],
        status["fault"],
        status["outcome"],
        status["by"],
        status["method"],
    ) == (request_id, "A/m", "cut", "rescued", "B/m", "re-ask")
    assert logged(gateway, f"stream rescued: cut (via A/m, request {request_id}) by B/m (re-ask)")


def test_a_repeated_opening_is_trimmed_exactly(api, pair, upstream, rescue_on):
    upstream.queue(cut_after("The quick brown", " fox"), finishing("brown fox jumps."))

    _, events, _ = read(api)

    assert text_of(events) == "The quick brown fox jumps."


def test_a_platform_that_documents_prefix_gets_the_partial_as_a_prefix(add_provider, api, upstream, rescue_on):
    add_provider(name="A", priority=1, models=["m"])
    add_provider(name="B", priority=2, models=["m"], platform="mistral")
    # Mistral's prefix mode answers with the prefix and its continuation: the repeat is trimmed.
    upstream.queue(cut_after("The quick brown", " fox"), finishing("The quick brown fox", " jumps."))

    _, events, _ = read(api)

    assert text_of(events) == "The quick brown fox jumps."
    messages = upstream.requests[-1].json["messages"]
    assert messages[-1] == {"role": "assistant", "content": "The quick brown fox", "prefix": True}
    assert len(messages) == 2


def test_an_ignored_prefix_that_restarts_the_answer_ends_with_the_error(
    gateway, add_provider, admin, api, upstream, rescue_on
):
    add_provider(name="A", priority=1, models=["m"])
    add_provider(name="B", priority=2, models=["m"], platform="mistral")
    upstream.queue(cut_after("The quick brown fox", " jumps"), finishing("The quick brown dog", " sleeps."))

    _, events, _ = read(api)

    assert text_of(events[:-1]) == "The quick brown fox jumps"  # never a doubled answer
    error = json.loads(events[-1])["error"]
    assert error["code"] == "stream_interrupted"
    assert "B/m" in error["message"]
    assert "[DONE]" not in events
    status = admin.get("/status").json()["rescues"][0]
    assert (status["outcome"], status["by"]) == ("failed", "B/m")


def test_a_second_cut_during_the_rescue_ends_with_the_error(api, admin, pair, upstream, rescue_on):
    upstream.queue(cut_after("The quick brown", " fox"), cut_after(" jumps over"))

    _, events, _ = read(api)

    assert text_of(events[:-1]) == "The quick brown fox jumps over"
    assert json.loads(events[-1])["error"]["type"] == "stream_error"
    assert "[DONE]" not in events
    assert admin.get("/status").json()["rescues"][0]["outcome"] == "failed"


def test_no_rescue_once_a_tool_call_started(api, admin, pair, upstream, rescue_on):
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"pa'}}
    upstream.queue(Sse([chunk("m", "Reading."), delta_chunk("m", {"tool_calls": [call]})], **CUT))

    _, events, _ = read(api)

    assert json.loads(events[-1])["error"]["code"] == "stream_interrupted"
    assert len(upstream.requests) == 1
    status = admin.get("/status").json()["rescues"][0]
    assert (status["outcome"], status["reason"]) == ("refused", "a tool call had started")


def test_no_rescue_after_a_length_stop(api, pair, upstream, rescue_on):
    upstream.queue(Sse([chunk("m", "cut short"), chunk("m", None, "length")], done=False))

    _, events, _ = read(api)

    assert json.loads(events[-1])["choices"][0]["finish_reason"] == "length"
    assert len(upstream.requests) == 1


def test_json_mode_is_never_rescued(api, pair, upstream, rescue_on):
    upstream.queue(cut_after('{"a": '))

    _, events, _ = read(api, {**STREAM, "response_format": {"type": "json_object"}})

    assert json.loads(events[-1])["error"]["code"] == "stream_interrupted"
    assert len(upstream.requests) == 1


def test_an_in_band_provider_error_is_rescued(api, pair, upstream, rescue_on):
    upstream.queue(
        Sse([chunk("m", "The quick brown"), {"error": {"message": "overloaded", "code": 502}}], done=False),
        finishing(" fox."),
    )

    _, events, _ = read(api)

    assert text_of(events) == "The quick brown fox."
    assert not any('"error"' in e for e in events)
    assert events[-1] == "[DONE]"


def test_a_client_may_turn_rescue_on_for_itself(admin, gateway, pair, upstream):
    made = admin.post("/clients", json={"name": "agent", "stream_rescue": True})
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    upstream.queue(cut_after("The quick brown"), finishing(" fox."))

    with httpx.Client(base_url=f"{gateway.url}/v1", headers={"authorization": f"Bearer {token}"}, timeout=30) as api:
        _, events, _ = read(api)

    assert text_of(events) == "The quick brown fox."


def test_a_stall_is_rescued(api, admin, pair, upstream, rescue_on):
    admin.put("/settings", json={"stream_stall_ms": 300}).raise_for_status()
    never = threading.Event()
    upstream.queue(Sse([chunk("m", "The quick brown"), chunk("m", "never sent")], gates={1: never}), finishing(" fox."))

    _, events, _ = read(api)

    assert text_of(events) == "The quick brown fox."
    admin.put("/settings", json={"stream_stall_ms": None}).raise_for_status()


def test_the_anthropic_surface_is_rescued(gateway, admin, pair, upstream, rescue_on):
    upstream.queue(cut_after("The quick brown"), finishing(" fox."))
    body = {"model": "m", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "fox?"}]}

    with (
        httpx.Client(base_url=gateway.url, headers={"x-api-key": gateway.api_token}, timeout=30) as client,
        client.stream("POST", "/v1/messages", json=body) as response,
    ):
        lines = list(response.iter_lines())

    deltas = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    text = "".join(d["delta"].get("text", "") for d in deltas if d["type"] == "content_block_delta")
    assert text == "The quick brown fox."
    assert deltas[-1]["type"] == "message_stop"
    assert not any(d["type"] == "error" for d in deltas)
    assert "event: ping" in lines


# --- the other surfaces: Responses, Gemini (alt=sse), Ollama (NDJSON) ----------------------------
#
# Each asks as its own clients do (support.surfaces, as in test_surfaces.py) and reads the stream
# with that surface's reader: the whole text once, the surface's normal end, no error end, no breach
# of the protocol. The SSE surfaces carry the keep-alive comment sent while the rescue was asked;
# NDJSON has no comment, so Ollama's stream holds no keep-alive byte, and every line is JSON.


def _rescued_through(gateway, surface: Surface) -> tuple[bytes, dict[str, str]]:
    """Ask ``surface`` for a streamed answer that A cuts and B finishes; the raw stream, the headers."""
    with (
        httpx.Client(base_url=gateway.url, timeout=30) as client,
        client.stream(
            "POST",
            surface.path("m", True),
            json=surface.body("m", True, text="Tell me about the fox."),
            headers=surface.headers(gateway.api_token),
        ) as response,
    ):
        raw = response.read()
    assert response.status_code == 200, raw
    assert response.headers["content-type"].startswith(surface.stream_media_type)
    return raw, dict(response.headers)


def _without_comments(raw: bytes) -> tuple[bytes, list[str]]:
    """An SSE body without its comment-only blocks, and those comments."""
    kept, comments = [], []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in block.split("\n") if line]
        if lines and all(line.startswith(":") for line in lines):
            comments += lines
        elif lines:
            kept.append(block)
    return "".join(f"{block}\n\n" for block in kept).encode(), comments


# @google/genai's SSE loop (bundled in Gemini CLI 0.61.0, node_modules/@google/gemini-cli/bundle/
# chunk-5FZXKDXH.js, responseLineRE): an event is matched only at the very start of the buffer.
GOOGLE_SDK_EVENT = re.compile(rb"^\s*data: (.*)(?:\n\n|\r\r|\r\n\r\n)")


def _as_google_sdk_reads(raw: bytes) -> tuple[list, bytes]:
    """The chunks @google/genai yields from ``raw``, and what it leaves unread."""
    chunks = []
    while match := GOOGLE_SDK_EVENT.match(raw):
        chunks.append(json.loads(match[1]))
        raw = raw[match.end() :]
    return chunks, raw


@pytest.mark.parametrize("surface", [Responses(), Gemini()], ids=lambda s: s.id)
def test_an_sse_surface_is_rescued(gateway, admin, pair, upstream, rescue_on, surface):
    upstream.queue(cut_after("The quick brown", " fox"), finishing(" jumps over", " the lazy dog."))

    raw, headers = _rescued_through(gateway, surface)

    events, comments = _without_comments(raw)
    reading = surface.read_stream(events)
    assert reading.text == "The quick brown fox jumps over the lazy dog.", raw
    assert reading.finished and reading.error is None, raw
    assert reading.problems == [], (reading.problems, raw)
    if isinstance(surface, Gemini):
        assert comments == []  # Google's SDK would stop at one (below): no keep-alive on Gemini
    else:
        assert comments  # kept alive while the rescue was asked
    if isinstance(surface, Gemini):
        # Google's own SDK (@google/genai, which Gemini CLI bundles) reads a stream as a run of
        # "data: " events from the start of its buffer: anything else there stops it for good.
        chunks, unread = _as_google_sdk_reads(raw)
        assert unread == b"", f"@google/genai stops reading at {unread[:60]!r}"
        assert chunks == reading.events
    assert b"x_rescued_from" not in raw  # an OpenAI chunk's mark, not this surface's
    assert len(upstream.requests) == 2
    assert upstream.requests[1].json["messages"][1] == {"role": "assistant", "content": "The quick brown fox"}
    status = admin.get("/status").json()["rescues"][0]
    assert (status["request_id"], status["outcome"], status["by"]) == (headers["x-request-id"], "rescued", "B/m")


def test_the_ollama_surface_is_rescued_with_no_keep_alive_byte(gateway, admin, pair, upstream, rescue_on):
    surface = OllamaChat()
    upstream.queue(cut_after("The quick brown", " fox"), finishing(" jumps over", " the lazy dog."))

    raw, headers = _rescued_through(gateway, surface)

    assert b"keep-alive" not in raw and not raw.startswith(b":") and b"\n:" not in raw, raw
    lines = raw.decode().split("\n")
    assert lines[-1] == "" and all(lines[:-1]), raw  # newline-terminated lines, none blank
    parsed = [json.loads(line) for line in lines[:-1]]  # every line is JSON
    assert all(isinstance(line, dict) and "error" not in line for line in parsed), raw
    reading = surface.read_stream(raw)
    assert reading.text == "The quick brown fox jumps over the lazy dog.", raw
    assert reading.finished and reading.error is None and reading.stop == "stop", raw
    assert reading.problems == [], (reading.problems, raw)
    assert parsed[-1]["done"] is True and [line["done"] for line in parsed].count(True) == 1
    status = admin.get("/status").json()["rescues"][0]
    assert (status["request_id"], status["outcome"], status["by"]) == (headers["x-request-id"], "rescued", "B/m")


# --- the edges a review found ------------------------------------------------------------------


class HalfEventUpstream:
    """An upstream on a raw socket that sends one whole event and half of the next, then resets
    the connection: the cut falls inside an event."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self._socket.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        while len(body) < length:
            body += conn.recv(65536)
        whole = b"data: " + json.dumps(chunk("m", "The quick brown fox")).encode() + b"\n\n"
        half = (b"data: " + json.dumps(chunk("m", " jumps over the lazy dog")).encode())[:60]
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for part in (whole, half):
            conn.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
        conn.close()
        self._socket.close()


def test_a_cut_inside_an_event_leaves_no_broken_json_before_the_rescue(api, add_provider, upstream, rescue_on):
    add_provider(name="A", priority=1, models=["m"], base_url=HalfEventUpstream().base_url)
    add_provider(name="B", priority=2, models=["m"])
    upstream.queue(finishing(" jumps."))

    _, events, _ = read(api)

    assert text_of(events) == "The quick brown fox jumps."  # text_of parses every event as JSON
    assert events[-1] == "[DONE]"


def test_no_rescue_once_a_legacy_function_call_started(api, admin, pair, upstream, rescue_on):
    functions = [{"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    call = {"name": "weather", "arguments": ""}
    upstream.queue(
        Sse(
            [
                delta_chunk("m", {"role": "assistant", "content": None, "function_call": call}),
                delta_chunk("m", {"function_call": {"arguments": '{"ci'}}),
            ],
            **CUT,
        )
    )

    _, events, _ = read(api, {**STREAM, "functions": functions})

    assert json.loads(events[-1])["error"]["code"] == "stream_interrupted"
    assert len(upstream.requests) == 1
    assert admin.get("/status").json()["rescues"][0]["reason"] == "a tool call had started"


RESCUER_KEY = "sk-rescuer-key-0123456789abcdef"


def failing_rescue(upstream) -> None:
    """A is cut; B's rescue sends a word, then an error that echoes B's key."""
    upstream.queue(
        cut_after("The quick brown", " fox"),
        Sse([chunk("m", " jumps"), {"error": {"message": f"invalid api key {RESCUER_KEY}", "code": 401}}], done=False),
    )


def test_a_failed_rescue_ends_chat_with_the_error_and_never_shows_the_rescuers_key(
    gateway, api, add_provider, upstream, rescue_on
):
    add_provider(name="A", priority=1, models=["m"])
    add_provider(name="B", priority=2, models=["m"], api_key=RESCUER_KEY)
    failing_rescue(upstream)

    response, events, _ = read(api)

    assert text_of(events[:-1]) == "The quick brown fox jumps"
    assert json.loads(events[-1])["error"]["type"] == "stream_error"
    assert "[DONE]" not in events and RESCUER_KEY not in "".join(events)
    assert logged(gateway, f"stream failed: cut (via A/m, request {response.headers['x-request-id']})")
    assert RESCUER_KEY not in gateway.log()


@pytest.mark.parametrize("surface", [Anthropic(), Responses(), Gemini(), OllamaChat()], ids=lambda s: s.id)
def test_a_failed_rescue_ends_every_surface_with_its_error(gateway, add_provider, upstream, rescue_on, surface):
    add_provider(name="A", priority=1, models=["m"])
    add_provider(name="B", priority=2, models=["m"], api_key=RESCUER_KEY)
    failing_rescue(upstream)

    raw, _ = _rescued_through(gateway, surface)

    assert RESCUER_KEY.encode() not in raw
    reading = surface.read_stream(raw if isinstance(surface, OllamaChat) else _without_comments(raw)[0])
    assert reading.text == "The quick brown fox jumps"
    assert not reading.finished and reading.error is not None, raw


def test_the_usage_chunk_is_said_once_and_sums_both_attempts(api, pair, upstream, rescue_on):
    usage = {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
    }
    upstream.queue(
        Sse([chunk("m", "The quick brown"), {**usage, "usage": {"prompt_tokens": 90, "completion_tokens": 3}}], **CUT),
        Sse([chunk("m", " fox."), chunk("m", None, "stop"), usage]),
    )

    _, events, _ = read(api, {**STREAM, "stream_options": {"include_usage": True}})

    usages = [parsed["usage"] for e in events if e != "[DONE]" and (parsed := json.loads(e)).get("usage")]
    assert usages[-1] == {"prompt_tokens": 190, "completion_tokens": 10, "total_tokens": 200}
    assert len([u for u in usages if u["prompt_tokens"] == 190]) == 1


def test_a_rescue_is_counted_in_the_usage_with_the_rescues_failed_attempts(
    gateway, api, admin, add_provider, upstream, rescue_on
):
    # A fresh hour on the Worker's clock: this test's buckets hold only its own traffic.
    hour_ms = 3_600_000
    now = gateway.advance_clock(hour_ms - gateway.now_ms() % hour_ms + 1_000)
    add_provider(name="A", priority=1, models=["m"])
    add_provider(name="B", priority=2, models=["m"])
    add_provider(name="C", priority=3, models=["m"])
    # A is cut; the rescue's first candidate (B) fails before its first event, C finishes.
    upstream.queue(cut_after("The quick brown"), Sse([], done=False), finishing(" fox."))

    _, events, _ = read(api)

    assert text_of(events) == "The quick brown fox."
    # The request is counted when its relay ends, which may land after the caller read the end.
    deadline = time.monotonic() + 10
    while True:
        report = admin.get("/usage", params={"by": "provider", "from": now - now % hour_ms}).json()
        counts = {
            g["group"]: (g["requests"], g["successes"], g["streams_cut"], g["rescues"], g["errors"])
            for g in report["groups"]
        }
        if "A" in counts or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # polling the usage report for the request's count
    assert counts == {"A": (1, 1, 1, 1, {}), "B": (0, 0, 0, 0, {"invalid_stream": 1})}
