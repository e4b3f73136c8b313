"""Anthropic Messages surface (SPEC §12.2): request → chat body, answer, stream translator, errors.

The streams below have the shape OpenAI-compatible upstreams send (OpenAI's own chunk fields, a
role-only first chunk, ``usage`` in a last chunk with empty ``choices`` after ``finish_reason``).
Output is checked against the Anthropic protocol rules (one open block, contiguous indexes, delta
kind = block kind) and, when the ``anthropic`` SDK is importable, read back by its own client and
``MessageStream`` accumulator with strict response validation.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.errors import InvalidRequestError
from gateway.surfaces.anthropic import AnthropicStream, count_tokens, from_chat, render_error, to_chat
from gateway.surfaces.chat import Answer, ToolCall, read_answer
from gateway.surfaces.contract import compact, estimate_tokens

# -- upstream streams ------------------------------------------------------------------------

ID = "chatcmpl-B9xK2mQ7"


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    body: dict[str, Any] = {
        "id": ID,
        "object": "chat.completion.chunk",
        "created": 1765000000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }
    body.update(extra)
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


def _usage(prompt: int = 31, completion: int = 12) -> bytes:
    return _chunk(usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})


def _call(index: int, call_id: str | None = None, name: str | None = None, arguments: str = "") -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return call


DONE = b"data: [DONE]\n\n"
ROLE = _chunk({"role": "assistant", "content": "", "refusal": None})

STREAMS: dict[str, bytes] = {
    "text": b"".join(
        [
            ROLE,
            _chunk({"content": "Hel"}),
            _chunk({"content": "lo, "}),
            _chunk({"content": 'wörld ✓\n"q"'}),
            _chunk({}, "stop"),
            _usage(),
            DONE,
        ]
    ),
    "reasoning_text": b"".join(
        [
            _chunk({"role": "assistant", "content": None, "reasoning_content": "Let me "}),
            _chunk({"reasoning_content": "think."}),
            _chunk({"content": ""}),
            _chunk({"content": "42"}),
            _chunk({}, "stop"),
            _usage(),
            DONE,
        ]
    ),
    "one_tool": b"".join(
        [ROLE, _chunk({"content": "Reading it."})]
        + [_chunk({"tool_calls": [_call(0, "call_Qa1", "Read", "")]})]
        + [_chunk({"tool_calls": [_call(0, arguments=a)]}) for a in ['{"file', '_path": "/tmp/', 'a.txt"}']]
        + [_chunk({}, "tool_calls"), _usage(), DONE]
    ),
    "parallel_tools": b"".join(
        [ROLE]
        + [_chunk({"tool_calls": [_call(0, "call_A", "Read", "")]})]
        + [_chunk({"tool_calls": [_call(0, arguments=a)]}) for a in ['{"file_path"', ': "a.txt"}']]
        + [_chunk({"tool_calls": [_call(1, "call_B", "Glob", "")]})]
        + [_chunk({"tool_calls": [_call(1, arguments=a)]}) for a in ['{"pattern":', ' "*.py"}']]
        + [_chunk({}, "tool_calls"), _usage(), DONE]
    ),
    "interleaved_tools": b"".join(
        [
            ROLE,
            _chunk({"tool_calls": [_call(0, "call_A", "Read", ""), _call(1, "call_B", "LS", "")]}),
            _chunk({"tool_calls": [_call(0, arguments='{"file_path": '), _call(1, arguments='{"path": ')]}),
            _chunk({"tool_calls": [_call(1, arguments='"/"}'), _call(0, arguments='"x"}')]}),
            _chunk({}, "tool_calls"),
            _usage(),
            DONE,
        ]
    ),
    "whole_calls_no_args": b"".join(
        [
            ROLE,
            _chunk({"tool_calls": [_call(0, "call_A", "Now", ""), _call(1, "call_B", "Now", "{}")]}),
            _chunk({}, "stop"),
            _usage(),
            DONE,
        ]
    ),
    "text_after_tool_and_reasoning": b"".join(
        [
            ROLE,
            _chunk({"tool_calls": [_call(0, "call_A", "LS", '{"path": "."}')]}),
            _chunk({"content": "Listed."}),
            _chunk({"reasoning": "then"}),
            _chunk({"content": "Done."}),
            _chunk({}, "stop"),
            _usage(),
            DONE,
        ]
    ),
    "no_done_crlf": (ROLE + _chunk({"content": "ok"}) + _chunk({}, "stop")).replace(b"\n", b"\r\n"),
}

# What each stream's answer reads as: (block kinds with their content, stop_reason).
FINAL: dict[str, tuple[list[tuple[str, Any]], str]] = {
    "text": ([("text", 'Hello, wörld ✓\n"q"')], "end_turn"),
    "reasoning_text": ([("thinking", "Let me think."), ("text", "42")], "end_turn"),
    "one_tool": ([("text", "Reading it."), ("tool_use", {"file_path": "/tmp/a.txt"})], "tool_use"),
    "parallel_tools": ([("tool_use", {"file_path": "a.txt"}), ("tool_use", {"pattern": "*.py"})], "tool_use"),
    "interleaved_tools": ([("tool_use", {"file_path": "x"}), ("tool_use", {"path": "/"})], "tool_use"),
    "whole_calls_no_args": ([("tool_use", {}), ("tool_use", {})], "tool_use"),
    "text_after_tool_and_reasoning": (
        [("tool_use", {"path": "."}), ("text", "Listed."), ("thinking", "then"), ("text", "Done.")],
        "tool_use",
    ),
    "no_done_crlf": ([("text", "ok")], "end_turn"),
}


def _relay(reads: list[bytes]) -> tuple[bytes, AnthropicStream]:
    """Drive a translator as the relay does: a feed per read, a blank line at close, then end or fail."""
    stream = AnthropicStream("served-model")
    out = b"".join(stream.feed(read) for read in reads) + stream.feed(b"\n\n")
    out += stream.end() if stream.complete else stream.fail("cut")
    return out, stream


def _events(out: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse our SSE strictly: each event is exactly ``event: X\\ndata: JSON\\n\\n`` with type X."""
    text = out.decode()
    assert text.endswith("\n\n")
    events = []
    for raw in text[:-2].split("\n\n"):
        head, data = raw.split("\n")
        assert head.startswith("event: ") and data.startswith("data: ")
        body = json.loads(data[6:])
        assert body["type"] == head[7:]
        events.append((head[7:], body))
    return events


