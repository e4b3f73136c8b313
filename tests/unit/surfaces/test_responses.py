"""OpenAI Responses surface (SPEC §12.3): request → chat, answer → response, chat SSE → Responses SSE.

Streams are OpenAI chat streams as providers send them, fed whole, one byte at a time and split at
every byte boundary; the output is read back with the openai SDK's own SSE decoder, event types
and stream accumulator (``ResponseStreamState``), and checked against what Codex CLI's parser
needs (codex-api ``sse/responses.rs``: items from ``output_item.done``, ``response.completed``
with ``response.id`` and integer usage, never ``response.incomplete``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import Omit
from openai._streaming import SSEDecoder
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from gateway.errors import InvalidRequestError
from gateway.surfaces.chat import Answer, ToolCall
from gateway.surfaces.responses import (
    ResponsesStream,
    flat_name,
    from_chat,
    render_error,
    to_chat,
    tool_names,
)

EVENTS = TypeAdapter(ResponseStreamEvent)
FN = {"type": "function", "name": "exec_command", "description": "Run", "parameters": {"type": "object"}}
CHAT_FN = {
    "type": "function",
    "function": {"name": "exec_command", "parameters": {"type": "object"}, "description": "Run"},
}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def chat(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"messages": messages, "model": "m", **extra, "stream": extra.get("stream", False)}


# -- to_chat ----------------------------------------------------------------------------------

TO_CHAT = [
    ("input string", {"input": "hi"}, chat([user("hi")])),
    (
        "instructions first",
        {"instructions": "be brief", "input": "hi"},
        chat([{"role": "system", "content": "be brief"}, user("hi")]),
    ),
    (
        "message items, type absent, developer → system",
        {
            "input": [
                {"role": "developer", "content": "rules"},
                {"type": "message", "role": "user", "content": "q"},
            ]
        },
        chat([{"role": "system", "content": "rules"}, user("q")]),
    ),
    (
        "one input_text part → string",
        {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}]},
        chat([user("q")]),
    ),
    (
        "several parts and images (url + detail, file id)",
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "look"},
                        {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "low"},
                        {"type": "input_image", "file_id": "file-1"},
                    ],
                }
            ]
        },
        chat(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "low"}},
                        {"type": "image_url", "image_url": {"url": "file-1"}},
                    ],
                }
            ]
        ),
    ),
    (
        "input_file → file part",
        {"input": [{"role": "user", "content": [{"type": "input_file", "file_data": "AA", "filename": "a.pdf"}]}]},
        chat([{"role": "user", "content": [{"type": "file", "file": {"file_data": "AA", "filename": "a.pdf"}}]}]),
    ),
    (
        "assistant history output_text and refusal → text",
        {
            "input": [
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_1",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": "a", "annotations": []},
                        {"type": "refusal", "refusal": "no"},
                    ],
                },
            ]
        },
        chat([{"role": "assistant", "content": "a\nno"}]),
    ),
    (
        "system parts joined",
        {
            "input": [
                {
                    "role": "system",
                    "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
                }
            ]
        },
        chat([{"role": "system", "content": "a\nb"}]),
    ),
    (
        "consecutive function_calls → one assistant message; id/status ignored; reasoning dropped",
        {
            "input": [
                user("q"),
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "status": "completed",
                    "call_id": "c1",
                    "name": "exec_command",
                    "arguments": '{"cmd":"ls"}',
                },
                {"type": "function_call", "call_id": "c2", "name": "exec_command", "arguments": {"cmd": "pwd"}},
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
                {"type": "function_call_output", "call_id": "c2", "output": "/w"},
            ]
        },
        chat(
            [
                user("q"),
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "exec_command", "arguments": '{"cmd":"ls"}'},
                        },
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "exec_command", "arguments": '{"cmd": "pwd"}'},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
                {"role": "tool", "tool_call_id": "c2", "content": "/w"},
            ]
        ),
    ),
    (
        "assistant text then a call: one assistant turn",
        {
            "input": [
                {"role": "assistant", "content": "let me look"},
                {"type": "function_call", "call_id": "c1", "name": "read", "arguments": ""},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ]
        },
        chat(
            [
                {
                    "role": "assistant",
                    "content": "let me look",
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": ""}}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ]
        ),
    ),
    (
        "output as parts: text to the tool message, images after the tool messages",
        {
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "view", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [
                        {"type": "input_text", "text": "img:"},
                        {"type": "input_image", "image_url": "https://x/i.png"},
                    ],
                },
                user("next"),
            ]
        },
        chat(
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "view", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "img:"},
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/i.png"}}]},
                user("next"),
            ]
        ),
    ),
    (
        "output as {content, success} and null",
        {
            "input": [
                {"type": "function_call_output", "call_id": "c1", "output": {"content": "bad", "success": False}},
                {"type": "function_call_output", "call_id": "c2"},
            ]
        },
        chat(
            [
                {"role": "tool", "tool_call_id": "c1", "content": "bad"},
                {"role": "tool", "tool_call_id": "c2", "content": ""},
            ]
        ),
    ),
    (
        "custom tool call history and a namespaced call",
        {
            "input": [
                {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin"},
                {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"},
                {
                    "type": "function_call",
                    "call_id": "c2",
                    "name": "read",
                    "namespace": "mcp__fs__",
                    "arguments": "{}",
                },
            ]
        },
        chat(
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "apply_patch", "arguments": '{"input": "*** Begin"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "done"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c2", "type": "function", "function": {"name": "mcp__fs__read", "arguments": "{}"}}
                    ],
                },
            ]
        ),
    ),
    (
        "unknown output items dropped",
        {
            "input": [
                {"type": "web_search_call", "id": "ws", "status": "completed"},
                {"type": "compaction", "encrypted_content": "x"},
                user("q"),
            ]
        },
        chat([user("q")]),
    ),
    (
        "function tools; built-in and custom tools dropped; strict kept when true",
        {
            "input": "q",
            "tools": [
                FN,
                {"type": "web_search"},
                {"type": "local_shell"},
                {"type": "file_search", "vector_store_ids": []},
                {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
                {"type": "function", "name": "s", "parameters": {"type": "object"}, "strict": True},
                {"type": "function", "name": "n", "strict": False},
            ],
        },
        chat(
            [user("q")],
            tools=[
                CHAT_FN,
                {"type": "function", "function": {"name": "s", "parameters": {"type": "object"}, "strict": True}},
                {
                    "type": "function",
                    "function": {"name": "n", "parameters": {"type": "object", "properties": {}}},
                },
            ],
        ),
    ),
    (
        "namespace tools flattened (Codex's default namespace keeps bare names)",
        {
            "input": "q",
            "tools": [
                {
                    "type": "namespace",
                    "name": "functions",
                    "description": "d",
                    "tools": [FN, {"type": "custom", "name": "apply_patch"}],
                },
                {
                    "type": "namespace",
                    "name": "mcp__fs__",
                    "description": "d",
                    "tools": [{"type": "function", "name": "read"}],
                },
                {
                    "type": "namespace",
                    "name": "collaboration",
                    "description": "d",
                    "tools": [{"type": "function", "name": "spawn_agent"}],
                },
                {"type": "function", "name": "exec_command"},
            ],
        },
        chat(
            [user("q")],
            tools=[
                CHAT_FN,
                {
                    "type": "function",
                    "function": {"name": "mcp__fs__read", "parameters": {"type": "object", "properties": {}}},
                },
                {
                    "type": "function",
                    "function": {
                        "name": "collaboration__spawn_agent",
                        "parameters": {"type": "object", "properties": {}},
                    },
                },
            ],
        ),
    ),
    (
        "tool_choice auto",
        {"input": "q", "tools": [FN], "tool_choice": "auto"},
        chat([user("q")], tools=[CHAT_FN], tool_choice="auto"),
    ),
    (
        "tool_choice none",
        {"input": "q", "tools": [FN], "tool_choice": "none"},
        chat([user("q")], tools=[CHAT_FN], tool_choice="none"),
    ),
    (
        "tool_choice required",
        {"input": "q", "tools": [FN], "tool_choice": "required"},
        chat([user("q")], tools=[CHAT_FN], tool_choice="required"),
    ),
    (
        "tool_choice function",
        {"input": "q", "tools": [FN], "tool_choice": {"type": "function", "name": "exec_command"}},
        chat([user("q")], tools=[CHAT_FN], tool_choice={"type": "function", "function": {"name": "exec_command"}}),
    ),
    (
        "tool_choice allowed_tools → its mode",
        {"input": "q", "tools": [FN], "tool_choice": {"type": "allowed_tools", "mode": "required", "tools": [FN]}},
        chat([user("q")], tools=[CHAT_FN], tool_choice="required"),
    ),
    (
        "tool_choice of a built-in tool → auto",
        {"input": "q", "tools": [FN], "tool_choice": {"type": "web_search_preview"}},
        chat([user("q")], tools=[CHAT_FN], tool_choice="auto"),
    ),
    (
        "tool_choice without tools dropped",
        {"input": "q", "tools": [{"type": "web_search"}], "tool_choice": "required"},
        chat([user("q")]),
    ),
    (
        "max_output_tokens, temperature, top_p",
        {"input": "q", "max_output_tokens": 100, "temperature": 0.2, "top_p": 1},
        chat([user("q")], max_tokens=100, temperature=0.2, top_p=1),
    ),
    (
        "stream asks for usage",
        {"input": "q", "stream": True},
        chat([user("q")], stream=True, stream_options={"include_usage": True}),
    ),
    (
        "text.format json_object",
        {"input": "q", "text": {"format": {"type": "json_object"}}},
        chat([user("q")], response_format={"type": "json_object"}),
    ),
    (
        "text.format json_schema",
        {
            "input": "q",
            "text": {"format": {"type": "json_schema", "name": "r", "schema": {"type": "object"}, "strict": True}},
        },
        chat(
            [user("q")],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "r", "schema": {"type": "object"}, "strict": True},
            },
        ),
    ),
    (
        "text.format text",
        {"input": "q", "text": {"format": {"type": "text"}, "verbosity": "low"}},
        chat([user("q")]),
    ),
    (
        "ignored fields",
        {
            "input": "q",
            "store": False,
            "metadata": {"a": "b"},
            "client_metadata": {"x": 1},
            "reasoning": {"effort": "high", "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
            "parallel_tool_calls": True,
            "prompt_cache_key": "k",
            "service_tier": "auto",
            "previous_response_id": None,
            "something_new": [1],
        },
        chat([user("q")]),
    ),
]


@pytest.mark.parametrize(("body", "expected"), [row[1:] for row in TO_CHAT], ids=[row[0] for row in TO_CHAT])
def test_to_chat(body: dict[str, Any], expected: dict[str, Any]) -> None:
    assert to_chat({"model": "m", **body}) == expected


def test_to_chat_keeps_model_as_sent_and_without_one() -> None:
    assert to_chat({"model": "gpt-5-codex", "input": "q"})["model"] == "gpt-5-codex"
    assert "model" not in to_chat({"input": "q"})


INVALID = [
    ("previous_response_id", {"input": "q", "previous_response_id": "resp_1"}, "previous_response_id"),
    ("conversation", {"input": "q", "conversation": "conv_1"}, "conversation"),
    ("item_reference", {"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
    ("no input", {}, "input"),
    ("input a number", {"input": 3}, "input"),
    ("item not an object", {"input": ["hi"]}, "input[0]"),
    ("item without type or role", {"input": [{"content": "x"}]}, "input[0].type"),
    ("bad role", {"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
    ("content a number", {"input": [{"role": "user", "content": 1}]}, "input[0].content"),
    ("part not an object", {"input": [{"role": "user", "content": ["x"]}]}, "input[0].content[0]"),
    (
        "text part without text",
        {"input": [{"role": "user", "content": [{"type": "input_text"}]}]},
        "input[0].content[0].text",
    ),
    (
        "image without url",
        {"input": [{"role": "user", "content": [{"type": "input_image"}]}]},
        "input[0].content[0].image_url",
    ),
    (
        "call without call_id",
        {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
        "input[0].call_id",
    ),
    (
        "call without name",
        {"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]},
        "input[0].name",
    ),
    ("output without call_id", {"input": [{"type": "function_call_output", "output": "x"}]}, "input[0].call_id"),
    ("instructions not a string", {"input": "q", "instructions": ["x"]}, "instructions"),
    ("model not a string", {"input": "q", "model": 5}, "model"),
    ("tools not a list", {"input": "q", "tools": {}}, "tools"),
    ("tool not an object", {"input": "q", "tools": ["f"]}, "tools[0]"),
    ("function without name", {"input": "q", "tools": [{"type": "function"}]}, "tools[0].name"),
    (
        "parameters not an object",
        {"input": "q", "tools": [{"type": "function", "name": "f", "parameters": "x"}]},
        "tools[0].parameters",
    ),
    ("namespace without tools", {"input": "q", "tools": [{"type": "namespace", "name": "n"}]}, "tools[0]"),
    (
        "namespace function without name",
        {"input": "q", "tools": [{"type": "namespace", "name": "n", "tools": [{"type": "function"}]}]},
        "tools[0].tools[0].name",
    ),
    ("tool_choice unknown", {"input": "q", "tools": [FN], "tool_choice": "maybe"}, "tool_choice"),
    ("tool_choice a number", {"input": "q", "tools": [FN], "tool_choice": 1}, "tool_choice"),
    (
        "tool_choice function without name",
        {"input": "q", "tools": [FN], "tool_choice": {"type": "function"}},
        "tool_choice.name",
    ),
    ("max_output_tokens zero", {"input": "q", "max_output_tokens": 0}, "max_output_tokens"),
    ("max_output_tokens a bool", {"input": "q", "max_output_tokens": True}, "max_output_tokens"),
    ("max_output_tokens a string", {"input": "q", "max_output_tokens": "5"}, "max_output_tokens"),
    ("temperature a string", {"input": "q", "temperature": "hot"}, "temperature"),
    ("top_p a bool", {"input": "q", "top_p": False}, "top_p"),
    ("stream a string", {"input": "q", "stream": "yes"}, "stream"),
    ("text not an object", {"input": "q", "text": "json"}, "text"),
    (
        "json_schema without schema",
        {"input": "q", "text": {"format": {"type": "json_schema", "name": "r"}}},
        "text.format.schema",
    ),
    (
        "json_schema with a string schema",
        {"input": "q", "text": {"format": {"type": "json_schema", "name": "r", "schema": "{}"}}},
        "text.format.schema",
    ),
]


@pytest.mark.parametrize(("body", "param"), [row[1:] for row in INVALID], ids=[row[0] for row in INVALID])
def test_invalid_requests_name_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        to_chat(body)
    assert caught.value.param == param
    assert caught.value.status == 400


def test_a_body_that_is_not_an_object() -> None:
    with pytest.raises(InvalidRequestError):
        to_chat(["input"])


def test_previous_response_id_says_to_send_the_whole_conversation() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        to_chat({"input": "q", "previous_response_id": "resp_1"})
    assert "whole conversation" in caught.value.message


@pytest.mark.parametrize(
    ("namespace", "name", "flat"),
    [
        (None, "f", "f"),
        ("", "f", "f"),
        ("functions", "f", "f"),
        ("mcp__fs__", "read", "mcp__fs__read"),
        ("collab", "spawn", "collab__spawn"),
    ],
)
def test_flat_name(namespace: str | None, name: str, flat: str) -> None:
    assert flat_name(namespace, name) == flat


def test_tool_names_lists_the_namespaced_functions() -> None:
    body = {
        "tools": [
            {"type": "namespace", "name": "functions", "tools": [FN]},
            {"type": "namespace", "name": "mcp__fs__", "tools": [{"type": "function", "name": "read"}]},
            {"type": "function", "name": "plain"},
        ]
    }
    assert tool_names(body) == {"mcp__fs__read": ("mcp__fs__", "read")}
    assert tool_names({"input": "q"}) == {}


# -- from_chat --------------------------------------------------------------------------------


def answer(**fields: Any) -> Answer:
    base = {
        "id": "chatcmpl-9",
        "model": "up",
        "text": "",
        "reasoning": "",
        "tool_calls": (),
        "finish_reason": "stop",
        "input_tokens": 5,
        "output_tokens": 7,
    }
    return Answer(**{**base, **fields})


CALL_A = ToolCall("call_a", "exec_command", '{"cmd":"ls"}')
CALL_B = ToolCall("call_b", "mcp__fs__read", "")

FROM_CHAT = [
    ("text", answer(text="Hello"), "completed", None, [("message", "msg_chatcmpl-9_0", "Hello")]),
    (
        "empty text, one call",
        answer(tool_calls=(CALL_A,), finish_reason="tool_calls"),
        "completed",
        None,
        [("function_call", "fc_chatcmpl-9_0", "exec_command")],
    ),
    (
        "text and parallel calls",
        answer(text="ok", tool_calls=(CALL_A, CALL_B), finish_reason="tool_calls"),
        "completed",
        None,
        [
            ("message", "msg_chatcmpl-9_0", "ok"),
            ("function_call", "fc_chatcmpl-9_1", "exec_command"),
            ("function_call", "fc_chatcmpl-9_2", "read"),
        ],
    ),
    (
        "reasoning first",
        answer(text="a", reasoning="hmm"),
        "completed",
        None,
        [("reasoning", "rs_chatcmpl-9_0", "hmm"), ("message", "msg_chatcmpl-9_1", "a")],
    ),
    (
        "length",
        answer(text="cut", finish_reason="length"),
        "incomplete",
        "max_output_tokens",
        [("message", "msg_chatcmpl-9_0", "cut")],
    ),
    (
        "content_filter",
        answer(text="x", finish_reason="content_filter"),
        "incomplete",
        "content_filter",
        [("message", "msg_chatcmpl-9_0", "x")],
    ),
    (
        "unknown finish reason",
        answer(text="x", finish_reason="eos"),
        "completed",
        None,
        [("message", "msg_chatcmpl-9_0", "x")],
    ),
    ("nothing at all", answer(), "completed", None, []),
]


@pytest.mark.parametrize(
    ("given", "status", "reason", "items"), [row[1:] for row in FROM_CHAT], ids=[row[0] for row in FROM_CHAT]
)
def test_from_chat(given: Answer, status: str, reason: str | None, items: list[tuple[str, str, str]]) -> None:
    body = from_chat(given, "served-model", 1700000000, {"mcp__fs__read": ("mcp__fs__", "read")})
    parsed = Response.model_validate(body)  # every field the SDK requires, with its type
    assert (body["id"], body["object"], body["created_at"], body["model"]) == (
        "resp_chatcmpl-9",
        "response",
        1700000000,
        "served-model",
    )
    assert body["status"] == status
    assert body["incomplete_details"] == ({"reason": reason} if reason else None)
    assert body["error"] is None
    seen = []
    for item in body["output"]:
        if item["type"] == "message":
            assert item["role"] == "assistant" and item["content"][0]["type"] == "output_text"
            seen.append(("message", item["id"], item["content"][0]["text"]))
        elif item["type"] == "reasoning":
            seen.append(("reasoning", item["id"], item["content"][0]["text"]))
        else:
            json.loads(item["arguments"])
            seen.append(("function_call", item["id"], item["name"]))
        assert item["status"] == ("incomplete" if status == "incomplete" else "completed")
    assert seen == items
    assert body["usage"] == {
        "input_tokens": 5,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 12,
    }
    assert parsed.output_text == "".join(text for kind, _, text in items if kind == "message")


def test_from_chat_calls_name_their_namespace_and_empty_arguments_become_an_object() -> None:
    body = from_chat(answer(tool_calls=(CALL_A, CALL_B)), "m", 1, {"mcp__fs__read": ("mcp__fs__", "read")})
    plain, namespaced = body["output"]
    assert "namespace" not in plain and plain["call_id"] == "call_a" and plain["arguments"] == '{"cmd":"ls"}'
    assert (namespaced["namespace"], namespaced["name"], namespaced["arguments"]) == ("mcp__fs__", "read", "{}")


@pytest.mark.parametrize(
    ("status", "type_"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (404, "model_not_found"),
        (413, "invalid_request_error"),
        (429, "rate_limit_error"),
        (502, "provider_error"),
        (503, "service_unavailable"),
        (508, "loop_detected"),
    ],
)
def test_render_error(status: int, type_: str) -> None:
    assert render_error(status, type_, "why") == {
        "error": {"message": "why", "type": type_, "param": None, "code": type_}
    }


# -- streams ----------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, int] | None = None) -> str:
    body: dict[str, Any] = {"id": "chatcmpl-AbC.1", "object": "chat.completion.chunk", "created": 1, "model": "up"}
    body["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    if usage is not None:
        body["usage"] = usage
    return "data: " + json.dumps(body) + "\n\n"


def call(index: int, call_id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": args}
    entry: dict[str, Any] = {"index": index, "function": function}
    if call_id:
        entry.update(id=call_id, type="function")
        function["name"] = name
    return {"tool_calls": [entry]}


USAGE = chunk(None, usage={"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33})
DONE = "data: [DONE]\n\n"

STREAMS = {
    "text only": chunk({"role": "assistant", "content": ""})
    + chunk({"content": "Hel"})
    + chunk({"content": "lo ✓"})
    + chunk({}, "stop")
    + USAGE
    + DONE,
    "reasoning then text": chunk({"role": "assistant", "reasoning_content": "Let me"})
    + chunk({"reasoning_content": " think"})
    + chunk({"content": "42"})
    + chunk({}, "stop")
    + USAGE
    + DONE,
    "one call in fragments": chunk({"role": "assistant", "content": None})
    + chunk(call(0, "call_1", "exec_command"))
    + chunk(call(0, args='{"cmd'))
    + chunk(call(0, args='":"cat a.txt"}'))
    + chunk({}, "tool_calls")
    + USAGE
    + DONE,
    "text then two parallel calls": chunk({"role": "assistant", "content": "Reading."})
    + chunk(call(0, "call_1", "exec_command", '{"cmd":"ls"}'))
    + chunk(call(1, "call_2", "mcp__fs__read", ""))
    + chunk(call(1, args='{"path":"a"}'))
    + chunk({}, "tool_calls")
    + USAGE
    + DONE,
    "interleaved parallel calls": chunk(call(0, "call_1", "exec_command"))
    + chunk(call(1, "call_2", "exec_command"))
    + chunk(call(0, args='{"cmd":'))
    + chunk(call(1, args='{"cmd":'))
    + chunk(call(1, args='"pwd"}'))
    + chunk(call(0, args='"ls"}'))
    + chunk({}, "tool_calls")
    + USAGE,
    "finish without [DONE] or usage": chunk({"content": "short"}) + chunk({}, "stop"),
    "length": chunk({"content": "trunc"}) + chunk({}, "length") + USAGE + DONE,
    "crlf framing": (chunk({"content": "a"}) + chunk({}, "stop") + DONE).replace("\n", "\r\n"),
}
NAMES = {"mcp__fs__read": ("mcp__fs__", "read")}


def translate(pieces: list[bytes]) -> bytes:
    stream = ResponsesStream("served", 1700000000, NAMES)
    out = b"".join(stream.feed(piece) for piece in pieces)
    assert stream.complete
    return out + stream.feed(b"\n\n") + stream.end()  # the relay's flush, then the end


def events_of(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    return [(sse.event, sse.json()) for sse in SSEDecoder().iter_bytes(iter([raw]))]


def sdk_replay(raw: bytes) -> tuple[list[dict[str, Any]], Any]:
    """Every event through the SDK's types (validated) and its stream accumulator."""
    state = ResponseStreamState(input_tools=Omit(), text_format=Omit())
    data = []
    for number, (name, body) in enumerate(events_of(raw)):
        assert name == body["type"]
        assert body["sequence_number"] == number
        assert "error" not in body  # a top-level error makes the SDK raise (openai._streaming)
        state.handle_event(EVENTS.validate_python(body))
        data.append(body)
    return data, state._completed_response


