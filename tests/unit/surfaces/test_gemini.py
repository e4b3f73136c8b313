"""Gemini surface (SPEC §12.4): request → chat, answer → Gemini, stream translation, errors, models.

Streams are realistic OpenAI chat streams, fed whole, split at every byte boundary, one byte per
read and cut at every point. When ``google-genai`` is importable, the translated bytes are also
read back by the real SDK through an httpx mock transport (its SSE reader, error raising and
pydantic types).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.errors import InvalidRequestError
from gateway.surfaces.chat import Answer, ToolCall
from gateway.surfaces.gemini import (
    GeminiStream,
    count_tokens,
    from_chat,
    render_error,
    to_chat,
)
from gateway.surfaces.models import gemini_model, gemini_models

# ---------------------------------------------------------------- request → chat

USER_HI = {"role": "user", "parts": [{"text": "hi"}]}


def _chat(**body: Any) -> dict[str, Any]:
    return to_chat({"contents": [USER_HI], **body}, "models/gemini-2.5-pro", False)


REQUEST_CASES = [
    ("model prefix stripped, text", {}, {"model": "gemini-2.5-pro", "messages": [{"role": "user", "content": "hi"}]}),
    (
        "systemInstruction parts",
        {"systemInstruction": {"parts": [{"text": "be"}, {"text": "brief"}]}},
        {"messages": [{"role": "system", "content": "be\nbrief"}, {"role": "user", "content": "hi"}]},
    ),
    (
        "systemInstruction string",
        {"systemInstruction": "be brief"},
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]},
    ),
    ("temperature", {"generationConfig": {"temperature": 0.2}}, {"temperature": 0.2}),
    ("topP", {"generationConfig": {"topP": 0.9}}, {"top_p": 0.9}),
    ("topK", {"generationConfig": {"topK": 40}}, {"top_k": 40}),
    ("maxOutputTokens", {"generationConfig": {"maxOutputTokens": 100}}, {"max_tokens": 100}),
    ("stopSequences", {"generationConfig": {"stopSequences": ["END"]}}, {"stop": ["END"]}),
    (
        "presence/frequency/seed",
        {"generationConfig": {"presencePenalty": 0.5, "frequencyPenalty": 0.1, "seed": 7}},
        {"presence_penalty": 0.5, "frequency_penalty": 0.1, "seed": 7},
    ),
    ("candidateCount 1", {"generationConfig": {"candidateCount": 1}}, {}),
    (
        "json mime",
        {"generationConfig": {"responseMimeType": "application/json"}},
        {"response_format": {"type": "json_object"}},
    ),
    ("text mime", {"generationConfig": {"responseMimeType": "text/plain"}}, {}),
    (
        "ignored fields",
        {
            "thinkingConfig": {"thinkingBudget": 0},
            "safetySettings": [{"category": "X"}],
            "cachedContent": "c",
            "labels": {"a": "b"},
            "whatever": 1,
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
        },
        {},
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES])
def test_request_fields(body: dict[str, Any], expected: dict[str, Any]) -> None:
    chat = _chat(**body)
    for key, value in expected.items():
        assert chat[key] == value
    base = {
        "model",
        "messages",
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "stop",
        "response_format",
        "presence_penalty",
        "frequency_penalty",
        "seed",
    }
    assert set(chat) <= base
    assert "stream" not in chat


def test_stream_flag_asks_for_usage() -> None:
    chat = to_chat({"contents": [USER_HI]}, "gemini-x", True)
    assert chat["stream"] is True and chat["stream_options"] == {"include_usage": True}


IMAGE = {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}

CONTENT_CASES = [
    (
        "inlineData image and fileData",
        [
            {
                "role": "user",
                "parts": [
                    {"text": "look"},
                    IMAGE,
                    {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://x/y.jpg"}},
                ],
            }
        ],
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                    {"type": "image_url", "image_url": {"url": "https://x/y.jpg"}},
                ],
            }
        ],
    ),
    (
        "several text parts joined",
        [{"role": "user", "parts": [{"text": "a"}, {"text": "b"}]}],
        [{"role": "user", "content": "a\nb"}],
    ),
    ("no role is user", [{"parts": [{"text": "a"}]}], [{"role": "user", "content": "a"}]),
    (
        "model text, thought dropped, signature ignored",
        [
            USER_HI,
            {
                "role": "model",
                "parts": [
                    {"text": "secret", "thought": True},
                    {"text": "Hel", "thoughtSignature": "sig"},
                    {"text": "lo"},
                ],
            },
        ],
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}],
    ),
    (
        "call and response with ids (Gemini CLI)",
        [
            USER_HI,
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"id": "read__c1", "name": "read", "args": {"p": "a.txt"}},
                        "thoughtSignature": "s",
                    }
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"id": "read__c1", "name": "read", "response": {"output": "x"}}}],
            },
        ],
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "read__c1", "type": "function", "function": {"name": "read", "arguments": '{"p":"a.txt"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "read__c1", "content": '{"output":"x"}'},
        ],
    ),
    (
        "parallel calls without ids pair by name and order",
        [
            USER_HI,
            {
                "role": "model",
                "parts": [
                    {"text": "checking"},
                    {"functionCall": {"name": "read", "args": {"p": 1}}},
                    {"functionCall": {"name": "ls"}},
                    {"functionCall": {"name": "read", "args": {"p": 2}}},
                ],
            },
            {
                "role": "function",
                "parts": [
                    {"functionResponse": {"name": "ls", "response": {"r": "ls"}}},
                    {"functionResponse": {"name": "read", "response": {"r": 1}}},
                    {"functionResponse": {"name": "read", "response": {"r": 2}}},
                    {"text": "go on"},
                ],
            },
        ],
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "checking",
                "tool_calls": [
                    {"id": "call_read_0", "type": "function", "function": {"name": "read", "arguments": '{"p":1}'}},
                    {"id": "call_ls_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                    {"id": "call_read_2", "type": "function", "function": {"name": "read", "arguments": '{"p":2}'}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_ls_1", "content": '{"r":"ls"}'},
            {"role": "tool", "tool_call_id": "call_read_0", "content": '{"r":1}'},
            {"role": "tool", "tool_call_id": "call_read_2", "content": '{"r":2}'},
            {"role": "user", "content": "go on"},
        ],
    ),
    (
        "response before its text, unknown parts and empty turns skipped",
        [
            USER_HI,
            {
                "role": "model",
                "parts": [{"functionCall": {"name": "run", "args": {}}}, {"executableCode": {"code": "1"}}],
            },
            {"role": "user", "parts": [{"text": "and"}, {"functionResponse": {"name": "run", "response": {}}}]},
            {"role": "model", "parts": [{"text": "only thought", "thought": True}]},
            {"role": "user", "parts": []},
        ],
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_run_0", "type": "function", "function": {"name": "run", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_run_0", "content": "{}"},
            {"role": "user", "content": "and"},
        ],
    ),
    (
        "text media decoded, other media noted, nested tool media follow the tool message",
        [
            {
                "role": "user",
                "parts": [
                    {"inlineData": {"mimeType": "text/plain", "data": "aMOpbGxv"}},
                    {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
                    {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}},
                    {
                        "functionResponse": {
                            "id": "c9",
                            "name": "read_file",
                            "response": {"output": "img"},
                            "parts": [IMAGE],
                        }
                    },
                ],
            }
        ],
        [
            {"role": "tool", "tool_call_id": "c9", "content": '{"output":"img"}'},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "héllo"},
                    {
                        "type": "text",
                        "text": "[application/pdf data left out: this gateway passes on text and images only]",
                    },
                    {
                        "type": "text",
                        "text": "[video/mp4 file gs://b/v.mp4 left out: this gateway passes on text and images only]",
                    },
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                ],
            },
        ],
    ),
    (
        "orphan response gets a derived id",
        [{"role": "user", "parts": [{"functionResponse": {"name": "x", "response": {"a": 1}}}]}],
        [{"role": "tool", "tool_call_id": "call_x_0", "content": '{"a":1}'}],
    ),
]


@pytest.mark.parametrize(("contents", "messages"), [c[1:] for c in CONTENT_CASES], ids=[c[0] for c in CONTENT_CASES])
def test_contents(contents: list[Any], messages: list[Any]) -> None:
    assert to_chat({"contents": contents}, "m", False)["messages"] == messages


GEMINI_SCHEMA = {
    "type": "OBJECT",
    "properties": {
        "path": {"type": "STRING", "description": "file", "nullable": True},
        "mode": {"type": "STRING", "enum": ["r", "w"], "format": "enum"},
        "lines": {"type": "ARRAY", "items": {"type": "INTEGER"}, "minItems": "1"},
        "any": {"anyOf": [{"type": "NUMBER"}, {"type": "BOOLEAN"}]},
    },
    "required": ["path"],
    "propertyOrdering": ["path", "mode"],
}
JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "file"},
        "mode": {"type": "string", "enum": ["r", "w"], "format": "enum"},
        "lines": {"type": "array", "items": {"type": "integer"}, "minItems": "1"},
        "any": {"anyOf": [{"type": "number"}, {"type": "boolean"}]},
    },
    "required": ["path"],
}
RAW_SCHEMA = {"type": "object", "properties": {"cmd": {"type": ["string", "null"]}}, "additionalProperties": False}
TOOLS = [
    {
        "functionDeclarations": [
            {"name": "read", "description": "Read a file", "parameters": GEMINI_SCHEMA},
            {"name": "shell", "parametersJsonSchema": RAW_SCHEMA},
            {"name": "noargs"},
        ]
    },
    {"googleSearch": {}},
    {"codeExecution": {}},
]
FUNCTION_TOOLS = [
    {"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": JSON_SCHEMA}},
    {"type": "function", "function": {"name": "shell", "parameters": RAW_SCHEMA}},
    {"type": "function", "function": {"name": "noargs", "parameters": {"type": "object", "properties": {}}}},
]


def test_tools() -> None:
    chat = _chat(tools=TOOLS)
    assert chat["tools"] == FUNCTION_TOOLS
    assert "tool_choice" not in chat


def test_builtin_tools_only_are_dropped() -> None:
    assert "tools" not in _chat(tools=[{"googleSearch": {}}])


TOOL_CHOICE_CASES = [
    ("AUTO", {"mode": "AUTO"}, "auto", 3),
    ("ANY", {"mode": "ANY"}, "required", 3),
    ("NONE", {"mode": "NONE"}, "none", 3),
    ("VALIDATED", {"mode": "VALIDATED"}, "auto", 3),
    ("no mode", {}, "auto", 3),
    (
        "ANY one name",
        {"mode": "ANY", "allowedFunctionNames": ["shell"]},
        {"type": "function", "function": {"name": "shell"}},
        3,
    ),
    ("ANY two names", {"mode": "ANY", "allowedFunctionNames": ["shell", "read"]}, "required", 2),
]


@pytest.mark.parametrize(
    ("config", "choice", "count"), [c[1:] for c in TOOL_CHOICE_CASES], ids=[c[0] for c in TOOL_CHOICE_CASES]
)
def test_tool_config(config: dict[str, Any], choice: Any, count: int) -> None:
    chat = _chat(tools=TOOLS, toolConfig={"functionCallingConfig": config})
    assert chat["tool_choice"] == choice
    assert len(chat["tools"]) == count


INVALID_CASES = [
    ("body", "not an object"),
    ("contents", {}),
    ("contents", {"contents": []}),
    ("contents", {"contents": "hi"}),
    ("contents[0]", {"contents": ["hi"]}),
    ("contents[0].parts", {"contents": [{"parts": "hi"}]}),
    ("contents[0].parts[0]", {"contents": [{"parts": ["hi"]}]}),
    ("contents[0].parts[0].text", {"contents": [{"parts": [{"text": 1}]}]}),
    (
        "contents[0].parts[0].inlineData.data",
        {"contents": [{"parts": [{"inlineData": {"mimeType": "text/plain", "data": "*"}}]}]},
    ),
    (
        "contents[0].parts[0].functionResponse.parts[0].inlineData.mimeType",
        {"contents": [{"parts": [{"functionResponse": {"name": "r", "parts": [{"inlineData": {"data": "x"}}]}}]}]},
    ),
    ("contents[0].parts[0].inlineData.data", {"contents": [{"parts": [{"inlineData": {"mimeType": "image/png"}}]}]}),
    ("contents[0].parts[0].fileData.fileUri", {"contents": [{"parts": [{"fileData": {}}]}]}),
    ("contents", {"contents": [{"role": "model", "parts": [{"text": "t", "thought": True}]}]}),
    (
        "contents[0].parts[0].functionCall.name",
        {"contents": [{"role": "model", "parts": [{"functionCall": {"args": {}}}]}]},
    ),
    (
        "contents[0].parts[0].functionCall.args",
        {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "a", "args": "x"}}]}]},
    ),
    ("contents[0].parts[0].functionResponse.name", {"contents": [{"parts": [{"functionResponse": {"response": {}}}]}]}),
    ("systemInstruction", {"contents": [USER_HI], "systemInstruction": 3}),
    ("tools", {"contents": [USER_HI], "tools": {}}),
    ("tools[0].functionDeclarations[0].name", {"contents": [USER_HI], "tools": [{"functionDeclarations": [{}]}]}),
    (
        "tools[0].functionDeclarations[0].parameters",
        {"contents": [USER_HI], "tools": [{"functionDeclarations": [{"name": "a", "parameters": []}]}]},
    ),
    (
        "toolConfig.functionCallingConfig.mode",
        {"contents": [USER_HI], "tools": TOOLS, "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}},
    ),
    ("generationConfig", {"contents": [USER_HI], "generationConfig": []}),
    ("generationConfig.temperature", {"contents": [USER_HI], "generationConfig": {"temperature": "hot"}}),
    ("generationConfig.maxOutputTokens", {"contents": [USER_HI], "generationConfig": {"maxOutputTokens": 1.5}}),
    ("generationConfig.topK", {"contents": [USER_HI], "generationConfig": {"topK": True}}),
    ("generationConfig.stopSequences", {"contents": [USER_HI], "generationConfig": {"stopSequences": "END"}}),
    ("generationConfig.stopSequences[0]", {"contents": [USER_HI], "generationConfig": {"stopSequences": [1]}}),
    ("generationConfig.candidateCount", {"contents": [USER_HI], "generationConfig": {"candidateCount": 2}}),
]


@pytest.mark.parametrize(("param", "body"), INVALID_CASES, ids=[c[0] + f"#{i}" for i, c in enumerate(INVALID_CASES)])
def test_invalid_request_names_the_field(param: str, body: Any) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        to_chat(body, "m", False)
    assert raised.value.param == param
    assert raised.value.status == 400 and param in raised.value.message


@pytest.mark.parametrize(
    "body",
    [
        {"contents": [{"parts": [{"text": "abcdefgh"}]}]},
        {"generateContentRequest": {"model": "models/x", "contents": [{"parts": [{"text": "abcdefgh"}]}]}},
    ],
    ids=["contents", "generateContentRequest"],
)
def test_count_tokens(body: dict[str, Any]) -> None:
    prompt = '{"messages":[{"role":"user","content":"abcdefgh"}]}'  # the translated prompt, as compact JSON

    assert count_tokens(body, "models/x") == {"totalTokens": -(-len(prompt) // 4)}  # 51 characters: 13


def test_count_tokens_counts_tools_and_system() -> None:
    small = count_tokens({"contents": [USER_HI]}, "m")["totalTokens"]
    big = count_tokens({"contents": [USER_HI], "tools": TOOLS, "systemInstruction": "x" * 400}, "m")["totalTokens"]
    assert big > small + 100


# ---------------------------------------------------------------- errors and models

ERROR_CASES = [
    (400, "invalid_request_error", "INVALID_ARGUMENT"),
    (401, "authentication_error", "UNAUTHENTICATED"),
    (403, "permission_error", "PERMISSION_DENIED"),
    (404, "model_not_found", "NOT_FOUND"),
    (405, "invalid_request_error", "INVALID_ARGUMENT"),
    (413, "invalid_request_error", "INVALID_ARGUMENT"),
    (429, "rate_limit_error", "RESOURCE_EXHAUSTED"),
    (500, "server_error", "INTERNAL"),
    (502, "provider_error", "INTERNAL"),
    (503, "service_unavailable", "UNAVAILABLE"),
    (508, "loop_detected", "INTERNAL"),
]


@pytest.mark.parametrize(("status", "type_", "name"), ERROR_CASES, ids=[str(c[0]) for c in ERROR_CASES])
def test_render_error(status: int, type_: str, name: str) -> None:
    assert render_error(status, type_, "why") == {"error": {"code": status, "message": "why", "status": name}}


# ---------------------------------------------------------------- answers


def _answer(**fields: Any) -> Answer:
    base: dict[str, Any] = {
        "id": "chatcmpl-9",
        "model": "up",
        "text": "",
        "reasoning": "",
        "tool_calls": (),
        "finish_reason": "stop",
        "input_tokens": 11,
        "output_tokens": 4,
    }
    return Answer(**{**base, **fields})


CALL_A = ToolCall("call_a", "read", '{"p":"a.txt"}')
CALL_B = ToolCall("call_b", "ls", "")
ANSWER_CASES = [
    ("text", {"text": "Hello"}, [{"text": "Hello"}], "STOP"),
    ("empty text", {"text": ""}, [], "STOP"),
    ("reasoning", {"reasoning": "think", "text": "Hi"}, [{"text": "think", "thought": True}, {"text": "Hi"}], "STOP"),
    ("length", {"text": "Hel", "finish_reason": "length"}, [{"text": "Hel"}], "MAX_TOKENS"),
    ("content_filter", {"finish_reason": "content_filter"}, [], "SAFETY"),
    ("unknown reason", {"text": "x", "finish_reason": "eos"}, [{"text": "x"}], "STOP"),
    (
        "one call",
        {"tool_calls": (CALL_A,), "finish_reason": "tool_calls"},
        [{"functionCall": {"name": "read", "args": {"p": "a.txt"}, "id": "call_a"}}],
        "STOP",
    ),
    (
        "parallel calls and text",
        {"text": "ok", "tool_calls": (CALL_A, CALL_B), "finish_reason": "tool_calls"},
        [
            {"text": "ok"},
            {"functionCall": {"name": "read", "args": {"p": "a.txt"}, "id": "call_a"}},
            {"functionCall": {"name": "ls", "args": {}, "id": "call_b"}},
        ],
        "STOP",
    ),
    (
        "malformed args",
        {"tool_calls": (ToolCall("c", "x", "{oops"), CALL_A), "finish_reason": "tool_calls"},
        [{"functionCall": {"name": "read", "args": {"p": "a.txt"}, "id": "call_a"}}],
        "MALFORMED_FUNCTION_CALL",
    ),
    (
        "array args",
        {"tool_calls": (ToolCall("c", "x", "[1]"),), "finish_reason": "tool_calls"},
        [],
        "MALFORMED_FUNCTION_CALL",
    ),
]


@pytest.mark.parametrize(("fields", "parts", "reason"), [c[1:] for c in ANSWER_CASES], ids=[c[0] for c in ANSWER_CASES])
def test_from_chat(fields: dict[str, Any], parts: list[Any], reason: str) -> None:
    body = from_chat(_answer(**fields), "served-model")
    assert body == {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": reason, "index": 0}],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 4, "totalTokenCount": 15},
        "modelVersion": "served-model",
        "responseId": "chatcmpl-9",
    }
    json.dumps(body, allow_nan=False)


# ---------------------------------------------------------------- streams


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, int] | None = None) -> str:
    body: dict[str, Any] = {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "up",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage["in"],
            "completion_tokens": usage["out"],
            "total_tokens": usage["in"] + usage["out"],
        }
    return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"


USAGE = {"in": 21, "out": 9}
DONE = "data: [DONE]\n\n"


def _call(index: int, args: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if call_id:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return {"tool_calls": [call]}


STREAMS: dict[str, str] = {
    "text": _chunk({"role": "assistant", "content": ""})
    + _chunk({"content": "Héllo"})
    + _chunk({"content": ", wörld\u2028!"})
    + _chunk({}, "stop")
    + _chunk(None, usage=USAGE)
    + DONE,
    "reasoning_text": _chunk({"role": "assistant", "reasoning_content": "Let me "})
    + _chunk({"reasoning_content": "think"})
    + _chunk({"content": "42"})
    + _chunk({}, "stop")
    + _chunk(None, usage=USAGE)
    + DONE,
    "one_tool": _chunk({"role": "assistant", "content": "Reading"})
    + _chunk(_call(0, "", "call_x1", "read_file"))
    + _chunk(_call(0, '{"pa'))
    + _chunk(_call(0, 'th":"a.'))
    + _chunk(_call(0, 'txt"}'))
    + _chunk({}, "tool_calls")
    + _chunk(None, usage=USAGE)
    + DONE,
    "parallel_tools": _chunk({"role": "assistant"})
    + _chunk(_call(0, '{"p":', "call_1", "read"))
    + _chunk(_call(0, "1}"))
    + _chunk(_call(1, "", "call_2", "ls"))
    + _chunk(_call(1, '{"d":"."}'))
    + _chunk({}, "tool_calls")
    + _chunk(None, usage=USAGE)
    + DONE,
    "length_no_done": _chunk({"role": "assistant", "content": "trunc"})
    + _chunk({"content": "ated"}, "length")
    + _chunk(None, usage=USAGE),
    "finish_no_usage_no_done": _chunk({"content": "a"}) + _chunk({}, "stop"),
    "crlf_framing": (_chunk({"content": "x"}) + _chunk({}, "content_filter") + DONE).replace("\n", "\r\n"),
}

# What a client sees once it has read a stream: (thought?, text) runs, calls, finish, usage.
EXPECTED: dict[str, dict[str, Any]] = {
    "text": {"texts": [(False, "Héllo, wörld\u2028!")], "calls": [], "finish": "STOP", "usage": (21, 9)},
    "reasoning_text": {
        "texts": [(True, "Let me think"), (False, "42")],
        "calls": [],
        "finish": "STOP",
        "usage": (21, 9),
    },
    "one_tool": {
        "texts": [(False, "Reading")],
        "calls": [{"name": "read_file", "args": {"path": "a.txt"}, "id": "call_x1"}],
        "finish": "STOP",
        "usage": (21, 9),
    },
    "parallel_tools": {
        "texts": [],
        "calls": [
            {"name": "read", "args": {"p": 1}, "id": "call_1"},
            {"name": "ls", "args": {"d": "."}, "id": "call_2"},
        ],
        "finish": "STOP",
        "usage": (21, 9),
    },
    "length_no_done": {"texts": [(False, "truncated")], "calls": [], "finish": "MAX_TOKENS", "usage": (21, 9)},
    "finish_no_usage_no_done": {"texts": [(False, "a")], "calls": [], "finish": "STOP", "usage": (0, 0)},
    "crlf_framing": {"texts": [(False, "x")], "calls": [], "finish": "SAFETY", "usage": (0, 0)},
}


def _events(output: bytes, sse: bool) -> list[dict[str, Any]]:
    text = output.decode()
    if not sse:
        return json.loads(text)
    assert text.endswith("\r\n\r\n")
    events = []
    for block in text.split("\r\n\r\n")[:-1]:
        assert block.startswith("data: ") and "\n" not in block and "\u2028" not in block
        events.append(json.loads(block[6:]))
    return events


def _seen(events: list[dict[str, Any]]) -> dict[str, Any]:
    texts: list[tuple[bool, str]] = []
    calls: list[Any] = []
    for event in events[:-1]:
        candidate = event["candidates"][0]
        assert "finishReason" not in candidate and "usageMetadata" not in event
        assert candidate["content"]["parts"], "no chunk without parts before the last"
    for event in events:
        assert event["modelVersion"] == "served" and event["responseId"] == "chatcmpl-7"
        assert event["candidates"][0]["index"] == 0 and event["candidates"][0]["content"]["role"] == "model"
        for part in event["candidates"][0]["content"]["parts"]:
            if "functionCall" in part:
                calls.append(part["functionCall"])
                continue
            assert part["text"], "never an empty text part"
            thought = part.get("thought", False)
            if texts and texts[-1][0] == thought:
                texts[-1] = (thought, texts[-1][1] + part["text"])
            else:
                texts.append((thought, part["text"]))
    last = events[-1]
    usage = last["usageMetadata"]
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"]
    return {
        "texts": texts,
        "calls": calls,
        "finish": last["candidates"][0]["finishReason"],
        "usage": (usage["promptTokenCount"], usage["candidatesTokenCount"]),
    }


def _run(stream: bytes, cuts: list[int], sse: bool) -> bytes:
    translator = GeminiStream("served", sse=sse)
    out = []
    previous = 0
    for cut in [*cuts, len(stream)]:
        out.append(translator.feed(stream[previous:cut]))
        previous = cut
    assert translator.complete
    out.append(translator.end())
    assert translator.end() == b"" and translator.fail("late") == b"" and translator.feed(b"data: x\n\n") == b""
    return b"".join(out)


@pytest.mark.parametrize("sse", [True, False], ids=["sse", "array"])
@pytest.mark.parametrize("name", list(STREAMS))
def test_stream_whole_and_split_everywhere(name: str, sse: bool) -> None:
    stream = STREAMS[name].encode()
    whole = _run(stream, [], sse)
    expected = EXPECTED[name]
    assert _seen(_events(whole, sse)) == expected
    last = _events(whole, sse)[-1]
    for k in range(len(stream) + 1):
        split = _run(stream, [k], sse)
        events = _events(split, sse)
        assert _seen(events) == expected, k
        assert events[-1] == last, k
    assert _seen(_events(_run(stream, list(range(1, len(stream))), sse), sse)) == expected


def test_stream_one_chunk_per_read_when_events_arrive_one_by_one() -> None:
    stream = STREAMS["reasoning_text"]
    events = stream.split("\n\n")[:-1]
    translator = GeminiStream("served", sse=True)
    outputs = [translator.feed((event + "\n\n").encode()) for event in events]
    assert [o.count(b"data: ") for o in outputs] == [1, 1, 1, 0, 0, 0]
    assert translator.end().count(b"data: ") == 1


def test_tool_calls_are_held_until_the_end() -> None:
    translator = GeminiStream("served", sse=True)
    fed = translator.feed(STREAMS["parallel_tools"].encode())
    assert b"functionCall" not in fed
    assert translator.end().count(b'"functionCall"') == 2


def test_array_media_type_and_framing() -> None:
    translator = GeminiStream("served", sse=False)
    assert translator.media_type == "application/json"
    assert GeminiStream("served").media_type == "text/event-stream"
    first = translator.feed(b"")
    assert first == b"["
    out = first + translator.feed(STREAMS["text"].encode()) + translator.end()
    assert out.startswith(b"[{") and out.endswith(b"}]") and len(json.loads(out)) == 2


def _assert_failed(output: bytes, sse: bool, message: str) -> None:
    text = output.decode()
    assert "finishReason" not in text and "usageMetadata" not in text
    error = {"error": {"code": 500, "message": message, "status": "INTERNAL"}}
    if sse:
        body, _, last = text.rpartition("\r\n\r\n") if "\r\n\r\n" in text else ("", "", text)
        assert last.endswith("\n") and not last.startswith("data:")
        assert json.loads(last) == error
        if body:
            _events(body.encode() + b"\r\n\r\n", sse)
    else:
        assert json.loads(text)[-1] == error


@pytest.mark.parametrize("sse", [True, False], ids=["sse", "array"])
@pytest.mark.parametrize("name", ["text", "reasoning_text", "one_tool", "parallel_tools"])
def test_cut_at_every_point_fails_without_the_normal_end(name: str, sse: bool) -> None:
    stream = STREAMS[name].encode()
    for k in range(len(stream) + 1):
        translator = GeminiStream("served", sse=sse)
        out = translator.feed(stream[:k])
        if translator.complete:
            break  # the relay ends a complete stream normally
        out += translator.fail("upstream cut {mid} stream")
        _assert_failed(out, sse, "upstream cut {mid} stream")
        assert translator.end() == b"" and translator.feed(stream[k:]) == b""


@pytest.mark.parametrize("sse", [True, False], ids=["sse", "array"])
def test_upstream_error_event_ends_at_once(sse: bool) -> None:
    stream = (
        _chunk({"content": "par"})
        + 'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n'
        + _chunk({"content": "x"}, "stop")
    )
    translator = GeminiStream("served", sse=sse)
    out = translator.feed(stream.encode())
    _assert_failed(out, sse, "overloaded")
    assert b'"par"' in out and b'"x"' not in out
    assert translator.feed(b"more") == b"" and translator.end() == b"" and translator.fail("again") == b""


def test_fail_before_anything() -> None:
    assert json.loads(GeminiStream("m", sse=False).fail("x")) == [
        {"error": {"code": 500, "message": "x", "status": "INTERNAL"}}
    ]
    assert json.loads(GeminiStream("m", sse=True).fail("x")) == {
        "error": {"code": 500, "message": "x", "status": "INTERNAL"}
    }


def test_last_event_without_blank_line_is_flushed_at_end() -> None:
    translator = GeminiStream("served", sse=True)
    out = translator.feed(
        b'data: {"id":"chatcmpl-7","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}'
    )
    assert out == b"" and not translator.complete
    events = _events(translator.end(), True)
    assert events[0]["candidates"][0]["content"]["parts"] == [{"text": "a"}]
    assert events[1]["candidates"][0]["finishReason"] == "STOP"


def test_malformed_streamed_arguments() -> None:
    stream = _chunk(_call(0, '{"a":', "c1", "f")) + _chunk({}, "tool_calls")
    translator = GeminiStream("served", sse=True)
    events = _events(translator.feed(stream.encode()) + translator.end(), True)
    assert events[-1]["candidates"][0] == {
        "content": {"role": "model", "parts": []},
        "finishReason": "MALFORMED_FUNCTION_CALL",
        "index": 0,
    }


# ---------------------------------------------------------------- the real SDK reads it back


def _sdk() -> Any:
    try:
        from google import genai as sdk
        from google.genai import errors, types
    except ImportError:
        pytest.skip("google-genai is not installed")
    try:
        import httpx2 as hx  # google-genai 3.x sends through httpx2 when it is installed
    except ImportError:
        import httpx as hx
    return sdk, errors, types, hx


def _client(body: bytes, content_type: str, seen: list[str]) -> Any:
    sdk, _, types, hx = _sdk()

    def handler(request: Any) -> Any:
        seen.append(str(request.url))
        return hx.Response(200, headers={"content-type": content_type}, content=body)

    http = hx.Client(transport=hx.MockTransport(handler))
    return sdk.Client(api_key="token", http_options=types.HttpOptions(base_url="http://gateway", httpx_client=http))


@pytest.mark.parametrize("name", ["reasoning_text", "one_tool", "parallel_tools"])
def test_sdk_reads_the_stream(name: str) -> None:
    translator = GeminiStream("served", sse=True)
    body = translator.feed(STREAMS[name].encode()) + translator.end()
    seen: list[str] = []
    chunks = list(
        _client(body, "text/event-stream", seen).models.generate_content_stream(model="gemini-x", contents="hi")
    )
    assert seen == ["http://gateway/v1/models/gemini-x:streamGenerateContent?alt=sse"]
    expected = EXPECTED[name]
    text = "".join(c.text or "" for c in chunks)
    assert text == "".join(t for thought, t in expected["texts"] if not thought)
    calls = [call for c in chunks for call in (c.function_calls or [])]
    assert [{"name": c.name, "args": c.args, "id": c.id} for c in calls] == expected["calls"]
    assert chunks[-1].candidates[0].finish_reason.value == expected["finish"]
    assert chunks[-1].usage_metadata.total_token_count == 30
    assert all(c.response_id == "chatcmpl-7" and c.model_version == "served" for c in chunks)


@pytest.mark.parametrize("cut", [40, 150, 400])
def test_sdk_raises_on_a_failed_stream(cut: int) -> None:
    _, errors, _, _ = _sdk()
    translator = GeminiStream("served", sse=True)
    body = translator.feed(STREAMS["text"].encode()[:cut]) + translator.fail("stream cut } {")
    seen: list[str] = []
    client = _client(body, "text/event-stream", seen)
    got = []
    with pytest.raises(errors.ServerError) as raised:  # noqa: PT012 - the error comes while iterating
        for chunk in client.models.generate_content_stream(model="gemini-x", contents="hi"):
            got.append(chunk)
    assert raised.value.code == 500 and raised.value.message == "stream cut } {" and raised.value.status == "INTERNAL"
    assert all(c.candidates[0].finish_reason is None for c in got)


def test_sdk_reads_the_answer_and_models() -> None:
    body = json.dumps(
        from_chat(_answer(text="Hi", reasoning="hm", tool_calls=(CALL_A,), finish_reason="tool_calls"), "served")
    ).encode()
    seen: list[str] = []
    response = _client(body, "application/json", seen).models.generate_content(model="gemini-x", contents="hi")
    assert response.text == "Hi" and response.function_calls[0].args == {"p": "a.txt"}
    assert response.candidates[0].content.parts[0].thought is True
    model = _client(json.dumps(gemini_model("llama")).encode(), "application/json", seen).models.get(model="llama")
    assert model.name == "models/llama" and "generateContent" in model.supported_actions
    listed = list(_client(json.dumps(gemini_models(["a", "b"])).encode(), "application/json", seen).models.list())
    assert [m.name for m in listed] == ["models/a", "models/b"]
    counted = _client(b'{"totalTokens": 3}', "application/json", seen).models.count_tokens(
        model="gemini-x", contents="hi"
    )
    assert counted.total_tokens == 3


def test_sdk_raises_the_error_body() -> None:
    _, errors, _, hx = _sdk()
    sdk, _, types, _ = _sdk()

    def handler(request: Any) -> Any:
        return hx.Response(429, json=render_error(429, "rate_limit_error", "slow down"))

    client = sdk.Client(
        api_key="t",
        http_options=types.HttpOptions(
            base_url="http://gateway",
            httpx_client=hx.Client(transport=hx.MockTransport(handler)),
            retry_options=types.HttpRetryOptions(attempts=1),
        ),
    )
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(model="gemini-x", contents="hi")
    assert (
        raised.value.code == 429 and raised.value.status == "RESOURCE_EXHAUSTED" and raised.value.message == "slow down"
    )


def test_snake_case_field_names_read_as_camel_case_and_the_callers_keys_are_kept():
    # google-genai sends some proto field names as they are (parameters_json_schema, mime_type).
    schema = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [{"text": "hi"}, {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}],
            }
        ],
        "tools": [{"function_declarations": [{"name": "read_file", "parameters_json_schema": schema}]}],
        "generation_config": {"max_output_tokens": 7, "thinking_config": {"thinking_budget": 0}},
        "system_instruction": {"parts": [{"text": "be brief"}]},
    }

    chat = to_chat(body, "m", stream=False)

    assert chat["tools"][0]["function"]["parameters"] == schema
    assert chat["max_tokens"] == 7
    assert chat["messages"][0] == {"role": "system", "content": "be brief"}
    assert chat["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