def _check(out: bytes) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[str]]:
    """Apply the protocol rules; return the blocks built, the message_delta and the event names."""
    events = _events(out)
    names = [name for name, _ in events]
    assert names[0] in ("message_start", "error")
    blocks: list[dict[str, Any]] = []
    open_index = None
    ending = None
    for name, body in events[1:]:
        assert ending is None or name == "message_stop"
        if name == "content_block_start":
            assert open_index is None and body["index"] == len(blocks)
            blocks.append(dict(body["content_block"], partial=""))
            open_index = body["index"]
        elif name == "content_block_delta":
            assert body["index"] == open_index
            block, delta = blocks[open_index], body["delta"]
            kind = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "tool_use"}[delta["type"]]
            assert block["type"] == kind
            field = {"text": "text", "thinking": "thinking", "tool_use": "partial"}[kind]
            block[field] += delta.get("text", delta.get("thinking", delta.get("partial_json")))
        elif name == "content_block_stop":
            assert body["index"] == open_index
            open_index = None
        elif name == "message_delta":
            assert open_index is None
            ending = body
        elif name == "error":
            assert body["error"]["type"] == "api_error" and body["error"]["message"]
            assert events[-1][0] == "error"
        else:
            assert name == "message_stop" and ending is not None
    return blocks, ending, names