@pytest.mark.parametrize("name", list(STREAMS))
def test_stream_is_the_same_however_it_is_split(name: str) -> None:
    raw = STREAMS[name].encode()
    whole = translate([raw])
    assert translate([raw[i : i + 1] for i in range(len(raw))]) == whole
    for cut in range(1, len(raw)):
        assert translate([raw[:cut], raw[cut:]]) == whole, cut


EXPECTED = {
    # name: (items as (type, text or name, arguments), status, usage)
    "text only": ([("message", "Hello ✓", None)], "completed", (11, 22)),
    "reasoning then text": ([("reasoning", "Let me think", None), ("message", "42", None)], "completed", (11, 22)),
    "one call in fragments": ([("function_call", "exec_command", '{"cmd":"cat a.txt"}')], "completed", (11, 22)),
    "text then two parallel calls": (
        [
            ("message", "Reading.", None),
            ("function_call", "exec_command", '{"cmd":"ls"}'),
            ("function_call", "read", '{"path":"a"}'),
        ],
        "completed",
        (11, 22),
    ),
    "interleaved parallel calls": (
        [("function_call", "exec_command", '{"cmd":"ls"}'), ("function_call", "exec_command", '{"cmd":"pwd"}')],
        "completed",
        (11, 22),
    ),
    "finish without [DONE] or usage": ([("message", "short", None)], "completed", (0, 0)),
    "length": ([("message", "trunc", None)], "incomplete", (11, 22)),
    "crlf framing": ([("message", "a", None)], "completed", (0, 0)),
}


