"""Gemini answers (SPEC §12.4): an OpenAI chat answer → a ``GenerateContentResponse``, whole or
streamed. Pure: no I/O, no clock; ids come from the upstream's completion id.

Rules:

- One candidate, ``index`` 0, ``content.role`` ``"model"``. Parts in order: reasoning as a
  ``{"text", "thought": true}`` part (the place Gemini has for it: google-genai's ``.text`` and
  Gemini CLI's history both skip thought parts, Gemini CLI shows them as its thinking line), the
  answer text (never an empty text part), then one ``functionCall`` part per tool call with
  ``name``, ``args`` (an object, parsed from the arguments) and ``id`` (the upstream's call id).
- ``finishReason`` from ``FINISH_REASONS``; a call whose arguments are not a JSON object is
  dropped and the answer finishes ``MALFORMED_FUNCTION_CALL`` (Gemini's own reason for it; Gemini
  CLI retries such a turn).
- Stream (``GeminiStream``): each upstream read's text and reasoning becomes one chunk with no
  ``finishReason``. Function calls are held and sent complete, with ``finishReason`` and
  ``usageMetadata``, in the last chunk at ``end()``: Gemini CLI accepts a stream that carried a
  ``functionCall`` even when it never saw a ``finishReason`` (geminiChat.ts), so a call sent
  before the end would make a cut stream look finished.
- Framing: ``alt=sse`` → ``data: <chunk>\\r\\n\\r\\n`` (the real API's; both SDKs split on blank
  lines); without it a JSON array ``[chunk,chunk,…]`` (``application/json``).
- Mid-stream failure (``fail``): ``{"error":{"code":500,"message","status":"INTERNAL"}}`` and no
  chunk with a ``finishReason``. With SSE it is written bare, outside any ``data:`` line, as the
  real API does: google-genai (Python) raises it either way, but the JS SDK under Gemini CLI only
  raises on a bare JSON error (a ``data:`` error event reads as an empty chunk there); in array
  mode it is the array's last element.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.surfaces.chat import (
    Answer,
    Event,
    Finish,
    Reasoning,
    Text,
    ToolArgs,
    ToolStart,
    UpstreamError,
    Usage,
)
from gateway.surfaces.contract import DecodedStream, Plan, Spliced, utf8

__all__ = ["FINISH_REASONS", "GeminiStream", "from_chat", "function_call_part"]

# OpenAI finish_reason → Gemini finishReason; anything else → STOP (providers invent reasons such
# as "eos"; the answer did end).
FINISH_REASONS: dict[str, str] = {
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "tool_calls": "STOP",
    "function_call": "STOP",
    "error": "OTHER",
}
_MALFORMED = "MALFORMED_FUNCTION_CALL"

_SSE_OPEN = 'data: {"candidates":[{"content":{"role":"model","parts":['
_SSE_CLOSE = "}\r\n\r\n"
_ARRAY_OPEN = '{"candidates":[{"content":{"role":"model","parts":['
# After a chunk's parts, before its tail (modelVersion, responseId).
_PARTS_END = ']},"index":0}]'
# A text part around its string: of the answer, and of reasoning (a thought).
_TEXT_PART = ('{"text":', "}")
_THOUGHT_PART = ('{"text":', ',"thought":true}')


def _dumps(value: Any) -> str:
    """Compact JSON, UTF-8 kept, with the line separators U+2028/U+2029/U+0085 escaped: older
    google-genai releases split the stream with ``str.splitlines``, which breaks at them."""
    out = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if "\u2028" in out or "\u2029" in out or "\x85" in out:
        out = out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")
    return out


def function_call_part(call_id: str, name: str, arguments: str) -> str | None:
    """A ``functionCall`` part as JSON text, or None when the arguments are not a JSON object."""
    try:
        args = json.loads(arguments, parse_constant=_no_constant) if arguments.strip() else {}
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    return '{"functionCall":{"name":' + _dumps(name) + ',"args":' + _dumps(args) + ',"id":' + _dumps(call_id) + "}}"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN/Infinity: Python reads them, JSON clients do not


def _usage(input_tokens: int, output_tokens: int) -> str:
    return (
        f'"usageMetadata":{{"promptTokenCount":{input_tokens},"candidatesTokenCount":{output_tokens},'
        f'"totalTokenCount":{input_tokens + output_tokens}}}'
    )


def _finish_reason(reason: str, malformed: bool) -> str:
    return _MALFORMED if malformed else FINISH_REASONS.get(reason, "STOP")


def from_chat(answer: Answer, model: str) -> dict[str, Any]:
    """The non-streamed ``GenerateContentResponse`` of ``answer``; ``model`` served it."""
    parts: list[Any] = []
    if answer.reasoning:
        parts.append({"text": answer.reasoning, "thought": True})
    if answer.text:
        parts.append({"text": answer.text})
    malformed = False
    for call in answer.tool_calls:
        part = function_call_part(call.call_id, call.name, call.arguments)
        if part is None:
            malformed = True
        else:
            parts.append(json.loads(part))
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": _finish_reason(answer.finish_reason, malformed),
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": answer.input_tokens,
            "candidatesTokenCount": answer.output_tokens,
            "totalTokenCount": answer.input_tokens + answer.output_tokens,
        },
        "modelVersion": model,
        "responseId": answer.id,
    }


class GeminiStream(DecodedStream):
    """Translates an OpenAI chat stream into Gemini's stream (see the module doc); implements
    ``contract.StreamTranslator``. ``sse``: the request had ``?alt=sse``."""

    def __init__(self, model: str, sse: bool = True) -> None:
        self.media_type = "text/event-stream" if sse else "application/json"
        self._model = model
        self._sse = sse
        super().__init__()
        self._tail = ""  # ',"modelVersion":…,"responseId":…' of every chunk, set at the first one
        self._chunks = 0  # chunks written (array mode needs the commas)
        self._started = False
        self._done = False
        self._calls: list[list[Any]] = []  # [call id, name, [argument fragments]] by position
        self._reason = ""
        self._usage = (0, 0)

    def feed(self, data: bytes) -> bytes:
        if self._done:
            return b""
        out = self._open()
        self._translate(self._decoder.feed(data), out)
        return utf8("".join(out))

    def end(self) -> bytes:
        if self._done:
            return b""
        out = self._open()
        self._translate(self._decoder.close(), out)
        if self._done:  # the last bytes held an upstream error
            return utf8("".join(out))
        self._done = True
        parts = []
        malformed = False
        for call_id, name, fragments in self._calls:
            part = function_call_part(call_id, name, "".join(fragments))
            if part is None:
                malformed = True
            else:
                parts.append(part)
        body = (
            ",".join(parts)
            + ']},"finishReason":"'
            + _finish_reason(self._reason or "stop", malformed)
            + '","index":0}],'
            + _usage(*self._usage)
            + self._chunk_tail()
        )
        out.append(self._chunk(body))
        if not self._sse:
            out.append("]")
        return utf8("".join(out))

    def keep_alive(self) -> bytes:
        """Nothing: Google's SDK (@google/genai, in Gemini CLI) reads its stream as a run of
        ``data:`` events and stops for good at anything else, an SSE comment included."""
        return b""

    def fail(self, message: str, code: str = "stream_interrupted") -> bytes:
        if self._done:
            return b""
        self._done = True
        text = _dumps(message)
        if self._sse:
            # google-genai (Python) finds the end of a bare JSON error by counting braces, those in
            # strings included: the message's are escaped so they cannot end it early.
            text = text.replace("{", "\\u007b").replace("}", "\\u007d")
            return utf8('{"error":{"code":500,"message":' + text + ',"status":"INTERNAL"}}\n')
        error = '{"error":{"code":500,"message":' + text + ',"status":"INTERNAL"}}'
        prefix = "" if self._started else "["
        return utf8(prefix + ("," if self._chunks else "") + error + "]")

    def _open(self) -> list[str]:
        """The output list of a call, starting with the array's ``[`` on the first one."""
        if self._started:
            return []
        self._started = True
        return [] if self._sse else ["["]

    def _translate(self, events: list[Event], out: list[str]) -> None:
        parts: list[str] = []
        run: list[str] = []  # consecutive fragments of one kind, merged into one part
        thought = False
        for event in events:
            kind = type(event)
            if kind is Text or kind is Reasoning:
                is_thought = kind is Reasoning
                if run and is_thought != thought:
                    parts.append(_text_part(run, thought))
                    run = []
                thought = is_thought
                run.append(event.text)  # type: ignore[union-attr]
            elif kind is ToolArgs:
                self._calls[event.index][2].append(event.fragment)  # type: ignore[union-attr]
            elif kind is ToolStart:
                self._calls.append([event.call_id, event.name, []])  # type: ignore[union-attr]
            elif kind is Finish:
                self._reason = event.reason  # type: ignore[union-attr]
            elif kind is Usage:
                self._usage = (event.input_tokens, event.output_tokens)  # type: ignore[union-attr]
            elif kind is UpstreamError:
                if run:
                    parts.append(_text_part(run, thought))
                if parts:
                    out.append(self._chunk(",".join(parts) + _PARTS_END + self._chunk_tail()))
                out.append(self.fail(event.message).decode())  # type: ignore[union-attr]
                return
        if run:
            parts.append(_text_part(run, thought))
        if parts:
            out.append(self._chunk(",".join(parts) + _PARTS_END + self._chunk_tail()))

    def plan(self) -> Plan | None:
        """A batch's text and reasoning as one chunk, as ``feed`` makes it; the calls' fragments
        are only kept (they go out whole at the end)."""
        if self._done or not self._started or not self._spliceable():
            return None
        close = _PARTS_END + self._chunk_tail() + (_SSE_CLOSE if self._sse else "}")
        if self._sse:
            chunk = (_SSE_OPEN, _SSE_OPEN, close)
        else:
            chunk = (("," if self._chunks else "") + _ARRAY_OPEN, "," + _ARRAY_OPEN, close)
        keys = (self._key(position) for position in range(len(self._calls)))
        args = tuple((key, None, None) for key in keys if key is not None)
        return Plan("runs", text=_TEXT_PART, reasoning=_THOUGHT_PART, args=args, chunk=chunk, escape="gemini")

    def _absorb(self, spliced: Spliced) -> None:
        self._chunks += spliced.units
        for position, joined in self._positions(spliced):
            self._calls[position][2].append(joined)

    def _chunk(self, body: str) -> str:
        """One chunk: ``body`` continues the parts list (see ``_SSE_OPEN``)."""
        self._chunks += 1
        if self._sse:
            return _SSE_OPEN + body + _SSE_CLOSE
        return ("," if self._chunks > 1 else "") + _ARRAY_OPEN + body + "}"

    def _chunk_tail(self) -> str:
        if not self._tail:
            response_id = self._decoder.id
            self._tail = (
                ',"modelVersion":'
                + _dumps(self._model)
                + (',"responseId":' + _dumps(response_id) if response_id else "")
            )
        return self._tail


def _text_part(run: list[str], thought: bool) -> str:
    pre, post = _THOUGHT_PART if thought else _TEXT_PART
    return pre + _dumps(run[0] if len(run) == 1 else "".join(run)) + post