def _summary(blocks: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [
        (b["type"], json.loads(b["partial"] or "{}") if b["type"] == "tool_use" else b.get("text", b.get("thinking")))
        for b in blocks
    ]


# -- streams: whole, every split, one byte per read -----------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_stream_translates_to_valid_anthropic_events(name: str) -> None:
    out, stream = _relay([STREAMS[name]])
    blocks, ending, names = _check(out)

    assert names[-2:] == ["message_delta", "message_stop"]
    assert _summary(blocks) == FINAL[name][0]
    assert ending is not None and ending["delta"] == {"stop_reason": FINAL[name][1], "stop_sequence": None}
    assert '"id":"msg_chatcmpl-B9xK2mQ7"' in out.decode() and '"model":"served-model"' in out.decode()
    assert stream.feed(b"data: {}\n\n") == stream.end() == stream.fail("late") == b""


@pytest.mark.parametrize("name", STREAMS)
def test_every_split_gives_the_same_output(name: str) -> None:
    data = STREAMS[name]
    whole, _ = _relay([data])

    for cut in range(1, len(data)):
        assert _relay([data[:cut], data[cut:]])[0] == whole, cut
    assert _relay([data[i : i + 1] for i in range(len(data))])[0] == whole


def test_a_fragment_of_a_call_closed_by_text_is_dropped() -> None:
    data = ROLE + _chunk({"tool_calls": [_call(0, "c", "f", '{"a":')]}) + _chunk({"content": "x"})
    data += _chunk({"tool_calls": [_call(0, arguments="1}")]}) + _chunk({}, "tool_calls")
    blocks, _, _ = _check(_relay([data])[0])

    assert [(b["type"], b.get("partial") or b.get("text")) for b in blocks] == [("tool_use", '{"a":'), ("text", "x")]


def test_a_waiting_call_opens_at_finish_when_the_open_one_never_completes() -> None:
    data = ROLE + _chunk({"tool_calls": [_call(0, "a", "f", '{"x": [1, '), _call(1, "b", "g", '{"y": 2}')]})
    blocks, _, _ = _check(_relay([data + _chunk({}, "tool_calls")])[0])
    assert [b["partial"] for b in blocks] == ['{"x": [1, ', '{"y": 2}']

    blocks, _, _ = _check(_relay([data + DONE])[0])  # [DONE] without finish_reason: opened at end()
    assert [b["partial"] for b in blocks] == ['{"x": [1, ', '{"y": 2}']


def test_usage_after_finish_lands_in_message_delta() -> None:
    out, _ = _relay([STREAMS["text"]])
    _, ending, _ = _check(out)

    assert ending is not None and ending["usage"] == {
        "input_tokens": 31,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 12,
    }
    start = json.loads(out.decode().split("\n\n")[0].split("data: ", 1)[1])
    assert start["message"]["usage"]["input_tokens"] == 0


def test_no_usage_reports_zero_tokens() -> None:
    _, ending, _ = _check(_relay([STREAMS["no_done_crlf"]])[0])

    assert ending is not None and ending["usage"] == {
        "input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 0,
    }


def test_cached_prompt_tokens_are_counted_apart_as_anthropic_does() -> None:
    """Anthropic's input_tokens leaves out what was read from a cache; cache_read_input_tokens
    holds it (the upstream's prompt_tokens_details.cached_tokens)."""
    usage = {"prompt_tokens": 1200, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 1024}}
    data = (
        ROLE
        + _chunk({"content": "hi"})
        + _chunk({}, "stop")
        + b"data: "
        + json.dumps({"id": "chatcmpl-9", "choices": [], "usage": usage}).encode()
        + b"\n\n"
        + DONE
    )
    _, ending, _ = _check(_relay([data])[0])
    answer = Answer("chatcmpl-9", "up", "hi", "", (), "stop", 1200, 7, 1024)

    expected = {
        "input_tokens": 176,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1024,
        "output_tokens": 7,
    }
    assert ending is not None and ending["usage"] == expected
    assert from_chat(answer, "served")["usage"] == expected


@pytest.mark.parametrize(
    ("finish", "calls", "reason"),
    [
        ("stop", False, "end_turn"),
        ("length", False, "max_tokens"),
        ("tool_calls", True, "tool_use"),
        ("function_call", True, "tool_use"),
        ("content_filter", False, "refusal"),
        ("stop", True, "tool_use"),  # providers that say "stop" after a tool call
        ("length", True, "max_tokens"),
        ("something_new", False, "end_turn"),
    ],
)
def test_stream_stop_reasons(finish: str, calls: bool, reason: str) -> None:
    body = _chunk({"tool_calls": [_call(0, "c", "f", "{}")]} if calls else {"content": "x"})
    _, ending, _ = _check(_relay([ROLE + body + _chunk({}, finish)])[0])

    assert ending is not None and ending["delta"]["stop_reason"] == reason


def test_empty_text_opens_no_block() -> None:
    data = ROLE + _chunk({"content": ""}) + _chunk({"content": None}) + _chunk({}, "stop") + DONE
    out, _ = _relay([data])
    blocks, _, names = _check(out)

    assert blocks == [] and names == ["message_start", "message_delta", "message_stop"]


