"""``gateway.surfaces.chat``: reading the upstream's OpenAI answer and stream."""

from __future__ import annotations

import json

import pytest

from gateway.surfaces.chat import (
    ChatStreamDecoder,
    Finish,
    Reasoning,
    Text,
    ToolArgs,
    ToolStart,
    UpstreamError,
    Usage,
    read_answer,
)


def _event(delta: dict, finish: str | None = None, **extra: object) -> bytes:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


STREAM = b"".join(
    [
        b": keep-alive\n\n",
        _event({"role": "assistant", "content": ""}),
        _event({"reasoning_content": "think"}),
        _event({"content": 'He said "error" \\n \u00e9'}),
        _event({"content": "x"}, usage=None),
        _event(
            {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}]}
        ),
        _event(
            {"tool_calls": [{"index": 1, "id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}
        ),
        _event({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1}'}}]}),
        _event({}, "tool_calls"),
        b'data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\r\n\r\n',
        b"data: [DONE]\n\n",
    ]
)
EXPECTED = [
    Reasoning("think"),
    Text('He said "error" \\n \u00e9'),
    Text("x"),
    ToolStart(0, "c1", "f"),
    ToolStart(1, "c2", "g"),
    ToolArgs(1, "{}"),
    ToolArgs(0, '{"a": 1}'),
    Finish("tool_calls"),
    Usage(3, 4),
]


def test_a_stream_reads_as_its_events():
    decoder = ChatStreamDecoder()

    assert decoder.feed(STREAM) == EXPECTED
    assert decoder.finished and decoder.id == "chatcmpl-1"


@pytest.mark.parametrize("cut", range(1, len(STREAM)))
def test_any_split_gives_the_same_events(cut):
    decoder = ChatStreamDecoder()

    assert decoder.feed(STREAM[:cut]) + decoder.feed(STREAM[cut:]) == EXPECTED


def test_one_byte_per_read_gives_the_same_events():
    decoder = ChatStreamDecoder()

    assert [e for i in range(len(STREAM)) for e in decoder.feed(STREAM[i : i + 1])] == EXPECTED


# Text-only chunks after the first are read without a full parse; they must read as a full parse
# reads them, whatever their spacing, escapes or extra fields.
TEXT_CHUNKS = [
    b'{"id":"a","choices":[{"index":0,"delta":{"content":"plain"},"finish_reason":null}]}',
    b'{"id": "a", "choices": [{"index": 0, "delta": {"content": "spaced \\"quoted\\" \\u2028"}}]}',
    b'{"id":"a","choices":[{"delta":{"role":"assistant","content":null}}]}',
    b'{"id":"a","choices":[{"delta":{}}],"usage":null}',
    b'{"id":"a","choices":[{"delta":{"content":"a \\"finish_reason\\":\\"stop\\" lookalike"}}]}',
    b'{"id":"a","choices":[{"delta":{"content":"x"},"logprobs":{"content":[{"token":"x"}]}}]}',
    b'{"id":"a","choices":[{"delta":{"content":"\\ud83d\\ude00"}}]}',
]


@pytest.mark.parametrize("chunk", TEXT_CHUNKS)
def test_text_chunks_read_as_a_full_parse_reads_them(chunk):
    first = b'data: {"id":"a","choices":[{"delta":{"role":"assistant"}}]}\n\n'
    decoder = ChatStreamDecoder()
    decoder.feed(first)

    fast = decoder.feed(b"data: " + chunk + b"\n\n")

    parsed = json.loads(chunk)["choices"][0]["delta"].get("content")
    assert fast == ([Text(parsed)] if parsed else [])


def test_text_after_non_ascii_fields_is_read_whole():
    # The fast path once mixed byte and character offsets: "模型" before the content shifted it.
    decoder = ChatStreamDecoder()
    decoder.feed(_event({"role": "assistant"}))

    events = decoder.feed(_event({"content": "hello world"}).replace(b'"model": "m"', '"model": "模型-中文"'.encode()))

    assert events == [Text("hello world")]


def test_an_openrouter_error_beside_choices_is_an_upstream_error_and_never_a_finish():
    decoder = ChatStreamDecoder()
    decoder.feed(_event({"content": "a"}))

    events = decoder.feed(
        b'data: {"id":"chatcmpl-1","error":{"code":"server_error","message":"Provider disconnected"},'
        b'"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n'
    )

    assert events == [UpstreamError("Provider disconnected")]
    assert not decoder.finished


def test_finish_reason_error_is_an_upstream_error():
    decoder = ChatStreamDecoder()
    decoder.feed(_event({"content": "a"}))

    events = decoder.feed(_event({}, "error"))

    assert events == [UpstreamError("the upstream ended the answer with an error")]
    assert not decoder.finished


def test_done_says_nothing_more_will_come():
    decoder = ChatStreamDecoder()
    decoder.feed(_event({"content": "a"}) + _event({}, "stop"))
    assert decoder.finished and not decoder.done

    decoder.feed(b"data: [DONE]\n\n")

    assert decoder.done


def test_an_error_object_mid_stream_is_an_upstream_error():
    decoder = ChatStreamDecoder()

    events = decoder.feed(_event({"content": "a"}) + b'data: {"error":{"message":"overloaded"}}\n\n')

    assert events == [Text("a"), UpstreamError("overloaded")]
    assert not decoder.finished


def test_a_last_event_without_its_blank_line_is_read_at_close():
    decoder = ChatStreamDecoder()
    decoder.feed(_event({"content": "a"}))

    assert decoder.feed(_event({}, "stop").rstrip(b"\n")) == []
    assert decoder.close() == [Finish("stop")]
    assert decoder.finished


def test_read_answer_takes_the_first_choice():
    body = {
        "id": "chatcmpl-9",
        "model": "m",
        "choices": [
            {
                "message": {
                    "content": "hi",
                    "reasoning_content": "r",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 3},
    }

    answer = read_answer(body)

    assert (answer.id, answer.text, answer.reasoning, answer.finish_reason) == ("chatcmpl-9", "hi", "r", "tool_calls")
    assert [(c.call_id, c.name, c.arguments) for c in answer.tool_calls] == [("c", "f", '{"a":1}')]
    assert (answer.input_tokens, answer.output_tokens) == (2, 3)


def test_read_answer_of_nonsense_is_empty_not_an_error():
    answer = read_answer(["not", "a", "completion"])

    assert (answer.text, answer.tool_calls, answer.finish_reason) == ("", (), "stop")
