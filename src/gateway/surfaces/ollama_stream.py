"""Ollama's streamed answer (SPEC §12.5): NDJSON lines out of an OpenAI chat stream.

Rules (``contract.StreamTranslator``; the relay drives ``feed`` / ``end`` / ``fail``):

- One ``feed`` → at most one line of text: every ``Text`` (and ``Reasoning``) event of that read
  merged into one chunk, ``message.content`` / ``message.thinking`` (chat) or ``response`` /
  ``thinking`` (generate), ``"done": false``. Clients concatenate the chunks, so merging per read
  means the same answer in fewer bytes. No line is ever empty: ollama-python ``json.loads`` every
  line it reads.
- Tool calls: Ollama streams each call whole (``arguments`` an object), so fragments are buffered
  and the calls go out in one line at the ``finish_reason`` (or at ``end()`` when the upstream gave
  only ``[DONE]``).
- ``end()``: the last line, ``"done": true``, ``done_reason`` ``stop``/``length``, the token counts
  of the usage (which often follows the finish chunk), durations 0, empty content.
- ``fail(message)`` or an upstream error event: a last line ``{"error": "<message>"}`` and never
  ``"done": true`` (ollama-python raises ``ResponseError`` on it). After it, or after ``end()``,
  every call returns ``b""``.
"""

from __future__ import annotations

import json
from typing import Literal

from gateway.surfaces.chat import (
    Event,
    Finish,
    Reasoning,
    Text,
    ToolArgs,
    ToolCall,
    ToolStart,
    UpstreamError,
    Usage,
)
from gateway.surfaces.contract import DecodedStream, Plan, Spliced, compact, utf8
from gateway.surfaces.ollama import done_reason, ollama_tool_call

__all__ = ["MEDIA_TYPE", "OllamaStream"]

MEDIA_TYPE = "application/x-ndjson"
_DEFAULT_ERROR = "the upstream stream failed"
# A JSON string of a str, UTF-8 kept: a ready encoder's encode() is ~10x cheaper per call than
# json.dumps(..., ensure_ascii=False), which builds a new encoder each time (measured, CPython 3.11).
_dumps = json.JSONEncoder(ensure_ascii=False).encode


class OllamaStream(DecodedStream):
    """OpenAI chat SSE bytes in, Ollama NDJSON bytes out, for ``/api/chat`` (``mode="chat"``) or
    ``/api/generate`` (``mode="generate"``). ``created_at`` (ISO 8601) is stamped on every line."""

    media_type = MEDIA_TYPE

    def __init__(self, model: str, created_at: str, mode: Literal["chat", "generate"] = "chat") -> None:
        if mode not in ("chat", "generate"):
            raise ValueError(f"mode must be 'chat' or 'generate', not {mode!r}")
        super().__init__()
        self._chat = mode == "chat"
        # Every line starts alike; only the dynamic strings go through json.dumps per line.
        self._head = '{"model":' + _dumps(model) + ',"created_at":' + _dumps(created_at) + ","
        # A text line around its content, and its thinking's place (``contract.Plan``'s ``line``).
        if self._chat:
            end = '},"done":false}\n'
            self._line = (self._head + '"message":{"role":"assistant","content":', ',"thinking":', end)
        else:
            self._line = (self._head + '"response":', ',"thinking":', ',"done":false}\n')
        # Per call, in upstream order: (call id, name, argument fragments). Fragments are joined
        # once at the end: += on a long string copies it each time (quadratic in the arguments).
        self._calls: list[tuple[str, str, list[str]]] = []
        self._sent_calls = 0  # calls already sent in a line
        self._reason = "stop"
        self._input_tokens = 0
        self._output_tokens = 0
        self._closed = False

    def feed(self, data: bytes) -> bytes:
        if self._closed:
            return b""
        events = self._decoder.feed(data)
        return utf8(self._encode(events)) if events else b""

    def end(self) -> bytes:
        if self._closed:
            return b""
        out = self._encode(self._decoder.close())
        if self._closed:  # the last bytes held an upstream error
            return utf8(out)
        self._closed = True
        out += self._calls_line()
        if self._chat:
            last = '"message":{"role":"assistant","content":""},"done":true,"done_reason":'
        else:
            last = '"response":"","done":true,"done_reason":'
        return utf8(
            out
            + self._head
            + last
            + ('"length"' if self._reason == "length" else '"stop"')
            + ',"total_duration":0,"load_duration":0,"prompt_eval_count":'
            + str(self._input_tokens)
            + ',"prompt_eval_duration":0,"eval_count":'
            + str(self._output_tokens)
            + (',"eval_duration":0}\n' if self._chat else ',"eval_duration":0,"context":[]}\n')
        )

    def fail(self, message: str, code: str = "stream_interrupted") -> bytes:
        if self._closed:
            return b""
        self._closed = True
        return utf8(self._error_line(message))

    # ------------------------------------------------------------------------------------------

    def _encode(self, events: list[Event]) -> str:
        """The lines for one read's events: merged text first, then calls, then an error end."""
        texts: list[str] = []
        thoughts: list[str] = []
        tail = ""
        for event in events:
            kind = type(event)
            if kind is Text:
                texts.append(event.text)  # type: ignore[union-attr]
            elif kind is ToolArgs:
                self._calls[event.index][2].append(event.fragment)  # type: ignore[union-attr]
            elif kind is Reasoning:
                thoughts.append(event.text)  # type: ignore[union-attr]
            elif kind is ToolStart:
                self._calls.append((event.call_id, event.name, []))  # type: ignore[union-attr]
            elif kind is Finish:
                self._reason = done_reason(event.reason)  # type: ignore[union-attr]
                tail += self._calls_line()
            elif kind is Usage:
                self._input_tokens = event.input_tokens  # type: ignore[union-attr]
                self._output_tokens = event.output_tokens  # type: ignore[union-attr]
            elif kind is UpstreamError:
                self._closed = True
                tail += self._error_line(event.message)  # type: ignore[union-attr]
                break
        if not texts and not thoughts:
            return tail
        pre, mid, post = self._line
        text = _dumps("".join(texts)) if texts else '""'
        thinking = mid + _dumps("".join(thoughts)) if thoughts else ""
        return pre + text + thinking + post + tail

    def plan(self) -> Plan | None:
        """A batch's text and reasoning as one line, as ``_encode`` makes it; the calls'
        fragments are only kept (they go out whole at the finish)."""
        if self._closed or not self._spliceable():
            return None
        keys = (self._key(position) for position in range(len(self._calls)))
        args = tuple((key, None, None) for key in keys if key is not None)
        return Plan("fields", args=args, line=self._line)

    def _absorb(self, spliced: Spliced) -> None:
        for position, joined in self._positions(spliced):
            self._calls[position][2].append(joined)

    def _calls_line(self) -> str:
        """The calls not sent yet, in one line; "" when there are none."""
        if self._sent_calls == len(self._calls):
            return ""
        calls = [
            ollama_tool_call(ToolCall(call_id, name, "".join(fragments)), index)
            for index, (call_id, name, fragments) in enumerate(self._calls)
            if index >= self._sent_calls
        ]
        self._sent_calls = len(self._calls)
        if self._chat:
            body = '"message":{"role":"assistant","content":"","tool_calls":' + compact(calls) + "}"
        else:
            body = '"response":"","tool_calls":' + compact(calls)
        return self._head + body + ',"done":false}\n'

    def _error_line(self, message: str) -> str:
        return '{"error":' + _dumps(message or _DEFAULT_ERROR) + "}\n"