def summary(item: dict[str, Any]) -> tuple[str, str, str | None]:
    if item["type"] == "message":
        return ("message", item["content"][0]["text"], None)
    if item["type"] == "reasoning":
        return ("reasoning", item["content"][0]["text"], None)
    return ("function_call", item["name"], item["arguments"])


@pytest.mark.parametrize("name", list(STREAMS))
def test_stream_reads_back_with_the_sdk_and_as_codex_needs(name: str) -> None:
    items, status, usage = EXPECTED[name]
    data, final = sdk_replay(translate([STREAMS[name].encode()]))
    kinds = [body["type"] for body in data]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed" and kinds.count("response.completed") == 1
    assert "response.failed" not in kinds and "response.incomplete" not in kinds
    assert data[0]["response"]["id"] == "resp_chatcmpl-AbC_1" and data[0]["response"]["status"] == "in_progress"
    # Codex takes the items from output_item.done, whole, in output order.
    done = [body for body in data if body["type"] == "response.output_item.done"]
    assert [summary(body["item"]) for body in sorted(done, key=lambda body: body["output_index"])] == items
    added = [body["output_index"] for body in data if body["type"] == "response.output_item.added"]
    assert added == list(range(len(items)))  # the SDK appends items in the order they are added
    completed = data[-1]["response"]
    assert completed["id"] == "resp_chatcmpl-AbC_1" and completed["status"] == status
    assert completed["incomplete_details"] == ({"reason": "max_output_tokens"} if status == "incomplete" else None)
    assert [summary(item) for item in completed["output"]] == items
    assert (completed["usage"]["input_tokens"], completed["usage"]["output_tokens"]) == usage
    assert completed["usage"]["total_tokens"] == sum(usage)
    assert final.output_text == "".join(text for kind, text, _ in items if kind == "message")
    for body in data:  # every fragment lands on the item it names
        if body["type"].endswith(".delta"):
            item = next(d["item"] for d in done if d["output_index"] == body["output_index"])
            assert body["item_id"] == item["id"]


