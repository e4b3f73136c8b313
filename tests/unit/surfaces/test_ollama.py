"""The Ollama surface (SPEC §12.5): requests in, answers and NDJSON streams out, errors.

Streams are realistic OpenAI chat streams fed whole, one byte per read and split at every byte;
the translated stream must mean the same each time (text is merged per read, so the bytes differ).
Where the ``ollama`` SDK is importable, its real client reads our output through a mock transport.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.errors import InvalidRequestError
from gateway.surfaces.chat import Answer, ToolCall
from gateway.surfaces.ollama import (
    chat_from_chat,
    chat_to_chat,
    generate_from_chat,
    generate_to_chat,
    render_error,
    show_model,
)
from gateway.surfaces.ollama_models import show_body, tags_body
from gateway.surfaces.ollama_stream import OllamaStream

PNG = "iVBORw0KGgoAAAANSUhEUg=="
JPEG = "/9j/4AAQSkZJRg=="
GIF = "R0lGODlhAQABAA=="
WEBP = "UklGRiQAAABXRUJQ"
OTHER = "AAAAIGZ0eXBhdmlm"
USER = {"role": "user", "content": "hi"}
CREATED = "2026-08-22T10:00:00Z"
STREAMING = {"stream": True, "stream_options": {"include_usage": True}}


def _chat(**fields: Any) -> dict[str, Any]:
    return {"model": "llama3", "messages": [USER], **fields}


def _call(name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    return {"function": {"name": name, "arguments": arguments}, **extra}


def _openai_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# ----------------------------------------------------------------------------------------------
# Requests: /api/chat


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(_chat(), {"model": "llama3", "messages": [USER], **STREAMING}, id="stream-defaults-true"),
        pytest.param(_chat(stream=None), {"model": "llama3", "messages": [USER], **STREAMING}, id="stream-null"),
        pytest.param(_chat(stream=False), {"model": "llama3", "messages": [USER], "stream": False}, id="stream-false"),
        pytest.param(
            {"model": "qwen3:latest", "messages": [USER], "stream": False},
            {"model": "qwen3", "messages": [USER], "stream": False},
            id="latest-dropped",
        ),
        pytest.param(
            {"model": "deepseek/deepseek-r1:free", "messages": [USER], "stream": False},
            {"model": "deepseek/deepseek-r1:free", "messages": [USER], "stream": False},
            id="other-tag-kept",
        ),
        pytest.param(
            _chat(stream=False, keep_alive="5m", think=True, logprobs=True, unknown={"x": 1}),
            {"model": "llama3", "messages": [USER], "stream": False},
            id="ignored-fields",
        ),
    ],
)
def test_chat_request_top_level(body, expected):
    assert chat_to_chat(body) == expected


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        pytest.param(
            [{"role": "system", "content": "be brief"}, USER, {"role": "assistant", "content": "hello"}],
            [{"role": "system", "content": "be brief"}, USER, {"role": "assistant", "content": "hello"}],
            id="roles",
        ),
        pytest.param([{"role": "USER", "content": "hi"}], [USER], id="role-lower-cased"),
        pytest.param([{"role": "user"}], [{"role": "user", "content": ""}], id="content-missing"),
        pytest.param(
            [{"role": "assistant", "content": "x", "thinking": "hmm"}],
            [{"role": "assistant", "content": "x"}],
            id="assistant-thinking-dropped",
        ),
        *[
            pytest.param(
                [{"role": "user", "content": "what is it?", "images": [data]}],
                [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "what is it?"},
                            {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}},
                        ],
                    }
                ],
                id=f"image-{name}",
            )
            for name, data, mime in [
                ("png", PNG, "image/png"),
                ("jpeg", JPEG, "image/jpeg"),
                ("gif", GIF, "image/gif"),
                ("webp", WEBP, "image/webp"),
                ("unknown-is-png", OTHER, "image/png"),
            ]
        ],
        pytest.param(
            [{"role": "user", "images": [PNG, "data:image/jpeg;base64," + JPEG]}],
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}},
                        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + JPEG}},
                    ],
                }
            ],
            id="images-without-text-and-data-url-kept",
        ),
        pytest.param([{"role": "user", "content": "hi", "images": []}], [USER], id="images-empty"),
        pytest.param(
            [{"role": "assistant", "content": "a cat", "images": [PNG]}],
            [{"role": "assistant", "content": "a cat"}],
            id="images-of-assistant-dropped",
        ),
        pytest.param(
            [
                USER,
                {"role": "assistant", "content": "", "tool_calls": [_call("get_weather", {"city": "Paris"})]},
                {"role": "tool", "content": "22C", "tool_name": "get_weather"},
            ],
            [
                USER,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_openai_call("call_0", "get_weather", '{"city":"Paris"}')],
                },
                {"role": "tool", "tool_call_id": "call_0", "content": "22C"},
            ],
            id="tool-round-trip",
        ),
        pytest.param(
            [
                {
                    "role": "assistant",
                    "content": "checking",
                    "tool_calls": [_call("a", {"x": 1}), _call("b", '{"y":2}'), _call("c", None)],
                },
                {"role": "tool", "content": "A"},
                {"role": "tool", "content": "B"},
                {"role": "tool", "content": "C"},
            ],
            [
                {
                    "role": "assistant",
                    "content": "checking",
                    "tool_calls": [
                        _openai_call("call_0", "a", '{"x":1}'),
                        _openai_call("call_1", "b", '{"y":2}'),
                        _openai_call("call_2", "c", "{}"),
                    ],
                },
                {"role": "tool", "tool_call_id": "call_0", "content": "A"},
                {"role": "tool", "tool_call_id": "call_1", "content": "B"},
                {"role": "tool", "tool_call_id": "call_2", "content": "C"},
            ],
            id="parallel-results-in-order",
        ),
        pytest.param(
            [
                {"role": "assistant", "tool_calls": [_call("a", {}), _call("b", {})]},
                {"role": "tool", "content": "B", "tool_name": "b"},
                {"role": "tool", "content": "A", "tool_name": "a"},
            ],
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_openai_call("call_0", "a", "{}"), _openai_call("call_1", "b", "{}")],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "B"},
                {"role": "tool", "tool_call_id": "call_0", "content": "A"},
            ],
            id="results-matched-by-tool-name",
        ),
        pytest.param(
            [
                {"role": "assistant", "tool_calls": [_call("a", {}, id="x1"), _call("a", {}, id="x2")]},
                {"role": "tool", "content": "second", "tool_call_id": "x2", "tool_name": "a"},
                {"role": "tool", "content": "first", "tool_call_id": "x1", "tool_name": "a"},
            ],
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_openai_call("x1", "a", "{}"), _openai_call("x2", "a", "{}")],
                },
                {"role": "tool", "tool_call_id": "x2", "content": "second"},
                {"role": "tool", "tool_call_id": "x1", "content": "first"},
            ],
            id="client-ids-kept-and-matched",
        ),
        pytest.param(
            [
                {"role": "assistant", "tool_calls": [_call("a", {})]},
                {"role": "tool", "content": "1"},
                {"role": "assistant", "tool_calls": [_call("a", {})]},
                {"role": "tool", "content": "2"},
            ],
            [
                {"role": "assistant", "content": None, "tool_calls": [_openai_call("call_0", "a", "{}")]},
                {"role": "tool", "tool_call_id": "call_0", "content": "1"},
                {"role": "assistant", "content": None, "tool_calls": [_openai_call("call_1", "a", "{}")]},
                {"role": "tool", "tool_call_id": "call_1", "content": "2"},
            ],
            id="ids-unique-across-turns",
        ),
        pytest.param(
            [USER, {"role": "tool", "content": "42", "tool_name": "calc"}],
            [USER, {"role": "user", "content": "[calc result]\n42"}],
            id="orphan-result-becomes-user-text",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": [_call("a", {})]}, USER, {"role": "tool", "content": "late"}],
            [
                {"role": "assistant", "content": None, "tool_calls": [_openai_call("call_0", "a", "{}")]},
                USER,
                {"role": "user", "content": "[tool result]\nlate"},
            ],
            id="result-after-user-turn-is-orphan",
        ),
        pytest.param(
            [{"role": "assistant", "content": "plain", "tool_calls": []}],
            [{"role": "assistant", "content": "plain"}],
            id="empty-tool-calls",
        ),
    ],
)
def test_chat_request_messages(messages, expected):
    assert chat_to_chat({"model": "m", "messages": messages, "stream": False})["messages"] == expected


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"tools": [WEATHER_TOOL]}, {"tools": [WEATHER_TOOL]}, id="tools"),
        pytest.param(
            {"tools": [{"function": {"name": "now"}}]},
            {
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": "now", "parameters": {"type": "object", "properties": {}}},
                    }
                ]
            },
            id="tool-defaults",
        ),
        pytest.param({"tools": []}, {}, id="tools-empty"),
        pytest.param({"format": "json"}, {"response_format": {"type": "json_object"}}, id="format-json"),
        pytest.param({"format": ""}, {}, id="format-empty"),
        pytest.param(
            {"format": {"type": "object", "properties": {"a": {"type": "integer"}}}},
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "response",
                        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
                    },
                }
            },
            id="format-schema",
        ),
        pytest.param({"options": {"temperature": 0.2}}, {"temperature": 0.2}, id="temperature"),
        pytest.param({"options": {"top_p": 0.9}}, {"top_p": 0.9}, id="top_p"),
        pytest.param({"options": {"top_k": 40}}, {"top_k": 40}, id="top_k"),
        pytest.param({"options": {"num_predict": 128}}, {"max_tokens": 128}, id="num_predict"),
        pytest.param({"options": {"num_predict": 128.0}}, {"max_tokens": 128}, id="num_predict-float"),
        pytest.param({"options": {"num_predict": -1}}, {}, id="num_predict-unlimited"),
        pytest.param({"options": {"num_predict": -2}}, {}, id="num_predict-fill-context"),
        pytest.param({"options": {"seed": 7}}, {"seed": 7}, id="seed"),
        pytest.param({"options": {"stop": ["\n\n", "END"]}}, {"stop": ["\n\n", "END"]}, id="stop"),
        pytest.param({"options": {"stop": "END"}}, {"stop": ["END"]}, id="stop-string"),
        pytest.param(
            {"options": {"presence_penalty": 0.5, "frequency_penalty": 0.1}},
            {"presence_penalty": 0.5, "frequency_penalty": 0.1},
            id="penalties",
        ),
        pytest.param(
            {"options": {"num_ctx": 8192, "repeat_penalty": 1.1, "mirostat": 0, "temperature": None}},
            {},
            id="unmapped-options",
        ),
    ],
)
def test_chat_request_fields(fields, expected):
    chat = chat_to_chat({"model": "m", "messages": [USER], "stream": False, **fields})

    assert chat == {"model": "m", "messages": [USER], "stream": False, **expected}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        pytest.param([], "body", id="not-an-object"),
        pytest.param({"messages": [USER]}, "model", id="model-missing"),
        pytest.param({"model": 3, "messages": [USER]}, "model", id="model-not-string"),
        pytest.param({"model": "m"}, "messages", id="messages-missing"),
        pytest.param({"model": "m", "messages": []}, "messages", id="messages-empty"),
        pytest.param({"model": "m", "messages": "hi"}, "messages", id="messages-not-list"),
        pytest.param({"model": "m", "messages": ["hi"]}, "messages[0]", id="message-not-object"),
        pytest.param(
            {"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", id="bad-role"
        ),
        pytest.param({"model": "m", "messages": [{"content": "x"}]}, "messages[0].role", id="role-missing"),
        pytest.param(
            {"model": "m", "messages": [{"role": "user", "content": 5}]}, "messages[0].content", id="content-number"
        ),
        pytest.param(
            {"model": "m", "messages": [{"role": "user", "images": "abc"}]}, "messages[0].images", id="images-not-list"
        ),
        pytest.param(
            {"model": "m", "messages": [{"role": "user", "images": [1]}]}, "messages[0].images", id="image-not-string"
        ),
        pytest.param(
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": {"a": 1}}]},
            "messages[0].tool_calls",
            id="tool-calls-not-list",
        ),
        pytest.param(
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"name": "a"}]}]},
            "messages[0].tool_calls[0].function",
            id="tool-call-without-function",
        ),
        pytest.param(
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": {}}}]}]},
            "messages[0].tool_calls[0].function.name",
            id="tool-call-without-name",
        ),
        pytest.param({"model": "m", "messages": [USER], "tools": {"a": 1}}, "tools", id="tools-not-list"),
        pytest.param({"model": "m", "messages": [USER], "tools": [{"name": "a"}]}, "tools[0].function", id="tool-flat"),
        pytest.param(
            {"model": "m", "messages": [USER], "tools": [{"function": {}}]}, "tools[0].function.name", id="tool-unnamed"
        ),
        pytest.param({"model": "m", "messages": [USER], "format": "xml"}, "format", id="format-unknown"),
        pytest.param({"model": "m", "messages": [USER], "format": 1}, "format", id="format-number"),
        pytest.param({"model": "m", "messages": [USER], "options": [1]}, "options", id="options-not-object"),
        pytest.param(
            {"model": "m", "messages": [USER], "options": {"temperature": "hot"}},
            "options.temperature",
            id="temperature-string",
        ),
        pytest.param({"model": "m", "messages": [USER], "options": {"top_p": True}}, "options.top_p", id="top_p-bool"),
        pytest.param(
            {"model": "m", "messages": [USER], "options": {"num_predict": 1.5}},
            "options.num_predict",
            id="num_predict-fraction",
        ),
        pytest.param({"model": "m", "messages": [USER], "options": {"stop": [1]}}, "options.stop", id="stop-numbers"),
        pytest.param({"model": "m", "messages": [USER], "stream": "yes"}, "stream", id="stream-string"),
    ],
)
def test_chat_request_invalid(body, param):
    with pytest.raises(InvalidRequestError) as caught:
        chat_to_chat(body)

    assert caught.value.param == param
    assert caught.value.status == 400


# ----------------------------------------------------------------------------------------------
# Requests: /api/generate


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            {"model": "llama3:latest", "prompt": "Why is the sky blue?"},
            {"model": "llama3", "messages": [{"role": "user", "content": "Why is the sky blue?"}], **STREAMING},
            id="prompt-streams-by-default",
        ),
        pytest.param(
            {"model": "m", "prompt": "hi", "system": "be brief", "stream": False},
            {"model": "m", "messages": [{"role": "system", "content": "be brief"}, USER], "stream": False},
            id="system",
        ),
        pytest.param(
            {"model": "m", "prompt": "what?", "images": [JPEG], "stream": False},
            {
                "model": "m",
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "what?"},
                            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + JPEG}},
                        ],
                    }
                ],
                "stream": False,
            },
            id="images",
        ),
        pytest.param(
            {
                "model": "m",
                "prompt": "hi",
                "format": "json",
                "options": {"temperature": 0, "num_predict": 9},
                "stream": False,
            },
            {
                "model": "m",
                "messages": [USER],
                "response_format": {"type": "json_object"},
                "temperature": 0,
                "max_tokens": 9,
                "stream": False,
            },
            id="format-and-options",
        ),
        pytest.param(
            {
                "model": "m",
                "prompt": "hi",
                "raw": True,
                "context": [1, 2],
                "template": "{{ .Prompt }}",
                "suffix": "end",
                "keep_alive": 0,
                "stream": False,
            },
            {"model": "m", "messages": [USER], "stream": False},
            id="ignored-fields",
        ),
        pytest.param(
            {"model": "m", "stream": False},
            {"model": "m", "messages": [{"role": "user", "content": ""}], "stream": False},
            id="no-prompt",
        ),
    ],
)
def test_generate_request(body, expected):
    assert generate_to_chat(body) == expected


@pytest.mark.parametrize(
    ("body", "param"),
    [
        pytest.param({"prompt": "hi"}, "model", id="model-missing"),
        pytest.param({"model": "m", "prompt": ["hi"]}, "prompt", id="prompt-list"),
        pytest.param({"model": "m", "prompt": "hi", "system": 1}, "system", id="system-number"),
        pytest.param({"model": "m", "prompt": "hi", "images": PNG}, "images", id="images-string"),
        pytest.param({"model": "m", "prompt": "hi", "options": {"seed": "x"}}, "options.seed", id="seed-string"),
    ],
)
def test_generate_request_invalid(body, param):
    with pytest.raises(InvalidRequestError) as caught:
        generate_to_chat(body)

    assert caught.value.param == param


@pytest.mark.parametrize(
    ("body", "model"),
    [({"model": "llama3:latest"}, "llama3"), ({"name": "auto"}, "auto"), ({"model": "a:b"}, "a:b")],
    ids=["model", "name", "tag-kept"],
)
def test_show_model(body, model):
    assert show_model(body) == model


@pytest.mark.parametrize(
    "body", [{}, {"model": ""}, {"model": 1}, "llama3"], ids=["empty", "blank", "number", "not-object"]
)
def test_show_model_invalid(body):
    with pytest.raises(InvalidRequestError):
        show_model(body)


# ----------------------------------------------------------------------------------------------
# Answers


def _answer(text="", *, reasoning="", calls=(), finish="stop", usage=(11, 7)) -> Answer:
    return Answer("chatcmpl-9", "up", text, reasoning, tuple(calls), finish, usage[0], usage[1])


METRICS = {
    "total_duration": 0,
    "load_duration": 0,
    "prompt_eval_count": 11,
    "prompt_eval_duration": 0,
    "eval_count": 7,
    "eval_duration": 0,
}


@pytest.mark.parametrize(
    ("answer", "message", "reason"),
    [
        pytest.param(_answer("Hello!"), {"role": "assistant", "content": "Hello!"}, "stop", id="text"),
        pytest.param(_answer(""), {"role": "assistant", "content": ""}, "stop", id="empty-text"),
        pytest.param(_answer("Hel", finish="length"), {"role": "assistant", "content": "Hel"}, "length", id="length"),
        pytest.param(
            _answer("no", finish="content_filter"), {"role": "assistant", "content": "no"}, "stop", id="content-filter"
        ),
        pytest.param(
            _answer("42", reasoning="6*7"),
            {"role": "assistant", "content": "42", "thinking": "6*7"},
            "stop",
            id="reasoning",
        ),
        pytest.param(
            _answer(calls=[ToolCall("call_a", "get_weather", '{"city":"Paris"}')], finish="tool_calls"),
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "call_a", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}
                ],
            },
            "stop",
            id="tool-call",
        ),
        pytest.param(
            _answer(
                "both",
                calls=[ToolCall("c1", "a", "{}"), ToolCall("c2", "b", ""), ToolCall("c3", "c", '{"x":')],
                finish="tool_calls",
            ),
            {
                "role": "assistant",
                "content": "both",
                "tool_calls": [
                    {"id": "c1", "function": {"index": 0, "name": "a", "arguments": {}}},
                    {"id": "c2", "function": {"index": 1, "name": "b", "arguments": {}}},
                    {"id": "c3", "function": {"index": 2, "name": "c", "arguments": {}}},
                ],
            },
            "stop",
            id="parallel-calls-empty-and-broken-arguments",
        ),
    ],
)
def test_chat_answer(answer, message, reason):
    body = chat_from_chat(answer, "llama-3.3-70b", CREATED)

    assert body == {
        "model": "llama-3.3-70b",
        "created_at": CREATED,
        "message": message,
        "done": True,
        "done_reason": reason,
        **METRICS,
    }


@pytest.mark.parametrize(
    ("answer", "extra", "reason"),
    [
        pytest.param(_answer("Blue."), {"response": "Blue."}, "stop", id="text"),
        pytest.param(_answer("", finish="length"), {"response": ""}, "length", id="empty-length"),
        pytest.param(_answer("ok", reasoning="think"), {"response": "ok", "thinking": "think"}, "stop", id="reasoning"),
    ],
)
def test_generate_answer(answer, extra, reason):
    body = generate_from_chat(answer, "m", CREATED)

    assert body == {
        "model": "m",
        "created_at": CREATED,
        **extra,
        "done": True,
        "done_reason": reason,
        **METRICS,
        "context": [],
    }


@pytest.mark.parametrize(
    ("status", "type_", "message"),
    [
        (400, "invalid_request_error", "messages must be a non-empty list"),
        (401, "authentication_error", "Invalid API key"),
        (404, "model_not_found", "model 'x' not found"),
        (413, "invalid_request_error", "body too large"),
        (429, "rate_limit_error", "all providers are cooling down"),
        (502, "provider_error", "upstream failed"),
        (503, "service_unavailable", "no providers"),
        (508, "loop_detected", "loop"),
    ],
)
def test_render_error(status, type_, message):
    assert render_error(status, type_, message) == {"error": message}


def test_render_error_never_empty():
    assert render_error(502, "provider_error", "") == {"error": "provider_error"}


# ----------------------------------------------------------------------------------------------
# Streams


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc",
        "object": "chat.completion.chunk",
        "created": 1755000000,
        "model": "llama-3.3-70b",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
    }


def _usage(prompt: int = 12, completion: int = 5) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc",
        "object": "chat.completion.chunk",
        "created": 1755000000,
        "model": "llama-3.3-70b",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _sse(*chunks: dict[str, Any] | str) -> bytes:
    return b"".join(
        b"data: " + (c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)).encode() + b"\n\n" for c in chunks
    )


def _tool_delta(
    index: int, *, call_id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return {"tool_calls": [call]}


TEXT_STREAM = _sse(
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Hello"}),
    _chunk({"content": ", wörld"}),
    _chunk({"content": " ✓\n"}),
    _chunk({}, "stop"),
    _usage(),
    "[DONE]",
)
REASONING_STREAM = _sse(
    _chunk({"role": "assistant", "reasoning_content": "Let me"}),
    _chunk({"reasoning_content": " think."}),
    _chunk({"content": "42"}),
    _chunk({}, "stop"),
    _usage(30, 9),
    "[DONE]",
)
TOOL_STREAM = _sse(
    _chunk({"role": "assistant", "content": None, **_tool_delta(0, call_id="call_w1", name="get_weather")}),
    _chunk(_tool_delta(0, arguments='{"ci')),
    _chunk(_tool_delta(0, arguments='ty": "Par')),
    _chunk(_tool_delta(0, arguments='is"}')),
    _chunk({}, "tool_calls"),
    _usage(40, 18),
    "[DONE]",
)
PARALLEL_STREAM = _sse(
    _chunk({"role": "assistant", "content": "Checking both."}),
    _chunk(_tool_delta(0, call_id="call_p", name="get_weather", arguments='{"city":')),
    _chunk(_tool_delta(0, arguments='"Paris"}')),
    _chunk(_tool_delta(1, call_id="call_l", name="get_weather", arguments='{"city":"Lo')),
    _chunk(_tool_delta(1, arguments='ndon"}')),
    _chunk({}, "tool_calls"),
    _usage(50, 30),
    "[DONE]",
)
NO_DONE_STREAM = _sse(_chunk({"content": "short"}), _chunk({}, "length"), _usage(3, 1)).replace(b"\n\n", b"\r\n\r\n")
DONE_ONLY_STREAM = _sse(
    _chunk({"content": "Hi"}), _chunk(_tool_delta(0, call_id="c9", name="now", arguments="{}")), "[DONE]"
)
STREAMS = {
    "text": TEXT_STREAM,
    "reasoning-then-text": REASONING_STREAM,
    "tool-call-fragments": TOOL_STREAM,
    "parallel-tool-calls": PARALLEL_STREAM,
    "finish-without-done-crlf": NO_DONE_STREAM,
    "done-without-finish": DONE_ONLY_STREAM,
}


def _run(pieces: list[bytes], mode: str = "chat") -> bytes:
    stream = OllamaStream("llama-3.3-70b", CREATED, mode)  # type: ignore[arg-type]
    out = b"".join(stream.feed(piece) for piece in pieces)
    return out + (stream.end() if stream.complete else stream.fail("upstream stream was cut"))


def _lines(out: bytes) -> list[dict[str, Any]]:
    text = out.decode()
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    assert all(lines), "an empty line would break ollama-python's json.loads"
    return [json.loads(line) for line in lines]


def _meaning(out: bytes, mode: str = "chat") -> dict[str, Any]:
    """What a client keeps: the concatenated text and thinking, the calls, the last line."""
    lines = _lines(out)
    key = "response" if mode == "generate" else "content"
    text, thinking, calls = "", "", []
    for line in lines[:-1]:
        assert line["done"] is False
        assert line["model"] == "llama-3.3-70b" and line["created_at"] == CREATED
        part = line["message"] if mode == "chat" else line
        assert part[key] or part.get("thinking") or part.get("tool_calls"), "no empty chunk"
        text += part[key]
        thinking += part.get("thinking", "")
        calls += part.get("tool_calls", [])
    return {"text": text, "thinking": thinking, "calls": calls, "last": lines[-1]}


def _last(reason: str, prompt: int, completion: int, mode: str = "chat") -> dict[str, Any]:
    head = {"model": "llama-3.3-70b", "created_at": CREATED}
    head |= {"message": {"role": "assistant", "content": ""}} if mode == "chat" else {"response": ""}
    metrics = {**METRICS, "prompt_eval_count": prompt, "eval_count": completion}
    return {**head, "done": True, "done_reason": reason, **metrics, **({"context": []} if mode == "generate" else {})}


EXPECTED = {
    "text": {"text": "Hello, wörld ✓\n", "thinking": "", "calls": [], "last": _last("stop", 12, 5)},
    "reasoning-then-text": {"text": "42", "thinking": "Let me think.", "calls": [], "last": _last("stop", 30, 9)},
    "tool-call-fragments": {
        "text": "",
        "thinking": "",
        "calls": [{"id": "call_w1", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}],
        "last": _last("stop", 40, 18),
    },
    "parallel-tool-calls": {
        "text": "Checking both.",
        "thinking": "",
        "calls": [
            {"id": "call_p", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}},
            {"id": "call_l", "function": {"index": 1, "name": "get_weather", "arguments": {"city": "London"}}},
        ],
        "last": _last("stop", 50, 30),
    },
    "finish-without-done-crlf": {"text": "short", "thinking": "", "calls": [], "last": _last("length", 3, 1)},
    "done-without-finish": {
        "text": "Hi",
        "thinking": "",
        "calls": [{"id": "c9", "function": {"index": 0, "name": "now", "arguments": {}}}],
        "last": _last("stop", 0, 0),
    },
}


@pytest.mark.parametrize("name", STREAMS)
def test_stream_in_one_piece(name):
    assert _meaning(_run([STREAMS[name]])) == EXPECTED[name]


@pytest.mark.parametrize("name", STREAMS)
def test_stream_one_byte_per_read(name):
    data = STREAMS[name]

    assert _meaning(_run([data[i : i + 1] for i in range(len(data))])) == EXPECTED[name]


@pytest.mark.parametrize("name", STREAMS)
def test_stream_split_at_every_byte(name):
    data = STREAMS[name]
    for cut in range(len(data) + 1):
        assert _meaning(_run([data[:cut], data[cut:]])) == EXPECTED[name], cut


@pytest.mark.parametrize("name", STREAMS)
def test_stream_generate_mode(name):
    data = STREAMS[name]
    expected = {**EXPECTED[name], "last": {**_last("x", 0, 0, "generate"), **_pick(EXPECTED[name]["last"])}}
    for pieces in ([data], [data[i : i + 1] for i in range(len(data))]):
        assert _meaning(_run(pieces, "generate"), "generate") == expected


def _pick(last: dict[str, Any]) -> dict[str, Any]:
    return {k: last[k] for k in ("done_reason", "prompt_eval_count", "eval_count")}


def test_text_stream_bytes():
    # One read: all text in one line, the calls (none) at the finish, the last line at end().
    assert (
        _run([TEXT_STREAM])
        == (
            '{"model":"llama-3.3-70b","created_at":"2026-08-22T10:00:00Z","message":{"role":"assistant",'
            '"content":"Hello, wörld ✓\\n"},"done":false}\n'
            '{"model":"llama-3.3-70b","created_at":"2026-08-22T10:00:00Z","message":{"role":"assistant",'
            '"content":""},"done":true,"done_reason":"stop","total_duration":0,"load_duration":0,'
            '"prompt_eval_count":12,"prompt_eval_duration":0,"eval_count":5,"eval_duration":0}\n'
        ).encode()
    )


def test_tool_calls_go_out_at_the_finish_before_usage():
    stream = OllamaStream("m", CREATED)
    events = TOOL_STREAM.split(b"\n\n")
    before_finish = b"\n\n".join(events[:4]) + b"\n\n"
    finish = events[4] + b"\n\n"

    assert stream.feed(before_finish) == b""  # arguments are buffered: Ollama sends calls whole
    line = json.loads(stream.feed(finish))
    assert line["message"]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assert line["done"] is False


def test_generate_stream_bytes():
    out = _run([REASONING_STREAM], "generate").decode().split("\n")

    assert out[0] == (
        '{"model":"llama-3.3-70b","created_at":"2026-08-22T10:00:00Z",'
        '"response":"42","thinking":"Let me think.","done":false}'
    )
    assert out[1].endswith('"eval_duration":0,"context":[]}') and '"done":true' in out[1]


def test_media_type():
    assert OllamaStream("m", CREATED).media_type == "application/x-ndjson"


def test_unknown_mode_is_a_bug():
    with pytest.raises(ValueError, match="embed"):
        OllamaStream("m", CREATED, "embed")  # type: ignore[arg-type]


# Errors and cuts


@pytest.mark.parametrize("name", STREAMS)
def test_cut_at_every_byte_ends_with_error_or_normally(name):
    data = STREAMS[name]
    for cut in range(len(data)):
        stream = OllamaStream("m", CREATED)
        out = stream.feed(data[:cut])
        complete = stream.complete
        out += stream.end() if complete else stream.fail("upstream stream was cut")
        lines = _lines(out)
        if complete:
            assert lines[-1]["done"] is True, cut
        else:
            assert lines[-1] == {"error": "upstream stream was cut"}, cut
            assert all(not line.get("done") for line in lines), cut
        assert stream.feed(data[cut:]) == b"" and stream.end() == b"" and stream.fail("again") == b""


@pytest.mark.parametrize("name", STREAMS)
def test_upstream_error_event_at_every_point(name):
    events = STREAMS[name].split(b"\n\n")[:-1]
    error = b'data: {"error":{"message":"provider overloaded","code":503}}'
    for at in range(len(events) + 1):
        data = b"\n\n".join([*events[:at], error, *events[at:]]) + b"\n\n"
        for pieces in ([data], [data[i : i + 7] for i in range(0, len(data), 7)]):
            stream = OllamaStream("m", CREATED)
            out = b"".join(stream.feed(piece) for piece in pieces)
            out += stream.end() if stream.complete else stream.fail("cut")
            lines = _lines(out)
            assert lines[-1] == {"error": "provider overloaded"}, at
            assert all(not line.get("done") for line in lines), at


def test_fail_message_never_empty():
    assert json.loads(OllamaStream("m", CREATED).fail("")) == {"error": "the upstream stream failed"}


def test_last_event_without_blank_line_is_read_at_end():
    stream = OllamaStream("llama-3.3-70b", CREATED)
    out = stream.feed(
        _sse(_chunk({"content": "a"})) + b"data: " + json.dumps(_chunk({"content": "b"}, "stop")).encode()
    )
    out += stream.end()

    assert _meaning(out)["text"] == "ab"


def test_many_events_in_one_read_give_one_text_line():
    data = _sse(*[_chunk({"content": "x"}) for _ in range(1000)], _chunk({}, "stop"), _usage())
    out = _run([data])

    assert out.count(b"\n") == 2
    assert _meaning(out)["text"] == "x" * 1000


# ----------------------------------------------------------------------------------------------
# The real ollama-python client reads what we write (skipped until the SDK is installed)


def _client(handler):
    ollama = pytest.importorskip("ollama")
    httpx = pytest.importorskip("httpx")
    return ollama.Client(host="http://gateway.test", transport=httpx.MockTransport(handler))


def _ndjson(body: bytes, status: int = 200):
    import httpx

    return httpx.Response(status, content=body, headers={"content-type": "application/x-ndjson"})


@pytest.mark.parametrize("name", STREAMS)
def test_sdk_reads_chat_stream(name):
    sent = []

    def handler(request):
        sent.append(json.loads(request.content))
        return _ndjson(_run([STREAMS[name]]))

    parts = list(_client(handler).chat(model="llama3", messages=[{"role": "user", "content": "hi"}], stream=True))

    assert sent[0]["stream"] is True
    assert parts[-1].done is True and parts[-1].done_reason == EXPECTED[name]["last"]["done_reason"]
    assert "".join(p.message.content or "" for p in parts) == EXPECTED[name]["text"]
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in EXPECTED[name]["calls"]
    ]


def test_sdk_reads_generate_stream():
    parts = list(
        _client(lambda request: _ndjson(_run([REASONING_STREAM], "generate"))).generate(
            model="m", prompt="hi", stream=True
        )
    )

    assert "".join(p.response for p in parts) == "42"
    assert "".join(p.thinking or "" for p in parts) == "Let me think."
    assert parts[-1].done is True and parts[-1].eval_count == 9


def test_sdk_raises_on_a_cut_stream():
    ollama = pytest.importorskip("ollama")
    cut = TEXT_STREAM[: TEXT_STREAM.index(b"stop")]
    client = _client(lambda request: _ndjson(_run([cut])))

    with pytest.raises(ollama.ResponseError, match="upstream stream was cut"):
        list(client.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))


def test_sdk_reads_answers_listing_and_errors():
    ollama = pytest.importorskip("ollama")
    answer = _answer("ok", reasoning="hmm", calls=[ToolCall("c1", "f", '{"a":1}')], finish="tool_calls")
    routes = {
        "/api/chat": chat_from_chat(answer, "m", CREATED),
        "/api/generate": generate_from_chat(answer, "m", CREATED),
        "/api/tags": tags_body(["auto", "llama-3.3-70b"]),
        "/api/show": show_body("llama-3.3-70b"),
    }

    def handler(request):
        import httpx

        if request.url.path == "/api/ps":
            return httpx.Response(401, json=render_error(401, "authentication_error", "Invalid API key"))
        return httpx.Response(200, json=routes[request.url.path])

    client = _client(handler)
    chat = client.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=False)
    assert chat.message.tool_calls[0].function.arguments == {"a": 1} and chat.message.thinking == "hmm"
    assert client.generate(model="m", prompt="hi", stream=False).response == "ok"
    assert [m.model for m in client.list().models] == ["auto", "llama-3.3-70b"]
    show = client.show("llama-3.3-70b")
    assert show.capabilities == ["completion", "tools"] and show.modelinfo["llama.context_length"] == 32768
    with pytest.raises(ollama.ResponseError) as caught:
        client.ps()
    assert caught.value.error == "Invalid API key" and caught.value.status_code == 401


def test_sdk_request_translates():
    """What ollama-python really sends (images as base64, tools from a Python function, a schema
    format, options) becomes a valid chat body."""
    sent = []

    def handler(request):
        sent.append(json.loads(request.content))
        return _ndjson(json.dumps(chat_from_chat(_answer("ok"), "m", CREATED)).encode())

    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
          a: the first
          b: the second
        """
        return a + b

    _client(handler).chat(
        model="llava:latest",
        messages=[
            {"role": "user", "content": "what is in it?", "images": [b"\x89PNG\r\n\x1a\n0000"]},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "add", "arguments": {"a": 1, "b": 2}}}],
            },
            {"role": "tool", "content": "3", "tool_name": "add"},
        ],
        tools=[add],
        format={"type": "object"},
        options={"temperature": 0.1, "num_predict": 50, "stop": ["END"]},
        stream=False,
    )
    chat = chat_to_chat(sent[0])

    assert chat["model"] == "llava" and chat["stream"] is False
    assert chat["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert chat["messages"][1]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a":1,"b":2}'}
    assert chat["messages"][2] == {"role": "tool", "tool_call_id": "call_0", "content": "3"}
    assert chat["tools"][0]["function"]["name"] == "add"
    assert chat["tools"][0]["function"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert chat["response_format"]["type"] == "json_schema"
    assert (chat["temperature"], chat["max_tokens"], chat["stop"]) == (0.1, 50, ["END"])