def test_done_without_any_chunk_still_ends_properly() -> None:
    blocks, ending, names = _check(_relay([DONE])[0])

    assert blocks == [] and names == ["message_start", "message_delta", "message_stop"]
    assert ending is not None and ending["delta"]["stop_reason"] == "end_turn"


def test_a_last_event_without_its_blank_line_is_read_at_end() -> None:
    stream = AnthropicStream("m")
    out = stream.feed(ROLE + _chunk({"content": "a"}) + _chunk({}, "stop").rstrip(b"\n"))
    out += stream.end()

    assert _check(out)[1] is not None


def test_prologue_waits_for_the_first_chunk() -> None:
    stream = AnthropicStream("m")

    assert stream.feed(b": keep-alive\n\n") == b"" and stream.feed(ROLE[:20]) == b""
    assert stream.feed(ROLE[20:]).startswith(b"event: message_start\n")


# -- failures: cut, error, upstream error event at every point ------------------------------


@pytest.mark.parametrize("name", ["text", "reasoning_text", "one_tool", "interleaved_tools"])
def test_a_cut_at_any_byte_ends_with_the_error_event(name: str) -> None:
    data = STREAMS[name]
    finish_line_end = data.index(b"\n", data.index(b'"finish_reason": "'))
    for cut in range(len(data)):
        failed = AnthropicStream("m")
        out = failed.feed(data[:cut]) + failed.fail("upstream stream failed")
        _, _, names = _check(out)
        assert names[-1] == "error" and "message_stop" not in names and "message_delta" not in names
        assert failed.end() == b""

        closed, _ = _relay([data[:cut]])  # the upstream closed here: judged by `complete`
        _, _, names = _check(closed)
        assert names[-1] == ("message_stop" if cut >= finish_line_end else "error"), cut


@pytest.mark.parametrize("name", ["text", "one_tool", "parallel_tools"])
def test_an_upstream_error_event_at_any_point_ends_the_stream(name: str) -> None:
    events = STREAMS[name].split(b"\n\n")[:-1]
    error = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
    for at in range(1, len(events)):
        data = b"\n\n".join(events[:at]) + b"\n\n" + error + b"\n\n".join(events[at:]) + b"\n\n"
        stream = AnthropicStream("m")
        out = stream.feed(data)
        tail = stream.end() + stream.fail("again") + stream.feed(b"data: [DONE]\n\n")
        _, _, names = _check(out)

        assert tail == b""
        assert names[-1] == "error" and "message_stop" not in names
        assert out.endswith(b'{"type":"error","error":{"type":"api_error","message":"overloaded"}}\n\n')


def test_fail_before_anything_is_only_the_error_event() -> None:
    out = AnthropicStream("m").fail('stall: no data for 30s "x"')

    assert out == (
        b'event: error\ndata: {"type":"error","error":{"type":"api_error",'
        b'"message":"stall: no data for 30s \\"x\\""}}\n\n'
    )


# -- the real SDK reads it back ------------------------------------------------------------


def _http() -> Any:
    """The HTTP package the SDK is built on (anthropic 2.x uses ``httpx2``, older ones ``httpx``)."""
    pytest.importorskip("anthropic")
    try:
        import httpx2
    except ImportError:
        return pytest.importorskip("httpx")
    return httpx2


def _client(handler: Any) -> Any:
    anthropic = pytest.importorskip("anthropic")
    httpx = _http()
    return anthropic.Anthropic(
        api_key="k",
        base_url="http://gateway.test",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        _strict_response_validation=True,
        max_retries=0,
    )


def _sse_client(body: bytes) -> Any:
    httpx = _http()
    return _client(lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body))