def test_namespaced_calls_name_their_namespace_in_the_stream() -> None:
    data, _ = sdk_replay(translate([STREAMS["text then two parallel calls"].encode()]))
    added = [
        body["item"]
        for body in data
        if body["type"] == "response.output_item.added" and body["item"]["type"] == "function_call"
    ]
    assert [(item.get("namespace"), item["name"]) for item in added] == [
        (None, "exec_command"),
        ("mcp__fs__", "read"),
    ]
    assert [(item["call_id"], item["status"]) for item in added] == [
        ("call_1", "in_progress"),
        ("call_2", "in_progress"),
    ]
    done = [body["name"] for body in data if body["type"] == "response.function_call_arguments.done"]
    assert done == ["exec_command", "read"]


def test_empty_text_opens_no_message_item() -> None:
    raw = (
        chunk({"role": "assistant", "content": ""})
        + chunk(call(0, "call_1", "f", "{}"))
        + chunk({"content": ""})
        + chunk({}, "tool_calls")
    ).encode()
    data, _ = sdk_replay(translate([raw]))
    assert [body["item"]["type"] for body in data if body["type"] == "response.output_item.added"] == ["function_call"]


def test_usage_after_finish_reaches_the_completed_response_only() -> None:
    stream = ResponsesStream("m", 1)
    first = stream.feed((chunk({"content": "a"}) + chunk({}, "stop")).encode())
    assert b"response.output_item.done" in first and b"response.completed" not in first
    stream.feed(USAGE.encode())
    completed = events_of(stream.end())[-1][1]
    assert completed["response"]["usage"]["input_tokens"] == 11


