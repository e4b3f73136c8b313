"""Reading what an OpenAI-compatible upstream answered, for the surfaces that translate it.

Every surface (SPEC §12) speaks to the upstream in OpenAI chat and translates the answer back. This
module reads that answer once, into plain values the surfaces encode:

- ``read_answer(body)``: a non-streamed chat completion → ``Answer``.
- ``ChatStreamDecoder``: an h11-style reader of a streamed one. ``feed(bytes)`` takes whatever one
  read of the upstream gave (part of an event, one event, many) and returns the events completed
  by it, in order; it does no I/O and keeps only the unfinished tail and the tool calls' ids.

Events are small value objects; a surface's stream translator turns a list of them into its own
bytes in one call, so the Python work per upstream read is one ``feed`` and one encode.

Most chunks of a long answer carry nothing but the next piece of text. Once the first chunk has
been read whole, a chunk with none of the markers below has only its ``content`` string decoded
(``scanstring``, a fraction of a full ``json.loads`` in Pyodide); anything else is parsed whole.
JSON escapes every quote inside a string, so a marker can only match the structure itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring
from typing import Any

from gateway.core.sse import normalized, split_events

__all__ = [
    "LEGACY_CALL",
    "Answer",
    "ChatStreamDecoder",
    "Event",
    "Finish",
    "Reasoning",
    "Text",
    "ToolArgs",
    "ToolCall",
    "ToolStart",
    "UpstreamError",
    "Usage",
    "read_answer",
]


# A legacy function call (``functions``/``function_call``), which ``ChatStreamDecoder`` does not
# read: as JSON escapes every quote inside a string, these bytes can only be the key (or the
# finish reason that ends such a call).
LEGACY_CALL = b'"function_call"'


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning text a provider streams beside the answer (``reasoning_content``/``reasoning``)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolStart:
    """A tool call begins: ``index`` is its position among this answer's calls (0, 1, …)."""

    index: int
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolArgs:
    """The next fragment of call ``index``'s JSON arguments."""

    index: int
    fragment: str


@dataclass(frozen=True, slots=True)
class Finish:
    """The upstream's ``finish_reason`` (``stop``, ``length``, ``tool_calls``, ``content_filter``…)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Usage:
    """The upstream's counts; ``input_tokens`` includes ``cached_tokens`` (OpenAI's
    ``prompt_tokens_details.cached_tokens``: prompt tokens read from a cache)."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


@dataclass(frozen=True, slots=True)
class UpstreamError:
    """The upstream put an error object in its stream after content had started."""

    message: str


Event = Text | Reasoning | ToolStart | ToolArgs | Finish | Usage | UpstreamError