@pytest.mark.parametrize("name", STREAMS)
def test_the_sdk_message_stream_builds_the_final_message(name: str) -> None:
    client = _sse_client(_relay([STREAMS[name]])[0])
    with client.messages.stream(model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as s:
        message = s.get_final_message()

    kinds = [
        (b.type, b.input if b.type == "tool_use" else getattr(b, "text", getattr(b, "thinking", None)))
        for b in message.content
    ]
    assert kinds == FINAL[name][0]
    assert message.stop_reason == FINAL[name][1] and message.model == "served-model"
    assert message.usage.output_tokens == (0 if name == "no_done_crlf" else 12)


@pytest.mark.parametrize("cut", [0, 200, 700, 1500])
def test_the_sdk_raises_on_a_failed_stream(cut: int) -> None:
    anthropic = pytest.importorskip("anthropic")
    stream = AnthropicStream("m")
    client = _sse_client(stream.feed(STREAMS["one_tool"][:cut]) + stream.fail("the upstream stream failed"))

    with pytest.raises(anthropic.APIStatusError, match="the upstream stream failed"):  # noqa: SIM117 - raised on leaving the stream
        with client.messages.stream(model="x", max_tokens=9, messages=[{"role": "user", "content": "hi"}]) as s:
            s.get_final_message()


# -- non-streamed answers ------------------------------------------------------------------


def _answer(**kw: Any) -> Answer:
    base: dict[str, Any] = dict(
        id="chatcmpl-9",
        model="up",
        text="",
        reasoning="",
        tool_calls=(),
        finish_reason="stop",
        input_tokens=3,
        output_tokens=5,
    )
    return Answer(**(base | kw))


@pytest.mark.parametrize(
    ("answer", "content", "reason"),
    [
        (_answer(text="Hi"), [{"type": "text", "text": "Hi"}], "end_turn"),
        (_answer(text=""), [], "end_turn"),
        (_answer(text="cut", finish_reason="length"), [{"type": "text", "text": "cut"}], "max_tokens"),
        (_answer(finish_reason="content_filter"), [], "refusal"),
        (
            _answer(reasoning="hmm", text="ok"),
            [{"type": "thinking", "thinking": "hmm", "signature": ""}, {"type": "text", "text": "ok"}],
            "end_turn",
        ),
        (
            _answer(tool_calls=(ToolCall("call_1", "Read", '{"file_path":"a"}'),), finish_reason="tool_calls"),
            [{"type": "tool_use", "id": "call_1", "name": "Read", "input": {"file_path": "a"}}],
            "tool_use",
        ),
        (
            _answer(
                text="Both:",
                tool_calls=(ToolCall("a", "Read", '{"p":1}'), ToolCall("b", "LS", "")),
                finish_reason="stop",
            ),
            [
                {"type": "text", "text": "Both:"},
                {"type": "tool_use", "id": "a", "name": "Read", "input": {"p": 1}},
                {"type": "tool_use", "id": "b", "name": "LS", "input": {}},
            ],
            "tool_use",
        ),
        (
            _answer(
                tool_calls=(ToolCall("a", "f", "{not json"), ToolCall("b", "g", "[1]")), finish_reason="function_call"
            ),
            [
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                {"type": "tool_use", "id": "b", "name": "g", "input": {}},
            ],
            "tool_use",
        ),
    ],
)
def test_from_chat(answer: Answer, content: list[dict[str, Any]], reason: str) -> None:
    message = from_chat(answer, "served")

    assert message == {
        "id": "msg_chatcmpl-9",
        "type": "message",
        "role": "assistant",
        "model": "served",
        "content": content,
        "stop_reason": reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 3,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 5,
        },
    }


def test_from_chat_reads_a_real_completion_and_the_sdk_accepts_it() -> None:
    completion = {
        "id": "chatcmpl-AB/12:x",
        "object": "chat.completion",
        "model": "up",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_9", "type": "function", "function": {"name": "Read", "arguments": '{"a":1}'}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
    }
    message = from_chat(read_answer(completion), "served")
    assert message["id"] == "msg_chatcmpl-AB12x"

    httpx = _http()
    client = _client(lambda request: httpx.Response(200, json=message))
    parsed = client.messages.create(model="x", max_tokens=9, messages=[{"role": "user", "content": "hi"}])
    assert parsed.content[0].type == "tool_use" and parsed.content[0].input == {"a": 1}
    assert parsed.stop_reason == "tool_use" and parsed.usage.input_tokens == 10


# -- requests ------------------------------------------------------------------------------