def test_nothing_is_sent_before_the_first_chunk_is_whole() -> None:
    stream = ResponsesStream("m", 1)
    raw = chunk({"content": "a"}).encode()
    assert stream.feed(raw[:20]) == b""
    assert stream.feed(raw[20:]).startswith(b"event: response.created\n")


CUT_STREAMS = ["text only", "reasoning then text", "text then two parallel calls", "interleaved parallel calls"]


@pytest.mark.parametrize("name", CUT_STREAMS)
def test_a_cut_at_any_point_ends_with_response_failed(name: str) -> None:
    raw = STREAMS[name].encode()
    for cut in range(len(raw) + 1):
        stream = ResponsesStream("m", 1, NAMES)
        out = stream.feed(raw[:cut]) + stream.fail("upstream cut")
        assert stream.end() == b"" and stream.feed(b"data: x\n\n") == b"" and stream.fail("again") == b""
        data = [body for _, body in events_of(out)]
        kinds = [body["type"] for body in data]
        assert kinds[:2] == ["response.created", "response.in_progress"], cut
        assert kinds[-1] == "response.failed" and kinds.count("response.failed") == 1, cut
        assert "response.completed" not in kinds
        failed = data[-1]["response"]
        assert failed["status"] == "failed" and failed["error"] == {
            "code": "server_error",
            "message": "upstream cut",
        }
        assert [body["sequence_number"] for body in data] == list(range(len(data)))
        if cut in (0, len(raw) // 2, len(raw)):
            sdk_replay(out)  # the SDK takes it; its final response is never set
            Response.model_validate(failed)


def test_an_upstream_error_event_fails_at_once_and_ignores_the_rest() -> None:
    error = 'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n'
    raw = (chunk({"content": "partial"}) + error + chunk({"content": "more"}) + chunk({}, "stop")).encode()
    stream = ResponsesStream("m", 1)
    out = stream.feed(raw)
    kinds = [body["type"] for _, body in events_of(out)]
    assert kinds[-1] == "response.failed" and "response.output_text.done" not in kinds
    assert events_of(out)[-1][1]["response"]["error"]["message"] == "overloaded"
    assert stream.feed(chunk({"content": "x"}).encode()) == b"" and stream.end() == b"" and stream.fail("x") == b""


def test_fail_before_any_data_still_opens_the_response() -> None:
    out = ResponsesStream("m", 1).fail("stalled")
    data, final = sdk_replay(out)
    assert [body["type"] for body in data] == ["response.created", "response.in_progress", "response.failed"]
    assert data[0]["response"]["id"] == "resp_gw" and final is None


def test_end_twice_and_the_media_type() -> None:
    stream = ResponsesStream("m", 1)
    stream.feed(STREAMS["text only"].encode())
    assert stream.end().endswith(b"}\n\n") and stream.end() == b""
    assert stream.media_type == "text/event-stream"


# -- the openai client itself, over a scripted transport ----------------------------------------


def client_for(handler: Any) -> Any:
    import httpx
    from openai import OpenAI

    return OpenAI(
        api_key="k",
        base_url="http://gw/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        max_retries=0,
    )


def test_the_openai_client_streams_a_tool_round_trip() -> None:
    import httpx

    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(to_chat(body))
        stream = ResponsesStream("served", 1700000000, tool_names(body))
        out = stream.feed(STREAMS["text then two parallel calls"].encode()) + stream.end()
        return httpx.Response(200, headers={"content-type": stream.media_type}, content=out)

    tools = [
        {
            "type": "function",
            "name": "exec_command",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        }
    ]
    with client_for(handler).responses.stream(model="gpt-5-codex", input="list files", tools=tools) as events:
        deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
        final = events.get_final_response()
    assert deltas == ["Reading."] and final.output_text == "Reading."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call_1", "exec_command", '{"cmd":"ls"}'),
        ("call_2", "mcp__fs__read", '{"path":"a"}'),
    ]
    assert seen[0]["stream"] is True and seen[0]["tools"][0]["function"]["name"] == "exec_command"


