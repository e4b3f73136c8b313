"""Anthropic Messages stream translator (SPEC §12.2): OpenAI chat SSE in, Anthropic SSE out.

Rules (what the anthropic SDK's ``MessageStream`` accumulator and Claude Code accept):

- ``message_start`` (empty content; ``usage.input_tokens`` the request's estimate, as count_tokens
  gives it, and ``output_tokens`` 0: the upstream's usage comes last) once the first upstream chunk
  is read; then blocks, each ``content_block_start`` / ``content_block_delta``* /
  ``content_block_stop``, indexes contiguous from 0, **one block open at a time**: a delta or stop
  names the block last started, and its delta kind matches it (``text_delta`` in ``text``,
  ``thinking_delta`` in ``thinking``, ``input_json_delta`` in ``tool_use``); clients index their
  content list by ``index`` and reject a delta of the wrong kind ("Content block not found",
  "Mismatched content block type").
- Reasoning → a ``thinking`` block (``signature`` ""), text → a ``text`` block, each tool call → its
  own ``tool_use`` block (``input`` {} at start, arguments as ``input_json_delta`` fragments). A
  change of kind closes the open block; empty text never opens one.
- Parallel calls whose argument fragments interleave: the open call keeps streaming; a later call is
  queued with its fragments and opened when the open call's arguments are a whole JSON value, or at
  ``finish_reason`` / ``end()``. A fragment of a call whose block a text block already closed is
  dropped (no provider interleaves text into a call).
- ``end()``: close the open block, ``message_delta`` (``stop_reason``, ``stop_sequence`` null,
  ``usage`` with the upstream's ``input_tokens`` and ``output_tokens``) and ``message_stop``.
  ``fail()`` and an upstream error event: ``event: error`` (``api_error``), never ``message_stop``.
- Output is the same for any split of the upstream bytes: one event per decoder event, no merging.
- The relay splices the open block's deltas (``plan``, ``contract.Plan``).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C string encoder json.dumps(ensure_ascii=False) uses

from gateway.surfaces.chat import (
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

__all__ = ["STOP_REASONS", "AnthropicStream", "message_id", "stop_reason", "usage"]

# OpenAI finish_reason → Anthropic stop_reason; anything else reads as end_turn.
STOP_REASONS: dict[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def message_id(upstream_id: str) -> str:
    """``msg_`` + the upstream completion id reduced to letters, digits, ``_`` and ``-``."""
    return "msg_" + ("".join(c for c in upstream_id if c in _ID_CHARS) or "gateway")


def usage(input_tokens: int, output_tokens: int, cached_tokens: int) -> dict[str, int]:
    """Usage as Anthropic counts it (SPEC §12.2): ``input_tokens`` without the prompt tokens read
    from a cache, which ``cache_read_input_tokens`` holds; nothing is ever written to one here."""
    return {
        "input_tokens": max(0, input_tokens - cached_tokens),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached_tokens,
        "output_tokens": output_tokens,
    }


def stop_reason(finish_reason: str, tool_calls: bool) -> str:
    """The Anthropic stop_reason; a ``stop`` that carried tool calls is ``tool_use`` (providers
    that say ``stop`` for a tool call would otherwise end Claude Code's turn)."""
    reason = STOP_REASONS.get(finish_reason, "end_turn")
    return "tool_use" if tool_calls and reason == "end_turn" else reason


# Templates: only the dynamic strings go through the JSON encoder.
_START = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":%s,"type":"message",'
    '"role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,'
    '"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
    '"output_tokens":0}}}\n\n'
)
_TEXT_START = (
    'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
    '"content_block":{"type":"text","text":""}}\n\n'
)
_THINKING_START = (
    'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
    '"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n'
)
_TOOL_START = (
    'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
    '"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}\n\n'
)
# A delta event: the text before its string (the block's index to fill in) and after it; the
# relay splices with the same pieces (``plan``).
_DELTA_END = "}}\n\n"
_TEXT_DELTA = (
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":'
)
_THINKING_DELTA = (
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
    '"delta":{"type":"thinking_delta","thinking":'
)
_JSON_DELTA = (
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
    '"delta":{"type":"input_json_delta","partial_json":'
)
_STOP = 'event: content_block_stop\ndata: {"type":"content_block_stop","index":%d}\n\n'
_END = (
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"%s",'
    '"stop_sequence":null},"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,'
    '"cache_read_input_tokens":%d,"output_tokens":%d}}\n\n'
    'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
_ERROR = 'event: error\ndata: {"type":"error","error":{"type":"api_error","message":%s}}\n\n'

# The kind of the open block.
_NONE, _TEXT, _THINKING, _TOOL = 0, 1, 2, 3


def _whole(fragments: list[str]) -> bool:
    """The arguments so far are one whole JSON object (checked only when a later call waits);
    however the upstream split them."""
    arguments = "".join(fragments)
    if not arguments.rstrip().endswith("}"):
        return False
    try:
        json.loads(arguments)
    except ValueError:
        return False
    return True


class AnthropicStream(DecodedStream):
    """An h11-style translator of one answer (contract.StreamTranslator); see the module doc."""

    media_type = "text/event-stream"

    def __init__(self, model: str, input_estimate: int = 0) -> None:
        """``input_estimate``: what ``message_start`` says of the input before the upstream's
        usage comes (SPEC §12.2: the count_tokens estimate, which clients show at once)."""
        self._model = model
        self._input_estimate = input_estimate
        super().__init__()
        self._started = False
        self._done = False
        self._kind = _NONE  # the open block's kind
        self._index = -1  # the open (else last) block's index
        self._call = -1  # the position of the call whose block is open
        self._args: list[str] = []  # that call's fragments, to see when it is whole
        self._queue: dict[int, tuple[str, str, list[str]]] = {}  # calls waiting: id, name, fragments
        self._tools = False
        self._reason = ""
        self._input_tokens = 0
        self._output_tokens = 0
        self._cached_tokens = 0

    def feed(self, data: bytes) -> bytes:
        if self._done:
            return b""
        events = self._decoder.feed(data)
        if not events and (self._started or not self._decoder.id):
            return b""
        out: list[str] = []
        self._translate(events, out)
        return utf8("".join(out))

    def end(self) -> bytes:
        if self._done:
            return b""
        out: list[str] = []
        self._translate(self._decoder.close(), out)
        if self._done:  # the last event was an upstream error
            return utf8("".join(out))
        if not self._started:
            self._start(out)
        self._flush(out)
        self._close(out)
        self._done = True
        reason = stop_reason(self._reason, self._tools)
        counted = usage(self._input_tokens, self._output_tokens, self._cached_tokens)
        out.append(_END % (reason, counted["input_tokens"], self._cached_tokens, self._output_tokens))
        return utf8("".join(out))

    def plan(self) -> Plan | None:
        """The open block's deltas: text in a text block, reasoning in a thinking block, the open
        call's arguments while no other call waits (a fragment may then open the next)."""
        if self._done or not self._started or not self._spliceable():
            return None
        if self._kind == _TEXT:
            return Plan("each", text=self._pieces(_TEXT_DELTA))
        if self._kind == _THINKING:
            return Plan("each", reasoning=self._pieces(_THINKING_DELTA))
        key = self._key(self._call) if self._kind == _TOOL and not self._queue else None
        if key is None:
            return Plan("each")
        return Plan("each", args=((key, *self._pieces(_JSON_DELTA)),))

    def _pieces(self, template: str) -> tuple[str, str]:
        return template % self._index, _DELTA_END

    def _absorb(self, spliced: Spliced) -> None:
        for _position, joined in self._positions(spliced):
            self._args.append(joined)  # only the open call's are spliced

    def keep_alive(self) -> bytes:
        """Anthropic's own keep-alive, which its SDKs and Claude Code skip."""
        return b'event: ping\ndata: {"type":"ping"}\n\n'

    def fail(self, message: str, code: str = "stream_interrupted") -> bytes:
        if self._done:
            return b""
        self._done = True
        return utf8(_ERROR % encode_basestring(message))

    # -- one read's events -------------------------------------------------------------------

    def _translate(self, events: list[Event], out: list[str]) -> None:
        if not self._started and (events or self._decoder.id):
            self._start(out)
        for event in events:
            if isinstance(event, Text):
                if self._kind != _TEXT:
                    self._open(_TEXT_START, _TEXT, out)
                out.append(_TEXT_DELTA % self._index + encode_basestring(event.text) + _DELTA_END)
            elif isinstance(event, ToolArgs):
                self._fragment(event, out)
            elif isinstance(event, Reasoning):
                if self._kind != _THINKING:
                    self._open(_THINKING_START, _THINKING, out)
                out.append(_THINKING_DELTA % self._index + encode_basestring(event.text) + _DELTA_END)
            elif isinstance(event, ToolStart):
                self._tool_start(event, out)
            elif isinstance(event, Usage):
                self._input_tokens = event.input_tokens
                self._output_tokens = event.output_tokens
                self._cached_tokens = event.cached_tokens
            elif isinstance(event, Finish):
                self._reason = event.reason
                self._flush(out)
            elif isinstance(event, UpstreamError):
                self._done = True
                out.append(_ERROR % encode_basestring(event.message))
                return

    def _start(self, out: list[str]) -> None:
        self._started = True
        message = encode_basestring(message_id(self._decoder.id))
        out.append(_START % (message, encode_basestring(self._model), self._input_estimate))

    def _close(self, out: list[str]) -> None:
        if self._kind != _NONE:
            out.append(_STOP % self._index)
            self._kind = _NONE

    def _open(self, template: str, kind: int, out: list[str]) -> None:
        self._close(out)
        self._index += 1
        self._kind = kind
        out.append(template % self._index)

    # -- tool calls --------------------------------------------------------------------------

    def _tool_start(self, event: ToolStart, out: list[str]) -> None:
        self._tools = True
        if self._kind == _TOOL or self._queue:
            self._queue[event.index] = (event.call_id, event.name, [])
            if self._kind != _TOOL:
                self._open_next(out)
            self._advance(out)
        else:
            self._open_call(event.index, event.call_id, event.name, [], out)

    def _fragment(self, event: ToolArgs, out: list[str]) -> None:
        if event.index == self._call and self._kind == _TOOL:
            self._args.append(event.fragment)
            out.append(_JSON_DELTA % self._index + encode_basestring(event.fragment) + _DELTA_END)
            if self._queue:
                self._advance(out)
        elif event.index in self._queue:
            self._queue[event.index][2].append(event.fragment)
        # else: its block was closed by a text block; nothing can be added to it any more

    def _open_call(self, position: int, call_id: str, name: str, fragments: list[str], out: list[str]) -> None:
        self._close(out)
        self._index += 1
        self._kind = _TOOL
        self._call = position
        self._args = fragments
        out.append(_TOOL_START % (self._index, encode_basestring(call_id), encode_basestring(name)))
        for fragment in fragments:
            out.append(_JSON_DELTA % self._index + encode_basestring(fragment) + _DELTA_END)

    def _open_next(self, out: list[str]) -> None:
        position = min(self._queue)
        call_id, name, fragments = self._queue.pop(position)
        self._open_call(position, call_id, name, fragments, out)

    def _advance(self, out: list[str]) -> None:
        """Move on from the open call while its arguments are whole and another call waits."""
        while self._queue and _whole(self._args):
            self._open_next(out)

    def _flush(self, out: list[str]) -> None:
        """The answer is over: every waiting call gets its block now, in order."""
        while self._queue:
            self._open_next(out)