BASE: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "hi"}],
}
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def _chat(**fields: Any) -> dict[str, Any]:
    return to_chat(BASE | fields)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]}),
        ({"max_tokens": None}, {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}),
        ({"temperature": 0.2, "top_p": 1}, {"temperature": 0.2, "top_p": 1}),
        ({"stop_sequences": ["\n\nHuman:", "END"]}, {"stop": ["\n\nHuman:", "END"]}),
        ({"stop_sequences": []}, {}),
        ({"stream": True}, {"stream": True, "stream_options": {"include_usage": True}}),
        ({"stream": False}, {}),
        (
            {
                "metadata": {"user_id": "u"},
                "thinking": {"type": "enabled", "budget_tokens": 2048},
                "top_k": 5,
                "anthropic_beta": ["x"],
                "context_management": {},
                "service_tier": "auto",
            },
            {},
        ),
    ],
)
def test_request_options(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    chat = _chat(**fields)

    assert {k: v for k, v in chat.items() if k in expected} == expected
    assert set(chat) - set(expected) <= {"model", "messages", "max_tokens"}


@pytest.mark.parametrize(
    ("system", "first"),
    [
        ("Be brief.", {"role": "system", "content": "Be brief."}),
        (
            [
                {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Be brief."},
            ],
            {"role": "system", "content": "You are Claude Code.\n\nBe brief."},
        ),
    ],
)
def test_system_goes_first(system: Any, first: dict[str, Any]) -> None:
    assert _chat(system=system)["messages"] == [first, {"role": "user", "content": "hi"}]


def test_empty_system_adds_no_message() -> None:
    assert _chat(system=[])["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (  # text blocks → one string; cache_control ignored
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": "b"},
                    ],
                }
            ],
            [{"role": "user", "content": "a\n\nb"}],
        ),
        (  # images: base64 → data URL, url → url
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": PNG},
                        {"type": "image", "source": {"type": "url", "url": "https://x/y.jpg"}},
                        {"type": "text", "text": "what?"},
                    ],
                }
            ],
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                        {"type": "image_url", "image_url": {"url": "https://x/y.jpg"}},
                        {"type": "text", "text": "what?"},
                    ],
                }
            ],
        ),
        (  # assistant tool_use (parallel) → tool_calls; thinking dropped; results in order before the user text
            [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hm", "signature": "s"},
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "LS", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_2",
                            "content": [{"type": "text", "text": "a.txt"}, {"type": "text", "text": "b.txt"}],
                        },
                    ],
                },
            ],
            [
                {
                    "role": "assistant",
                    "content": "Reading.",
                    "tool_calls": [
                        {
                            "id": "toolu_1",
                            "type": "function",
                            "function": {"name": "Read", "arguments": '{"file_path":"a.txt"}'},
                        },
                        {"id": "toolu_2", "type": "function", "function": {"name": "LS", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "toolu_1", "content": "hello"},
                {"role": "tool", "tool_call_id": "toolu_2", "content": "a.txt\n\nb.txt"},
                {"role": "user", "content": "<system-reminder>x</system-reminder>"},
            ],
        ),
        (  # tool_use only → content null; is_error kept; empty result; image result → the user turn
            [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t", "content": "not found", "is_error": True},
                        {"type": "tool_result", "tool_use_id": "u", "is_error": True},
                        {"type": "tool_result", "tool_use_id": "v"},
                        {"type": "tool_result", "tool_use_id": "w", "content": [{"type": "image", "source": PNG}]},
                    ],
                },
            ],
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "t", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"ls"}'}}
                    ],
                },
                {"role": "tool", "tool_call_id": "t", "content": "Error: not found"},
                {"role": "tool", "tool_call_id": "u", "content": "Error"},
                {"role": "tool", "tool_call_id": "v", "content": ""},
                {"role": "tool", "tool_call_id": "w", "content": ""},
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}],
                },
            ],
        ),
        (  # system-role messages inside messages stay in place; string assistant content
            [
                {"role": "user", "content": "a"},
                {"role": "system", "content": [{"type": "text", "text": "note"}]},
                {"role": "assistant", "content": "b"},
                {"role": "system", "content": "later"},
            ],
            [
                {"role": "user", "content": "a"},
                {"role": "system", "content": "note"},
                {"role": "assistant", "content": "b"},
                {"role": "system", "content": "later"},
            ],
        ),
        (  # unknown and thinking-only blocks add nothing
            [
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]},
                {"role": "user", "content": [{"type": "document", "source": {}}, {"type": "text", "text": "q"}]},
            ],
            [{"role": "user", "content": "q"}],
        ),
    ],
)
def test_messages(messages: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert _chat(messages=messages)["messages"] == expected


READ = {
    "name": "Read",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]},
}


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (
            [READ],
            [
                {
                    "type": "function",
                    "function": {"name": "Read", "description": "Read a file", "parameters": READ["input_schema"]},
                }
            ],
        ),
        (  # empty / missing / typeless schemas still make a valid object schema; no description key
            [
                {"name": "A", "input_schema": {}},
                {"name": "B"},
                {"name": "C", "input_schema": {"properties": {"x": {"type": "integer"}}}},
                {"name": "D", "input_schema": {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}},
                {"type": "custom", "name": "E", "input_schema": {"type": "object", "properties": {}}},
            ],
            [
                {"type": "function", "function": {"name": "A", "parameters": {"type": "object", "properties": {}}}},
                {"type": "function", "function": {"name": "B", "parameters": {"type": "object", "properties": {}}}},
                {
                    "type": "function",
                    "function": {
                        "name": "C",
                        "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
                    },
                },
                {
                    "type": "function",
                    "function": {
                        "name": "D",
                        "parameters": {
                            "type": "object",
                            "$schema": "http://json-schema.org/draft-07/schema#",
                            "properties": {},
                        },
                    },
                },
                {"type": "function", "function": {"name": "E", "parameters": {"type": "object", "properties": {}}}},
            ],
        ),
        (
            [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}, READ],
            [
                {
                    "type": "function",
                    "function": {"name": "Read", "description": "Read a file", "parameters": READ["input_schema"]},
                }
            ],
        ),
    ],
)
def test_tools(tools: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert _chat(tools=tools)["tools"] == expected


def test_tool_schema_of_the_request_is_not_mutated() -> None:
    schema: dict[str, Any] = {"type": "object"}
    _chat(tools=[{"name": "A", "input_schema": schema}])

    assert schema == {"type": "object"}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, {"tool_choice": "auto"}),
        ({"type": "any"}, {"tool_choice": "required"}),
        ({"type": "tool", "name": "Read"}, {"tool_choice": {"type": "function", "function": {"name": "Read"}}}),
        ({"type": "none"}, {"tool_choice": "none"}),
        ({"type": "auto", "disable_parallel_tool_use": True}, {"tool_choice": "auto", "parallel_tool_calls": False}),
        (None, {}),
    ],
)
def test_tool_choice(choice: Any, expected: dict[str, Any]) -> None:
    chat = _chat(tools=[READ], tool_choice=choice)

    assert {k: chat[k] for k in ("tool_choice", "parallel_tool_calls") if k in chat} == expected