def test_the_openai_client_reports_a_failed_stream_and_reads_an_answer() -> None:
    import httpx

    def streaming(request: httpx.Request) -> httpx.Response:
        stream = ResponsesStream("served", 1)
        out = stream.feed(chunk({"content": "par"}).encode()) + stream.fail("the upstream stream failed")
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=out)

    with client_for(streaming).responses.stream(model="m", input="q") as events:
        kinds = [event.type for event in events]
        assert kinds[-1] == "response.failed"
        with pytest.raises(RuntimeError):
            events.get_final_response()

    def answering(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=from_chat(answer(text="Hi", finish_reason="length"), "served", 1))

    response = client_for(answering).responses.create(model="m", input="q")
    assert (response.output_text, response.status, response.incomplete_details.reason) == (
        "Hi",
        "incomplete",
        "max_output_tokens",
    )


def test_an_empty_input_is_refused() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        to_chat({"input": [{"type": "reasoning", "summary": []}]})
    assert caught.value.param == "input"


def test_cached_prompt_tokens_are_reported_as_the_responses_api_does() -> None:
    """input_tokens includes them; input_tokens_details.cached_tokens says how many (SPEC §12.3)."""
    counts = {"prompt_tokens": 1200, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 1024}}
    raw = chunk({"role": "assistant", "content": "hi"}) + chunk({}, "stop") + chunk(None, usage=counts) + DONE
    data, _ = sdk_replay(translate([raw.encode()]))
    streamed = data[-1]["response"]["usage"]
    answered = from_chat(answer(input_tokens=1200, output_tokens=7, cached_tokens=1024), "m", 1)["usage"]

    assert (
        streamed
        == answered
        == {
            "input_tokens": 1200,
            "input_tokens_details": {"cached_tokens": 1024},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 1207,
        }
    )
