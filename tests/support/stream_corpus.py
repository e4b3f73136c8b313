"""One corpus of upstream OpenAI chat streams, as providers send them and as they go wrong, for
holding the relay's splice (src/gateway/surfaces/splice.mjs) beside the Python translators
(tests/unit/surfaces/test_splice.py): each stream is a list of the upstream's writes.

The shapes follow OpenAI's chunk format (platform.openai.com/docs/api-reference/chat-streaming:
a role-only first chunk, ``usage`` in a last chunk with empty ``choices`` when asked for),
reasoning as DeepSeek (``reasoning_content``, api-docs.deepseek.com/guides/reasoning_model) and
OpenRouter (``reasoning``, openrouter.ai/docs/use-cases/reasoning-tokens) stream it, parallel
tool calls whose fragments interleave, and what the decoder must survive: CRLF line ends, comment
keep-alives (OpenRouter's ``: OPENROUTER PROCESSING``), several data lines in one event, an
in-band error (OpenRouter's, beside ``choices``), malformed lines, escapes, line separators,
lone surrogates, bytes that are not UTF-8, odd indexes, a stream with no id.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["SECRET", "STREAMS"]

ID = "chatcmpl-C0rpu5"
# A provider key that one stream's upstream echoes: never passed on.
SECRET = "sk-corpus-secret-0123456789abcdef"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    body: dict[str, Any] = {
        "id": ID,
        "object": "chat.completion.chunk",
        "created": 1765000000,
        "model": "m",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    body.update(extra)
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


def text(piece: str) -> bytes:
    return chunk({"content": piece})


def call(index: Any, call_id: str | None = None, name: str | None = None, arguments: Any = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        entry.update(id=call_id, type="function")
        entry["function"]["name"] = name
    return entry


def calls(*entries: dict[str, Any]) -> bytes:
    return chunk({"tool_calls": list(entries)})


ROLE = chunk({"role": "assistant", "content": "", "refusal": None})
STOP = chunk({}, "stop")
USAGE = chunk(usage={"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43})
DONE = b"data: [DONE]\n\n"
WORDS = [f" w{i}" for i in range(60)]

STREAMS: dict[str, list[bytes]] = {
    "long text": [ROLE, *(text(word) for word in WORDS), STOP, USAGE, DONE],
    "text first, no role chunk": [text("Hi"), *(text(word) for word in WORDS[:20]), STOP, DONE],
    "unicode and escapes": [
        ROLE,
        text("wörld ✓ 你好 🎉"),
        text('say "hi"\\ and\n\ttab\r'),
        text("\x00\x01\x1f control\x7f"),
        text("line\u2028sep\u2029and\x85next"),
        text("\ufeffbom"),
        STOP,
        DONE,
    ],
    "reasoning then text": [
        chunk({"role": "assistant", "content": None, "reasoning_content": "Let me "}),
        *(chunk({"reasoning_content": f"think {i}. "}) for i in range(10)),
        chunk({"content": ""}),
        *(text(word) for word in WORDS[:10]),
        chunk({"reasoning": "again"}),
        text("Done."),
        STOP,
        USAGE,
        DONE,
    ],
    "reasoning falsy fields": [
        ROLE,
        chunk({"reasoning_content": "", "reasoning": "or this"}),
        chunk({"reasoning_content": {}, "reasoning": "an empty object is falsy"}),
        chunk({"reasoning_content": {"a": 1}, "reasoning": "not this"}),
        chunk({"reasoning_content": 0, "reasoning": "zero too"}),
        text("end"),
        STOP,
        DONE,
    ],
    "one tool call": [
        ROLE,
        text("Reading it."),
        calls(call(0, "call_Qa1", "Read", "")),
        *(calls(call(0, arguments=piece)) for piece in ['{"file', '_path": "/tmp/', "a.txt", '"}']),
        chunk({}, "tool_calls"),
        USAGE,
        DONE,
    ],
    "parallel calls": [
        ROLE,
        calls(call(0, "call_A", "Read", "")),
        *(calls(call(0, arguments=piece)) for piece in ['{"file_path"', ': "a.txt"}']),
        calls(call(1, "call_B", "Glob", "")),
        *(calls(call(1, arguments=piece)) for piece in ['{"pattern":', ' "*.py"}', " "]),
        chunk({}, "tool_calls"),
        USAGE,
        DONE,
    ],
    "interleaved calls": [
        ROLE,
        calls(call(0, "call_A", "Read", ""), call(1, "call_B", "LS", "")),
        calls(call(0, arguments='{"file_path": '), call(1, arguments='{"path": ')),
        calls(call(1, arguments='"/"}'), call(0, arguments='"x"}')),
        calls(call(0, arguments=" ")),
        chunk({}, "tool_calls"),
        USAGE,
        DONE,
    ],
    "odd call indexes": [
        ROLE,
        calls(call(0, "call_A", "Read", "")),
        calls(call(0.0, arguments='{"a":')),
        calls(call(True, arguments="1")),
        calls({"function": {"arguments": "}"}}),
        calls(call(0, arguments={"whole": "object"})),
        calls(call(0, arguments=None)),
        calls(call(5, arguments="unknown call")),
        chunk({}, "tool_calls"),
        DONE,
    ],
    "float index call": [
        ROLE,
        calls(call(1.0, "call_F", "Now", "")),
        calls(call(1, arguments='{"x": 1}')),
        calls(call(1.0, arguments="")),
        STOP,
        DONE,
    ],
    "text between calls and text": [
        ROLE,
        calls(call(0, "call_A", "LS", '{"path": "."}')),
        text("Listed."),
        chunk({"reasoning": "then"}),
        text("Done."),
        STOP,
        DONE,
    ],
    "usage after finish, no done": [ROLE, *(text(word) for word in WORDS[:15]), STOP, USAGE],
    "crlf": [part.replace(b"\n", b"\r\n") for part in [ROLE, *(text(word) for word in WORDS[:15]), STOP, DONE]],
    "lone cr": [part.replace(b"\n", b"\r") for part in [ROLE, *(text(word) for word in WORDS[:8]), STOP, DONE]],
    "comments and keep-alives": [
        b": OPENROUTER PROCESSING\n\n",
        ROLE,
        text("a"),
        b": OPENROUTER PROCESSING\n\n",
        b"event: ping\n\n",
        text("b"),
        b"id: 7\nretry: 10\n\n",
        STOP,
        DONE,
    ],
    "several data lines in one event": [ROLE, text("a")[:-1] + text("b"), text("c"), STOP, DONE],
    "in-band error": [ROLE, *(text(word) for word in WORDS[:10]), chunk({}, "error", error={"message": "boom"})],
    "error null is no error": [ROLE, text("a"), chunk({"content": "b"}, error=None), text("c"), STOP, DONE],
    "malformed lines": [
        ROLE,
        text("a"),
        b'data: {"content": "half\n\n',
        b"data: not json\n\n",
        b'data: {"id":"x","choices":[{"delta":{"content":"fast \\u00e9"}}]\n\n',
        b'data: {"choices":[{"delta":{"content":"bad \\x escape"}}]}\n\n',
        b'data: {"choices":[{"delta":{"content":"raw\tcontrol"}}]}\n\n',
        b'data: {"message":{"content":"not a delta"}}\n\n',
        b"data: [1, 2]\n\n",
        b"data:nospace\n\n",
        text("z"),
        STOP,
        DONE,
    ],
    "odd spacing": [
        ROLE,
        b'data: {"id":"x","choices":[{"delta":{"content" \t:  "spaced"}}]}\n\n',
        'data: {"id":"x","choices":[{"delta":{"content"\u00a0:"nbsp"}}]}\n\n'.encode(),
        'data: {"id":"x","choices":[{"delta":{"content"\ufeff:"bom"}}]}\n\n'.encode(),
        b'data: {"id":"x","choices":[{"delta":{"content"\x1f:"unit separator"}}]}\n\n',
        b'data: {"id":"x","choices":[{"delta":{"content":"a"}}],"usage"\t:\t{"prompt_tokens":1}}\n\n',
        b'data:{"id":"x","choices":[{"delta":{"content":"tight"}}]}\n\n',
        STOP,
        DONE,
    ],
    "escaped keys": [ROLE, b'data: {"choices":[{"delta":{"content":"x"},"finish_reason":"st\\u006fp"}]}\n\n', DONE],
    "lone surrogates": [ROLE, text("a"), b'data: {"choices":[{"delta":{"content":"\\ud800 lone"}}]}\n\n', STOP, DONE],
    "not utf-8": [ROLE, text("a"), b'data: {"choices":[{"delta":{"content":"\xff\xfe"}}]}\n\n', text("b"), STOP, DONE],
    "split utf-8 character": [ROLE, text("你好世界"), STOP, DONE],
    "no id": [
        b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n',
        b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n',
        b'data: {"id":"late","choices":[{"delta":{"content":"b"}}]}\n\n',
        b'data: {"choices":[{"delta":{"content":"c"}}]}\n\n',
        STOP,
        DONE,
    ],
    "echoed key": [ROLE, text("a"), text(f"the key is {SECRET}."), text(SECRET), STOP, DONE],
    "done without finish": [ROLE, text("a"), text("b"), DONE],
    "truncated": [ROLE, *(text(word) for word in WORDS[:12])],
    "unfinished last event": [ROLE, text("a"), text("b"), STOP, b'data: {"id":"x","choices":[]}'],
}