def test_tool_choice_without_tools_is_dropped() -> None:
    assert "tool_choice" not in _chat(tool_choice={"type": "any"})
    assert "tools" not in _chat(tools=[{"type": "bash_20250124", "name": "bash"}], tool_choice={"type": "auto"})


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "model"),
        (BASE | {"model": 5}, "model"),
        (BASE | {"messages": None}, "messages"),
        (BASE | {"messages": []}, "messages"),
        (BASE | {"messages": ["hi"]}, "messages.0"),
        (BASE | {"messages": [{"role": "bot", "content": "x"}]}, "messages.0.role"),
        (BASE | {"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
        (BASE | {"messages": [{"role": "user", "content": ["x"]}]}, "messages.0.content.0"),
        (BASE | {"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "messages.0.content.0.type"),
        (
            BASE | {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
            "messages.0.content.0.text",
        ),
        (
            BASE
            | {
                "messages": [
                    {"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}
                ]
            },
            "messages.0.content.0.source.type",
        ),
        (
            BASE
            | {
                "messages": [
                    {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "x"}}]}
                ]
            },
            "messages.0.content.0.source.media_type",
        ),
        (
            BASE | {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]},
            "messages.0.content.0.tool_use_id",
        ),
        (
            BASE
            | {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": 3}]}]},
            "messages.0.content.0.content",
        ),
        (
            BASE
            | {
                "messages": [
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}
                ]
            },
            "messages.0.content.0.input",
        ),
        (
            BASE | {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f"}]}]},
            "messages.0.content.0.id",
        ),
        (BASE | {"system": 5}, "system"),
        (BASE | {"system": [{"type": "text"}]}, "system.0.text"),
        (BASE | {"max_tokens": "100"}, "max_tokens"),
        (BASE | {"max_tokens": 0}, "max_tokens"),
        (BASE | {"max_tokens": True}, "max_tokens"),
        (BASE | {"temperature": "hot"}, "temperature"),
        (BASE | {"top_p": None} | {"top_p": False}, "top_p"),
        (BASE | {"stop_sequences": "END"}, "stop_sequences"),
        (BASE | {"stream": "yes"}, "stream"),
        (BASE | {"tools": {}}, "tools"),
        (BASE | {"tools": ["Read"]}, "tools.0"),
        (BASE | {"tools": [{"description": "x"}]}, "tools.0.name"),
        (BASE | {"tools": [{"name": "A", "input_schema": []}]}, "tools.0.input_schema"),
        (BASE | {"tools": [READ], "tool_choice": "auto"}, "tool_choice"),
        (BASE | {"tools": [READ], "tool_choice": {"type": "maybe"}}, "tool_choice.type"),
        (BASE | {"tools": [READ], "tool_choice": {"type": "tool"}}, "tool_choice.name"),
    ],
)
def test_invalid_requests_name_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        to_chat(body)

    assert caught.value.param == param and caught.value.status == 400
    if body.get("messages") != []:  # count_tokens also counts an empty conversation
        with pytest.raises(InvalidRequestError):
            count_tokens(body)


def test_a_body_that_is_not_an_object() -> None:
    with pytest.raises(InvalidRequestError):
        to_chat(["not", "an", "object"])


def test_count_tokens_estimates_the_translated_request() -> None:
    body = {
        "model": "claude-haiku-4-5",
        "system": "s" * 40,
        "messages": [{"role": "user", "content": "u" * 40}],
        "tools": [READ],
    }

    assert count_tokens(body) == {"input_tokens": estimate_tokens(to_chat(body))}
    assert count_tokens(body)["input_tokens"] > 20
    assert count_tokens({"model": "m", "messages": [], "tools": [READ]})["input_tokens"] > 5


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "type_", "expected"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "authentication_error"),
        (403, "permission_error", "permission_error"),
        (404, "model_not_found", "not_found_error"),
        (404, "not_found_error", "not_found_error"),
        (405, "method_not_allowed", "invalid_request_error"),
        (413, "invalid_request_error", "request_too_large"),
        (429, "rate_limit_error", "rate_limit_error"),
        (500, "server_error", "api_error"),
        (502, "provider_error", "api_error"),
        (503, "service_unavailable", "overloaded_error"),
        (504, "timeout", "api_error"),
        (508, "loop_detected", "api_error"),
        (529, "overloaded", "overloaded_error"),
    ],
)
def test_render_error(status: int, type_: str, expected: str) -> None:
    assert render_error(status, type_, "why") == {"type": "error", "error": {"type": expected, "message": "why"}}