@dataclass(frozen=True, slots=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # JSON text, as the upstream sent it


@dataclass(frozen=True, slots=True)
class Answer:
    """A non-streamed answer, read once. ``finish_reason`` is the upstream's (``stop`` if absent)."""

    id: str
    model: str
    text: str
    reasoning: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0  # of input_tokens, read from a cache (see ``Usage``)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _cached(usage: dict[str, Any]) -> int:
    details = usage.get("prompt_tokens_details")
    return _int(details.get("cached_tokens")) if isinstance(details, dict) else 0


def _text(value: Any) -> str:
    """Message content as text: a string, or the text parts of a content list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _reasoning(message: dict[str, Any]) -> str:
    for name in ("reasoning_content", "reasoning"):
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def read_answer(body: Any, fallback_id: str = "chatcmpl") -> Answer:
    """The first choice of a chat completion; missing parts read as empty (never raises)."""
    body = body if isinstance(body, dict) else {}
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    calls = []
    for position, call in enumerate(message.get("tool_calls") or ()):
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {}, separators=(",", ":"))
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"call_{position}"
        calls.append(ToolCall(call_id, str(function.get("name") or ""), arguments))
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    answer_id = body.get("id")
    return Answer(
        id=answer_id if isinstance(answer_id, str) and answer_id else fallback_id,
        model=str(body.get("model") or ""),
        text=_text(message.get("content")),
        reasoning=_reasoning(message),
        tool_calls=tuple(calls),
        finish_reason=str(choice.get("finish_reason") or "stop"),
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        cached_tokens=_cached(usage),
    )


# A chunk that may carry more than text: tool calls, reasoning, an error, usage or a finish reason.
_MORE_THAN_TEXT = re.compile(
    rb'"(?:tool_calls|reasoning|reasoning_content|error)"|"usage"\s*:\s*\{|"finish_reason"\s*:\s*"'
)
_CONTENT = re.compile(r'"content"\s*:\s*"')  # searched in the decoded text: scanstring counts characters


@dataclass(slots=True)
class ChatStreamDecoder:
    """Incremental reader of an OpenAI chat SSE stream (see the module doc).

    ``finished``: a ``finish_reason`` or ``data: [DONE]`` was seen, so the answer is complete when
    the stream closes; ``done``: ``[DONE]`` was seen, so nothing more will come. ``id`` is the
    upstream's completion id once the first chunk arrived.
    """

    id: str = ""
    finished: bool = False
    done: bool = False
    usage: Usage | None = None  # the last usage the stream reported
    _tail: bytes = b""
    _calls: dict[int, str] = field(default_factory=dict)  # upstream index → call id
    _positions: dict[Any, int] = field(default_factory=dict)  # upstream index → our position

    def feed(self, data: bytes) -> list[Event]:
        """The events completed by ``data`` (any split of the stream gives the same events)."""
        buffer, hold = normalized(self._tail + data)
        parts, rest = split_events(buffer)
        self._tail = rest + hold
        events: list[Event] = []
        for part in parts:
            for line in part.split(b"\n"):
                if line.startswith(b"data:"):
                    self._data(line[6:] if line[5:6] == b" " else line[5:], events)
        return events

    def key_of(self, position: int) -> int | None:
        """The upstream ``index`` of the call at ``position``, when it is an int (not a bool)."""
        for key, at in self._positions.items():
            if at == position:
                return key if type(key) is int else None
        return None

    def position_of(self, key: int) -> int:
        """The position of the call the upstream numbers ``key`` (one it has started)."""
        return self._positions[key]

    def close(self) -> list[Event]:
        """Events of a last event that lacked its blank line, when the stream has closed."""
        tail, self._tail = self._tail, b""
        return self.feed(tail + b"\n\n") if tail.strip() else []

    def _data(self, data: bytes, events: list[Event]) -> None:
        if data.startswith(b"[DONE]"):
            self.finished = self.done = True
            return
        if self.id and _MORE_THAN_TEXT.search(data) is None:
            try:
                decoded = data.decode()
                found = _CONTENT.search(decoded)
                text = scanstring(decoded, found.end())[0] if found is not None else ""
            except ValueError:  # not UTF-8 or not JSON after all: as the full parse would, nothing
                return
            if text:
                events.append(Text(text))
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            return  # not JSON: a provider's comment-like line; nothing to translate
        if not isinstance(chunk, dict):
            return
        if not self.id and isinstance(chunk.get("id"), str):
            self.id = chunk["id"]
        error = chunk.get("error")
        if error:  # OpenRouter sends it beside choices, with finish_reason "error"
            message = error.get("message") if isinstance(error, dict) else error
            events.append(UpstreamError(str(message or "the upstream reported an error")))
            return
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            self._choice(choices[0], events)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), _cached(usage))
            events.append(self.usage)

    def _choice(self, choice: dict[str, Any], events: list[Event]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                events.append(Reasoning(reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                events.append(Text(content))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for offset, call in enumerate(calls):
                    if isinstance(call, dict):
                        self._tool_call(call, offset, events)
        reason = choice.get("finish_reason")
        if reason == "error":  # the answer broke off: never a finished answer
            events.append(UpstreamError("the upstream ended the answer with an error"))
        elif isinstance(reason, str) and reason:
            self.finished = True
            events.append(Finish(reason))

    def _tool_call(self, call: dict[str, Any], offset: int, events: list[Event]) -> None:
        # Providers key a call's deltas by "index"; a few omit it and send each call whole.
        key = call.get("index", ("whole", len(self._positions) + offset))
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        position = self._positions.get(key)
        if position is None:
            position = self._positions[key] = len(self._positions)
            call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else ""
            call_id = call_id or f"call_{self.id or 'gw'}_{position}"
            self._calls[position] = call_id
            events.append(ToolStart(position, call_id, str(function.get("name") or "")))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            events.append(ToolArgs(position, arguments))
        elif isinstance(arguments, dict):  # a few providers send the arguments as an object
            events.append(ToolArgs(position, json.dumps(arguments, separators=(",", ":"))))