def test_message_start_announces_the_count_tokens_estimate() -> None:
    """Clients show the input at once (SPEC §12.2): message_start carries what count_tokens says;
    the upstream's own figures come in message_delta."""
    body = {
        "model": "m",
        "max_tokens": 64,
        "stream": True,
        "system": "s" * 40,
        "tools": [READ],
        "messages": [{"role": "user", "content": "u" * 400}],
    }
    chat = to_chat(body)
    estimate = estimate_tokens(chat, compact(chat))  # as the route computes it, from the body it sends
    stream = AnthropicStream("m", estimate)

    out = stream.feed(STREAMS["text"]) + stream.end()

    start = json.loads(out.decode().split("\n\n")[0].split("data: ", 1)[1])
    assert start["message"]["usage"]["input_tokens"] == count_tokens(body)["input_tokens"] == estimate
    assert estimate > 100


def test_the_estimate_is_the_same_from_a_compacted_body() -> None:
    chat = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 9,
        "messages": [{"role": "user", "content": 'é"x' * 50}],
        "tools": [{"type": "function"}],
    }

    assert estimate_tokens(chat, compact(chat)) == estimate_tokens(chat)
    assert estimate_tokens({"model": "m"}, compact({"model": "m"})) == estimate_tokens({"model": "m"}) == 1
